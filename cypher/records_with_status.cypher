// A tenant's records in any of the given statuses, by id.
MATCH (m:Memory {tenant: $tenant})
WHERE m.status IN $statuses
WITH m ORDER BY m.id
RETURN collect([m.json, m.status, m.tombstone, m.sealed, m.id]) AS records
