// A tenant's records carrying a tag (e.g. a subject key), by id.
MATCH (m:Memory {tenant: $tenant})
WHERE $tag IN m.tags
WITH m ORDER BY m.id
RETURN collect([m.json, m.status, m.tombstone]) AS records
