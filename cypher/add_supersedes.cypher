// newer SUPERSEDES older from row.at; older.superseded_at keeps the earliest
// effect time, mirrored in the gate list on its APPLIES_TO edge (entry 10).
UNWIND $rows AS row
MATCH (newer:Memory {tenant: $tenant, id: row.src})
MATCH (older:Memory {tenant: $tenant, id: row.dst})
MERGE (newer)-[e:SUPERSEDES]->(older)
SET e.at = row.at, e.reason = row.reason
SET older.superseded_at = CASE
  WHEN older.superseded_at IS NULL OR row.at < older.superseded_at THEN row.at
  ELSE older.superseded_at END
WITH older
MATCH (older)-[r:APPLIES_TO]->(:Scope)
SET r.g = r.g[0..10] + [older.superseded_at] + r.g[11..]
