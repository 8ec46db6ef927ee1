// A tenant's records in any of the given statuses.
MATCH (m:Memory {tenant: $tenant})
WHERE m.status IN $statuses
RETURN m.json AS json
ORDER BY m.id
