// Write locks, one per tenant, taken by a write transaction before anything it
// reads to decide: $locks are the lock names of its tenants, sorted, so two
// transactions take them in one order. Updating a node holds its write lock
// until the transaction ends, so a second writer of a tenant waits here until
// the first has committed, then reads what it wrote (Neo4j reads at read
// committed; this is what makes a write's reads and writes one step). The
// nodes carry the GraphmemSchema label for its uniqueness constraint on name
// (graphmem_schema_name, schema v1): two first writers of a tenant merge one
// lock node, never two.
// `writes` counts the tenant's write transactions, this one included; once it
// has committed, the writer records that number as done (writes_done.cypher).
// A reader that finds both counts equal knows no counted write is still being
// applied (gate_state.cypher).
UNWIND $locks AS lock
MERGE (l:GraphmemSchema {name: lock})
SET l.writes = coalesce(l.writes, 0) + 1
RETURN lock, l.writes AS writes
