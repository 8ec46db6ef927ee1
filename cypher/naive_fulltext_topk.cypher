// The naive baseline the benchmark compares against (never used by recall):
// fulltext index top-k first, tenant filter after.
CALL db.index.fulltext.queryNodes('graphmem_memory_content', $query, {limit: $k})
YIELD node, score
WHERE node.tenant = $tenant
RETURN node.json AS json, score
