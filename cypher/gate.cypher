// The read gate as a traversal: candidates are the tenant's memories whose
// APPLIES_TO scope is reachable upward (WITHIN*) from the context's entry
// scopes, or the one record $record_id wherever it applies. Each gets the
// first failing check of the fixed order as its reason (null = eligible);
// survivors also return what ranking needs. Mirrors graphmem.gate.drop_reason.
CALL () {
  WITH 1 AS _ WHERE $record_id IS NULL
  MATCH (entry:Scope {tenant: $tenant})
  WHERE entry.key IN $entry_scopes
  MATCH (entry)-[:WITHIN*0..]->(s:Scope)
  WITH DISTINCT s
  MATCH (m:Memory)-[:APPLIES_TO]->(s)
  RETURN m, s, true AS reachable
  UNION
  WITH 1 AS _ WHERE $record_id IS NOT NULL
  MATCH (m:Memory {tenant: $tenant, id: $record_id})-[:APPLIES_TO]->(s:Scope)
  RETURN m, s, EXISTS {
    MATCH (entry:Scope {tenant: $tenant})-[:WITHIN*0..]->(s)
    WHERE entry.key IN $entry_scopes
  } AS reachable
}
WITH m, reachable AND (s.type <> 'run' OR s.key IN $own_runs) AS in_scope
WITH m, CASE
  WHEN NOT m.kind IN $kinds THEN 'kind_not_requested'
  WHEN m.tenant <> $tenant THEN 'wrong_tenant'
  WHEN m.policy <> $policy THEN 'policy_mismatch'
  WHEN m.status <> 'active' THEN m.status
  WHEN m.start IS NOT NULL AND $now < m.start THEN 'not_yet_valid'
  WHEN m.end IS NOT NULL AND $now >= m.end THEN 'expired'
  WHEN m.superseded_at IS NOT NULL AND m.superseded_at <= $now THEN 'superseded'
  WHEN m.invalidated_at IS NOT NULL AND m.invalidated_at <= $now THEN 'invalidated'
  WHEN NOT in_scope THEN 'scope_mismatch'
  WHEN m.sensitivity_rank > $clearance_rank THEN 'insufficient_clearance'
  WHEN m.kind = 'procedural' AND coalesce(m.outcome, '') <> 'verified-success' THEN 'outcome_ineligible'
  WHEN m.kind = 'procedural' AND NOT all(p IN m.preconditions WHERE p IN $environment)
    THEN 'precondition_unmet'
  ELSE null
END AS reason
RETURN m.id AS id, m.fingerprint AS fingerprint, reason,
  CASE WHEN reason IS NULL THEN m.content END AS content,
  CASE WHEN reason IS NULL THEN m.recency END AS recency,
  CASE WHEN reason IS NULL AND $with_embeddings THEN m.embedding END AS embedding
