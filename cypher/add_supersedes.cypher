// newer SUPERSEDES older from row.at, recorded at row.recorded (null: known
// at every time); older.superseded_at keeps the earliest effect time and
// older.changed_at the latest recorded time, mirrored in the gate list on its
// APPLIES_TO edge (entries 10 and 13; 12 is the record's knowledge time).
// Refused, and returned with a `refused` code (the backend then rolls the
// transaction back): a row naming a record not in $tenant (unknown_record; no
// edge crosses tenants), and one whose older record another record already
// supersedes (already_superseded: a record has at most one successor).
// Re-applying an existing edge (an import of an export) is no refusal.
UNWIND $rows AS row
OPTIONAL MATCH (newer:Memory {tenant: $tenant, id: row.src})
OPTIONAL MATCH (older:Memory {tenant: $tenant, id: row.dst})
WITH row, newer, older, CASE
  WHEN newer IS NULL OR older IS NULL THEN 'unknown_record'
  WHEN EXISTS { (other:Memory)-[:SUPERSEDES]->(older) WHERE other <> newer } THEN 'already_superseded'
  END AS refused
CALL (row, newer, older, refused) {
  WITH row, newer, older WHERE refused IS NULL
  MERGE (newer)-[e:SUPERSEDES]->(older)
  // The same edge again keeps its earliest effect, as older.superseded_at does.
  WITH row, older, e, e.at IS NULL OR row.at < e.at AS earlier
  SET e.reason = CASE WHEN earlier THEN row.reason ELSE e.reason END,
    e.recorded = CASE WHEN earlier THEN row.recorded ELSE e.recorded END,
    e.at = CASE WHEN earlier THEN row.at ELSE e.at END
  SET older.superseded_at = CASE
    WHEN older.superseded_at IS NULL OR row.at < older.superseded_at THEN row.at
    ELSE older.superseded_at END,
    older.changed_at = CASE
    WHEN row.recorded IS NOT NULL AND (older.changed_at IS NULL OR older.changed_at < row.recorded)
    THEN row.recorded ELSE older.changed_at END
  WITH older
  MATCH (older)-[r:APPLIES_TO]->(:Scope)
  SET r.g = r.g[0..10] + [older.superseded_at, r.g[11], older.created_at, coalesce(older.changed_at, -9223372036854775807)]
}
WITH row, refused WHERE refused IS NOT NULL
RETURN row.src AS src, row.dst AS dst, refused
