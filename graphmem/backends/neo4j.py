"""The Neo4j 5 backend: every statement is a parameterised file in ``cypher/``.

Times are stored as integer microseconds since the Unix epoch (UTC) so the
gate's comparisons are exact; each record also keeps its canonical JSON so a
read returns exactly what was written. Its gate inputs are one list on its
``APPLIES_TO`` edge (``r.g``, see ``gate.cypher``), held with copies of the
record's tenant, scope, policy and id in one range index, so the gate reads
every candidate from that index. The gate runs inside the database and mirrors
``graphmem.gate.drop_reason``; it returns one row of parallel lists, which the
driver decodes far faster than a row per candidate.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import neo4j
from neo4j import exceptions as neo4j_errors

from graphmem.backends.base import (
    AddEdge,
    AppendAudit,
    Dependent,
    LineageEdgeRow,
    Op,
    ParentState,
    PutRecord,
    RelateScopes,
    ScopeWithin,
    UpdateRecord,
)
from graphmem.backends.cypher import cypher, statements
from graphmem.errors import BackendUnavailable, ConflictError, GraphmemError
from graphmem.gate import validity_window
from graphmem.gated import Verdicts, ViewGate
from graphmem.model import (
    AuditEvent,
    DropReason,
    Kind,
    MemoryRecord,
    ReadContext,
    Source,
    Status,
    Tombstone,
    scope_type,
)
from graphmem.model.canonical import sha256

__all__ = ["DOC_CACHE", "RECORD_ROW", "SCHEMA_VERSION", "Neo4jBackend", "fingerprint_tokens", "record_of"]

SCHEMA_VERSION = 4
#: Records whose text (content, embedding) a backend keeps for ranking, by default.
DOC_CACHE = 200_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICRO = timedelta(microseconds=1)
_last_ord = 0
_BATCH = 2500
#: Kinds in the order of their code in the gate list (``$kind_mask`` follows it).
_KINDS = (Kind.WORKING, Kind.EPISODIC, Kind.SEMANTIC, Kind.PROCEDURAL)
_KIND_CODE = {kind: i for i, kind in enumerate(_KINDS)}
#: Stand-ins for absent times in the gate list (a stored list cannot hold null).
_ALWAYS = -(2**63 - 1)
_NEVER = 2**63 - 1
#: The layout of a record row in create_records.cypher and put_records.cypher.
RECORD_ROW = (
    "id",
    "kind",
    "scope",
    "content",
    "content_hash",
    "status",
    "policy",
    "sensitivity",
    "confidence",
    "outcome",
    "writer",
    "procedure_name",
    "procedure_version",
    "preconditions",
    "tags",
    "embedding",
    "created_at",
    "event_time",
    "valid_from",
    "valid_to",
    "expires_at",
    "fingerprint",
    "json",
    "tombstone",
    "gate",
    "sources",
)
#: Statuses by the code the gate list holds for them (0 = active).
_STATUSES = [status.value for status in Status]
_STATUS_CODE = {status: code for code, status in enumerate(Status)}
#: Kept out of the stored JSON: their own properties are the truth, so a status
#: change rewrites a few small properties, not the JSON.
_MUTABLE = {"status", "tombstone"}
_REASONS: dict[str, DropReason | None] = {"": None, **{r.value: r for r in DropReason}}
#: Pauses between attempts of a read that failed in a retryable way.
_READ_PAUSES = (0.05, 0.2, 1.0)
#: Failures the driver reports from the server or the connection, releasing the
#: transaction's connection as it does.
_SERVER_FAILURES = (neo4j_errors.Neo4jError, neo4j_errors.ServiceUnavailable, neo4j_errors.SessionExpired)
_PARAM = re.compile(r"\$([A-Za-z_]\w*)")
T = TypeVar("T")
_Retryable = type[neo4j_errors.Neo4jError] | type[neo4j_errors.DriverError]


def micros(value: datetime | None) -> int | None:
    """Integer microseconds since the epoch, or None."""
    return None if value is None else (value - _EPOCH) // _MICRO


def from_micros(value: int | None) -> datetime | None:
    return None if value is None else _EPOCH + value * _MICRO


def _source(props: dict[str, Any]) -> Source:
    return Source.model_validate({k: v for k, v in props.items() if v is not None})


def _next_ord() -> int:
    """A strictly increasing number that orders audit events written within one microsecond."""
    global _last_ord
    _last_ord = max(_last_ord + 1, time.time_ns())
    return _last_ord


def fingerprint_tokens(fingerprint: str) -> tuple[int, int]:
    """The two integers the gate reports in place of a fingerprint: its first 120 bits
    (30 hex digits, 15 per integer, so each fits a signed 64-bit integer)."""
    return int(fingerprint[:15], 16), int(fingerprint[15:30], 16)


def _gate_list(record: MemoryRecord, fingerprint: str) -> list[int]:
    """The record's gate inputs as gate.cypher reads them, without the two edge times."""
    start, end = validity_window(record)
    recency = record.valid_from or record.event_time or record.created_at
    return [
        _KIND_CODE[record.kind],
        _STATUS_CODE[record.status],
        _ALWAYS if start is None else (start - _EPOCH) // _MICRO,
        _NEVER if end is None else (end - _EPOCH) // _MICRO,
        record.sensitivity.rank,
        1 if record.succeeded else 0,
        (recency - _EPOCH) // _MICRO,
        0 if record.embedding is None else 1,
        *fingerprint_tokens(fingerprint),
    ]


