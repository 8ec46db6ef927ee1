// The gate probe (one small read): what a context's verdicts depend on besides
// its own terms, read before anything else, so that it is never newer than a
// gate report read after it.
//   writes: how many write transactions of the tenant have begun to commit (its
//     lock node's count, lock_tenants.cypher: every write of the tenant's
//     records, sources, lineage or scopes takes that lock first, in any process),
//     and done: the greatest of them whose writer saw its commit return
//     (writes_done.cypher); both 0 before the first write. Equal, no counted
//     write is still being applied: verdicts a client derives from a gate report
//     read after this probe hold while the counts stay at this number (and the
//     read's times stay between the report's boundaries, gate.cypher's `times`).
//   erasures: how many committed writes erased text of the tenant
//     (count_erasures.cypher).
//   reached: the scope keys reachable upward (WITHIN*0.., through edges recorded
//     by $as_of) from the context's entry scopes, as gate.cypher reaches them.
OPTIONAL MATCH (lock:GraphmemSchema {name: $lock_name})
OPTIONAL MATCH (done:GraphmemSchema {name: $done_name})
OPTIONAL MATCH (counter:GraphmemSchema {name: $erasures_name})
WITH coalesce(lock.writes, 0) AS writes, coalesce(done.writes, 0) AS done,
  coalesce(counter.erasures, 0) AS erasures
// Imports the counts, so the planner reads the scopes after them (an Apply).
CALL (writes) {
  WITH writes WHERE writes IS NOT NULL
  OPTIONAL MATCH (entry:Scope {tenant: $tenant})
  WHERE entry.key IN $entry_scopes
  OPTIONAL MATCH (entry)-[w:WITHIN*0..]->(s:Scope)
  WHERE all(x IN w WHERE x.recorded IS NULL OR x.recorded <= $as_of)
  RETURN collect(DISTINCT s.key) AS reached
}
RETURN writes, done, erasures, reached
