// Schema version 4: each record's gate inputs move from its node (m.g) to its
// APPLIES_TO edge, beside copies of the record's tenant, scope key, policy and
// id, all in one range index. The gate seeks the edges of the scopes it
// reached in that index and reads every input from the index entry, so no
// record node is loaded for a candidate whose status is active and which is
// not procedural. Entry 1 of the list becomes the status's ordinal
// (graphmem.model.Status order, 0 active). Data migration in batches; it only
// touches records that still carry m.g, so re-running is harmless.
CREATE INDEX graphmem_applies_to_gate IF NOT EXISTS
FOR ()-[r:APPLIES_TO]-() ON (r.tenant, r.scope, r.policy, r.id, r.g);

MATCH (m:Memory)-[r:APPLIES_TO]->(s:Scope) WHERE m.g IS NOT NULL
CALL (m, r, s) {
  SET r.tenant = m.tenant, r.scope = s.key, r.policy = m.policy, r.id = m.id,
    r.g = [m.g[0], CASE m.status
      WHEN 'active' THEN 0 WHEN 'pending_approval' THEN 1 WHEN 'contested' THEN 2
      WHEN 'revoked' THEN 3 WHEN 'released' THEN 4 ELSE 5 END] + m.g[2..]
  REMOVE m.g
} IN TRANSACTIONS OF 10000 ROWS
