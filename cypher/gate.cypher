// The read gate as a traversal: candidates are the tenant's memories whose
// APPLIES_TO scope is reachable upward (WITHIN*0.., through edges recorded by
// $as_of) from the context's entry scopes, or the one record $record_id
// wherever it applies. Each gets the
// first failing check of the fixed order as its reason (null = eligible).
// Mirrors graphmem.model.gate.drop_reason.
//
// The APPLIES_TO edges of the reached scopes are found in the range index
// graphmem_applies_to_gate, which also holds every input the checks read (the
// edge's copies of the record's tenant, scope key, policy and id, and its gate
// list r.g), so a candidate's node is loaded only for a status other than
// active or a procedure's preconditions. The gate list: 0 kind (index into
// $kind_mask: working, episodic, semantic, procedural), 1 status (index into
// $statuses, 0 = active), 2 start and 3 end of validity in µs (absent =
// -2^63+1 / 2^63-1), 4 sensitivity rank, 5 verified success (1/0), 6 recency
// in µs, 7 has an embedding (1/0), 8 and 9 the fingerprint's tokens (its
// first 120 bits as two integers), 10 superseded at and 11 invalidated at in
// µs (2^63-1 = never), 12 the record's knowledge time (created_at) and 13 the
// latest time one of its SUPERSEDES / INVALIDATED_BY edges was recorded, in µs
// (-2^63+1 = none; both absent in lists written before knowledge time, which
// are then known at every time). A read whose knowledge time $as_of is before
// entry 13 looks at the edges themselves: only those recorded by $as_of count.
// A run scope is in scope only if it is one of $own_runs. Preconditions are
// stored as keyed tokens: $environment holds the caller's capabilities as
// tokens and, for records written before encryption, as themselves.
// wrong_tenant cannot occur: every candidate is one of the
// tenant's own edges, and no edge crosses tenants.
//
// One row of parallel lists: candidate ids, both fingerprint tokens (first,
// second: of the fingerprint as stored, sealed), fingerprints (only with
// $fingerprints, else an empty list: [the stored fingerprint, the time its kept
// version was held until, or null for the live one], which the client opens)
// and reasons ('' = eligible); then, for the survivors in the same order, their
// recency in µs and (only with $with_content, else an empty list) [content,
// embedding, embedding model], all sealed (the client decrypts them). A client
// that already holds a candidate's fingerprint and text for its tokens need not
// receive them again. Then what bounds the verdicts in time (`times`, `later_at`,
// `replayed`, below) and `torn`: how many candidates were read torn (below).
// Last, `erasures`: how many committed writes erased text of the tenant (its
// counter node, count_erasures.cypher; 0 before the first). It is read first,
// before any candidate: at read committed, every erase it counts committed
// before the candidates were read (an erase deletes its data keys before it
// commits, so what it erased opens for no read that counted it).
// And `quiet`: whether no write of the tenant was being applied while the
// candidates were read. Its counts of writes begun and done (gate_state.cypher)
// are read first, equal, and its count of writes begun again last, unchanged.
// A write applies its changes to the store before its index updates, and an
// index update is a removal and an insertion: a scan between the two meets
// neither entry and misses the candidate (seen in a stress loop of racing
// replays), which no check of the rows read can see. The client takes a read
// that is not quiet only when the next read reports the same.
OPTIONAL MATCH (counter:GraphmemSchema {name: $erasures_name})
OPTIONAL MATCH (lock:GraphmemSchema {name: $lock_name})
OPTIONAL MATCH (done:GraphmemSchema {name: $done_name})
WITH coalesce(counter.erasures, 0) AS erasures, coalesce(lock.writes, 0) AS writes,
  coalesce(done.writes, 0) AS done
