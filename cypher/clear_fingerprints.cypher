// Whether a record of $tenant that is no tombstone holds a fingerprint in clear
// (written before fingerprints were sealed, live or in a kept version): an
// erase is refused until graphmem migrate --encrypt sealed them (plaintext_store).
OPTIONAL MATCH (m:Memory)
WHERE m.tenant = $tenant AND m.id IS NOT NULL AND m.status <> 'erased'
  AND (NOT m.fingerprint STARTS WITH 's1:' OR any(f IN coalesce(m.v_fp, []) WHERE NOT f STARTS WITH 's1:'))
WITH m LIMIT 1
RETURN m IS NOT NULL AS found
