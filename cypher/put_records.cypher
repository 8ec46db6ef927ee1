// Create or replace memory records of one tenant ($tenant), grouped by scope
// like create_records.cypher (same row layout). A replaced record keeps its
// SUPERSEDES / INVALIDATED_BY effect times and the latest time one of them was
// recorded (entries 10, 11 and 13 of the gate list on its APPLIES_TO edge).
// Row entry 28, when not null, is the version the row replaces ([until µs,
// status code, fingerprint, its two tokens, the whole version sealed or ""]),
// appended to the node's version lists (v_until, v_status, v_fp, v_tok1, v_tok2,
// v_body) for replays as of earlier knowledge times (see gate.cypher; a version
// kept before v_body has none, and a replay returns today's record for it).
UNWIND $groups AS g
MERGE (s:Scope {tenant: $tenant, key: g[0]})
  ON CREATE SET s.type = g[1]
WITH s, g
UNWIND g[2] AS row
MERGE (m:Memory {tenant: $tenant, id: row[0]})
SET m += {
  kind: row[1], scope: row[2], content: row[3], content_hash: row[4], status: row[5], policy: row[6],
  sensitivity: row[7], confidence: row[8], outcome: row[9], writer: row[10], procedure_name: row[11],
  procedure_version: row[12], preconditions: row[13], tags: row[14], embedding: row[15],
  created_at: row[16], event_time: row[17], valid_from: row[18], valid_to: row[19],
  expires_at: row[20], fingerprint: row[21], json: row[22],
  tombstone: row[23], sealed: row[26], embedding_model: row[27]
}
FOREACH (v IN CASE WHEN row[28] IS NULL THEN [] ELSE [row[28]] END |
  SET m.v_until = coalesce(m.v_until, []) + [v[0]], m.v_status = coalesce(m.v_status, []) + [v[1]],
    m.v_fp = coalesce(m.v_fp, []) + [v[2]], m.v_tok1 = coalesce(m.v_tok1, []) + [v[3]],
    m.v_tok2 = coalesce(m.v_tok2, []) + [v[4]], m.v_body = coalesce(m.v_body, []) + [coalesce(v[5], '')],
    m.changed_at = CASE WHEN m.changed_at IS NULL OR m.changed_at < v[0] THEN v[0] ELSE m.changed_at END
)
FOREACH (_ IN CASE WHEN row[1] = 'working' THEN [1] ELSE [] END | SET m:Working)
FOREACH (_ IN CASE WHEN row[1] = 'episodic' THEN [1] ELSE [] END | SET m:Episodic)
FOREACH (_ IN CASE WHEN row[1] = 'semantic' THEN [1] ELSE [] END | SET m:Semantic)
FOREACH (_ IN CASE WHEN row[1] = 'procedural' THEN [1] ELSE [] END | SET m:Procedural)
WITH s, m, row
CALL (m, row) {
  MATCH (m)-[old:APPLIES_TO]->(previous:Scope)
  WHERE previous.key <> row[2]
  DELETE old
}
MERGE (m)-[r:APPLIES_TO]->(s)
SET r.tenant = $tenant, r.scope = row[2], r.policy = row[6], r.id = row[0],
  r.g = row[24] + [coalesce(m.superseded_at, 9223372036854775807), coalesce(m.invalidated_at, 9223372036854775807),
    row[16], coalesce(m.changed_at, -9223372036854775807)]
FOREACH (source IN row[25] |
  MERGE (x:Source {tenant: $tenant, id: source.id})
  SET x += source
  MERGE (m)-[:CITES]->(x)
)
;

// Lineage edges once every node of the batch exists: $lineage = [[child id, parent id], ...].
UNWIND $lineage AS pair
MATCH (m:Memory {tenant: $tenant, id: pair[0]})
MATCH (parent:Memory {tenant: $tenant, id: pair[1]})
MERGE (m)-[:DERIVED_FROM]->(parent)
