// record INVALIDATED_BY a memory or a source from row.at; record.invalidated_at
// keeps the earliest, mirrored in the gate list on its APPLIES_TO edge (entry 11).
UNWIND $rows AS row
MATCH (record:Memory {tenant: $tenant, id: row.src})
CALL (row) {
  MATCH (cause:Memory {tenant: $tenant, id: row.dst})
  WHERE NOT row.dst_is_source
  RETURN cause
  UNION
  MATCH (cause:Source {tenant: $tenant, id: row.dst})
  WHERE row.dst_is_source
  RETURN cause
}
MERGE (record)-[e:INVALIDATED_BY]->(cause)
SET e.at = row.at, e.reason = row.reason
SET record.invalidated_at = CASE
  WHEN record.invalidated_at IS NULL OR row.at < record.invalidated_at THEN row.at
  ELSE record.invalidated_at END
WITH record
MATCH (record)-[r:APPLIES_TO]->(:Scope)
SET r.g = r.g[0..11] + [record.invalidated_at]
