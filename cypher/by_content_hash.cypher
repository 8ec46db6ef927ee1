// A tenant's records with this normalised content hash (dedup candidates), by id.
MATCH (m:Memory {tenant: $tenant, content_hash: $content_hash})
WITH m ORDER BY m.id
RETURN collect([m.json, m.status, m.tombstone]) AS records
