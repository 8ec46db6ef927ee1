-- The bench's bare tables (graphmem.bench.engine): a key-value table, the floor of a key seek
-- and a commit; and a table of bodies with no index at all, the floor of an ingest.
CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE bodies (id TEXT NOT NULL, body TEXT NOT NULL);
