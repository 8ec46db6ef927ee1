// Up to $limit records still stored as written before encryption (no sealed
// copy and not a tombstone), or with a fingerprint in clear (live or kept
// version: written before fingerprints were sealed), as [tenant, id] pairs, for
// graphmem migrate --encrypt; only those of $tenant unless it is null.
MATCH (m:Memory)
WHERE ($tenant IS NULL OR m.tenant = $tenant) AND m.status <> 'erased'
  AND (m.sealed IS NULL OR NOT m.fingerprint STARTS WITH 's1:'
    OR any(f IN coalesce(m.v_fp, []) WHERE NOT f STARTS WITH 's1:'))
WITH m LIMIT $limit
RETURN collect([m.tenant, m.id]) AS ids
