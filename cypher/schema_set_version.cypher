// Record the applied schema version.
MERGE (v:GraphmemSchema {name: 'graphmem'})
SET v.version = $version, v.applied_at = $applied_at
