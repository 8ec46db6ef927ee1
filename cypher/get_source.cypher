// One source node's properties.
MATCH (x:Source {tenant: $tenant, id: $id})
RETURN x {.id, .type, .trust, .locator, .digest, .status} AS source
