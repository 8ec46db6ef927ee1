// Every record of one tenant, by id, as one row.
MATCH (m:Memory {tenant: $tenant})
WITH m ORDER BY m.id
RETURN collect([m.json, m.status, m.tombstone, m.sealed, m.id]) AS records
