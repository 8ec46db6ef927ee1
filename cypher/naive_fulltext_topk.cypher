// The naive baseline the benchmark compares against (never used by recall):
// fulltext index top-k first, tenant filter after. ``record`` is what
// graphmem.backends.neo4j.record_of reads; ``json`` alone lacks status and tombstone.
CALL db.index.fulltext.queryNodes('graphmem_memory_content', $query, {limit: $k})
YIELD node, score
WHERE node.tenant = $tenant
RETURN node.json AS json, [node.json, node.status, node.tombstone, node.sealed, node.id] AS record, score
