// Every record of one tenant.
MATCH (m:Memory {tenant: $tenant})
RETURN m.json AS json
ORDER BY m.id
