// A tenant's records in any of the given statuses.
MATCH (m:Memory {tenant: $tenant})
WHERE m.status IN $statuses
RETURN [m.json, m.status, m.tombstone] AS record
ORDER BY m.id
