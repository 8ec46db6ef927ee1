"""The embedded backend: graphmem's graph in SQLite tables, in memory or in one local file.

Records, sources, scopes, edges and the audit log are rows (see
``graphmem.backends.sqlite_engine`` for the schema); nothing is loaded whole at
open. Every read a store operation makes and every op it applies run in one
SQLite transaction of the calling thread (``write()`` / ``reading()``). Scope
and lineage traversals walk the edge tables.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import orjson

from graphmem.backends.base import (
    AddEdge,
    AppendAudit,
    Dependent,
    LineageEdgeRow,
    Op,
    ParentState,
    ParsedRecords,
    PutRecord,
    RelateScopes,
    ScopeWithin,
    UpdateRecord,
    erased_tenants,
)
from graphmem.backends.recall_log import RecallLog
from graphmem.backends.sqlite_check import check_database
from graphmem.backends.sqlite_engine import DB_NAME, Engine, corrupt_error, record_row, ts
from graphmem.errors import BackendUnavailable, ConflictError
from graphmem.model import (
    AuditEvent,
    DropReason,
    GateProbe,
    GateRows,
    Kind,
    MemoryRecord,
    ReadContext,
    Source,
    Status,
    scope_type,
)
from graphmem.model.base import json_reader
from graphmem.model.canonical import sha256
from graphmem.model.gate import Candidate, drop_reason, unknown_at

__all__ = ["EmbeddedBackend"]

_LEGACY_FILES = ("snapshot.json", "journal.log")
_KINDS = {k.value: k for k in Kind}
_STATUSES = {s.value: s for s in Status}
_ERASED = Status.ERASED.value
_read_record = json_reader(MemoryRecord)
_SOURCE_JSON = Source.__pydantic_serializer__.to_json  # = model_dump_json(), as UTF-8 bytes
_NO_QUOTE = {"quote"}  # quotes live only in the records that carry them


def _dt(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _micros(value: datetime) -> int:
    return int(value.timestamp() * 1_000_000)


_FORGOTTEN = frozenset({Status.REVOKED, Status.RELEASED, Status.ERASED})


_Kept = tuple[
    list[tuple[str | None, str, str | None, str, str]],
    list[tuple[str, str, str | None, str, str, str | None]],
    list[tuple[str | None, str, str]],
]
"""Versions an apply keeps: those copied from the stored records (until, status, body, tenant,
id) and those given whole (rows of ``versions``), and the records they changed (changed_at)."""


def _marks(n: int) -> str:
    return ",".join("?" * n)


ERA_SHIFT = 15
"""A new row's era (the second column of the scope and content-hash indexes) is where the
table ends, its largest rowid, over 2^ERA_SHIFT."""
_ERA = f"(SELECT coalesce(max(rowid), 0) FROM records) >> {ERA_SHIFT}"
_INSERT_RECORD = (
    "INSERT INTO records (tenant, id, scope, kind, status, policy, content_hash, fingerprint, start, stop, "
    "recency, sensitivity, succeeded, preconditions, content, embedding, body, known_from, embedding_model, "
    "superseded_at, invalidated_at, changed_at, era) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, "
    "(SELECT min(at) FROM lineage WHERE tenant = ?1 AND dst = ?2 AND label = 'SUPERSEDES' "
    "AND dst_is_source = 0), "
    "(SELECT min(at) FROM lineage WHERE tenant = ?1 AND src = ?2 AND label = 'INVALIDATED_BY'), "
    "(SELECT max(recorded) FROM lineage WHERE tenant = ?1 AND ((dst = ?2 AND label = 'SUPERSEDES' "
    "AND dst_is_source = 0) OR (src = ?2 AND label = 'INVALIDATED_BY'))), " + _ERA + ")"
)
# A replacement keeps the record's supersession and invalidation times: they belong to its edges.
_UPSERT_RECORD = (
    "INSERT INTO records (tenant, id, scope, kind, status, policy, content_hash, fingerprint, start, stop, "
    "recency, sensitivity, succeeded, preconditions, content, embedding, body, known_from, embedding_model, "
    "era) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, " + _ERA + ") "
    "ON CONFLICT (tenant, id) DO UPDATE SET scope = excluded.scope, kind = excluded.kind, "
    "status = excluded.status, policy = excluded.policy, content_hash = excluded.content_hash, "
    "fingerprint = excluded.fingerprint, start = excluded.start, stop = excluded.stop, "
    "recency = excluded.recency, sensitivity = excluded.sensitivity, succeeded = excluded.succeeded, "
    "preconditions = excluded.preconditions, content = excluded.content, embedding = excluded.embedding, "
    "body = excluded.body, known_from = excluded.known_from, embedding_model = excluded.embedding_model"
)
# An update keeps the record's scope, sources and parents (``UpdateRecord``): the scope index
# and the edge tables are not touched, and a row whose scope differs is left to the upsert.
_UPDATE_RECORD = (
    "UPDATE records SET kind = ?4, status = ?5, policy = ?6, content_hash = ?7, fingerprint = ?8, "
    "start = ?9, stop = ?10, recency = ?11, sensitivity = ?12, succeeded = ?13, preconditions = ?14, "
    "content = ?15, embedding = ?16, body = ?17, known_from = ?18, embedding_model = ?19 "
    "WHERE tenant = ?1 AND id = ?2 AND scope = ?3"
)
# Most updates (a status change) keep the content, and then its hash: not setting it spares
# the hash index an entry moved at a random place of it for every record.
_UPDATE_RECORD_SAME_CONTENT = _UPDATE_RECORD.replace("content_hash = ?7, ", "").replace(
    "AND scope = ?3", "AND scope = ?3 AND content_hash = ?7"
)
# A status change (``UpdateRecord.status_only``) rewrites only what it changes: the JSON body
# holds the record's and its sources' statuses, every other column stays as stored.
_UPDATE_STATUS = (
    "UPDATE records SET status = ?, fingerprint = ?, body = ? WHERE tenant = ? AND id = ? AND scope = ?"
)
_Mode = Literal["new", "replace", "update", "status"]
"""How a batch of records is written: created, upserted, updated in place, or only its
statuses changed (``_put_records``)."""
_BODY = "SELECT body, fingerprint FROM records"
# Each era the tenant's records have (``era IN eras``), one index seek apiece: the next era
# after each. The tenant is the statement's first parameter.
_ERAS = (
    "WITH RECURSIVE eras (era) AS (SELECT min(era) FROM records WHERE tenant = ?1 UNION ALL "
    "SELECT (SELECT min(era) FROM records WHERE tenant = ?1 AND era > eras.era) FROM eras "
    "WHERE era IS NOT NULL) "
)
# The hash's key in each era. The unary pluses keep SQLite from putting the hash for the column
# inside substr() (which then no longer matches the index's expression) and from walking the
# tenant's records in id order.
_BY_CONTENT_HASH = (
    _ERAS
    + _BODY
    + " WHERE tenant = ?1 AND era IN eras AND substr(content_hash, 1, 16) = ?2 AND +content_hash = ?3 "
    "ORDER BY +id"
)


def rows_in_scopes(columns: str, count: int) -> str:
    """A SELECT of ``columns`` of the records of ``count`` scopes (parameters 2 to count + 1;
    the tenant is the first): a seek of ``records_scope_era`` for each scope in each era the
    tenant has. More conditions may follow (``AND ...``, with parameters after the scopes)."""
    return (
        f"{_ERAS}SELECT {columns} FROM records INDEXED BY records_scope_era "
        f"WHERE tenant = ?1 AND era IN eras AND scope IN ({_marks(count)})"
    )


# Edge-table lookups join records with CROSS JOIN, which keeps the edge table the outer loop:
# given ORDER BY r.id, SQLite would otherwise walk every record of the tenant in id order.
_PARENTS = "SELECT parent FROM within WHERE tenant = ? AND child = ?"
# A row the gate drops at a knowledge time (the first parameter) and valid time (the second
# and third) and at every later pair, by its columns alone: last changed by then (so its
# columns are its state then: ``Candidate.version_at``, ``ends_known_at``), and not active,
# or superseded or invalidated by then (``drop_reason``). Timestamps are ``ts`` text.
_OUT_OF_USE = (
    "((changed_at IS NULL OR changed_at <= ?) AND (status != 'active' "
    "OR (superseded_at IS NOT NULL AND superseded_at <= ?) "
    "OR (invalidated_at IS NOT NULL AND invalidated_at <= ?)))"
)
_GATE_COLUMNS = (
    "id, fingerprint, kind, policy, status, start, stop, recency, sensitivity, succeeded, "
    "preconditions, superseded_at, invalidated_at, scope, content, embedding, known_from, changed_at, "
    "embedding_model"
)
# Every DERIVED_FROM edge (parent, child) below the stored records of a JSON list of ids,
# to stored children: the closure a cascade walks, in one statement.
_CLOSURE = (
    "WITH RECURSIVE down(id) AS ("
    "SELECT r.id FROM json_each(?2) j CROSS JOIN records r ON r.tenant = ?1 AND r.id = j.value "
    "UNION SELECT d.child FROM down CROSS JOIN derived d ON d.tenant = ?1 AND d.parent = down.id "
    "CROSS JOIN records r ON r.tenant = d.tenant AND r.id = d.child) "
    "SELECT d.parent, d.child FROM down CROSS JOIN derived d ON d.tenant = ?1 AND d.parent = down.id "
    "CROSS JOIN records r ON r.tenant = d.tenant AND r.id = d.child"
)
_CHANGES = (
    "SELECT label = 'SUPERSEDES', at, recorded FROM lineage "
    "WHERE tenant = ?1 AND dst = ?2 AND label = 'SUPERSEDES' AND dst_is_source = 0 "
    "UNION ALL SELECT 0, at, recorded FROM lineage "
    "WHERE tenant = ?1 AND src = ?2 AND label = 'INVALIDATED_BY'"
)


_COUNT_ERASURE = (
    "INSERT INTO erasures (tenant, count) VALUES (?, 1) ON CONFLICT (tenant) DO UPDATE SET count = count + 1"
)
# The version of each record of a JSON list of ids (the second parameter) held at a knowledge
# time (the third): the first one kept after it. SQLite takes the bare columns of a min()
# aggregate from the row that holds the minimum.
_HELD_AT = (
    "SELECT id, fingerprint, body, min(until) FROM versions "
    "WHERE tenant = ?1 AND until > ?3 AND id IN (SELECT value FROM json_each(?2)) GROUP BY id"
)
# The bodies of the records of a JSON list of ids, each followed by its fingerprint (joined by
# ``_UNIT``, records by ``_RECORD``: characters no stored JSON body holds raw), and, with a
# knowledge time (the third parameter; else NULL), ``_HELD_AT``'s versions as a JSON list of
# [id, fingerprint, body]: a fetch by ids in one row, so one step of SQLite.
_UNIT, _RECORD = "\x1f", "\x1e"
_FETCH = (
    "SELECT (SELECT group_concat(body || char(31) || fingerprint, char(30)) FROM records "
    "WHERE tenant = ?1 AND id IN (SELECT value FROM json_each(?2))), "
    "CASE WHEN ?3 IS NOT NULL THEN (SELECT json_group_array(json_array(id, fingerprint, body)) "
    f"FROM ({_HELD_AT})) END"
)
_FETCH_CHUNK = 500
"""Ids a fetch statement takes at most: its one row stays far below SQLite's string limit."""
# The scopes reachable upward from a JSON list of entry scopes through the WITHIN edges
# recorded by a knowledge time (the third parameter), with their revisions, as a JSON list of
# [key, rev], and the tenant's erasure count: the gate probe in one row, so one step.
_REACH = (
    "WITH RECURSIVE up(key) AS (SELECT value FROM json_each(?2) "
    "UNION SELECT w.parent FROM up CROSS JOIN within w ON w.tenant = ?1 AND w.child = up.key "
    "AND (w.recorded IS NULL OR w.recorded <= ?3)) "
    "SELECT (SELECT json_group_array(json_array(up.key, coalesce(s.rev, 0))) FROM up "
    "LEFT JOIN scopes s ON s.tenant = ?1 AND s.key = up.key), "
    "coalesce((SELECT count FROM erasures WHERE tenant = ?1), 0)"
)


