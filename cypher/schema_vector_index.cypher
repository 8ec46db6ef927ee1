// The vector index on embeddings, created when embeddings are configured.
CREATE VECTOR INDEX graphmem_memory_embedding IF NOT EXISTS
FOR (m:Memory) ON m.embedding
OPTIONS {indexConfig: {`vector.dimensions`: $dimensions, `vector.similarity_function`: 'cosine'}}
