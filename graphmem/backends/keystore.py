"""Where the Neo4j backend keeps the data keys its stored text is encrypted under.

Erasing a record on Neo4j deletes its data key here: the ciphertext Neo4j keeps in its
store files and transaction logs can then never be read again (crypto-shredding). So this
store must be able to delete for real, and every client of one deployment must use the
same one: a key one client deletes must be gone for all of them.

``KeyStore`` is the protocol; ``SqliteKeyStore`` the default, one SQLite file with
``secure_delete`` on, whose write-ahead log is checkpointed in ``TRUNCATE`` mode after
every deletion, so a deleted key is in no page and no WAL frame when ``delete`` returns.
A KMS or Vault adapter implements the same four methods.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Protocol

from graphmem.backends.sql import sql
from graphmem.errors import BackendUnavailable

__all__ = ["KEYS_ENV", "KeyStore", "Owner", "SqliteKeyStore", "default_key_path"]

KEYS_ENV = "GRAPHMEM_KEYS"
Owner = Literal["record", "source", "tenant"]
"""What a key belongs to: a record's text, a source's locator and digest, or a tenant's
token key (the keyed hashes equality lookups match on)."""
_CHUNK = 500


def default_key_path() -> Path:
    """``$GRAPHMEM_KEYS``, else ``keys.sqlite3`` in the user's data directory for graphmem."""
    configured = os.environ.get(KEYS_ENV)
    if configured:
        return Path(configured)
    import platformdirs

    return Path(platformdirs.user_data_dir("graphmem", appauthor=False)) / "keys.sqlite3"


class KeyStore(Protocol):
    """256-bit keys by (tenant, owner, id) that can be deleted for good."""

    #: Where the keys live, for reports (a path, a KMS key ring, …).
    location: str

    def keys(self, tenant: str, owner: Owner, ids: Sequence[str], *, create: bool) -> dict[str, bytes]:
        """The keys of ``ids`` that exist; with ``create``, a new random key for each missing
        one (two clients creating one at once get the same key)."""
        ...

    def delete(self, tenant: str, owner: Owner, ids: Sequence[str]) -> None:
        """Delete these keys; when it returns, they are unrecoverable from this store."""
        ...

    def close(self) -> None: ...


class SqliteKeyStore:
    """Keys in one SQLite file (see the module docstring). Opened on first use."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_key_path()
        self.location = str(self.path)
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA secure_delete=ON")
                conn.execute(sql("keystore"))
            except (sqlite3.Error, OSError) as err:
                raise BackendUnavailable(
                    f"cannot open the key store {self.path}: {err}. Set {KEYS_ENV} to a writable file "
                    "that every client of this deployment shares",
                    code="key_store_unavailable",
                ) from err
            os.chmod(self.path, 0o600)
            self._conn = conn
        return self._conn

    def keys(self, tenant: str, owner: Owner, ids: Sequence[str], *, create: bool) -> dict[str, bytes]:
        wanted = sorted(set(ids))
        with self._lock:
            conn = self._db()
            found = self._select(conn, tenant, owner, wanted)
            missing = [i for i in wanted if i not in found]
            if create and missing:
                # INSERT OR IGNORE, then read back: a key another client created meanwhile wins.
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.executemany(
                        "INSERT OR IGNORE INTO keys (tenant, owner, id, key) VALUES (?, ?, ?, ?)",
                        [(tenant, owner, i, secrets.token_bytes(32)) for i in missing],
                    )
                    found.update(self._select(conn, tenant, owner, missing))
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
        return found

    @staticmethod
    def _select(conn: sqlite3.Connection, tenant: str, owner: str, ids: list[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for i in range(0, len(ids), _CHUNK):
            chunk = ids[i : i + _CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(
                f"SELECT id, key FROM keys WHERE tenant = ? AND owner = ? AND id IN ({marks})",  # noqa: S608
                (tenant, owner, *chunk),
            )
            found.update((rid, bytes(key)) for rid, key in rows)
        return found

    def delete(self, tenant: str, owner: Owner, ids: Sequence[str]) -> None:
        if not ids:
            return
        with self._lock:
            conn = self._db()
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(
                    "DELETE FROM keys WHERE tenant = ? AND owner = ? AND id = ?",
                    [(tenant, owner, i) for i in sorted(set(ids))],
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            # secure_delete zeroed the pages in the WAL; the checkpoint writes them over the
            # database's and truncates the log, so no frame keeps an old copy.
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if busy:
                raise BackendUnavailable(
                    f"deleted keys of {len(ids)} item(s), but another process held the key store's "
                    f"write-ahead log ({self.path}), so their old pages may still be in it; erase again",
                    code="key_store_busy",
                )

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
