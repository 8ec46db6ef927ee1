// Append recall audit events ($rows: append_audit.cypher rows, each with its
// tenant), queued off the read path and written in one auto-commit transaction.
// MERGE on the event's own (tenant, at, id) makes a retried batch append each
// event once.
UNWIND $rows AS row
MERGE (e:AuditEvent {tenant: row.tenant, at: row.at, id: row.id})
  ON CREATE SET e.action = row.action, e.ord = row.ord, e.record_ids = row.record_ids, e.json = row.json
