// The schema version applied so far (none before the first setup).
OPTIONAL MATCH (v:GraphmemSchema {name: 'graphmem'})
RETURN v.version AS version
