// A tenant's records carrying a tag (e.g. a subject key).
MATCH (m:Memory {tenant: $tenant})
WHERE $tag IN m.tags
RETURN m.json AS json
ORDER BY m.id
