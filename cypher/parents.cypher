// The DERIVED_FROM parents of $ids.
UNWIND $ids AS id
MATCH (:Memory {tenant: $tenant, id: id})-[:DERIVED_FROM]->(p:Memory)
RETURN DISTINCT p.id AS id
