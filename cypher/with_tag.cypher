// A tenant's records carrying a tag (e.g. a subject key), by id: $tags holds the
// tag's keyed token and, for records written before encryption, the tag itself.
MATCH (m:Memory {tenant: $tenant})
WHERE any(t IN m.tags WHERE t IN $tags)
WITH m ORDER BY m.id
RETURN collect([m.json, m.status, m.tombstone, m.sealed, m.id]) AS records
