// The naive baseline the benchmark compares against (never used by recall):
// fulltext index top-k first, tenant filter after, over the benchmark's
// plaintext copy of its synthetic records (bench_naive_mirror.cypher).
CALL db.index.fulltext.queryNodes('graphmem_bench_naive', $query, {limit: $k})
YIELD node, score
WHERE node.tenant = $tenant
RETURN node.json AS json, score
