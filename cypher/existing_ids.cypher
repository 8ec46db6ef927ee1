// Which of these ids exist in the tenant.
UNWIND $ids AS id
MATCH (m:Memory {tenant: $tenant, id: id})
RETURN m.id AS id
