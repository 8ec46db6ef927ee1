// Update stored records of one tenant ($tenant) in place whose scope, sources
// and parents are unchanged (status changes, erasure): properties only, no
// edge work. Each row: 0 id, 1 status, 2 content, 3 content_hash,
// 4 embedding, 5 tags, 6 fingerprint, 7 json, 8 gate (without the two edge
// times, which the node keeps).
UNWIND $rows AS row
MATCH (m:Memory {tenant: $tenant, id: row[0]})
SET m.status = row[1], m.content = row[2], m.content_hash = row[3], m.embedding = row[4],
  m.tags = row[5], m.fingerprint = row[6], m.json = row[7],
  m.g = row[8] + [coalesce(m.superseded_at, 9223372036854775807), coalesce(m.invalidated_at, 9223372036854775807)]
;

// The cited sources' new state (revoked or erased quotes), one map per source.
UNWIND $sources AS source
MATCH (x:Source {tenant: $tenant, id: source.id})
SET x += source