// Imports the counts, so the planner runs the candidates after them (an Apply, not a
// cartesian product whose sides it may order either way).
CALL (erasures, writes, done) {
  WITH erasures WHERE erasures IS NOT NULL AND writes IS NOT NULL AND done IS NOT NULL
  CALL () {
    WITH 1 AS _ WHERE $record_id IS NULL
    MATCH (entry:Scope {tenant: $tenant})
    WHERE entry.key IN $entry_scopes
    MATCH (entry)-[w:WITHIN*0..]->(s:Scope)
    WHERE all(x IN w WHERE x.recorded IS NULL OR x.recorded <= $as_of)
    WITH collect(DISTINCT s.key) AS reached
    MATCH (m)-[r:APPLIES_TO]->()
    USING INDEX SEEK r:APPLIES_TO(tenant, scope, policy, id, g)
    WHERE r.tenant = $tenant AND r.scope IN reached
      AND r.policy IS NOT NULL AND r.id IS NOT NULL AND r.g IS NOT NULL
    RETURN m, r.id AS id, r.policy AS policy, r.g AS g,
      NOT r.scope STARTS WITH 'run:' OR r.scope IN $own_runs AS in_scope
    UNION ALL
    WITH 1 AS _ WHERE $record_id IS NOT NULL
    // Planned against a nearly empty database, this branch was once a scan of the Memory index
    // (seen in a test): the record is sought by its key, always.
    MATCH (m:Memory {tenant: $tenant, id: $record_id})-[r:APPLIES_TO]->(s:Scope)
    USING INDEX SEEK m:Memory(tenant, id)
    RETURN m, r.id AS id, r.policy AS policy, r.g AS g, (s.type <> 'run' OR s.key IN $own_runs) AND EXISTS {
      MATCH (entry:Scope {tenant: $tenant})-[w:WITHIN*0..]->(s)
      WHERE entry.key IN $entry_scopes AND all(x IN w WHERE x.recorded IS NULL OR x.recorded <= $as_of)
    } AS in_scope
  }
  // A record recorded after $as_of was no candidate then (graphmem.model.gate.unknown_at);
  // asked about by id, it is not_yet_valid. Such a row (`later`) stays only to report
  // the earliest knowledge time at which one becomes a candidate (`later_at`).
  WITH m, id, policy, g, in_scope,
    $record_id IS NULL AND g[12] IS NOT NULL AND g[12] > $as_of AS later
  // A record overwritten after $as_of (approved, contested, resolved, merged) is seen
  // as the version it then had: the first kept version (m.v_until, ...) still held at
  // $as_of replaces the status and fingerprint tokens; a forgotten status
  // ($forgotten codes) holds at every time.
  // Read committed: the edge (g) and the node (m) may be read on either side of a
  // write's commit. Every write of m.changed_at writes g[13] too, so where the node's
  // kept versions are consulted, a node whose changed_at is not g[13] is such a torn
  // read (`torn` counts them; the client reads again). So is a candidate read twice
  // (`rows` more than `distinct_ids`): a write that changes its gate list moves its
  // entry in the index, and a scan that had passed the old entry meets the new one too.
  WITH m, id, policy, g, in_scope, later,
    NOT later AND g[13] IS NOT NULL AND $as_of < g[13] AND NOT g[1] IN $forgotten AS overwritten
  WITH m, id, policy, g, in_scope, later, overwritten,
    overwritten AND coalesce(m.changed_at, -9223372036854775807) <> g[13] AS torn,
    CASE WHEN overwritten THEN coalesce(m.v_until, []) ELSE [] END AS until
  WITH m, id, policy, g, in_scope, later, overwritten, torn,
    head([i IN range(0, size(until) - 1) WHERE until[i] > $as_of]) AS v
  WITH m, id, policy, in_scope, later, overwritten, v, torn, CASE WHEN v IS NULL THEN g
    ELSE g[0..1] + [m.v_status[v]] + g[2..8] + [m.v_tok1[v], m.v_tok2[v]] + g[10..] END AS g
  WITH m, id, g, later, overwritten, v, torn, CASE
    WHEN later THEN null
    WHEN NOT $kind_mask[g[0]] THEN 'kind_not_requested'
    WHEN policy <> $policy THEN 'policy_mismatch'
    WHEN g[1] <> 0 THEN $statuses[g[1]]
    WHEN $as_of < g[12] THEN 'not_yet_valid'
    WHEN $now < g[2] THEN 'not_yet_valid'
    WHEN $now >= g[3] THEN 'expired'
    WHEN CASE WHEN g[13] IS NULL OR $as_of >= g[13] THEN g[10] <= $now
      ELSE EXISTS {
        MATCH (m)<-[e:SUPERSEDES]-(:Memory)
        WHERE e.at <= $now AND (e.recorded IS NULL OR e.recorded <= $as_of)
      } END THEN 'superseded'
    WHEN CASE WHEN g[13] IS NULL OR $as_of >= g[13] THEN g[11] <= $now
      ELSE EXISTS {
        MATCH (m)-[e:INVALIDATED_BY]->()
        WHERE e.at <= $now AND (e.recorded IS NULL OR e.recorded <= $as_of)
      } END THEN 'invalidated'
    WHEN NOT in_scope THEN 'scope_mismatch'
    WHEN g[4] > $clearance_rank THEN 'insufficient_clearance'
    WHEN g[0] = 3 AND g[5] = 0 THEN 'outcome_ineligible'
    WHEN g[0] = 3 AND NOT all(p IN m.preconditions WHERE p IN $environment) THEN 'precondition_unmet'
    ELSE ''
  END AS reason
  // `times`: per candidate, the valid times at which its verdict may change (start and
  // end of validity, superseded and invalidated at) and the knowledge times (recorded,
  // last change); `replayed`: how many candidates were read as of a knowledge time
  // before their last change, whose verdicts depend on their edges' own times too.
  RETURN collect(CASE WHEN NOT later THEN id END) AS ids,
    collect(CASE WHEN NOT later THEN g[8] END) AS first,
    collect(CASE WHEN NOT later THEN g[9] END) AS second,
    collect(CASE WHEN $fingerprints AND NOT later THEN
      CASE WHEN v IS NULL THEN [m.fingerprint, null] ELSE [m.v_fp[v], m.v_until[v]] END END) AS fingerprints, collect(reason) AS reasons,
    collect(CASE WHEN reason = '' THEN g[6] END) AS recency,
    collect(CASE WHEN $with_content AND reason = '' THEN [m.content, CASE WHEN g[7] = 1 THEN m.embedding END,
      CASE WHEN g[7] = 1 THEN m.embedding_model END] END)
      AS docs,
    collect(CASE WHEN NOT later THEN [g[2], g[3], g[10], g[11], g[12], g[13]] END) AS times,
    min(CASE WHEN later THEN g[12] END) AS later_at,
    count(CASE WHEN overwritten THEN 1 END) AS replayed,
    count(CASE WHEN torn THEN 1 END) AS torn, count(id) AS rows, count(DISTINCT id) AS distinct_ids
}
// Imports the report, so the count is read again after every candidate.
CALL (ids, writes, done) {
  OPTIONAL MATCH (after:GraphmemSchema {name: $lock_name})
  WHERE ids IS NOT NULL
  RETURN writes = done AND coalesce(after.writes, 0) = writes AS quiet
}
RETURN ids, first, second, fingerprints, reasons, recency, docs, times, later_at, replayed, torn, rows,
  distinct_ids, erasures, quiet
