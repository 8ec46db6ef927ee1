// Declare child WITHIN parent for each row of one tenant; scopes are created on
// first use. A row that would close a cycle of WITHIN edges (the parent is the
// child, or already lies within it) is refused and returned with a `refused`
// code (scope_cycle; the backend then rolls the transaction back). A new edge
// keeps row.recorded, when the store recorded it (null: known at every time).
UNWIND $rows AS row
MERGE (child:Scope {tenant: $tenant, key: row.child})
  ON CREATE SET child.type = row.child_type
MERGE (parent:Scope {tenant: $tenant, key: row.parent})
  ON CREATE SET parent.type = row.parent_type
WITH row, child, parent, CASE
  WHEN child = parent OR EXISTS { (parent)-[:WITHIN*1..]->(child) } THEN 'scope_cycle'
  END AS refused
CALL (row, child, parent, refused) {
  WITH row, child, parent WHERE refused IS NULL
  MERGE (child)-[w:WITHIN]->(parent)
    ON CREATE SET w.recorded = row.recorded
}
WITH row, refused WHERE refused IS NOT NULL
RETURN row.child AS child, row.parent AS parent, refused