def _stored(record: MemoryRecord) -> tuple[str, str, str | None]:
    """(JSON without status and tombstone, fingerprint, tombstone JSON or None).

    The fingerprint is ``MemoryRecord.fingerprint`` (over the whole record), the
    same on every backend.
    """
    tombstone = None if record.tombstone is None else record.tombstone.model_dump_json()
    return record.model_dump_json(exclude=_MUTABLE), sha256(record.model_dump_json()), tombstone


def record_of(stored: Sequence[Any]) -> MemoryRecord:
    """A record from what a read returns: [json, status, tombstone JSON or null].

    Version-1 JSON still carries status and tombstone; the node's status always
    wins, and its tombstone when it has one.
    """
    text, status, tombstone = stored
    record = MemoryRecord.model_validate_json(text)
    if record.status.value == status and tombstone is None:
        return record
    update: dict[str, Any] = {"status": Status(status)}
    if tombstone is not None:
        update["tombstone"] = Tombstone.model_validate_json(tombstone)
    return record.model_copy(update=update)


def _sources(sources: Iterable[Source]) -> list[dict[str, Any]]:
    # Quotes live only in the records that carry them, so erasing a record erases its quotes.
    return [s.model_dump(mode="json", exclude={"quote"}) for s in sources]


def _record_row(record: MemoryRecord) -> list[Any]:
    """A record as the list ``RECORD_ROW`` lays out."""
    text, fingerprint, tombstone = _stored(record)
    return [
        record.id,
        record.kind.value,
        record.scope,
        record.content,
        record.content_hash,
        record.status.value,
        record.policy,
        record.sensitivity.value,
        record.confidence,
        record.outcome,
        record.writer,
        record.procedure_name,
        record.procedure_version,
        list(record.preconditions),
        list(record.tags),
        None if record.embedding is None else list(record.embedding),
        micros(record.created_at),
        micros(record.event_time),
        micros(record.valid_from),
        micros(record.valid_to),
        micros(record.expires_at),
        fingerprint,
        text,
        tombstone,
        _gate_list(record, fingerprint),
        _sources(record.sources),
    ]


def _update_row(record: MemoryRecord) -> list[Any]:
    """What an UpdateRecord may change: status, and what erasure removes (update_records.cypher)."""
    text, fingerprint, tombstone = _stored(record)
    return [
        record.id,
        record.status.value,
        tombstone,
        record.content,
        record.content_hash,
        None if record.embedding is None else list(record.embedding),
        list(record.tags),
        fingerprint,
        text,
        _gate_list(record, fingerprint),
    ]


def _rows(op: Op) -> tuple[str, str, Any]:
    """(statement file, tenant, row) of one operation."""
    if isinstance(op, PutRecord):
        return ("put_records" if op.replace else "create_records"), op.record.tenant, op.record
    if isinstance(op, UpdateRecord):
        return "update_records", op.record.tenant, op.record
    if isinstance(op, ScopeWithin):
        row: dict[str, Any] = {
            "child": op.child,
            "parent": op.parent,
            "child_type": scope_type(op.child),
            "parent_type": scope_type(op.parent),
        }
        return "scope_within", op.tenant, row
    if isinstance(op, RelateScopes):
        row = {
            "a": op.a,
            "b": op.b,
            "rel_type": op.rel_type,
            "a_type": scope_type(op.a),
            "b_type": scope_type(op.b),
        }
        return "relate_scopes", op.tenant, row
    if isinstance(op, AddEdge):
        row = {
            "src": op.src,
            "dst": op.dst,
            "dst_is_source": op.dst_is_source,
            "at": micros(op.at),
            "reason": op.reason,
        }
        return ("add_supersedes" if op.label == "SUPERSEDES" else "add_invalidated_by"), op.tenant, row
    if isinstance(op, AppendAudit):
        event = op.event
        row = {
            "id": event.id,
            "action": event.action,
            "at": micros(event.at),
            "ord": _next_ord(),
            "record_ids": list(event.record_ids),
            "json": event.model_dump_json(),
        }
        return "append_audit", event.tenant, row
    raise GraphmemError(f"unknown operation {op!r}", code="unknown_operation")


def _verdicts(
    ids: list[str], fingerprints: list[str], reasons: list[str]
) -> list[tuple[str, str, DropReason | None]]:
    """The gate's parallel lists as (record id, fingerprint, drop reason or None) rows."""
    return [(i, f, _REASONS[r]) for i, f, r in zip(ids, fingerprints, reasons, strict=True)]


