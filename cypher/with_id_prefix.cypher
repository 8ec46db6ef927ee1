// A tenant's records whose id starts with $prefix, by id: a prefix seek in the (tenant, id)
// uniqueness constraint's index.
MATCH (m:Memory {tenant: $tenant})
WHERE m.id STARTS WITH $prefix
WITH m ORDER BY m.id
RETURN collect([m.json, m.status, m.tombstone, m.sealed, m.id]) AS records
