-- The bench's bare key-value table (graphmem.bench.engine): the floor of a key seek and a commit.
CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID
