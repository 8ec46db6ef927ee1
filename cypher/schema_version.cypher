// The schema version applied so far (none before the first setup), and whether
// records written before encryption are still stored (schema_v5.cypher).
OPTIONAL MATCH (v:GraphmemSchema {name: 'graphmem'})
RETURN v.version AS version, coalesce(v.plaintext, false) AS plaintext
