"""The embedded store's engine: one SQLite database, its schema, connections and transactions.

A persisted store is one database file in WAL mode with ``synchronous=FULL`` and
``secure_delete=ON``. Each thread has its own connection; a write holds SQLite's
single writer lock from ``BEGIN IMMEDIATE`` to ``COMMIT``, readers work on WAL
snapshots and never wait for it. Several processes may open one file: one writes
at a time (a writer waits up to ``busy_timeout`` seconds, then gets
``store_busy``), any number read. In memory there is one connection, and
operations take turns on it.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import sqlite3
import sys
import threading
from array import array
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from graphmem.backends.sql import schema_statement, sql
from graphmem.errors import BackendUnavailable, TransactionConflict
from graphmem.model import MemoryRecord
from graphmem.model.gate import validity_window

__all__ = [
    "CONNECTION_PRAGMAS",
    "DB_NAME",
    "FORMAT",
    "RECORD_ROW",
    "WAL_CHECKPOINT_BYTES",
    "Engine",
    "configure",
    "corrupt_error",
    "record_row",
    "ts",
]

DB_NAME = "graphmem.sqlite3"
FORMAT = 4
"""The store format: 0.1 stores (snapshot + journal) were format 1; format 2 had no
knowledge times (records' ``known_from`` and ``changed_at``, lineage's and within's
``recorded``, the ``versions`` table); format 3 had no ``recorded`` on scope relations
(``related``) and kept versions without their bodies (``versions.body``). Formats 2 and
3 are migrated in place when opened, and so is a format 4 file written before records
had an ``embedding_model`` column (the column is added; its records name no model) or
before the ``erasures`` table (it is created: no erase counted yet)."""

_SCHEMA = sql("schema")
_GENERATION = "SELECT value FROM meta WHERE key = 'generation'"
# Every connection's settings (then, on a file, WAL mode and synchronous=FULL): pages of 8 KiB
# in a new file (a file keeps the size it was made with), secure delete, 32 MiB of page cache
# (the gate's index pages stay in memory) and page checks on read. A record's row is about
# 1.8 KB, so a 4 KiB page holds two and a batch of 5,000 records appends 2,500 pages to the
# table: 8 KiB pages halve the pages a batch writes and the B-trees' depth (1M records load
# 6% faster, and the last tenth's batches 25,000 records/s against 13,000-18,000).
CONNECTION_PRAGMAS = (
    "PRAGMA page_size = 8192",
    "PRAGMA secure_delete = ON",
    "PRAGMA cache_size = -32768",
    "PRAGMA cell_size_check = ON",
)
WAL_CHECKPOINT_BYTES = 40 << 20
"""A connection checkpoints once the WAL holds this much (SQLite's default is 1,000 pages): a
batch of a few thousand records writes more than 1,000 pages, so the default checkpoints after
every commit and copies each index page a batch dirtied to the database file again and
again. An erase still empties the WAL when it commits (``Engine.checkpoint``)."""


def configure(conn: sqlite3.Connection) -> None:
    """Apply ``CONNECTION_PRAGMAS`` and the checkpoint threshold (in the file's pages) to ``conn``."""
    for pragma in CONNECTION_PRAGMAS:
        conn.execute(pragma)
    page = int(conn.execute("PRAGMA page_size").fetchone()[0])
    conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_CHECKPOINT_BYTES // page}")


_WAL_HEADER = 96  # the wal-index header: two copies of 48 bytes, at the start of the -shm file


RECORD_ROW = (
    "tenant, id, scope, kind, status, policy, content_hash, fingerprint, start, stop, recency, "
    "sensitivity, succeeded, preconditions, content, embedding, body, known_from, embedding_model"
)


_ZERO = timedelta(0)


def ts(value: datetime | None) -> str | None:
    """A fixed-width UTC timestamp: text order is time order.

    ``datetime.isoformat(timespec="microseconds")`` of the time in UTC, formatted field by
    field: two to three times faster, and a record write formats three of them."""
    if value is None:
        return None
    if value.tzinfo is not UTC and value.utcoffset() != _ZERO:
        value = value.astimezone(UTC)
    return _TS % (
        value.year,
        value.month,
        value.day,
        value.hour,
        value.minute,
        value.second,
        value.microsecond,
    )


_TS = "%04d-%02d-%02dT%02d:%02d:%02d.%06d+00:00"
_RECORD_JSON = MemoryRecord.__pydantic_serializer__.to_json
"""``MemoryRecord.model_dump_json`` as UTF-8 bytes, without the wrapper's keyword handling."""


def record_row(record: MemoryRecord) -> tuple[Any, ...]:
    """The ``records`` columns (``RECORD_ROW``) a record is stored as: the gate's inputs beside its JSON."""
    start, stop = validity_window(record)
    recency = (record.valid_from or record.event_time or record.created_at).timestamp()
    body = _RECORD_JSON(record)  # = record.model_dump_json().encode()
    return (
        record.tenant,
        record.id,
        record.scope,
        record.kind._value_,
        record.status._value_,
        record.policy,
        record.content_hash,
        hashlib.sha256(body).hexdigest(),  # = record.fingerprint()
        ts(start),
        ts(stop),
        recency,
        record.sensitivity.rank,
        int(record.succeeded),
        json.dumps(sorted(set(record.preconditions))) if record.preconditions else "[]",
        record.content,
        None if record.embedding is None else array("d", record.embedding).tobytes(),
        body.decode(),
        ts(record.created_at),  # the record's knowledge time: when the store recorded it
        record.embedding_model,
    )


_ADDED_COLUMNS = (("versions", "body"), ("related", "recorded"), ("records", "embedding_model"))
"""Columns of format 4 that a format 3 file (or, for the last, an earlier format 4 file) lacks."""


def _lacks_columns(conn: sqlite3.Connection) -> bool:
    """Whether a format 4 file was written before records had their ``embedding_model``."""
    return "embedding_model" not in _columns(conn, "records")


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    """The names of ``table``'s columns (``table`` is one of the schema's, never user input)."""
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


_ERA_INDEXES = ("records_scope_era", "records_hash_era")
"""The indexes keyed on (tenant, era) first (the schema's comment says why)."""


def _lacks_era_indexes(conn: sqlite3.Connection) -> bool:
    """Whether the file was written before its scope and content-hash indexes were keyed by era:
    it has ``records_scope`` on (tenant, scope), ``records_hash`` on the whole hash or
    ``records_hash_key`` on its first 16 hex digits, instead of ``_ERA_INDEXES``."""
    indexes = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    return not indexes.issuperset(_ERA_INDEXES)


def _lacks_table(conn: sqlite3.Connection, name: str) -> bool:
    """Whether the file has no table ``name`` (one added to format 4 without a format change)."""
    return (
        conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()
        is None
    )


def _is_busy(err: sqlite3.OperationalError) -> bool:
    text = str(err).lower()
    return "locked" in text or "busy" in text


def corrupt_error(where: str, err: BaseException) -> BackendUnavailable:
    return BackendUnavailable(
        f"the store file {where!r} is damaged ({err}); nothing was read from it. "
        f"Run `graphmem check --store file://{Path(where).parent}` to list the damage, "
        "and restore the store from a backup or an export",
        code="store_corrupt",
    )


def _is_corruption(err: sqlite3.DatabaseError) -> bool:
    text = str(err).lower()
    return "malformed" in text or "not a database" in text or "corrupt" in text


def _shm_mapping(path: Path | None) -> int:
    """The address at which this process maps the start of ``path``'s ``-shm`` file (SQLite's
    wal-index), from ``/proc/self/maps``; 0 when there is not exactly one such mapping of
    at least the header (then nothing is read through it)."""
    if path is None:
        return 0
    try:
        info = os.stat(os.path.realpath(path) + "-shm")
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            lines = maps.read().splitlines()
    except OSError:
        return 0
    device = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}"
    found: list[int] = []
    for line in lines:
        fields = line.split(maxsplit=5)
        if len(fields) < 6 or fields[3] != device or fields[4] != str(info.st_ino):
            continue
        low, high = (int(x, 16) for x in fields[0].split("-"))
        if int(fields[2], 16) == 0 and fields[1].startswith("r") and high - low >= _WAL_HEADER:
            found.append(low)
    return found[0] if len(found) == 1 else 0


class _ThreadState(threading.local):
    conn: sqlite3.Connection | None = None
    depth: int = 0
    after_read: list[Callable[[], None]] | None = None


class Engine:
    """Connections and transactions of one SQLite database (a file, or ``None`` for memory)."""

    def __init__(self, path: Path | None, *, busy_timeout: float = 5.0) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self._local = _ThreadState()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        # In memory there is one connection; an operation holds it from begin to end.
        self._turn = threading.RLock() if path is None else None
        # A file's writers in this process queue here before SQLite's write lock. SQLite's
        # own wait polls, so a writer can lose every poll to others that commit often (the
        # recall audit flush, an erase's checkpoint) and time out while the store is busy
        # but never held for long; the queue serves this process's writers in turn.
        self._writers = threading.Lock() if path is not None else None
        self._shared: sqlite3.Connection | None = None
        self.closed = False
        # SQLite's mapping of this file's wal-index header in the process (looked for at the
        # first generation read; None where there is none to use), and the generation read
        # when it last held given bytes.
        self._shm_sought = path is None or sys.platform != "linux"
        self._shm: ctypes.Array[ctypes.c_char] | None = None
        self._shm_lock = threading.Lock()
        self._seen: tuple[bytes, int] | None = None
        self.rolled_back: Callable[[], None] | None = None  # told before a write transaction rolls back
        conn = self._connect()
        try:
            with self._guard():
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if version in (2, 3) or (version == FORMAT and _lacks_columns(conn)):
                    self._migrate(conn)
                elif version not in (0, FORMAT):
                    raise BackendUnavailable(
                        f"the store file {str(path)!r} has format {version}; this graphmem reads "
                        f"format {FORMAT} — upgrade graphmem",
                        code="unsupported_format",
                    )
                if version != 0 and _lacks_era_indexes(conn):
                    self._era_indexes(conn)
                if version != 0 and _lacks_table(conn, "erasures"):
                    self._add_table(conn, "erasures")
                if version == 0:
                    # One transaction; every statement is idempotent, so two processes creating
                    # one store at once both succeed.
                    try:
                        conn.executescript(f"BEGIN IMMEDIATE;{_SCHEMA}PRAGMA user_version = {FORMAT};COMMIT;")
                    except BaseException:
                        if conn.in_transaction:
                            conn.execute("ROLLBACK")
                        raise
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        """Format 2 or 3 → 4 in one transaction. 2 → 3: the knowledge-time columns, each
        record's known from its ``created_at``; lineage and WITHIN edges of a format 2 store
        are known at every time. 3 → 4: scope relations' ``recorded`` (relations of a format 3
        store are known at every time) and kept versions' ``body`` (null for those format 3
        kept: a replay returns today's record for them) and records' ``embedding_model``
        (null: records written before it name no model), added to a format 4 file too."""
        try:
            conn.execute("BEGIN IMMEDIATE")
            version = conn.execute("PRAGMA user_version").fetchone()[0]  # another process may have won
            if version == 2:
                conn.execute("ALTER TABLE records ADD COLUMN known_from TEXT")
                conn.execute("ALTER TABLE records ADD COLUMN changed_at TEXT")
                conn.execute("ALTER TABLE lineage ADD COLUMN recorded TEXT")
                conn.execute("ALTER TABLE within ADD COLUMN recorded TEXT")
                conn.execute(schema_statement("versions"))
                rows = conn.execute("SELECT rowid, body FROM records").fetchall()
                conn.executemany(
                    "UPDATE records SET known_from = ? WHERE rowid = ?",
                    [(ts(datetime.fromisoformat(json.loads(b)["created_at"])), rowid) for rowid, b in rows],
                )
            if version in (2, 3, FORMAT):
                # Format 2's versions table is created with its body column.
                for table, column in _ADDED_COLUMNS:
                    if column not in _columns(conn, table):
                        conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} TEXT")
                conn.execute(f"PRAGMA user_version = {FORMAT}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    @staticmethod
    def _era_indexes(conn: sqlite3.Connection) -> None:
        """Give a file written before its indexes were keyed by era the era column (every stored
        row in era 0) and replace its scope and content-hash indexes by ``_ERA_INDEXES``, in one
        transaction (the same file otherwise: no format change). A store of 1M records builds
        the new indexes in a few seconds, once."""
        try:
            conn.execute("BEGIN IMMEDIATE")
            if _lacks_era_indexes(conn):  # another process may have replaced them
                if "era" not in _columns(conn, "records"):
                    conn.execute("ALTER TABLE records ADD COLUMN era INTEGER NOT NULL DEFAULT 0")
                for old in ("records_scope", "records_hash", "records_hash_key"):
                    conn.execute(f"DROP INDEX IF EXISTS {old}")
                for index in _ERA_INDEXES:
                    conn.execute(schema_statement(index))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    @staticmethod
    def _add_table(conn: sqlite3.Connection, name: str) -> None:
        """Create the schema's table ``name`` in a file written before it had one, in one
        transaction (idempotent: two processes opening the file at once both succeed)."""
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(schema_statement(name))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    # -- connections --------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self.closed:
            raise BackendUnavailable("the store is closed", code="store_closed")
        if self._turn is not None and self._shared is not None:
            return self._shared
        local = self._local
        if local.conn is not None:
            return local.conn
        target = ":memory:" if self.path is None else str(self.path)
        with self._guard():
            conn = sqlite3.connect(
                target, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
            )
            try:
                configure(conn)
                if self.path is not None:
                    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                    if str(mode).lower() != "wal":
                        raise BackendUnavailable(
                            f"cannot put {target!r} in WAL mode (got {mode!r}); "
                            "is it on a network file system?",
                            code="store_unsupported",
                        )
                    conn.execute("PRAGMA synchronous = FULL")
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            except BaseException:
                conn.close()
                raise
        with self._all_lock:
            self._all.append(conn)
        if self._turn is not None:
            self._shared = conn
        else:
            local.conn = conn
        return conn

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """Map SQLite's failures to the store's errors."""
        try:
            yield
        except sqlite3.DatabaseError as err:
            if _is_corruption(err):
                raise corrupt_error(str(self.path), err) from err
            if isinstance(err, sqlite3.OperationalError) and "locked" in str(err).lower():
                raise BackendUnavailable(
                    f"another writer held the store for more than {self.busy_timeout:g} s; "
                    "try again, or open the store with a longer busy_timeout",
                    code="store_busy",
                ) from err
            if isinstance(err, sqlite3.OperationalError) and "busy" in str(err).lower():
                # A read snapshot that tried to write after another writer committed: the
                # operation decided on an old state, so it runs again (``@transactional``).
                raise TransactionConflict(
                    "another writer changed the store during this read; run the operation again",
                    code="store_busy",
                ) from err
            raise

    # -- transactions -------------------------------------------------------

    @contextmanager
    def transaction(self, write: bool) -> Iterator[sqlite3.Connection]:
        """This thread's transaction: a write one (``BEGIN IMMEDIATE``) or a read snapshot.

        Nested blocks join the outer one. A write inside a read snapshot upgrades it.
        """
        local = self._local
        if local.depth:
            # Joined: a write block inside a read block upgrades at its first write statement.
            conn = self._connect() if self._turn is None else self._shared
            assert conn is not None
            local.depth += 1
            try:
                with self._guard():
                    yield conn
            finally:
                local.depth -= 1
            return
        if self._turn is not None:
            self._turn.acquire()
        writers = self._writers if write else None
        if writers is not None and not writers.acquire(timeout=self.busy_timeout):
            if self._turn is not None:
                self._turn.release()
            raise BackendUnavailable(
                f"other writers of this process held the store for more than {self.busy_timeout:g} s; "
                "try again, or open the store with a longer busy_timeout",
                code="store_busy",
            )
        try:
            conn = self._connect()
            with self._guard():
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            local.depth, local.after_read = 1, []
            try:
                with self._guard():
                    yield conn
                    conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    if self.rolled_back is not None:
                        self.rolled_back()  # before the rollback: no other writer has gone yet
                    conn.execute("ROLLBACK")
                raise
            finally:
                local.depth = 0
                after, local.after_read = local.after_read or [], None
                if writers is not None:
                    writers.release()  # the next writer goes while this one's steps run
                    writers = None
            for step in after:
                step()
        finally:
            if writers is not None:
                writers.release()
            if self._turn is not None:
                self._turn.release()

    def after(self, step: Callable[[], None]) -> None:
        """Run ``step`` once this thread's outermost transaction has ended (now, if none)."""
        pending = self._local.after_read
        if self._local.depth and pending is not None:
            pending.append(step)
        else:
            step()

    def generation(self) -> int:
        """The store's write generation: one more for every committed write (``bump``), the
        same number on every connection of every process.

        Outside a transaction it costs a memory read while nothing committed since the last
        read: every commit to a WAL database, by any connection of any process, rewrites the
        wal-index header (its change counter and last frame; a WAL reset its salts) before
        it returns, so while the header holds the bytes seen before the generation was last
        read, that generation is current. Otherwise, and inside a transaction (whose
        snapshot answers), one statement."""
        header = self._wal_header()
        seen = self._seen
        if header is not None and seen is not None and seen[0] == header:
            return seen[1]
        if self.path is None:
            with self.transaction(write=False) as conn:
                row = conn.execute(_GENERATION).fetchone()
        else:
            conn = self._connect()
            try:  # (the guard's context manager costs more than the statement: only on failure)
                row = conn.execute(_GENERATION).fetchone()
            except sqlite3.DatabaseError:
                with self._guard():
                    raise
        value = 0 if row is None else int(row[0])
        # Only a header read whole (its two copies agree, once initialised): read before the
        # statement, so a commit between the two leaves it stale and the next call reads again.
        if header is not None and header[:48] == header[48:] and header[12] == 1:
            self._seen = (header, value)
        return value

    def _wal_header(self) -> bytes | None:
        """The wal-index header as SQLite's own mapping of the ``-shm`` file holds it now;
        None inside a transaction, in memory, or where the mapping cannot be found.

        The mapping is read in place (no descriptor of ours: closing one would drop the
        process's POSIX locks on the file). It lives while any connection of this process
        has the file open: this engine keeps one open until ``close``, which takes it away
        under the same lock first."""
        if self._local.depth or (self._shm_sought and self._shm is None):
            return None
        with self._shm_lock:
            if not self._shm_sought and not self.closed:
                self._connect()  # the file is open and in WAL mode: SQLite has mapped it
                at = _shm_mapping(self.path)
                self._shm = (ctypes.c_char * _WAL_HEADER).from_address(at) if at else None
                self._shm_sought = True
            return None if self._shm is None else self._shm.raw

    @staticmethod
    def bump(conn: sqlite3.Connection) -> int:
        """Count a write in this write transaction: the generation it commits as."""
        (value,) = conn.execute(
            "INSERT INTO meta (key, value) VALUES ('generation', '1') "
            "ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1 RETURNING value"
        ).fetchone()
        return int(value)

    def checkpoint(self, wait: float = 0.05) -> bool:
        """Move every WAL frame into the database and truncate the WAL to zero bytes.

        True when it completed; readers still on an older snapshot can hold it off. A
        truncating checkpoint keeps new writers out while it waits for those readers, so
        one attempt waits at most ``wait`` seconds: callers retry, and writers get their
        turn in between instead of timing out behind it.
        """
        if self.path is None:
            return True
        conn = self._connect()
        with self._guard():
            conn.execute(f"PRAGMA busy_timeout = {max(1, int(wait * 1000))}")
            try:
                busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            except sqlite3.OperationalError as err:
                if not _is_busy(err):
                    raise
                busy = 1  # another connection is checkpointing or writing: try again
            finally:
                conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
        return not busy

    def close(self) -> None:
        with self._shm_lock:  # no header read runs on (or after) the connections closing
            self.closed = True
            self._shm, self._shm_sought = None, True
        with self._all_lock:
            conns, self._all = self._all, []
        for conn in conns:
            with suppress(sqlite3.Error):
                conn.close()
        self._shared = None
        self._local = _ThreadState()
