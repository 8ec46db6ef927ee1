// Update stored records of one tenant ($tenant) in place whose scope, sources
// and parents are unchanged (status changes, erasure): properties only, no
// edge work. Each row: 0 id, 1 status, 2 tombstone (JSON or null), 3 content,
// 4 content_hash, 5 embedding, 6 tags, 7 fingerprint, 8 json (without status
// and tombstone, so a status change leaves it as it is and Neo4j writes
// nothing for it), 9 gate list (without the two edge times, the knowledge
// time and the last change's, which the node keeps) for the record's
// APPLIES_TO edge, 10 outcome, 11 writer, 12 procedure_name,
// 13 procedure_version, 14 preconditions (a tombstone clears them:
// graphmem.model.erasure), 15 sealed (the whole record, encrypted; null for a
// tombstone: graphmem.backends.neo4j_crypt), 16 embedding_model (sealed; a
// tombstone clears it), 17 the version the row replaces or null (see
// put_records.cypher). An erase drops every kept version.
UNWIND $rows AS row
MATCH (m:Memory {tenant: $tenant, id: row[0]})
SET m.status = row[1], m.tombstone = row[2], m.content = row[3], m.content_hash = row[4],
  m.embedding = row[5], m.tags = row[6], m.fingerprint = row[7], m.json = row[8],
  m.outcome = row[10], m.writer = row[11], m.procedure_name = row[12],
  m.procedure_version = row[13], m.preconditions = row[14], m.sealed = row[15],
  m.embedding_model = row[16]
FOREACH (v IN CASE WHEN row[17] IS NULL THEN [] ELSE [row[17]] END |
  SET m.v_until = coalesce(m.v_until, []) + [v[0]], m.v_status = coalesce(m.v_status, []) + [v[1]],
    m.v_fp = coalesce(m.v_fp, []) + [v[2]], m.v_tok1 = coalesce(m.v_tok1, []) + [v[3]],
    m.v_tok2 = coalesce(m.v_tok2, []) + [v[4]], m.v_body = coalesce(m.v_body, []) + [coalesce(v[5], '')],
    m.changed_at = CASE WHEN m.changed_at IS NULL OR m.changed_at < v[0] THEN v[0] ELSE m.changed_at END
)
FOREACH (_ IN CASE WHEN row[1] = 'erased' THEN [1] ELSE [] END |
  SET m.v_until = null, m.v_status = null, m.v_fp = null, m.v_tok1 = null, m.v_tok2 = null, m.v_body = null
)
WITH m, row
MATCH (m)-[r:APPLIES_TO]->(:Scope)
SET r.g = row[9] + [coalesce(m.superseded_at, 9223372036854775807), coalesce(m.invalidated_at, 9223372036854775807),
  m.created_at, coalesce(m.changed_at, -9223372036854775807)]
;

// The cited sources' new state (revoked or erased; an erased one without locator
// or digest), one map per source.
UNWIND $sources AS source
MATCH (x:Source {tenant: $tenant, id: source.id})
SET x += source
