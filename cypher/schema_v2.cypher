// Schema version 2: each record's gate inputs in one list property, m.g (see
// gate.cypher), instead of separate start/end/recency/sensitivity_rank
// properties. Data migration, run outside an explicit transaction in batches;
// both steps only touch version-1 records (they carry m.recency), so re-running
// is harmless and records written in a later layout are left alone.
// The (tenant, kind, status) index served no query and cost every status
// change an index update; a tenant index serves the per-tenant listings.
DROP INDEX graphmem_memory_status IF EXISTS;
CREATE INDEX graphmem_memory_tenant IF NOT EXISTS
FOR (m:Memory) ON (m.tenant);
MATCH (m:Memory) WHERE m.g IS NULL AND m.recency IS NOT NULL
CALL (m) {
  SET m.g = [
    CASE m.kind WHEN 'working' THEN 0 WHEN 'episodic' THEN 1 WHEN 'semantic' THEN 2 ELSE 3 END,
    CASE WHEN m.status = 'active' THEN 0 ELSE 1 END,
    coalesce(m.start, -9223372036854775807),
    coalesce(m.end, 9223372036854775807),
    m.sensitivity_rank,
    CASE WHEN m.outcome = 'verified-success' THEN 1 ELSE 0 END,
    coalesce(m.valid_from, m.event_time, m.created_at),
    CASE WHEN m.embedding IS NULL THEN 0 ELSE 1 END,
    coalesce(m.superseded_at, 9223372036854775807),
    coalesce(m.invalidated_at, 9223372036854775807)
  ]
} IN TRANSACTIONS OF 10000 ROWS;

MATCH (m:Memory) WHERE m.recency IS NOT NULL
CALL (m) {
  REMOVE m.start, m.end, m.recency, m.sensitivity_rank
} IN TRANSACTIONS OF 10000 ROWS
