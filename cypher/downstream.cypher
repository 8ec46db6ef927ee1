// Every record transitively derived from $ids, with the state of each of its
// parents, as one row (a row per record costs the driver more than the data).
UNWIND $ids AS id
MATCH (:Memory {tenant: $tenant, id: id})<-[:DERIVED_FROM*1..]-(d:Memory)
WITH DISTINCT d
RETURN collect([
  [d.json, d.status, d.tombstone, d.sealed, d.id],
  [(d)-[:DERIVED_FROM]->(p:Memory) | [p.id, p.status, p.superseded_at, p.invalidated_at]]
]) AS dependents
