// Append audit events of one tenant; they are never updated in place.
UNWIND $rows AS row
CREATE (:AuditEvent {
  tenant: $tenant, id: row.id, action: row.action, at: row.at, ord: row.ord,
  record_ids: row.record_ids, json: row.json
})
