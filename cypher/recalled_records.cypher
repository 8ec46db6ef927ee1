// The records a recall selected ($ids, in that order, each with its
// fingerprint) as one row, and the recall's audit event ($event, laid out as
// an append_audit.cypher row; null for none) appended in the same auto-commit
// transaction: one round trip for both. MERGE on the event's own (tenant, at,
// id) makes a retried call append it once.
FOREACH (row IN CASE WHEN $event IS NULL THEN [] ELSE [$event] END |
  MERGE (e:AuditEvent {tenant: $tenant, at: row.at, id: row.id})
    ON CREATE SET e.action = row.action, e.ord = row.ord, e.record_ids = row.record_ids, e.json = row.json
)
WITH 1 AS _
UNWIND $ids AS id
MATCH (m:Memory {tenant: $tenant, id: id})
RETURN collect([m.json, m.status, m.tombstone, m.fingerprint]) AS records
