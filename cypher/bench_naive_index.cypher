// The benchmark's naive baseline only: a fulltext index over a plaintext copy
// of the bench tenant's synthetic records (graphmem's own nodes hold their text
// encrypted since schema 5, so no index over them can rank it).
CREATE FULLTEXT INDEX graphmem_bench_naive IF NOT EXISTS
FOR (d:BenchNaiveDoc) ON EACH [d.content]
