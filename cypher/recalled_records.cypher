// The records a recall selected ($ids, in that order) as one row, each with its
// fingerprint, and `current`: whether every one of them exists and still has
// the fingerprint the gate saw ($fingerprints, parallel to $ids; null where the
// caller knows none; a replay's gate may have seen an earlier version, m.v_fp). The recall's audit event ($event, laid out as an
// append_audit.cypher row; null for none) is appended in the same auto-commit
// transaction, only when current: a recall whose selection changed under it
// gates again and appends its event then. MERGE on the event's own (tenant,
// at, id) makes a retried call append it once.
CALL () {
  UNWIND range(0, size($ids) - 1) AS k
  MATCH (m:Memory {tenant: $tenant, id: $ids[k]})
  RETURN collect([m.json, m.status, m.tombstone, m.fingerprint]) AS records,
    count(CASE WHEN $fingerprints[k] IS NULL OR m.fingerprint = $fingerprints[k]
      OR $fingerprints[k] IN coalesce(m.v_fp, []) THEN 1 END) AS same
}
WITH records, same = size($ids) AS current
FOREACH (row IN CASE WHEN $event IS NULL OR NOT current THEN [] ELSE [$event] END |
  MERGE (e:AuditEvent {tenant: $tenant, at: row.at, id: row.id})
    ON CREATE SET e.action = row.action, e.ord = row.ord, e.record_ids = row.record_ids, e.json = row.json
)
RETURN records, current
