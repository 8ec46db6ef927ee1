// Schema version 6: a record's kept-version bodies (m.v_body) are parallel to
// its kept-version times (m.v_until). A version kept before versions had
// bodies gets an empty one (a replay returns today's record for it), so lists
// of unequal length can only be a read torn by a write appending to them, and
// recall reads them again (graphmem.backends.neo4j). Data migration in
// batches; it only touches lists still unequal, so re-running is harmless.
MATCH (m:Memory)
WHERE m.v_until IS NOT NULL AND size(coalesce(m.v_body, [])) < size(m.v_until)
CALL (m) {
  SET m.v_body = [i IN range(1, size(m.v_until) - size(coalesce(m.v_body, []))) | ''] + coalesce(m.v_body, [])
} IN TRANSACTIONS OF 10000 ROWS
