-- The key store's one table (graphmem.backends.keystore): a data key per (tenant, owner, id).
CREATE TABLE IF NOT EXISTS keys (
    tenant TEXT NOT NULL, owner TEXT NOT NULL, id TEXT NOT NULL, key BLOB NOT NULL,
    PRIMARY KEY (tenant, owner, id)
) WITHOUT ROWID
