// Records with the state of each of their DERIVED_FROM parents, as one row.
UNWIND $ids AS id
MATCH (d:Memory {tenant: $tenant, id: id})
RETURN collect([
  [d.json, d.status, d.tombstone, d.sealed, d.id],
  [(d)-[:DERIVED_FROM]->(p:Memory) | [p.id, p.status, p.superseded_at, p.invalidated_at]]
]) AS dependents
