// The dimensions of the existing embedding index, if there is one.
SHOW VECTOR INDEXES YIELD name, options
WHERE name = 'graphmem_memory_embedding'
RETURN options.indexConfig.`vector.dimensions` AS dimensions
