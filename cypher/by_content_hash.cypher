// A tenant's records with this normalised content hash (dedup candidates).
MATCH (m:Memory {tenant: $tenant, content_hash: $content_hash})
RETURN [m.json, m.status, m.tombstone] AS record
ORDER BY m.id
