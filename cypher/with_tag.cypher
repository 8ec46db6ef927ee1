// A tenant's records carrying a tag (e.g. a subject key).
MATCH (m:Memory {tenant: $tenant})
WHERE $tag IN m.tags
RETURN [m.json, m.status, m.tombstone] AS record
ORDER BY m.id
