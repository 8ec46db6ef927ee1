// Every record of one tenant.
MATCH (m:Memory {tenant: $tenant})
RETURN [m.json, m.status, m.tombstone] AS record
ORDER BY m.id
