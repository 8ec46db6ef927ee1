// One more committed erasing write of each tenant whose text this transaction
// erases: $names are their counter nodes' names (neo4j_rows.erasures_name), in
// the erase's own transaction, after its tenants' locks, so the count commits
// with the erase and writers of a tenant count one after another. The gate reads
// the count (gate.cypher) and a client that sees it grow drops what it holds of
// the tenant. The nodes carry the GraphmemSchema label for its uniqueness
// constraint on name: two first erasers of a tenant merge one node. Returns each
// node's count after this write (the writer's document cache need not drop what
// its own erase already dropped).
UNWIND $names AS name
MERGE (e:GraphmemSchema {name: name})
SET e.erasures = coalesce(e.erasures, 0) + 1
RETURN name, e.erasures AS erasures
