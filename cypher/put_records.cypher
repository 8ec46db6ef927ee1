// Create or replace memory records with their kind label, APPLIES_TO scope,
// cited sources and DERIVED_FROM parents. One row per record.
UNWIND $rows AS row
MERGE (m:Memory {tenant: row.tenant, id: row.id})
SET m += row.props
FOREACH (_ IN CASE WHEN row.props.kind = 'working' THEN [1] ELSE [] END | SET m:Working)
FOREACH (_ IN CASE WHEN row.props.kind = 'episodic' THEN [1] ELSE [] END | SET m:Episodic)
FOREACH (_ IN CASE WHEN row.props.kind = 'semantic' THEN [1] ELSE [] END | SET m:Semantic)
FOREACH (_ IN CASE WHEN row.props.kind = 'procedural' THEN [1] ELSE [] END | SET m:Procedural)
WITH m, row
CALL (m, row) {
  MATCH (m)-[old:APPLIES_TO]->(previous:Scope)
  WHERE previous.key <> row.props.scope
  DELETE old
}
MERGE (s:Scope {tenant: row.tenant, key: row.props.scope})
  ON CREATE SET s.type = row.scope_type
MERGE (m)-[:APPLIES_TO]->(s)
WITH m, row
CALL (m, row) {
  UNWIND row.sources AS source
  MERGE (x:Source {tenant: row.tenant, id: source.id})
  SET x += source
  MERGE (m)-[:CITES]->(x)
}
;

// Lineage edges once every node of the batch exists, whatever the row order.
UNWIND $rows AS row
UNWIND row.derived_from AS parent_id
MATCH (m:Memory {tenant: row.tenant, id: row.id})
MATCH (parent:Memory {tenant: row.tenant, id: parent_id})
MERGE (m)-[:DERIVED_FROM]->(parent)
