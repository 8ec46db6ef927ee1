// Up to $limit records still stored as written before encryption (no sealed
// copy and not a tombstone), as [tenant, id] pairs, for graphmem migrate --encrypt.
MATCH (m:Memory)
WHERE m.sealed IS NULL AND m.status <> 'erased'
WITH m LIMIT $limit
RETURN collect([m.tenant, m.id]) AS ids
