// Update stored records of one tenant ($tenant) in place whose scope, sources
// and parents are unchanged (status changes, erasure): properties only, no
// edge work. Each row: 0 id, 1 status, 2 tombstone (JSON or null), 3 content,
// 4 content_hash, 5 embedding, 6 tags, 7 fingerprint, 8 json (without status
// and tombstone, so a status change leaves it as it is and Neo4j writes
// nothing for it), 9 gate list (without the two edge times, which the node
// keeps) for the record's APPLIES_TO edge, 10 outcome, 11 writer,
// 12 procedure_name, 13 procedure_version, 14 preconditions (a tombstone
// clears them: graphmem.model.erasure), 15 sealed (the whole record,
// encrypted; null for a tombstone: graphmem.backends.neo4j_crypt).
UNWIND $rows AS row
MATCH (m:Memory {tenant: $tenant, id: row[0]})
SET m.status = row[1], m.tombstone = row[2], m.content = row[3], m.content_hash = row[4],
  m.embedding = row[5], m.tags = row[6], m.fingerprint = row[7], m.json = row[8],
  m.outcome = row[10], m.writer = row[11], m.procedure_name = row[12],
  m.procedure_version = row[13], m.preconditions = row[14], m.sealed = row[15]
WITH m, row
MATCH (m)-[r:APPLIES_TO]->(:Scope)
SET r.g = row[9] + [coalesce(m.superseded_at, 9223372036854775807), coalesce(m.invalidated_at, 9223372036854775807)]
;

// The cited sources' new state (revoked or erased; an erased one without locator
// or digest), one map per source.
UNWIND $sources AS source
MATCH (x:Source {tenant: $tenant, id: source.id})
SET x += source
