// Schema version 5: text-bearing properties are written encrypted or as keyed
// tokens (graphmem.backends.neo4j_crypt), so the fulltext index on m.content
// would index ciphertext: it goes (recall ranks the gate's survivors in the
// client). Records already stored in clear (no sealed copy, not a tombstone)
// stay so until `graphmem migrate --encrypt` rewrites them; the schema node
// says so, and erase is refused meanwhile (plaintext_store).
DROP INDEX graphmem_memory_content IF EXISTS;
OPTIONAL MATCH (m:Memory)
WHERE m.sealed IS NULL AND m.status <> 'erased'
WITH m LIMIT 1
MERGE (v:GraphmemSchema {name: 'graphmem'})
SET v.plaintext = m IS NOT NULL
