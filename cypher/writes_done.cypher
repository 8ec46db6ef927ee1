// After a write transaction committed (its commit returned, so the server has
// applied all of it): record, per tenant, the number its lock gave it
// (lock_tenants.cypher) as done. $done = [[done node name, number], ...], sorted
// by name. The count only grows: a writer that finishes after a later one leaves
// the later number. A reader that finds a tenant's done count equal to its lock
// count knows that every write counted so far is visible whole (gate_state.cypher);
// while one is still being applied, or if its writer stopped before this, the
// counts differ and the reader keeps nothing it derives (the next write of the
// tenant to finish makes them equal again).
UNWIND $done AS d
MERGE (n:GraphmemSchema {name: d[0]})
SET n.writes = CASE WHEN coalesce(n.writes, 0) < d[1] THEN d[1] ELSE n.writes END
