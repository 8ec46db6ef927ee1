// A tenant's records with this normalised content hash (dedup candidates).
MATCH (m:Memory {tenant: $tenant, content_hash: $content_hash})
RETURN m.json AS json
ORDER BY m.id