_CHANGES_HELD = 1024
"""Writes whose changed ids ``changed_since`` can tell (older ones: ``None``)."""
_TOUCHED_HELD = 64
"""A write that touches more records is told as touching any (``None``): what is held stays small."""


def _touched(ops: Sequence[Op]) -> frozenset[str] | None:
    """The records whose gate inputs ``ops`` may change: the records written and both ends of
    lineage edges; ``None`` for anything else that changes the gate (scope relations)."""
    ids: set[str] = set()
    for op in ops:
        if isinstance(op, PutRecord | UpdateRecord):
            ids.add(op.record.id)
        elif isinstance(op, AddEdge):
            ids.update((op.src, op.dst))
        elif not isinstance(op, AppendAudit):
            return None
        if len(ids) > _TOUCHED_HELD:
            return None
    return frozenset(ids)


class EmbeddedBackend:
    """SQLite underneath: ``directory`` holds the store's database file; ``None`` keeps it in memory.

    ``busy_timeout`` is how long a writer waits for another process's write (then
    ``store_busy``).
    """

    copies_fingerprints = True
    """A ``PriorVersion`` without a fingerprint keeps the one stored for the record."""

    def __init__(
        self,
        directory: str | Path | None = None,
        *,
        busy_timeout: float = 5.0,
        recall_audit_delay: float = 0.05,
    ) -> None:
        self.directory = None if directory is None else Path(directory)
        path = None
        if self.directory is not None:
            path = self.directory / DB_NAME
            self._prepare_directory(self.directory, path)
        self.engine = Engine(path, busy_timeout=busy_timeout)
        self._recall_audit_delay = recall_audit_delay
        # Committed generation -> the ids of the records whose gate inputs that write may have
        # changed (None: any); generations this backend did not write are not here.
        self._changes: OrderedDict[int, frozenset[str] | None] = OrderedDict()
        self._changes_lock = threading.Lock()
        self._epoch = 0  # one more for every rolled-back write transaction
        self.engine.rolled_back = self._rolled_back
        self._recalls = RecallLog(self._append_recalls, recall_audit_delay, self.write)

    @staticmethod
    def _prepare_directory(directory: Path, path: Path) -> None:
        legacy = [name for name in _LEGACY_FILES if (directory / name).exists()]
        if legacy:
            raise BackendUnavailable(
                f"{str(directory)!r} holds a graphmem 0.1 store ({', '.join(legacy)}); "
                f"run `graphmem migrate {directory}` to convert it, then open it again",
                code="store_needs_migration",
            )
        if not path.exists() and any(
            (directory / (DB_NAME + suffix)).exists() for suffix in ("-wal", "-journal")
        ):
            raise BackendUnavailable(
                f"the database file {str(path)!r} is missing but its log is there: the store was "
                "damaged; restore it from a backup or an export",
                code="store_corrupt",
            )
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise BackendUnavailable(
                f"cannot open the store directory {str(directory)!r}: {err.strerror}; "
                "check the path and its permissions"
            ) from err

    # -- transactions -------------------------------------------------------

    def write(self) -> AbstractContextManager[object]:
        return self.engine.transaction(write=True)

    def reading(self) -> AbstractContextManager[object]:
        return self.engine.transaction(write=False)

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self.engine.transaction(write=False) as conn:
            yield conn

    # -- writes -------------------------------------------------------------

    def apply(self, ops: Sequence[Op]) -> None:
        """Every op or none: a savepoint inside the caller's transaction (or its own)."""
        erased = erased_tenants(ops)  # the one definition of an erasing write
        generation = self._apply(ops, erased)
        touched = _touched(ops)
        # Told once committed: a reader that sees the generation before that reads again.
        self.engine.after(lambda: self._committed(generation, touched))
        if erased:
            self.engine.after(lambda: self._after_erase(erased))

    def _committed(self, generation: int, touched: frozenset[str] | None) -> None:
        with self._changes_lock:  # a generation is committed once: nothing to merge
            self._changes[generation] = touched
            while len(self._changes) > _CHANGES_HELD:
                self._changes.popitem(last=False)

    def _rolled_back(self) -> None:
        with self._changes_lock:
            self._epoch += 1

    def _apply(self, ops: Sequence[Op], erased: set[str]) -> int:
        """Write ``ops`` in one savepoint; ``erased`` (``erased_tenants(ops)``) each gain one erasure."""
        with self.engine.transaction(write=True) as conn:
            conn.execute("SAVEPOINT apply")
            try:
                batch: list[MemoryRecord] = []
                batched: set[str] = set()
                events: list[AuditEvent] = []
                kept: _Kept = ([], [], [])
                mode: _Mode = "new"

                def flush() -> None:
                    if batch:
                        self._copy_versions(conn, kept)  # before the batch overwrites them
                        self._put_records(conn, batch, mode)
                        batch.clear()
                        batched.clear()

                for op in ops:
                    if isinstance(op, PutRecord | UpdateRecord):
                        record = op.record
                        if op.prior is not None and op.prior.fingerprint is None and record.id in batched:
                            flush()  # the version to copy is in the batch: write it first
                        self._keep_version(conn, op, kept)
                        wanted: _Mode = (
                            ("status" if op.status_only else "update")
                            if isinstance(op, UpdateRecord)
                            else "replace"
                            if op.replace
                            else "new"
                        )
                        if wanted != mode:
                            flush()
                        batch.append(record)
                        batched.add(record.id)
                        mode = wanted
                        continue
                    flush()
                    if isinstance(op, AppendAudit):
                        events.append(op.event)
                        continue
                    if events:
                        self._append_audit(conn, events)
                        events = []
                    self._apply_one(conn, op)
                flush()
                if events:
                    self._append_audit(conn, events)
                self._write_versions(conn, kept)
                if erased:  # in this transaction: a probe that sees the erase sees the count
                    conn.executemany(_COUNT_ERASURE, [(t,) for t in sorted(erased)])
                generation = self.engine.bump(conn)
            except BaseException:
                conn.execute("ROLLBACK TO apply")
                conn.execute("RELEASE apply")
                raise
            conn.execute("RELEASE apply")
            return generation

    @classmethod
    def _keep_version(cls, conn: sqlite3.Connection, op: PutRecord | UpdateRecord, kept: _Kept) -> None:
        """Add the version ``op`` replaces (if it names one) to ``kept``, written by
        ``_write_versions``; an erase removes every kept one (those still in ``kept`` first)."""
        record = op.record
        if record.status is Status.ERASED:
            cls._write_versions(conn, kept)
            conn.execute("DELETE FROM versions WHERE tenant = ? AND id = ?", (record.tenant, record.id))
            return
        prior = op.prior
        # Another status is another fingerprint: only a change that keeps it needs the hash.
        if prior is None or (prior.status is record.status and prior.fingerprint == record.fingerprint()):
            return
        until = ts(prior.until)
        body = None if prior.record is None else prior.record.model_dump_json()
        if prior.fingerprint is None:
            # The stored record's own fingerprint, copied before the record is overwritten
            # (``_copy_versions``, before its batch is written): no hashing of every forgotten
            # record again.
            kept[0].append((until, prior.status.value, body, record.tenant, record.id))
        else:
            kept[1].append((record.tenant, record.id, until, prior.status.value, prior.fingerprint, body))
        if record.status not in _FORGOTTEN:  # a replay sees a forgotten record as it is now
            kept[2].append((until, record.tenant, record.id))

    @staticmethod
    def _copy_versions(conn: sqlite3.Connection, kept: _Kept) -> None:
        """Keep the stored versions ``kept`` names by copying their rows, in one statement."""
        if kept[0]:
            conn.executemany(
                "INSERT INTO versions (tenant, id, until, status, fingerprint, body) "
                "SELECT tenant, id, ?, ?, fingerprint, ? FROM records WHERE tenant = ? AND id = ? "
                "ON CONFLICT (tenant, id, until) DO NOTHING",
                kept[0],
            )
            kept[0].clear()

    @classmethod
    def _write_versions(cls, conn: sqlite3.Connection, kept: _Kept) -> None:
        cls._copy_versions(conn, kept)
        _, versions, changed = kept
        if versions:
            conn.executemany(
                "INSERT INTO versions (tenant, id, until, status, fingerprint, body) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, id, until) DO NOTHING",
                versions,
            )
            versions.clear()
        if changed:
            conn.executemany(
                "UPDATE records SET changed_at = ?1 WHERE tenant = ?2 AND id = ?3 "
                "AND (changed_at IS NULL OR changed_at < ?1)",
                changed,
            )
            changed.clear()

    def _after_erase(self, tenants: set[str]) -> None:
        """Once the erase has committed: erased text leaves the WAL (every frame checkpointed,
        the log truncated)."""
        deadline = time.monotonic() + 3 * self.engine.busy_timeout
        while not self.engine.checkpoint():
            if time.monotonic() > deadline:
                raise BackendUnavailable(
                    "the erase is committed, but readers held the write-ahead log past "
                    f"{3 * self.engine.busy_timeout:g} s, so erased text may still be in it; run "
                    "`graphmem check` after they finish, or forget again",
                    code="store_busy",
                )
            time.sleep(0.02)  # writers waiting behind the last attempt go first

    def _apply_one(self, conn: sqlite3.Connection, op: Op) -> None:
        if isinstance(op, ScopeWithin):
            self._scope(conn, op.tenant, op.child, op.parent)
            conn.execute(
                "INSERT OR IGNORE INTO within (tenant, child, parent, recorded, seq) "
                "VALUES (?, ?, ?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM within))",
                (op.tenant, op.child, op.parent, ts(op.recorded)),
            )
        elif isinstance(op, RelateScopes):
            self._scope(conn, op.tenant, op.a, op.b)
            conn.execute(
                "INSERT OR IGNORE INTO related (tenant, a, type, b, recorded, seq) "
                "VALUES (?, ?, ?, ?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM related))",
                (op.tenant, op.a, op.rel_type, op.b, ts(op.recorded)),
            )
        elif isinstance(op, AddEdge):
            self._add_edge(conn, op)

    @staticmethod
    def _scope(conn: sqlite3.Connection, tenant: str, *keys: str) -> None:
        conn.executemany(
            "INSERT OR IGNORE INTO scopes (tenant, key) VALUES (?, ?)", [(tenant, k) for k in keys]
        )

    def _put_records(self, conn: sqlite3.Connection, records: Sequence[MemoryRecord], mode: _Mode) -> None:
        if mode == "status":
            self._put_statuses(conn, records)
            return
        rows: list[tuple[Any, ...]] = []
        tags: list[tuple[str, str, str]] = []
        # One body per source, the batch's last: what upserting every record's copy in turn leaves.
        sources: dict[tuple[str, str], Source] = {}
        cites: list[tuple[str, str, str]] = []
        derived: list[tuple[str, str, str]] = []
        for record in records:
            t, rid = record.tenant, record.id
            rows.append(record_row(record))
            tags.extend((t, tag, rid) for tag in record.tags)
            for source in record.sources:
                # Quotes live only in the records that carry them, so erasing a record erases its quotes.
                sources[t, source.id] = source
                cites.append((t, source.id, rid))
            derived.extend((t, rid, p) for p in record.derived_from)
        if mode == "update":
            updated = conn.executemany(_UPDATE_RECORD_SAME_CONTENT, rows).rowcount == len(rows)
            if not updated:  # some content changed (an erase): set every row's hash too
                updated = conn.executemany(_UPDATE_RECORD, rows).rowcount == len(rows)
            if not updated:
                conn.executemany(_UPSERT_RECORD, rows)  # a record missing, or moved: as a replace
                mode = "replace"
            conn.executemany("DELETE FROM tags WHERE tenant = ? AND id = ?", [(r[0], r[1]) for r in rows])
        elif mode == "replace":
            conn.executemany(_UPSERT_RECORD, rows)
            conn.executemany("DELETE FROM tags WHERE tenant = ? AND id = ?", [(r[0], r[1]) for r in rows])
        else:
            try:
                conn.executemany(_INSERT_RECORD, rows)
            except sqlite3.IntegrityError:
                raise ConflictError(
                    "a record id of this batch already exists in its tenant; ids are unique per tenant; "
                    "nothing was written",
                    code="duplicate_id",
                ) from None
        conn.executemany(
            "INSERT INTO scopes (tenant, key, rev) VALUES (?, ?, 1) "
            "ON CONFLICT (tenant, key) DO UPDATE SET rev = rev + 1",
            sorted({(r[0], r[2]) for r in rows}),
        )
        conn.executemany("INSERT OR IGNORE INTO tags (tenant, tag, id) VALUES (?, ?, ?)", tags)
        conn.executemany(
            "INSERT INTO sources (tenant, id, body) VALUES (?, ?, ?) "
            "ON CONFLICT (tenant, id) DO UPDATE SET body = excluded.body",
            [(t, sid, _SOURCE_JSON(src, exclude=_NO_QUOTE).decode()) for (t, sid), src in sources.items()],
        )
        if mode != "update":  # an update's citations and parents are those stored
            conn.executemany("INSERT OR IGNORE INTO cites (tenant, source, record) VALUES (?, ?, ?)", cites)
            conn.executemany(
                "INSERT OR IGNORE INTO derived (tenant, child, parent) VALUES (?, ?, ?)", derived
            )

    def _put_statuses(self, conn: sqlite3.Connection, records: Sequence[MemoryRecord]) -> None:
        """Write records whose statuses (their own, their sources') are all that changed: the
        status column and the body with its fingerprint, no other column, tag or edge."""
        rows: list[tuple[str, str, str, str, str, str]] = []
        sources: dict[tuple[str, str], Source] = {}
        for record in records:
            body = record.model_dump_json()
            rows.append((record.status.value, sha256(body), body, record.tenant, record.id, record.scope))
            for source in record.sources:
                sources[record.tenant, source.id] = source
        if conn.executemany(_UPDATE_STATUS, rows).rowcount != len(rows):
            self._put_records(conn, records, "update")  # a record missing, or moved: written whole
            return
        conn.executemany(
            "INSERT INTO scopes (tenant, key, rev) VALUES (?, ?, 1) "
            "ON CONFLICT (tenant, key) DO UPDATE SET rev = rev + 1",
            sorted({(r[3], r[5]) for r in rows}),
        )
        conn.executemany(
            "INSERT INTO sources (tenant, id, body) VALUES (?, ?, ?) "
            "ON CONFLICT (tenant, id) DO UPDATE SET body = excluded.body",
            [(t, sid, source.model_dump_json(exclude={"quote"})) for (t, sid), source in sources.items()],
        )

    @staticmethod
    def _add_edge(conn: sqlite3.Connection, op: AddEdge) -> None:
        at, recorded = ts(op.at), ts(op.recorded)
        conn.execute(
            "INSERT INTO lineage (tenant, label, src, dst, dst_is_source, at, reason, recorded, seq) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM lineage)) "
            # The same edge again keeps its earliest effect (the records' columns keep the minimum).
            "ON CONFLICT (tenant, src, label, dst, dst_is_source) DO UPDATE SET "
            "reason = CASE WHEN excluded.at < at THEN excluded.reason ELSE reason END, "
            "recorded = CASE WHEN excluded.at < at THEN excluded.recorded ELSE recorded END, "
            "at = min(at, excluded.at)",
            (op.tenant, op.label, op.src, op.dst, int(op.dst_is_source), at, op.reason, recorded),
        )
        if recorded is not None:
            conn.execute(
                "UPDATE records SET changed_at = ?1 WHERE tenant = ?2 AND id = ?3 "
                "AND (changed_at IS NULL OR changed_at < ?1)",
                (recorded, op.tenant, op.dst if op.label == "SUPERSEDES" else op.src),
            )
        if op.label == "SUPERSEDES":
            conn.execute(
                "UPDATE records SET superseded_at = ? WHERE tenant = ? AND id = ? "
                "AND (superseded_at IS NULL OR superseded_at > ?)",
                (at, op.tenant, op.dst, at),
            )
        else:
            conn.execute(
                "UPDATE records SET invalidated_at = ? WHERE tenant = ? AND id = ? "
                "AND (invalidated_at IS NULL OR invalidated_at > ?)",
                (at, op.tenant, op.src, at),
            )

    @staticmethod
    def _append_audit(conn: sqlite3.Connection, events: Sequence[AuditEvent]) -> None:
        """Append ``events`` in two statements, whatever their number: row by row, every row
        would hand the interpreter lock back and wait for it again, which under busy reader
        threads costs milliseconds a row and keeps every other writer waiting."""
        (last,) = conn.execute("SELECT coalesce(max(seq), 0) FROM audit").fetchone()
        seqs = range(last + 1, last + 1 + len(events))
        conn.execute(
            "INSERT INTO audit (seq, tenant, at_us, body) SELECT json_extract(value, '$[0]'), "
            "json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]') "
            "FROM json_each(?)",
            (
                orjson.dumps(
                    [
                        [q, e.tenant, _micros(e.at), e.model_dump_json()]
                        for q, e in zip(seqs, events, strict=True)
                    ]
                ).decode(),
            ),
        )
        links = [[e.tenant, rid, q] for q, e in zip(seqs, events, strict=True) for rid in e.record_ids]
        if links:
            conn.execute(
                "INSERT OR IGNORE INTO audit_records (tenant, record, seq) SELECT "
                "json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]') "
                "FROM json_each(?)",
                (orjson.dumps(links).decode(),),
            )

    # -- records ------------------------------------------------------------

    def _records_of(
        self, rows: Iterable[tuple[str, str]], parsed: ParsedRecords | None = None
    ) -> list[MemoryRecord]:
        """Records from (body, fingerprint) rows: a body that no longer hashes to its fingerprint
        was damaged on disk, and is refused rather than returned. A body equal to the one
        ``parsed`` holds for its fingerprint hashes to it: its record is reused."""
        out: list[MemoryRecord] = []
        for body, fingerprint in rows:
            held = None if parsed is None else parsed.get(fingerprint)
            if held is not None and held[0] == body:
                out.append(held[1])
                continue
            if sha256(body) != fingerprint:
                raise corrupt_error(str(self.engine.path), ValueError("a record's bytes changed on disk"))
            record = _read_record(body)
            if parsed is not None:
                parsed.put(fingerprint, body, record)
            out.append(record)
        return out

    def get(self, tenant: str, record_id: str) -> MemoryRecord | None:
        found = self._select(_BODY + " WHERE tenant = ? AND id = ?", (tenant, record_id))
        return found[0] if found else None

    def get_many(self, tenant: str, record_ids: Sequence[str]) -> list[MemoryRecord]:
        found = self._by_ids(tenant, record_ids)
        return [found[i] for i in record_ids if i in found]

    def _by_ids(
        self, tenant: str, record_ids: Sequence[str], parsed: ParsedRecords | None = None
    ) -> dict[str, MemoryRecord]:
        with self._read() as conn:
            return self._fetch(conn, tenant, record_ids, None, parsed)[0]

    def _fetch(
        self,
        conn: sqlite3.Connection,
        tenant: str,
        record_ids: Sequence[str],
        as_of: datetime | None,
        parsed: ParsedRecords | None,
    ) -> tuple[dict[str, MemoryRecord], dict[str, tuple[str, str | None]]]:
        """The stored records of ``record_ids`` by id and, with ``as_of``, ``_held_at``'s versions
        of them: one statement of one row per ``_FETCH_CHUNK`` ids."""
        found: dict[str, MemoryRecord] = {}
        held: dict[str, tuple[str, str | None]] = {}
        ids = list(dict.fromkeys(record_ids))
        for at in range(0, len(ids), _FETCH_CHUNK):
            bodies, versions = conn.execute(
                _FETCH,
                (tenant, json.dumps(ids[at : at + _FETCH_CHUNK]), None if as_of is None else ts(as_of)),
            ).fetchone()
            # A damaged body holding a separator splits wrongly: a piece without its fingerprint,
            # or a body that no longer hashes to it.
            pairs = [] if bodies is None else [item.rsplit(_UNIT, 1) for item in bodies.split(_RECORD)]
            if any(len(pair) != 2 for pair in pairs):
                raise corrupt_error(str(self.engine.path), ValueError("a record's bytes changed on disk"))
            found.update((r.id, r) for r in self._records_of(pairs, parsed))
            if versions is not None:
                held.update((rid, (fingerprint, body)) for rid, fingerprint, body in json.loads(versions))
        return found, held

    def existing_ids(self, tenant: str, record_ids: Sequence[str]) -> set[str]:
        ids = list(dict.fromkeys(record_ids))
        out: set[str] = set()
        with self._read() as conn:
            for at in range(0, len(ids), 500):
                chunk = ids[at : at + 500]
                out.update(
                    r[0]
                    for r in conn.execute(
                        f"SELECT id FROM records WHERE tenant = ? AND id IN ({_marks(len(chunk))})",
                        (tenant, *chunk),
                    )
                )
        return out

    def _select(self, sql: str, params: Sequence[Any]) -> list[MemoryRecord]:
        with self._read() as conn:
            return self._records_of(conn.execute(sql, params))

    def all_records(self, tenant: str) -> list[MemoryRecord]:
        return self._select(_BODY + " WHERE tenant = ? ORDER BY id", (tenant,))

    def records_with_status(self, tenant: str, statuses: Sequence[Status]) -> list[MemoryRecord]:
        wanted = sorted({s.value for s in statuses})
        # Without active records the partial status index answers (its condition, word for word).
        if Status.ACTIVE.value in wanted:
            source, inactive = "records", ""
        else:
            source, inactive = "records INDEXED BY records_status", " AND status != 'active'"
        return self._select(
            f"SELECT body, fingerprint FROM {source} WHERE tenant = ? AND status IN ({_marks(len(wanted))})"
            f"{inactive} ORDER BY id",
            (tenant, *wanted),
        )

    def by_content_hash(self, tenant: str, content_hash: str) -> list[MemoryRecord]:
        return self._select(_BY_CONTENT_HASH, (tenant, content_hash[:16], content_hash))

    def with_tag(self, tenant: str, tag: str) -> list[MemoryRecord]:
        return self._select(
            "SELECT r.body, r.fingerprint FROM tags t "
            "CROSS JOIN records r ON r.tenant = t.tenant AND r.id = t.id "
            "WHERE t.tenant = ? AND t.tag = ? ORDER BY r.id",
            (tenant, tag),
        )

    def with_id_prefix(self, tenant: str, prefix: str) -> list[MemoryRecord]:
        if not prefix:
            return self.all_records(tenant)
        # The ids between the prefix and the prefix with its last character bumped: a range of
        # the (tenant, id) index.
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        return self._select(
            "SELECT body, fingerprint FROM records WHERE tenant = ? AND id >= ? AND id < ? ORDER BY id",
            (tenant, prefix, upper),
        )

    def records_applying(self, tenant: str, scopes: Sequence[str]) -> list[MemoryRecord]:
        keys = list(dict.fromkeys(scopes))
        out: list[MemoryRecord] = []
        for at in range(0, len(keys), 500):
            chunk = keys[at : at + 500]
            out += self._select(
                rows_in_scopes("body, fingerprint", len(chunk)) + " ORDER BY +id",
                (tenant, *chunk),
            )
        return out

    def citing(self, tenant: str, source_id: str) -> list[MemoryRecord]:
        return self._select(
            "SELECT r.body, r.fingerprint FROM cites c "
            "CROSS JOIN records r ON r.tenant = c.tenant AND r.id = c.record "
            "WHERE c.tenant = ? AND c.source = ? ORDER BY r.id",
            (tenant, source_id),
        )

    def citing_ids(self, tenant: str, source_id: str) -> list[str]:
        with self._read() as conn:
            return [
                r[0]
                for r in conn.execute(
                    "SELECT c.record FROM cites c "
                    "CROSS JOIN records r ON r.tenant = c.tenant AND r.id = c.record "
                    "WHERE c.tenant = ? AND c.source = ? ORDER BY c.record",
                    (tenant, source_id),
                )
            ]

    def source(self, tenant: str, source_id: str) -> Source | None:
        with self._read() as conn:
            row = conn.execute(
                "SELECT body FROM sources WHERE tenant = ? AND id = ?", (tenant, source_id)
            ).fetchone()
        return None if row is None else Source.model_validate_json(row[0])

    def source_exists(self, tenant: str, source_id: str) -> bool:
        return self.source(tenant, source_id) is not None

    # -- scopes -------------------------------------------------------------

    def scope_exists(self, tenant: str, scope: str) -> bool:
        with self._read() as conn:
            return (
                conn.execute("SELECT 1 FROM scopes WHERE tenant = ? AND key = ?", (tenant, scope)).fetchone()
                is not None
            )

    def scope_parents(self, tenant: str, scope: str) -> set[str]:
        with self._read() as conn:
            return {r[0] for r in conn.execute(_PARENTS, (tenant, scope))}

    def scope_ancestors(self, tenant: str, scopes: Sequence[str]) -> set[str]:
        return self._walk(tenant, scopes, _PARENTS)

    def scope_descendants(self, tenant: str, scope: str) -> set[str]:
        return self._walk(tenant, [scope], "SELECT child FROM within WHERE tenant = ? AND parent = ?")

    def _walk(self, tenant: str, start: Sequence[str], step: str, *extra: Any) -> set[str]:
        seen = set(start)
        stack = list(seen)
        with self._read() as conn:
            while stack:
                for (other,) in conn.execute(step, (tenant, stack.pop(), *extra)):
                    if other not in seen:
                        seen.add(other)
                        stack.append(other)
        return seen

    def related_scopes(
        self, tenant: str, anchor: str, via: Sequence[str], hops: int, *, as_of: datetime | None
    ) -> set[str]:
        wanted = sorted(set(via))
        if not wanted:
            return {anchor}
        frontier, seen = {anchor}, {anchor}
        types = _marks(len(wanted))
        # An edge with no recorded time (written before relations had one) is known at every time.
        known = "" if as_of is None else " AND (recorded IS NULL OR recorded <= ?)"
        step_sql = (
            f"SELECT b FROM related WHERE tenant = ? AND a = ? AND type IN ({types}){known} "
            f"UNION SELECT a FROM related WHERE tenant = ? AND b = ? AND type IN ({types}){known}"
        )
        limit = () if as_of is None else (ts(as_of),)
        with self._read() as conn:
            for _ in range(hops):
                step: set[str] = set()
                for key in frontier:
                    step.update(
                        r[0]
                        for r in conn.execute(
                            step_sql, (tenant, key, *wanted, *limit, tenant, key, *wanted, *limit)
                        )
                    )
                frontier = step - seen
                seen |= frontier
                if not frontier:
                    break
        return seen

    # -- the gate -----------------------------------------------------------

    def _reach(
        self, conn: sqlite3.Connection, ctx: ReadContext
    ) -> tuple[list[str], set[str], tuple[int, ...], int]:
        """(every scope reachable upward from the context, by key; those a record may apply
        to; their revisions; the tenant's erasure count), in one statement of one row."""
        # Only through the WITHIN edges recorded by the read's knowledge time.
        row = conn.execute(
            _REACH, (ctx.tenant, json.dumps(list(ctx.entry_scopes)), ts(ctx.known_at))
        ).fetchone()
        revs = dict(json.loads(row[0]))
        reached = sorted(revs)
        own = set(ctx.own_runs)
        matching = {s for s in reached if scope_type(s) != "run" or s in own}
        return reached, matching, tuple(revs[s] for s in reached), row[1]

    def gate_probe(self, ctx: ReadContext) -> GateProbe:
        """Key: the scopes the context reaches and its terms; token: those scopes' revisions
        (every committed write of a record, a lineage edge or a scope relation counts in
        the scopes it touches, in every process); erasures: the tenant's count of committed
        erasing writes, in the same snapshot."""
        with self._read() as conn:  # one snapshot (``BEGIN``): the count is the revisions'
            reached, matching, revs, erasures = self._reach(conn, ctx)
        key = (tuple(reached), ctx.own_runs, ctx.policy, ctx.kinds, ctx.clearance, ctx.environment)
        return GateProbe(key, revs, (reached, matching), erasures)

    def gate_rows(self, ctx: ReadContext, probe: GateProbe) -> GateRows:
        return self._gate_rows(ctx, probe, survivors_only=False)

    def survivor_rows(self, ctx: ReadContext, probe: GateProbe) -> GateRows:
        """``gate_rows`` of the survivors alone, for reads that need only what passes
        (LangGraph's search): a row out of use as of the context's knowledge time
        (superseded, revoked, …: not active, and last changed before then or never) is not
        read into a candidate, since its status holds at every later knowledge time — so an
        item's history costs a search nothing. The rows' boundaries start at the read's
        own times: what was left out passes at no time from them on."""
        return self._gate_rows(ctx, probe, survivors_only=True)

    def _gate_rows(self, ctx: ReadContext, probe: GateProbe, *, survivors_only: bool) -> GateRows:
        out = GateRows()
        ids, fingerprints, reasons = out.ids, out.fingerprints, out.reasons
        survivor_ids, texts, recency, embeddings, models = (
            out.survivor_ids,
            out.texts,
            out.recency,
            out.embeddings,
            out.models,
        )
        times: set[datetime] = {ctx.now} if survivors_only else set()
        known: set[datetime] = {ctx.known_at} if survivors_only else set()
        as_of = ctx.known_at
        left_out = f" AND NOT {_OUT_OF_USE}" if survivors_only else ""
        left_out_args = (ts(as_of), ts(ctx.now), ts(ctx.now)) if survivors_only else ()
        with self._read() as conn:
            if isinstance(probe.state, tuple):
                reached, matching = probe.state
            else:
                reached, matching, _, _ = self._reach(conn, ctx)
            for at in range(0, len(reached), 500):
                chunk = reached[at : at + 500]
                rows = conn.execute(
                    rows_in_scopes(_GATE_COLUMNS, len(chunk)) + left_out,
                    (ctx.tenant, *chunk, *left_out_args),
                )
                for row in rows.fetchall():
                    cand = self._candidate(ctx.tenant, row, conn, as_of)
                    times.update(
                        t
                        for t in (cand.start, cand.end, cand.superseded_at, cand.invalidated_at)
                        if t is not None
                    )
                    known.update(t for t in (cand.known_from, cand.changed_at) if t is not None)
                    if cand.changes:
                        times.update(c[1] for c in cand.changes)
                        known.update(c[2] for c in cand.changes if c[2] is not None)
                    known.update(v[0] for v in cand.versions)
                    if unknown_at(cand, as_of):
                        continue
                    reason = drop_reason(cand, ctx, row[13] in matching)
                    if survivors_only and reason is not None:
                        continue
                    ids.append(cand.id)
                    fingerprints.append(cand.version_at(as_of)[1])
                    reasons.append(reason)
                    if reason is None:
                        emb = row[15]
                        survivor_ids.append(cand.id)
                        texts.append(row[14])
                        recency.append(cand.recency)
                        embeddings.append(None if emb is None else tuple(array("d", emb)))
                        models.append(row[18])
        out.boundaries = (sorted(times), sorted(known))
        return out

    def _candidate(
        self,
        tenant: str,
        row: sqlite3.Row | tuple[Any, ...],
        conn: sqlite3.Connection,
        as_of: datetime,
    ) -> Candidate:
        """The gate's inputs from a row's columns, with the record's lineage changes when
        ``as_of`` is earlier than one of them; a value no write could have stored is damage."""
        (rid, fingerprint, kind, policy, status, start, stop, recency, sens, ok, pre, sup, inv, *_) = row
        known_from, changed_at = row[16], row[17]
        changes = None
        versions: tuple[tuple[datetime, Status, str], ...] = ()
        try:
            if changed_at is not None and as_of < datetime.fromisoformat(changed_at):
                changes = tuple(
                    (bool(is_sup), datetime.fromisoformat(at), _dt(rec))
                    for is_sup, at, rec in conn.execute(_CHANGES, (tenant, rid))
                )
                versions = self._versions(conn, tenant, rid)
            return Candidate(
                None,
                _dt(sup),
                _dt(inv),
                fingerprint,
                _dt(start),
                _dt(stop),
                recency,
                sens,
                rid,
                _KINDS[kind],
                tenant,
                policy,
                _STATUSES[status],
                bool(ok),
                frozenset(json.loads(pre)) if pre != "[]" else frozenset(),
                _dt(known_from),
                _dt(changed_at),
                changes,
                versions,
            )
        except (KeyError, ValueError, TypeError) as err:
            raise corrupt_error(str(self.engine.path), err) from None

    @staticmethod
    def _versions(
        conn: sqlite3.Connection, tenant: str, rid: str
    ) -> tuple[tuple[datetime, Status, str], ...]:
        return tuple(
            (datetime.fromisoformat(until), _STATUSES[status], fingerprint)
            for until, status, fingerprint in conn.execute(
                "SELECT until, status, fingerprint FROM versions WHERE tenant = ? AND id = ? ORDER BY until",
                (tenant, rid),
            )
        )

    def candidates(self, ctx: ReadContext) -> list[tuple[Candidate, bool]]:
        """Every candidate of ``ctx`` built from its whole record, with whether it is in scope:
        the reference gate's input (tests hold ``gate`` to it)."""
        with self._read() as conn:
            reached, matching, _, _ = self._reach(conn, ctx)
            out: list[tuple[Candidate, bool]] = []
            for record in self.records_applying(ctx.tenant, reached):
                changes = [
                    (bool(is_sup), datetime.fromisoformat(at), _dt(rec))
                    for is_sup, at, rec in conn.execute(_CHANGES, (ctx.tenant, record.id))
                ]
                versions = self._versions(conn, ctx.tenant, record.id)
                out.append(
                    (Candidate.of(record, changes=changes, versions=versions), record.scope in matching)
                )
        return out

    def gate_one(self, ctx: ReadContext, record_id: str) -> tuple[str, DropReason | None] | None:
        found = self.gate_input(ctx, record_id)
        if found is None:
            return None
        cand, in_scope = found
        return cand.version_at(ctx.known_at)[1], drop_reason(cand, ctx, in_scope)

    def gate_input(self, ctx: ReadContext, record_id: str) -> tuple[Candidate, bool] | None:
        """What the gate decides one record on: its candidate and whether it applies in the
        context's scopes. ``drop_reason`` of these gives ``gate_one``'s verdict at any time
        until ``revision()`` changes."""
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {_GATE_COLUMNS} FROM records WHERE tenant = ? AND id = ?", (ctx.tenant, record_id)
            ).fetchone()
            if row is None:
                return None
            _, matching, _, _ = self._reach(conn, ctx)
            return self._candidate(ctx.tenant, row, conn, ctx.known_at), row[13] in matching

    def revision(self) -> tuple[int, int]:
        """Changes whenever the store may have changed: (rolled-back write transactions of
        this backend, the store's write generation, which every committed write counts on
        every connection of every process). Cheap (a memory read while nothing committed,
        else one statement: ``Engine.generation``): callers keep what they read under it,
        and ask ``changed_since`` what a newer one changed."""
        return self._epoch, self.engine.generation()

    def after_commit(self, step: Callable[[], None]) -> None:
        """Run ``step`` once this thread's outermost transaction has committed (now, outside
        one); never after a rollback."""
        self.engine.after(step)

    def changed_since(self, held: tuple[int, int], now: tuple[int, int]) -> frozenset[str] | None:
        """The ids of the records whose gate verdicts the writes between revisions ``held``
        and ``now`` may have changed; ``None`` when that is not known: a write transaction
        rolled back, a scope relation changed, another connection wrote a generation, or it
        was too many writes ago."""
        if held[0] != now[0] or now[1] < held[1] or now[1] - held[1] > _CHANGES_HELD:
            return None
        ids: set[str] = set()
        with self._changes_lock:
            for generation in range(held[1] + 1, now[1] + 1):
                touched = self._changes.get(generation)
                if touched is None:
                    return None
                ids |= touched
        return frozenset(ids)

    def recalled(
        self,
        tenant: str,
        record_ids: Sequence[str],
        audit: AuditEvent | None,
        *,
        sync: bool = False,
        as_of: datetime | None = None,
        seen: Mapping[str, tuple[str, str | None]] | None = None,
        parsed: ParsedRecords | None = None,
    ) -> list[MemoryRecord]:
        # One snapshot with the gate's rows: every record is in the state the gate saw.
        records = self._selected(tenant, record_ids, as_of, parsed) if record_ids else []
        if audit is not None:
            if sync or self._recall_audit_delay <= 0:
                # Appended before recall returns, once its read snapshot has ended.
                self.engine.after(lambda: self.apply([AppendAudit(event=audit)]))
            else:
                self._recalls.add(audit)
        return records

    def _selected(
        self, tenant: str, record_ids: Sequence[str], as_of: datetime | None, parsed: ParsedRecords | None
    ) -> list[MemoryRecord]:
        """The records of ``record_ids`` that exist, in that order, as held at ``as_of`` when
        given (the first version kept after it, where one is, with its body; format 3 kept
        none, so today's record stands in), bodies and versions fetched together (``_fetch``)."""
        with self._read() as conn:
            found, held = self._fetch(conn, tenant, record_ids, as_of, parsed)
        return self._versions_held([found[i] for i in record_ids if i in found], held)

    def _versions_held(
        self, records: list[MemoryRecord], held: Mapping[str, tuple[str, str | None]]
    ) -> list[MemoryRecord]:
        """``records``, each replaced by the body ``held`` for it (its fingerprint checked), if any."""
        if not held or not records:
            return records
        out: list[MemoryRecord] = []
        for record in records:
            fingerprint, body = held.get(record.id, ("", None))
            if body is None:
                out.append(record)
                continue
            if sha256(body) != fingerprint:
                raise corrupt_error(str(self.engine.path), ValueError(f"version of {record.id!r} altered"))
            out.append(_read_record(body))
        return out

    def kept_fingerprints(self, tenant: str, record_ids: Sequence[str], as_of: datetime) -> dict[str, str]:
        held = self._held_at(tenant, record_ids, as_of)
        return {rid: fingerprint for rid, (fingerprint, _) in held.items()}

    def _held_at(
        self, tenant: str, record_ids: Sequence[str], as_of: datetime
    ) -> dict[str, tuple[str, str | None]]:
        """(fingerprint, body or None) of the version of each record held at ``as_of``, where
        a version kept after it says (the first one kept after it: ``_HELD_AT``)."""
        if not record_ids:
            return {}
        with self._read() as conn:
            rows = conn.execute(_HELD_AT, (tenant, json.dumps(list(record_ids)), ts(as_of)))
            return {rid: (fingerprint, body) for rid, fingerprint, body, _ in rows}

    def _append_recalls(self, events: Sequence[AuditEvent]) -> None:
        self.apply([AppendAudit(event=e) for e in events])

    def flush_audit(self) -> None:
        """Write every recall audit event still queued (``audit``, ``export`` and ``close`` do)."""
        self._recalls.flush()

    # -- lineage ------------------------------------------------------------

    def downstream(self, tenant: str, record_ids: Sequence[str]) -> list[Dependent]:
        starts = list(dict.fromkeys(record_ids))
        with self._read() as conn:
            children: dict[str, list[str]] = {}
            for parent, child in conn.execute(_CLOSURE, (tenant, json.dumps(starts))):
                children.setdefault(parent, []).append(child)
            if not children:  # nothing derives from them (a source's claims, often)
                return []
            # Depth first from the last start, each record's children by id: the order the
            # records fall in, and so the order a forget reports them in.
            seen = set(starts)
            order: list[str] = []
            present = self.existing_ids(tenant, starts)
            stack = [i for i in starts if i in present]
            while stack:
                for child in sorted(children.get(stack.pop(), ())):
                    if child not in seen:
                        seen.add(child)
                        order.append(child)
                        stack.append(child)
            return self._dependents(tenant, order)

    def support_of(self, tenant: str, record_ids: Sequence[str]) -> list[Dependent]:
        return self._dependents(tenant, list(dict.fromkeys(record_ids)))

    def _dependents(self, tenant: str, ids: Sequence[str]) -> list[Dependent]:
        """The stored records of ``ids`` (in that order; missing ones are left out), each with
        its parents' states and its own invalidation time: a few statements per 500 records."""
        out: list[Dependent] = []
        with self._read() as conn:
            for at in range(0, len(ids), 500):
                chunk = ids[at : at + 500]
                marks = _marks(len(chunk))
                rows = {
                    rid: (body, fingerprint, own)
                    for rid, body, fingerprint, own in conn.execute(
                        "SELECT id, body, fingerprint, invalidated_at FROM records "
                        f"WHERE tenant = ? AND id IN ({marks})",
                        (tenant, *chunk),
                    )
                }
                parents: dict[str, list[ParentState]] = {}
                for child, pid, status, sup, inv in conn.execute(
                    "SELECT d.child, r.id, r.status, r.superseded_at, r.invalidated_at FROM derived d "
                    "CROSS JOIN records r ON r.tenant = d.tenant AND r.id = d.parent "
                    f"WHERE d.tenant = ? AND d.child IN ({marks}) ORDER BY d.child, r.id",
                    (tenant, *chunk),
                ):
                    parents.setdefault(child, []).append(
                        ParentState(pid, _STATUSES[status], _dt(sup), _dt(inv))
                    )
                stored = [rid for rid in chunk if rid in rows]
                records = self._records_of([rows[rid][:2] for rid in stored])
                for rid, record in zip(stored, records, strict=True):
                    out.append(Dependent(record, tuple(parents.get(rid, ())), _dt(rows[rid][2])))
        return out

    def superseded_by(self, tenant: str, record_id: str) -> str | None:
        """The id of a record that supersedes ``record_id`` (None: none does): the
        ``SUPERSEDES`` edges into it that ``trace(tenant, record_id, 0)`` lists, in one seek."""
        with self._read() as conn:
            row = conn.execute(
                "SELECT src FROM lineage WHERE tenant = ? AND dst = ? AND label = 'SUPERSEDES' "
                "AND dst_is_source = 0 ORDER BY src LIMIT 1",
                (tenant, record_id),
            ).fetchone()
        return None if row is None else str(row[0])

    def trace(
        self, tenant: str, record_id: str, depth: int
    ) -> tuple[list[MemoryRecord], list[Source], list[LineageEdgeRow]]:
        with self._read() as conn:
            if not self.existing_ids(tenant, [record_id]):
                return [], [], []
            upstream = {record_id}
            frontier = [record_id]
            for _ in range(depth):
                step: list[str] = []
                for node in frontier:
                    step.extend(
                        p
                        for (p,) in conn.execute(
                            "SELECT parent FROM derived WHERE tenant = ? AND child = ?", (tenant, node)
                        )
                        if p not in upstream
                    )
                frontier = list(dict.fromkeys(step))
                upstream.update(frontier)
                if not frontier:
                    break
            memories = set(upstream)
            sources: set[str] = set()
            edges: set[LineageEdgeRow] = set()
            for node in upstream:
                for (parent,) in conn.execute(
                    "SELECT parent FROM derived WHERE tenant = ? AND child = ?", (tenant, node)
                ):
                    if parent in upstream:
                        edges.add(LineageEdgeRow(node, parent, "DERIVED_FROM", None, None))
                for (source,) in conn.execute(
                    "SELECT source FROM cites WHERE tenant = ? AND record = ?", (tenant, node)
                ):
                    edges.add(LineageEdgeRow(node, source, "CITES", None, None))
                    sources.add(source)
                for label, src, dst, is_source, at, reason, rec in conn.execute(
                    "SELECT label, src, dst, dst_is_source, at, reason, recorded FROM lineage "
                    "WHERE tenant = ? AND src = ? "
                    "UNION ALL SELECT label, src, dst, dst_is_source, at, reason, recorded FROM lineage "
                    "WHERE tenant = ? AND dst = ? AND label = 'SUPERSEDES' AND dst_is_source = 0",
                    (tenant, node, tenant, node),
                ):
                    edges.add(LineageEdgeRow(src, dst, label, _dt(at), reason, _dt(rec)))
                    other = dst if src == node else src
                    (sources if is_source else memories).add(other)
            found = self._by_ids(tenant, sorted(memories))
            held_sources: list[Source] = []
            for sid in sorted(sources):
                source = self.source(tenant, sid)
                if source is not None:
                    held_sources.append(source)
        return (
            [found[i] for i in sorted(found)],
            held_sources,
            sorted(edges, key=lambda e: (e.src, e.type, e.dst)),
        )

    # -- export and audit ---------------------------------------------------

    def export_ops(self, tenant: str) -> list[Op]:
        self._recalls.flush()
        with self._read() as conn:
            records: list[Op] = [PutRecord(record=r) for r in self.all_records(tenant)]
            edges: list[Op] = [
                ScopeWithin(tenant=tenant, child=c, parent=p, recorded=_dt(rec))
                for c, p, rec in conn.execute(
                    "SELECT child, parent, recorded FROM within WHERE tenant = ?", (tenant,)
                )
            ]
            edges += [
                RelateScopes(tenant=tenant, a=a, rel_type=t, b=b, recorded=_dt(rec))
                for a, t, b, rec in conn.execute(
                    "SELECT a, type, b, recorded FROM related WHERE tenant = ?", (tenant,)
                )
            ]
            edges += [
                AddEdge(
                    tenant=tenant,
                    label=label,
                    src=src,
                    dst=dst,
                    dst_is_source=bool(is_source),
                    at=datetime.fromisoformat(at),
                    reason=reason,
                    recorded=_dt(rec),
                )
                for label, src, dst, is_source, at, reason, rec in conn.execute(
                    "SELECT label, src, dst, dst_is_source, at, reason, recorded FROM lineage "
                    "WHERE tenant = ?",
                    (tenant,),
                )
            ]
            audit: list[Op] = [AppendAudit(event=e) for e in self.audit(tenant, None, None)]
        edges.sort(key=lambda op: op.model_dump_json())
        return [*records, *edges, *audit]

    def audit(self, tenant: str, record_id: str | None, since: datetime | None) -> list[AuditEvent]:
        self._recalls.flush()
        after = -(2**62) if since is None else _micros(since)
        with self._read() as conn:
            if record_id is None:
                rows = conn.execute(
                    "SELECT body FROM audit WHERE tenant = ? AND at_us >= ? ORDER BY at_us, seq",
                    (tenant, after),
                )
            else:
                rows = conn.execute(
                    "SELECT a.body FROM audit_records x JOIN audit a ON a.seq = x.seq "
                    "WHERE x.tenant = ? AND x.record = ? AND a.at_us >= ? ORDER BY a.at_us, a.seq",
                    (tenant, record_id, after),
                )
            events = [AuditEvent.model_validate_json(body) for (body,) in rows]
        if since is not None:  # microsecond rounding of the index key
            events = [e for e in events if e.at >= since]
        return events

    def name_digest(self, tenant: str, value: str) -> str:
        """SHA-256 of ``value``, unkeyed: a key kept in this file would sit beside the
        tombstones it protects, so it would confirm a guess as well. Such a name is the one
        thing derived from erased text that an erase leaves here (docs/erasure.md); give a
        proposal its own ``id`` where that matters."""
        return sha256(value)

    def erasure_guarantee(self) -> str:
        """What an erase guarantees on this backend, for reports."""
        if self.directory is None:
            return "in memory: nothing is persisted; the erased text is gone from the database image"
        return (
            "storage-level: the erased text is in no page and no WAL frame of the database files "
            "(secure delete, then a WAL checkpoint in TRUNCATE mode)"
        )

    def check(self) -> list[str]:
        """SQLite's integrity check, then graphmem's own invariants (``sqlite_check``): one line
        per violation, [] when the store is sound."""
        with self._read() as conn:
            return check_database(conn)

    def close(self) -> None:
        if not self.engine.closed:
            self._recalls.close()
        self.engine.close()
