// Create new memory records of one tenant ($tenant), grouped by the scope they
// apply to: $groups = [[scope key, scope type, rows], ...], each row a list
// laid out as graphmem.backends.neo4j.RECORD_ROW names it:
//   0 id, 1 kind, 2 scope, 3 content, 4 content_hash, 5 status, 6 policy,
//   7 sensitivity, 8 confidence, 9 outcome, 10 writer, 11 procedure_name,
//   12 procedure_version, 13 preconditions, 14 tags, 15 embedding,
//   16 created_at, 17 event_time, 18 valid_from, 19 valid_to, 20 expires_at,
//   21 fingerprint, 22 json (without status and tombstone), 23 tombstone
//   (JSON or null), 24 gate (see gate.cypher), 25 sources, 26 sealed (the
//   whole record, encrypted; null for a tombstone), 27 embedding_model (the
//   model that made the embedding, sealed beside it). Text-bearing values are
//   ciphertext or keyed tokens (graphmem.backends.neo4j_crypt); 22 json is the
//   record as its tombstone would keep it.
// One MERGE per scope, not per record. CREATE, not MERGE, for the records: an
// id another writer took after the store's check fails the uniqueness
// constraint instead of being overwritten. The APPLIES_TO edge carries the
// gate's inputs (see gate.cypher); new records have no SUPERSEDES or
// INVALIDATED_BY edge yet, so the gate list ends in two "never" times, the
// record's knowledge time (created_at) and "no change recorded".
UNWIND $groups AS g
MERGE (s:Scope {tenant: $tenant, key: g[0]})
  ON CREATE SET s.type = g[1]
WITH s, g
UNWIND g[2] AS row
CREATE (m:Memory {
  tenant: $tenant, id: row[0], kind: row[1], scope: row[2], content: row[3], content_hash: row[4],
  status: row[5], policy: row[6], sensitivity: row[7], confidence: row[8], outcome: row[9],
  writer: row[10], procedure_name: row[11], procedure_version: row[12], preconditions: row[13],
  tags: row[14], embedding: row[15], created_at: row[16], event_time: row[17], valid_from: row[18],
  valid_to: row[19], expires_at: row[20], fingerprint: row[21], json: row[22],
  tombstone: row[23], sealed: row[26], embedding_model: row[27]
})
FOREACH (_ IN CASE WHEN row[1] = 'working' THEN [1] ELSE [] END | SET m:Working)
FOREACH (_ IN CASE WHEN row[1] = 'episodic' THEN [1] ELSE [] END | SET m:Episodic)
FOREACH (_ IN CASE WHEN row[1] = 'semantic' THEN [1] ELSE [] END | SET m:Semantic)
FOREACH (_ IN CASE WHEN row[1] = 'procedural' THEN [1] ELSE [] END | SET m:Procedural)
CREATE (m)-[:APPLIES_TO {
  tenant: $tenant, scope: row[2], policy: row[6], id: row[0],
  g: row[24] + [9223372036854775807, 9223372036854775807, row[16], -9223372036854775807]
}]->(s)
FOREACH (source IN row[25] |
  MERGE (x:Source {tenant: $tenant, id: source.id})
  SET x += source
  CREATE (m)-[:CITES]->(x)
)
;

// Lineage edges once every node of the batch exists: $lineage = [[child id, parent id], ...].
UNWIND $lineage AS pair
MATCH (m:Memory {tenant: $tenant, id: pair[0]})
MATCH (parent:Memory {tenant: $tenant, id: pair[1]})
MERGE (m)-[:DERIVED_FROM]->(parent)
