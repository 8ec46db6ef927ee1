// Lineage edges of the records $ids: their outgoing DERIVED_FROM, CITES,
// SUPERSEDES and INVALIDATED_BY edges and the SUPERSEDES edges into them,
// with the node at the other end.
UNWIND $ids AS id
MATCH (n:Memory {tenant: $tenant, id: id})
CALL (n) {
  MATCH (n)-[e:DERIVED_FROM|CITES|SUPERSEDES|INVALIDATED_BY]->(o)
  RETURN n.id AS src, type(e) AS type, o.id AS dst, e.at AS at, e.reason AS reason, o
  UNION
  MATCH (n)<-[e:SUPERSEDES]-(o:Memory)
  RETURN o.id AS src, type(e) AS type, n.id AS dst, e.at AS at, e.reason AS reason, o
}
RETURN src, type, dst, at, reason,
  CASE WHEN o:Memory THEN [o.json, o.status, o.tombstone, o.sealed, o.id] END AS memory,
  CASE WHEN o:Source THEN o {.id, .type, .trust, .locator, .digest, .status} END AS source
