// Records with the state of each of their DERIVED_FROM parents.
UNWIND $ids AS id
MATCH (d:Memory {tenant: $tenant, id: id})
RETURN d.json AS json,
  [(d)-[:DERIVED_FROM]->(p:Memory) | [p.id, p.status, p.superseded_at, p.invalidated_at]] AS parents
