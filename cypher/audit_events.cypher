// Audit events of a tenant, optionally about one record and/or since a time
// (no $since = from the beginning, so the (tenant, at) index always applies).
MATCH (e:AuditEvent {tenant: $tenant})
WHERE e.at >= coalesce($since, -9223372036854775807)
  AND ($record_id IS NULL OR $record_id IN e.record_ids)
RETURN e.json AS json
ORDER BY e.at, e.ord
