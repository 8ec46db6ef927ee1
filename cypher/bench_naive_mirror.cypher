// The benchmark's naive baseline only: plaintext copies of synthetic records,
// $rows = [{id, content, json}], in the index bench_naive_index.cypher makes.
UNWIND $rows AS row
MERGE (d:BenchNaiveDoc {tenant: $tenant, id: row.id})
SET d.content = row.content, d.json = row.json
