-- The embedded store's SQLite schema (graphmem.backends.sqlite_engine); every statement
-- is idempotent, so opening a store applies it whole.
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    tenant TEXT NOT NULL, id TEXT NOT NULL, scope TEXT NOT NULL,
    kind TEXT NOT NULL, status TEXT NOT NULL, policy TEXT NOT NULL,
    content_hash TEXT NOT NULL, fingerprint TEXT NOT NULL,
    start TEXT, stop TEXT, recency REAL NOT NULL, sensitivity INTEGER NOT NULL,
    succeeded INTEGER NOT NULL, preconditions TEXT NOT NULL,
    superseded_at TEXT, invalidated_at TEXT,
    content TEXT NOT NULL, embedding TEXT, body TEXT NOT NULL,
    known_from TEXT, changed_at TEXT, embedding_model TEXT,
    era INTEGER NOT NULL DEFAULT 0,
    UNIQUE (tenant, id)
);
-- A row's era is where the table ended when the row was inserted: its largest rowid over 2^15.
-- The two indexes whose entries a write puts at a place set by the record (its scope, its
-- content hash) key on (tenant, era) first. A batch spread over many scopes, or with random
-- hashes, then writes into the part of each index of the latest era (at most 32,768 entries,
-- a few hundred pages) rather than into pages spread over the whole table. A read seeks each
-- era the tenant has (31 at 1M records), one seek finding the next.
CREATE INDEX IF NOT EXISTS records_scope_era ON records (tenant, era, scope);
-- Duplicate lookups by content hash key on its first 16 hex digits (64 bits, and the lookup
-- compares the whole hash too).
CREATE INDEX IF NOT EXISTS records_hash_era ON records (tenant, era, substr(content_hash, 1, 16));
-- Listings by status look for the few records not active (pending approval, contested, …).
CREATE INDEX IF NOT EXISTS records_status ON records (tenant, status) WHERE status != 'active';
CREATE TABLE IF NOT EXISTS tags (
    tenant TEXT NOT NULL, tag TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (tenant, tag, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tags_record ON tags (tenant, id);
CREATE TABLE IF NOT EXISTS sources (
    tenant TEXT NOT NULL, id TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (tenant, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS cites (
    tenant TEXT NOT NULL, source TEXT NOT NULL, record TEXT NOT NULL,
    PRIMARY KEY (tenant, source, record)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS cites_record ON cites (tenant, record);
CREATE TABLE IF NOT EXISTS derived (
    tenant TEXT NOT NULL, child TEXT NOT NULL, parent TEXT NOT NULL,
    PRIMARY KEY (tenant, child, parent)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS derived_parent ON derived (tenant, parent);
CREATE TABLE IF NOT EXISTS scopes (
    tenant TEXT NOT NULL, key TEXT NOT NULL, rev INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (tenant, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS within (
    tenant TEXT NOT NULL, child TEXT NOT NULL, parent TEXT NOT NULL, seq INTEGER NOT NULL,
    recorded TEXT,
    PRIMARY KEY (tenant, child, parent)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS within_parent ON within (tenant, parent);
CREATE TABLE IF NOT EXISTS related (
    tenant TEXT NOT NULL, a TEXT NOT NULL, type TEXT NOT NULL, b TEXT NOT NULL, seq INTEGER NOT NULL,
    recorded TEXT,
    PRIMARY KEY (tenant, a, type, b)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS related_b ON related (tenant, b);
CREATE TABLE IF NOT EXISTS lineage (
    tenant TEXT NOT NULL, label TEXT NOT NULL, src TEXT NOT NULL, dst TEXT NOT NULL,
    dst_is_source INTEGER NOT NULL, at TEXT NOT NULL, reason TEXT, seq INTEGER NOT NULL,
    recorded TEXT,
    PRIMARY KEY (tenant, src, label, dst, dst_is_source)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS lineage_dst ON lineage (tenant, dst, label);
-- Earlier versions of overwritten records (status, fingerprint and the whole record until a
-- recorded change), for replays as of an earlier knowledge time. A version kept by format 3
-- has no body: a replay returns today's record for it.
CREATE TABLE IF NOT EXISTS versions (
    tenant TEXT NOT NULL, id TEXT NOT NULL, until TEXT NOT NULL, status TEXT NOT NULL,
    fingerprint TEXT NOT NULL, body TEXT, PRIMARY KEY (tenant, id, until)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY, tenant TEXT NOT NULL, at_us INTEGER NOT NULL, body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_time ON audit (tenant, at_us, seq);
CREATE TABLE IF NOT EXISTS audit_records (
    tenant TEXT NOT NULL, record TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (tenant, record, seq)
) WITHOUT ROWID;
-- How many committed writes erased text of each tenant (one more per erasing write, in its
-- transaction): a process's gate probe reads it, and purges what it holds of a tenant
-- whose count grew, whichever process erased. Added on open to a file written before it.
CREATE TABLE IF NOT EXISTS erasures (
    tenant TEXT NOT NULL PRIMARY KEY, count INTEGER NOT NULL
) WITHOUT ROWID;
-- A scope's revision changes with every write to a record applying to it, in the writing
-- transaction: gate verdicts cached under a revision are never served after a change,
-- whichever process made it. Inserts bump it once per batch (the backend); updates here.
CREATE TRIGGER IF NOT EXISTS records_upd AFTER UPDATE ON records BEGIN
    INSERT INTO scopes (tenant, key, rev) VALUES (NEW.tenant, NEW.scope, 1)
    ON CONFLICT (tenant, key) DO UPDATE SET rev = rev + 1;
    UPDATE scopes SET rev = rev + 1 WHERE tenant = OLD.tenant AND key = OLD.scope AND OLD.scope != NEW.scope;
END;
