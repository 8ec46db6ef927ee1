// Every record is stored encrypted now (graphmem migrate --encrypt finished).
MERGE (v:GraphmemSchema {name: 'graphmem'})
SET v.plaintext = false, v.encrypted_at = $at
