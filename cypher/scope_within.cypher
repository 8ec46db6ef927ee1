// Declare child WITHIN parent for each row of one tenant; scopes are created on first use.
UNWIND $rows AS row
MERGE (child:Scope {tenant: $tenant, key: row.child})
  ON CREATE SET child.type = row.child_type
MERGE (parent:Scope {tenant: $tenant, key: row.parent})
  ON CREATE SET parent.type = row.parent_type
MERGE (child)-[:WITHIN]->(parent)