def _chunk_params(name: str, rows: list[Any]) -> Iterator[dict[str, Any]]:
    """The parameters of each chunk of one statement group, at most ``_BATCH`` rows each."""
    for i in range(0, len(rows), _BATCH):
        chunk = rows[i : i + _BATCH]
        if name in ("create_records", "put_records"):
            groups: dict[str, list[Any]] = {}
            for record in chunk:
                group = groups.get(record.scope)
                if group is None:
                    group = groups[record.scope] = [record.scope, scope_type(record.scope), []]
                group[2].append(_record_row(record))
            lineage = [[r.id, parent] for r in chunk for parent in r.derived_from]
            yield {"groups": list(groups.values()), "lineage": lineage}
        elif name == "update_records":
            yield {
                "rows": [_update_row(record) for record in chunk],
                # One update per source: records citing the same source carry the same state.
                "sources": _sources({s.id: s for record in chunk for s in record.sources}.values()),
            }
        else:
            yield {"rows": chunk}


_Entry = tuple[int, int, str, str | None, tuple[float, ...] | None, MemoryRecord | None]
"""Fingerprint tokens, fingerprint, content and embedding (None when not held), and the
whole record once a recall selected it."""


class _DocCache:
    """What recall reads of recently gated records, by tenant and id: each candidate's
    fingerprint, the survivors' text (content, embedding) for ranking, and the
    selected records themselves.

    The gate reports each candidate's fingerprint tokens (``fingerprint_tokens``)
    instead of its 64-digit fingerprint; an entry is used only while those tokens
    are the ones it holds, so a changed record is never ranked on old text,
    receipted with an old fingerprint or returned in an old state. This backend's
    own writes drop the entries of the records they touch, so erased text does
    not stay here. Oldest entries go first once ``capacity`` is reached.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._lock = threading.Lock()

    def held(
        self, tenant: str, ids: list[str], first: list[int], second: list[int], survivor: list[bool]
    ) -> tuple[list[str], dict[str, tuple[str, tuple[float, ...] | None]], list[int]]:
        """For the gate's parallel lists (ids, both fingerprint tokens, survivor flags): each
        candidate's fingerprint ("" where not held for its tokens), the survivors' held text,
        and the positions of the candidates whose fingerprint or (survivors) text is missing."""
        fingerprints: list[str] = []
        docs: dict[str, tuple[str, tuple[float, ...] | None]] = {}
        missing: list[int] = []
        entries = self._entries
        with self._lock:
            for k, rid in enumerate(ids):
                entry = entries.get((tenant, rid))
                if entry is None or entry[0] != first[k] or entry[1] != second[k]:
                    fingerprints.append("")
                    missing.append(k)
                    continue
                fingerprints.append(entry[2])
                if survivor[k]:
                    if entry[3] is None:
                        missing.append(k)
                    else:
                        docs[rid] = (entry[3], entry[4])
        return fingerprints, docs, missing

    def put_many(
        self, tenant: str, rows: Iterable[tuple[str, str, str | None, Sequence[float] | None]]
    ) -> None:
        """Hold (id, fingerprint, content or None, embedding) rows, replacing what was held."""
        if self.capacity <= 0:
            return
        entries = self._entries
        with self._lock:
            for rid, fingerprint, content, embedding in rows:
                entries.pop((tenant, rid), None)
                entries[(tenant, rid)] = (
                    *fingerprint_tokens(fingerprint),
                    fingerprint,
                    content,
                    None if embedding is None else tuple(embedding),
                    None,
                )
            while len(entries) > self.capacity:
                del entries[next(iter(entries))]

    def records(self, tenant: str, keys: Iterable[tuple[str, str]]) -> dict[str, MemoryRecord]:
        """The records held whole with the fingerprint asked for, of (id, fingerprint) ``keys``."""
        found: dict[str, MemoryRecord] = {}
        with self._lock:
            for rid, fingerprint in keys:
                entry = self._entries.get((tenant, rid))
                if entry is not None and entry[2] == fingerprint and entry[5] is not None:
                    found[rid] = entry[5]
        return found

    def put_record(self, tenant: str, fingerprint: str, record: MemoryRecord) -> None:
        """Hold a record whole, if its entry is for the same fingerprint."""
        with self._lock:
            entry = self._entries.get((tenant, record.id))
            if entry is not None and entry[2] == fingerprint:
                self._entries[(tenant, record.id)] = (*entry[:5], record)

    def drop(self, keys: Iterable[tuple[str, str]]) -> None:
        with self._lock:
            for key in keys:
                self._entries.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


class _GateMemo:
    """The verdicts recent gates were turned into, by exactly what the server reported.

    A gate whose report (candidates' fingerprint tokens, reasons and recency) equals
    an earlier one's gets that one's verdicts back: the same ranking inputs, the
    digests already made. The tokens pin every candidate's state, so nothing
    changed can match. Entries go by tenant when this backend writes a record of
    it (as the document cache's do), the oldest first once ``capacity``
    candidates are held.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._entries: dict[tuple[object, ...], _Memo] = {}
        self._held = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[object, ...], ids: list[str]) -> _Memo | None:
        with self._lock:
            found = self._entries.pop(key, None)
            if found is not None:
                self._entries[key] = found  # most recently used last
        return found if found is not None and found.ids == ids else None

    def put(self, key: tuple[object, ...], memo: _Memo) -> None:
        size = len(memo.ids)
        if size > self.capacity:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            self._held += size - (0 if old is None else len(old.ids))
            self._entries[key] = memo
            while self._held > self.capacity:
                oldest = next(iter(self._entries))
                self._held -= len(self._entries.pop(oldest).ids)

    def drop_tenants(self, tenants: set[str]) -> None:
        if not tenants:
            return
        with self._lock:
            for key in [k for k in self._entries if k[0] in tenants]:
                self._held -= len(self._entries.pop(key).ids)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._held = 0


@dataclass(frozen=True, slots=True)
class _Memo:
    """A gate's verdicts with what recall needs beside them."""

    ids: list[str]
    verdicts: Verdicts
    fingerprints: dict[str, str]  # survivor id -> fingerprint


class Neo4jBackend:
    """Graph I/O against Neo4j 5 through the official driver."""

    def __init__(
        self,
        driver: neo4j.Driver,
        *,
        database: str | None = None,
        uri: str = "",
        doc_cache: int = DOC_CACHE,
    ) -> None:
        self.driver = driver
        self.database = database
        self.uri = uri
        self._owns_driver = False
        self._schema_ok = False
        self._docs = _DocCache(doc_cache)
        self._memo = _GateMemo(doc_cache // 4)
        self._gated = threading.local()  # fingerprints: survivors of this thread's last gate

    @classmethod
    def connect(
        cls,
        uri: str,
        *,
        auth: tuple[str, str] | None = None,
        database: str | None = None,
        driver: neo4j.Driver | None = None,
        connection_timeout: float = 10.0,
        doc_cache: int = DOC_CACHE,
    ) -> Neo4jBackend:
        """Open a driver (unless one is given) and check the server answers."""
        owns = driver is None
        if driver is None:
            driver = neo4j.GraphDatabase.driver(
                uri,
                auth=auth,
                connection_timeout=connection_timeout,
                max_transaction_retry_time=15.0,
                notifications_min_severity="OFF",
            )
        try:
            driver.verify_connectivity()
        except (neo4j_errors.ServiceUnavailable, neo4j_errors.AuthError, OSError, ValueError) as err:
            if owns:
                driver.close()
            raise BackendUnavailable(
                f"cannot reach Neo4j at {uri}: {err}. Check that the server is running and "
                "that the URI, credentials and database are right (bolt://host:7687 or neo4j://host:7687)."
            ) from err
        backend = cls(driver, database=database, uri=uri, doc_cache=doc_cache)
        backend._owns_driver = owns
        try:
            backend._read("ping")
        except GraphmemError:
            if owns:
                driver.close()
            raise
        return backend

    # -- plumbing ---------------------------------------------------------

    def _session(self, write: bool) -> neo4j.Session:
        mode = neo4j.WRITE_ACCESS if write else neo4j.READ_ACCESS
        return self.driver.session(database=self.database, default_access_mode=mode)

    @contextmanager
    def _errors(self, write: bool) -> Iterator[None]:
        """Driver errors as graphmem errors."""
        try:
            yield
        except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError) as err:
            mapped = self._graphmem_error(err, write)
            if mapped is None:
                raise
            raise mapped from err

    def _graphmem_error(self, err: Exception, write: bool) -> GraphmemError | None:
        """The graphmem error a driver error stands for; None for one to raise as it is."""
        if isinstance(err, neo4j_errors.ServiceUnavailable | neo4j_errors.SessionExpired | OSError):
            what = "the write was rolled back; nothing of it was stored" if write else "the read failed"
            return BackendUnavailable(
                f"lost the connection to Neo4j at {self.uri}: {what}. Retry the same call once "
                f"the server is reachable again ({err})",
                code="connection_lost",
            )
        if isinstance(err, neo4j_errors.ConstraintError):
            return ConflictError(f"the write conflicts with stored data: {err.message}")
        if (
            isinstance(err, neo4j_errors.ClientError)
            and err.code == "Neo.ClientError.Database.DatabaseNotFound"
        ):
            return BackendUnavailable(
                f"Neo4j at {self.uri} has no database {self.database!r}: create it, or pass "
                "database=None for the server's default",
                code="database_not_found",
            )
        return None

    def _run(self, work: Callable[[neo4j.ManagedTransaction], T], *, write: bool) -> T:
        """``work`` in one managed transaction, run again after a retryable failure."""
        # Only the server's retryable failures: the driver already retries a lost
        # connection at commit, and one lost mid-transaction is reported at once.
        return self._retried(lambda: self._attempt(work, write), write, (neo4j_errors.Neo4jError,))

    def _retried(self, attempt: Callable[[], T], write: bool, retry: tuple[_Retryable, ...]) -> T:
        """``attempt()``, again after each pause while it fails in a retryable way (one of
        the ``retry`` types that says it is retryable)."""
        with self._errors(write):
            for pause in (*_READ_PAUSES, None):
                try:
                    return attempt()
                except retry as err:
                    if pause is None or not err.is_retryable():
                        raise
                time.sleep(pause)
        raise AssertionError("unreachable")  # pragma: no cover

    def _attempt(self, work: Callable[[neo4j.ManagedTransaction], T], write: bool) -> T:
        """One run of ``work`` in a managed transaction.

        A statement that fails makes the driver hand the transaction's connection back to
        its pool at once, where another thread may take it; closing the failed transaction
        then would still touch that connection. So such a failure inside ``work`` is kept,
        the driver is only asked to commit, which it refuses without touching the
        connection (the server has rolled the transaction back), and the kept failure is
        raised.
        """
        failed: list[Exception] = []

        def guarded(tx: neo4j.ManagedTransaction) -> T | None:
            try:
                return work(tx)
            except _SERVER_FAILURES as err:
                failed.append(err)
                return None

        try:
            with self._session(write) as session:
                done = session.execute_write(guarded) if write else session.execute_read(guarded)
        except neo4j_errors.TransactionError:
            if not failed:
                raise
        if failed:
            raise failed[0]
        return done  # type: ignore[return-value]

    def _read(self, name: str, **params: Any) -> list[neo4j.Record]:
        """One read statement in an auto-commit transaction: one round trip, where a
        transaction function needs two (a recall reads twice). Reads are idempotent, so a
        retryable failure (a transient error, a cluster member going away) is retried."""
        return self._auto(name, False, params)

    def _auto(self, name: str, write: bool, params: dict[str, Any]) -> list[neo4j.Record]:
        """One statement in an auto-commit transaction, retried on retryable failures: only
        for reads and for writes that are idempotent."""
        query = cypher(name)

        def attempt() -> list[neo4j.Record]:
            with self._session(write=write) as session:
                return list(session.run(query, params))

        return self._retried(attempt, write, (neo4j_errors.Neo4jError, neo4j_errors.DriverError))

    # -- schema -----------------------------------------------------------

    def schema_version(self) -> int:
        rows = self._read("schema_version")
        version = rows[0]["version"] if rows else None
        return 0 if version is None else int(version)

    def _require_schema(self, *, indexed: bool = False) -> None:
        """Refuse to read or write a store whose schema this version of graphmem does not know.

        Checked once per backend. A database never set up (version 0) takes
        writes, which are already in the current layout, but not ``indexed``
        reads (the gate seeks an index only the schema step creates); it is
        checked again on each call until it is set up.
        """
        if self._schema_ok:
            return
        version = self.schema_version()
        if version == 0:
            if indexed:
                raise BackendUnavailable(
                    f"the Neo4j store at {self.uri} has no graphmem schema yet, and recall needs its "
                    "indexes: run `graphmem schema apply` (store.setup()) once",
                    code="schema_missing",
                )
            return
        if version > SCHEMA_VERSION or 0 < version < SCHEMA_VERSION:
            action = (
                "run `graphmem schema apply` (store.setup()) to migrate it"
                if version < SCHEMA_VERSION
                else "upgrade graphmem"
            )
            raise BackendUnavailable(
                f"the Neo4j store at {self.uri} has schema version {version}; this version of "
                f"graphmem uses {SCHEMA_VERSION}: {action}",
                code="schema_version",
            )
        self._schema_ok = True

    def setup(self, embedding_dimensions: int | None = None) -> int:
        """Apply schema migrations up to ``SCHEMA_VERSION``, and the vector index when
        ``embedding_dimensions`` is given; idempotent. Returns the version."""
        current = self.schema_version()
        for version in range(current + 1, SCHEMA_VERSION + 1):
            # Outside an explicit transaction: data migrations commit in batches.
            for statement in statements(f"schema_v{version}"):
                self._write_auto(statement, {})
            self._write_one(
                cypher("schema_set_version"), {"version": version, "applied_at": micros(datetime.now(UTC))}
            )
        if embedding_dimensions is not None:
            self._vector_index(embedding_dimensions)
        self._read("await_indexes", timeout_seconds=300)
        self._schema_ok = current <= SCHEMA_VERSION
        return SCHEMA_VERSION

    def _write_one(self, query: str, params: dict[str, Any]) -> None:
        def work(tx: neo4j.ManagedTransaction) -> None:
            tx.run(query, params).consume()

        self._run(work, write=True)

    def _write_auto(self, query: str, params: dict[str, Any]) -> None:
        with self._errors(True), self._session(True) as session:
            session.run(query, params).consume()

    def _vector_index(self, dimensions: int) -> None:
        existing = self._read("vector_index_dimensions")
        if existing and existing[0]["dimensions"] != dimensions:
            raise ConflictError(
                f"the embedding index has {existing[0]['dimensions']} dimensions, not {dimensions}; "
                "drop graphmem_memory_embedding first to change the embedding model",
                code="embedding_dimensions",
            )
        if not existing:
            self._write_one(cypher("schema_vector_index"), {"dimensions": dimensions})

    # -- writes -----------------------------------------------------------

    def apply(self, ops: Sequence[Op]) -> None:
        self._require_schema()
        # Before the write, so no reader can keep text this write replaces (an erasure).
        written = [op.record for op in ops if isinstance(op, PutRecord | UpdateRecord)]
        self._docs.drop((record.tenant, record.id) for record in written)
        self._memo.drop_tenants({record.tenant for record in written})
        groups: list[tuple[str, str, list[Any]]] = []
        for op in ops:
            name, tenant, row = _rows(op)
            if groups and groups[-1][:2] == (name, tenant):
                groups[-1][2].append(row)
            else:
                groups.append((name, tenant, [row]))

        def work(tx: neo4j.ManagedTransaction) -> None:
            pending: neo4j.Result | None = None

            def send(query: str, tenant: str, params: dict[str, Any]) -> None:
                # Pipelined: the next chunk's rows are built while the server runs this one.
                nonlocal pending
                used = {k: params[k] for k in _PARAM.findall(query) if k in params}
                result = tx.run(query, {"tenant": tenant, **used})
                if pending is not None:
                    pending.consume()
                pending = result

            for name, tenant, rows in groups:
                # Statement by statement over every chunk: a file's later statement (lineage
                # edges) may need nodes from any chunk of its first.
                first, *rest = statements(name)
                built = []
                for params in _chunk_params(name, rows):
                    built.append(params)
                    send(first, tenant, params)
                for query in rest:
                    for params in built:
                        send(query, tenant, params)
            if pending is not None:
                pending.consume()

        self._run(work, write=True)

    # -- reads ------------------------------------------------------------

    def get(self, tenant: str, record_id: str) -> MemoryRecord | None:
        found = self.get_many(tenant, [record_id])
        return found[0] if found else None

    def get_many(self, tenant: str, record_ids: Sequence[str]) -> list[MemoryRecord]:
        if not record_ids:
            return []
        return self._records("get_records", tenant=tenant, ids=list(record_ids))

    def existing_ids(self, tenant: str, record_ids: Sequence[str]) -> set[str]:
        if not record_ids:
            return set()
        return {r["id"] for r in self._read("existing_ids", tenant=tenant, ids=list(record_ids))}

    def source_exists(self, tenant: str, source_id: str) -> bool:
        return bool(self._read("source_exists", tenant=tenant, id=source_id)[0]["found"])

    def scope_parents(self, tenant: str, scope: str) -> set[str]:
        return {r["key"] for r in self._read("scope_parents", tenant=tenant, scope=scope)}

    def scope_ancestors(self, tenant: str, scopes: Sequence[str]) -> set[str]:
        found = {r["key"] for r in self._read("scope_ancestors", tenant=tenant, scopes=list(scopes))}
        return found | set(scopes)

    def _gate(
        self, ctx: ReadContext, record_id: str | None, fingerprints: bool, with_content: bool
    ) -> neo4j.Record:
        self._require_schema(indexed=True)
        return self._read(
            "gate",
            tenant=ctx.tenant,
            record_id=record_id,
            entry_scopes=list(ctx.entry_scopes),
            own_runs=list(ctx.own_runs),
            kind_mask=[kind in ctx.kinds for kind in _KINDS],
            policy=ctx.policy,
            statuses=_STATUSES,
            now=micros(ctx.now),
            clearance_rank=ctx.clearance.rank,
            environment=list(ctx.environment),
            fingerprints=fingerprints,
            with_content=with_content,
        )[0]

    def gate(self, ctx: ReadContext) -> ViewGate:
        """The gate's verdicts from the server; fingerprints and survivors' text from the
        document cache.

        The server reports each candidate's fingerprint tokens, not its fingerprint,
        and no text: what the cache lacks is fetched by a second read. If one of
        those records changed in between (its fingerprint no longer matches the
        tokens), the gate runs again with every fingerprint and survivor's text.
        A report equal to a recent one reuses that one's verdicts.
        """
        gated = self._gate(ctx, None, fingerprints=False, with_content=False)
        ids: list[str] = gated["ids"]
        first: list[int] = gated["first"]
        second: list[int] = gated["second"]
        reasons: list[str] = gated["reasons"]
        recency: list[int] = gated["recency"]
        tenant = ctx.tenant
        key = (tenant, tuple(first), tuple(second), tuple(reasons), tuple(recency))
        memo = self._memo.get(key, ids)
        if memo is not None:
            self._gated.fingerprints = memo.fingerprints
            return ViewGate(memo.verdicts)
        survivor = [not r for r in reasons]
        fingerprints, held, wanted = self._docs.held(tenant, ids, first, second, survivor)
        if wanted:
            fetched = self._read(
                "candidate_docs",
                tenant=tenant,
                ids=[ids[k] for k in wanted],
                texts=[survivor[k] for k in wanted],
            )[0]["docs"]
            found = {row[0]: row for row in fetched}
            for k in wanted:
                row = found.get(ids[k])
                if row is None or fingerprint_tokens(row[1]) != (first[k], second[k]):
                    return self._gate_with_content(ctx)
                fingerprints[k] = row[1]
                if survivor[k]:
                    held[row[0]] = (row[2], None if row[3] is None else tuple(row[3]))
            self._docs.put_many(tenant, fetched)
        verdicts = _verdicts(ids, fingerprints, reasons)
        alive = [(rid, fp) for rid, fp, r in verdicts if r is None]
        survivors = [
            (rid, held[rid][0], at / 1_000_000, held[rid][1])
            for (rid, _), at in zip(alive, recency, strict=True)
        ]
        memo = _Memo(ids, Verdicts.of_rows(verdicts, survivors), dict(alive))
        self._memo.put(key, memo)
        self._gated.fingerprints = memo.fingerprints
        return ViewGate(memo.verdicts)

    def _gate_with_content(self, ctx: ReadContext) -> ViewGate:
        """The gate with every fingerprint and survivor's text from the server (a record
        changed mid-read)."""
        gated = self._gate(ctx, None, fingerprints=True, with_content=True)
        verdicts = _verdicts(gated["ids"], gated["fingerprints"], gated["reasons"])
        alive = [(rid, fp) for rid, fp, r in verdicts if r is None]
        self._gated.fingerprints = dict(alive)
        survivors = [
            (rid, content, at / 1_000_000, None if embedding is None else tuple(embedding))
            for (rid, _), at, (content, embedding) in zip(alive, gated["recency"], gated["docs"], strict=True)
        ]
        return ViewGate(Verdicts.of_rows(verdicts, survivors))

    def gate_one(self, ctx: ReadContext, record_id: str) -> tuple[str, DropReason | None] | None:
        gated = self._gate(ctx, record_id, fingerprints=True, with_content=False)
        if not gated["ids"]:
            return None
        return gated["fingerprints"][0], _REASONS[gated["reasons"][0]]

    def recalled(
        self, tenant: str, record_ids: Sequence[str], audit: AuditEvent | None
    ) -> list[MemoryRecord]:
        """The selected records, with the recall's audit event appended in the same round trip.

        A record this thread's last gate saw is taken from the document cache if
        it is held whole with the fingerprint that gate reported; the others are
        read from the server (as they are now) and held for the next recall.
        """
        gated = getattr(self._gated, "fingerprints", {})
        held = self._docs.records(tenant, ((rid, gated[rid]) for rid in record_ids if rid in gated))
        missing = [rid for rid in record_ids if rid not in held]
        if missing or audit is not None:
            self._require_schema()
            event = None if audit is None else _rows(AppendAudit(event=audit))[2]
            params = {"tenant": tenant, "ids": missing, "event": event}
            for text, status, tombstone, fingerprint in self._auto(
                "recalled_records", audit is not None, params
            )[0]["records"]:
                record = record_of((text, status, tombstone))
                held[record.id] = record
                self._docs.put_record(tenant, fingerprint, record)
        return [held[rid] for rid in record_ids if rid in held]

    def all_records(self, tenant: str) -> list[MemoryRecord]:
        return self._records("all_records", tenant=tenant)

    def _records(self, name: str, **params: Any) -> list[MemoryRecord]:
        """The records a one-row read collects (a row per record costs the driver more than the data)."""
        return [record_of(stored) for stored in self._read(name, **params)[0]["records"]]

    def records_with_status(self, tenant: str, statuses: Sequence[Status]) -> list[MemoryRecord]:
        return self._records("records_with_status", tenant=tenant, statuses=[s.value for s in statuses])

    def by_content_hash(self, tenant: str, content_hash: str) -> list[MemoryRecord]:
        return self._records("by_content_hash", tenant=tenant, content_hash=content_hash)

    def with_tag(self, tenant: str, tag: str) -> list[MemoryRecord]:
        return self._records("with_tag", tenant=tenant, tag=tag)

    def scope_exists(self, tenant: str, scope: str) -> bool:
        return bool(self._read("scope_exists", tenant=tenant, scope=scope)[0]["found"])

    def scope_descendants(self, tenant: str, scope: str) -> set[str]:
        return {r["key"] for r in self._read("scope_descendants", tenant=tenant, scope=scope)} | {scope}

    def records_applying(self, tenant: str, scopes: Sequence[str]) -> list[MemoryRecord]:
        return self._records("records_applying", tenant=tenant, scopes=list(scopes))

    def citing(self, tenant: str, source_id: str) -> list[MemoryRecord]:
        return self._records("citing", tenant=tenant, id=source_id)

    def citing_ids(self, tenant: str, source_id: str) -> list[str]:
        """The ids of the records that cite a source (``forget`` needs no more of them)."""
        return list(self._read("citing_ids", tenant=tenant, id=source_id)[0]["ids"])

    def source(self, tenant: str, source_id: str) -> Source | None:
        rows = self._read("get_source", tenant=tenant, id=source_id)
        return _source(rows[0]["source"]) if rows else None

    def downstream(self, tenant: str, record_ids: Sequence[str]) -> list[Dependent]:
        return self._dependents("downstream", tenant, record_ids)

    def support_of(self, tenant: str, record_ids: Sequence[str]) -> list[Dependent]:
        return self._dependents("support_of", tenant, record_ids)

    def _dependents(self, name: str, tenant: str, record_ids: Sequence[str]) -> list[Dependent]:
        found = self._read(name, tenant=tenant, ids=list(record_ids))[0]["dependents"]
        return [
            Dependent(
                record_of(stored),
                tuple(
                    ParentState(pid, Status(status), from_micros(sup), from_micros(inv))
                    for pid, status, sup, inv in parents
                ),
            )
            for stored, parents in found
        ]

    def related_scopes(self, tenant: str, anchor: str, via: Sequence[str], hops: int) -> set[str]:
        seen = {anchor}
        frontier = [anchor]
        for _ in range(hops):
            if not frontier:
                break
            step = self._read("related_step", tenant=tenant, keys=frontier, via=list(via))
            frontier = [r["key"] for r in step if r["key"] not in seen]
            seen.update(frontier)
        return seen

    def trace(
        self, tenant: str, record_id: str, depth: int
    ) -> tuple[list[MemoryRecord], list[Source], list[LineageEdgeRow]]:
        root = self.get(tenant, record_id)
        if root is None:
            return [], [], []
        upstream = {record_id}
        frontier = [record_id]
        for _ in range(depth):
            rows = self._read("parents", tenant=tenant, ids=frontier)
            frontier = [r["id"] for r in rows if r["id"] not in upstream]
            if not frontier:
                break
            upstream.update(frontier)
        memories: dict[str, MemoryRecord] = {}
        sources: dict[str, Source] = {}
        edges: set[LineageEdgeRow] = set()
        for row in self._read("trace_edges", tenant=tenant, ids=sorted(upstream)):
            if row["type"] == "DERIVED_FROM" and row["dst"] not in upstream:
                continue
            if row["memory"] is not None:
                other = record_of(row["memory"])
                memories[other.id] = other
            if row["source"] is not None:
                source = _source(row["source"])
                sources[source.id] = source
            edges.add(
                LineageEdgeRow(row["src"], row["dst"], row["type"], from_micros(row["at"]), row["reason"])
            )
        for record in self.get_many(tenant, sorted(upstream)):
            memories[record.id] = record
        return (
            [memories[k] for k in sorted(memories)],
            [sources[k] for k in sorted(sources)],
            sorted(edges, key=lambda e: (e.src, e.type, e.dst)),
        )

    def export_ops(self, tenant: str) -> list[Op]:
        records: list[Op] = [PutRecord(record=r) for r in self.all_records(tenant)]
        edges: list[Op] = []
        for row in self._read("export_scope_edges", tenant=tenant):
            if row["label"] == "WITHIN":
                edges.append(ScopeWithin(tenant=tenant, child=row["a"], parent=row["b"]))
            else:
                edges.append(RelateScopes(tenant=tenant, a=row["a"], rel_type=row["rel_type"], b=row["b"]))
        for row in self._read("export_lineage_edges", tenant=tenant):
            edges.append(
                AddEdge(
                    tenant=tenant,
                    label=row["label"],
                    src=row["src"],
                    dst=row["dst"],
                    dst_is_source=row["dst_is_source"],
                    at=from_micros(row["at"]),
                    reason=row["reason"],
                )
            )
        edges.sort(key=lambda op: op.model_dump_json())
        audit: list[Op] = [AppendAudit(event=e) for e in self.audit(tenant, None, None)]
        return [*records, *edges, *audit]

    def audit(self, tenant: str, record_id: str | None, since: datetime | None) -> list[AuditEvent]:
        rows = self._read("audit_events", tenant=tenant, record_id=record_id, since=micros(since))
        return [AuditEvent.model_validate_json(r["json"]) for r in rows]

    def reading(self) -> AbstractContextManager[object]:
        return nullcontext()  # every read is its own transaction

    def write(self) -> AbstractContextManager[object]:
        return nullcontext()  # each apply is its own transaction

    def close(self) -> None:
        self._docs.clear()
        self._memo.clear()
        if self._owns_driver:
            self.driver.close()
