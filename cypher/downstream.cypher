// Every record transitively derived from $ids, with the state of each of its parents.
UNWIND $ids AS id
MATCH (:Memory {tenant: $tenant, id: id})<-[:DERIVED_FROM*1..]-(d:Memory)
WITH DISTINCT d
RETURN d.json AS json,
  [(d)-[:DERIVED_FROM]->(p:Memory) | [p.id, p.status, p.superseded_at, p.invalidated_at]] AS parents
