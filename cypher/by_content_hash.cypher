// A tenant's records with this normalised content hash (dedup candidates), by id:
// $content_hashes holds its keyed token and, for records written before
// encryption, the hash itself.
MATCH (m:Memory {tenant: $tenant})
WHERE m.content_hash IN $content_hashes
WITH m ORDER BY m.id
RETURN collect([m.json, m.status, m.tombstone, m.sealed, m.id]) AS records
