// Declare a typed RELATED edge between two scopes of one tenant per row. A new
// edge keeps row.recorded, when the store recorded it (null: known at every time).
UNWIND $rows AS row
MERGE (a:Scope {tenant: $tenant, key: row.a})
  ON CREATE SET a.type = row.a_type
MERGE (b:Scope {tenant: $tenant, key: row.b})
  ON CREATE SET b.type = row.b_type
MERGE (a)-[r:RELATED {type: row.rel_type}]->(b)
  ON CREATE SET r.recorded = row.recorded
