// Audit events of a tenant, optionally about one record and/or since a time.
MATCH (e:AuditEvent {tenant: $tenant})
WHERE ($record_id IS NULL OR $record_id IN e.record_ids)
  AND ($since IS NULL OR e.at >= $since)
RETURN e.json AS json
ORDER BY e.at, e.ord
