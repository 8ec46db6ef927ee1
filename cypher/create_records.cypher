// Create new memory records with their kind label, APPLIES_TO scope, cited
// sources and DERIVED_FROM parents. CREATE, not MERGE: an id another writer
// took after the store's check fails the uniqueness constraint instead of
// being overwritten.
UNWIND $rows AS row
CREATE (m:Memory)
SET m = row.props, m.tenant = row.tenant, m.id = row.id
FOREACH (_ IN CASE WHEN row.props.kind = 'working' THEN [1] ELSE [] END | SET m:Working)
FOREACH (_ IN CASE WHEN row.props.kind = 'episodic' THEN [1] ELSE [] END | SET m:Episodic)
FOREACH (_ IN CASE WHEN row.props.kind = 'semantic' THEN [1] ELSE [] END | SET m:Semantic)
FOREACH (_ IN CASE WHEN row.props.kind = 'procedural' THEN [1] ELSE [] END | SET m:Procedural)
MERGE (s:Scope {tenant: row.tenant, key: row.props.scope})
  ON CREATE SET s.type = row.scope_type
CREATE (m)-[:APPLIES_TO]->(s)
WITH m, row
CALL (m, row) {
  UNWIND row.sources AS source
  MERGE (x:Source {tenant: row.tenant, id: source.id})
  SET x += source
  CREATE (m)-[:CITES]->(x)
}
;

// Lineage edges once every node of the batch exists, whatever the row order.
UNWIND $rows AS row
UNWIND row.derived_from AS parent_id
MATCH (m:Memory {tenant: row.tenant, id: row.id})
MATCH (parent:Memory {tenant: row.tenant, id: parent_id})
MERGE (m)-[:DERIVED_FROM]->(parent)
