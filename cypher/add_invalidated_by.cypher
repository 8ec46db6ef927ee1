// record INVALIDATED_BY a memory or a source from row.at, recorded at
// row.recorded (null: known at every time); record.invalidated_at keeps the
// earliest effect time and record.changed_at the latest recorded time,
// mirrored in the gate list on its APPLIES_TO edge (entries 11 and 13).
// A row naming a record or source not in $tenant is refused and returned with
// a `refused` code (unknown_record; the backend then rolls the transaction back).
UNWIND $rows AS row
OPTIONAL MATCH (record:Memory {tenant: $tenant, id: row.src})
CALL (row) {
  OPTIONAL MATCH (cause:Memory {tenant: $tenant, id: row.dst})
  WHERE NOT row.dst_is_source
  RETURN cause
  UNION
  OPTIONAL MATCH (cause:Source {tenant: $tenant, id: row.dst})
  WHERE row.dst_is_source
  RETURN cause
}
WITH row, record, head(collect(cause)) AS cause
WITH row, record, cause, CASE WHEN record IS NULL OR cause IS NULL THEN 'unknown_record' END AS refused
CALL (row, record, cause, refused) {
  WITH row, record, cause WHERE refused IS NULL
  MERGE (record)-[e:INVALIDATED_BY]->(cause)
  // The same edge again keeps its earliest effect, as record.invalidated_at does.
  WITH row, record, e, e.at IS NULL OR row.at < e.at AS earlier
  SET e.reason = CASE WHEN earlier THEN row.reason ELSE e.reason END,
    e.recorded = CASE WHEN earlier THEN row.recorded ELSE e.recorded END,
    e.at = CASE WHEN earlier THEN row.at ELSE e.at END
  SET record.invalidated_at = CASE
    WHEN record.invalidated_at IS NULL OR row.at < record.invalidated_at THEN row.at
    ELSE record.invalidated_at END,
    record.changed_at = CASE
    WHEN row.recorded IS NOT NULL AND (record.changed_at IS NULL OR record.changed_at < row.recorded)
    THEN row.recorded ELSE record.changed_at END
  WITH record
  MATCH (record)-[r:APPLIES_TO]->(:Scope)
  SET r.g = r.g[0..11] + [record.invalidated_at, record.created_at, coalesce(record.changed_at, -9223372036854775807)]
}
WITH row, refused WHERE refused IS NOT NULL
RETURN row.src AS src, row.dst AS dst, refused
