// Create or replace memory records of one tenant ($tenant), grouped by scope
// like create_records.cypher (same row layout). A replaced record keeps its
// SUPERSEDES / INVALIDATED_BY effect times in the last two entries of the gate
// list on its APPLIES_TO edge.
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
  tombstone: row[23], sealed: row[26]
}
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
  r.g = row[24] + [coalesce(m.superseded_at, 9223372036854775807), coalesce(m.invalidated_at, 9223372036854775807)]
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
