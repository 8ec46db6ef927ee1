"""The Neo4j 5 backend: every statement is a parameterised file in ``cypher/``.

A record's gate inputs are one list on its ``APPLIES_TO`` edge (``r.g``, see
``gate.cypher``), held with copies of the record's tenant, scope, policy and id
in one range index, so the gate reads every candidate from that index. The gate
runs inside the database and mirrors ``graphmem.model.gate.drop_reason``; it returns
one row of parallel lists, which the driver decodes far faster than a row per
candidate. How records become rows is in ``neo4j_rows``; what is kept in process
between recalls, in ``neo4j_cache``.

A store's write runs in one explicit transaction (``write()``) that first takes
its tenant's lock, so writers of a tenant decide one after another on committed
state; reads outside a write are auto-commit statements, and recall re-checks the
records it returns against what its gate saw.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
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
    ParsedRecords,
    PutRecord,
    RelateScopes,
    ScopeWithin,
    UpdateRecord,
)
from graphmem.backends.cypher import cypher, statements
from graphmem.backends.keystore import KeyStore, SqliteKeyStore
from graphmem.backends.neo4j_cache import DocCache, fingerprint_tokens, stored_tokens
from graphmem.backends.neo4j_crypt import SEALED_FINGERPRINT, Crypt
from graphmem.backends.neo4j_rows import (
    KINDS,
    RECORD_ROW,
    STATUSES,
    Tx,
    done_name,
    erasures_name,
    from_micros,
    lock_names,
    micros,
    op_row,
    record_of,
    send_ops,
)
from graphmem.backends.recall_log import RecallLog
from graphmem.errors import (
    BackendUnavailable,
    ConflictError,
    ContractViolation,
    GraphmemError,
    TransactionConflict,
)
from graphmem.model import (
    AuditEvent,
    DropReason,
    GateProbe,
    GateRows,
    MemoryRecord,
    ReadContext,
    Source,
    Status,
)
from graphmem.model.canonical import sha256

__all__ = [
    "DOC_CACHE",
    "RECORD_ROW",
    "SCHEMA_VERSION",
    "Neo4jBackend",
    "fingerprint_tokens",
    "micros",
    "record_of",
]

SCHEMA_VERSION = 6
#: Records whose text (content, embedding) a backend keeps for ranking, by default.
DOC_CACHE = 200_000
_REASONS: dict[str, DropReason | None] = {"": None, **{r.value: r for r in DropReason}}
#: The gate list's codes of the statuses forgetting sets: they hold at every knowledge time.
_FORGOTTEN_CODES = [STATUSES.index(s.value) for s in (Status.REVOKED, Status.RELEASED, Status.ERASED)]
#: Pauses between attempts of a read that failed in a retryable way.
_READ_PAUSES = (0.05, 0.2, 1.0)
_TORN_READS = 12  # reads of the gate before a torn or unsettled one is a TransactionConflict
#: Failures the driver reports from the server or the connection, releasing the
#: transaction's connection as it does.
_SERVER_FAILURES = (neo4j_errors.Neo4jError, neo4j_errors.ServiceUnavailable, neo4j_errors.SessionExpired)
T = TypeVar("T")
_Retryable = type[neo4j_errors.Neo4jError] | type[neo4j_errors.DriverError]


def _lock(tx: Tx, tenants: Iterable[str]) -> dict[str, int]:
    """Take the write locks of ``tenants`` in ``tx`` (lock_tenants.cypher); returns the
    number each tenant's lock gave this transaction (to record as done once committed)."""
    by_name = {lock_names([t])[0]: t for t in tenants}
    rows = tx.run(cypher("lock_tenants"), {"locks": sorted(by_name)})
    return {by_name[row["lock"]]: row["writes"] for row in rows}


_UNIX = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
#: The microseconds since the epoch a datetime can be (the gate lists' "never" and "always"
#: lie outside).
_INSTANTS = range(
    (datetime.min.replace(tzinfo=UTC) - _UNIX) // _MICROSECOND,
    (datetime.max.replace(tzinfo=UTC) - _UNIX) // _MICROSECOND + 1,
)


#: What a gate report says (gate.cypher); two reads that say the same agree.
_REPORT = (
    "ids",
    "first",
    "second",
    "fingerprints",
    "reasons",
    "recency",
    "docs",
    "times",
    "later_at",
    "erasures",
)


def _same_report(one: neo4j.Record, other: neo4j.Record) -> bool:
    """Whether two reads of the gate report the same. A read not ``quiet`` (a write of the
    tenant was being applied) is taken when the next read agrees with it: a scan torn by
    an index update in flight misses a candidate only in the instant between the update's
    removal and insertion, which two reads in a row do not both fall in."""
    return all(one[key] == other[key] for key in _REPORT)


def _whole(gated: neo4j.Record) -> bool:
    """Whether the gate's row is whole: every candidate once (the index scan met none twice) and
    its parallel lists with one entry per candidate (ids, tokens, reasons, times, fingerprints
    when asked for) and per survivor (recency, text when asked for). A null that ``collect``
    dropped (a torn read of a kept version's lists) makes one shorter."""
    if gated["rows"] != gated["distinct_ids"]:
        return False
    n = len(gated["ids"])
    if not len(gated["first"]) == len(gated["second"]) == len(gated["reasons"]) == len(gated["times"]) == n:
        return False
    alive = sum(1 for r in gated["reasons"] if not r)
    if len(gated["recency"]) != alive or (gated["docs"] and len(gated["docs"]) != alive):
        return False
    return not gated["fingerprints"] or len(gated["fingerprints"]) == n


def _boundaries(
    times: Sequence[Sequence[int | None]], later_at: int | None
) -> tuple[list[datetime], list[datetime]]:
    """The valid times and knowledge times at which one of a gate report's verdicts may
    change (gate.cypher's ``times`` per candidate: start, end, superseded at, invalidated
    at; recorded, last change; and ``later_at``, the first knowledge time at which a record
    not yet recorded becomes a candidate), sorted; "never" and "always" are none."""
    valid: set[int | None] = set()
    known: set[int | None] = {later_at}
    for start, end, superseded, invalidated, recorded, changed in times:
        valid.update((start, end, superseded, invalidated))
        known.update((recorded, changed))
    return _instants(valid), _instants(known)


def _instants(values: set[int | None]) -> list[datetime]:
    return [_UNIX + v * _MICROSECOND for v in sorted(v for v in values if v is not None and v in _INSTANTS)]


@dataclass(frozen=True, slots=True)
class _Probed:
    """This backend's ``GateProbe.state``: whether the counts it read were settled (no
    counted write still being applied), so that what is derived under it may be kept."""

    settled: bool


class _Write:
    """One thread's open write transaction (``Neo4jBackend.write``)."""

    __slots__ = ("after", "begun", "broken", "erasures", "poisoned", "session", "tx", "written")

    def __init__(self, session: neo4j.Session, tx: neo4j.Transaction) -> None:
        self.session = session
        self.tx = tx
        #: Tenants whose lock this transaction holds, with the number each lock gave it.
        self.begun: dict[str, int] = {}
        #: (tenant, id) of every record it wrote: their held text goes again after commit.
        self.written: list[tuple[str, str]] = []
        #: Tenant -> its erasure count as this transaction's erases leave it.
        self.erasures: dict[str, int] = {}
        #: What runs once the transaction has ended (``Neo4jBackend.after_commit``).
        self.after: list[Callable[[], None]] = []
        #: A statement failed: the server rolled the transaction back and the driver
        #: took its connection back, so the transaction must not be touched again.
        self.broken = False
        #: A write that failed part-way: nothing more may run in it and it must not commit.
        self.poisoned: BaseException | None = None


class Neo4jBackend:
    """Graph I/O against Neo4j 5 through the official driver."""

    def __init__(
        self,
        driver: neo4j.Driver,
        *,
        database: str | None = None,
        uri: str = "",
        doc_cache: int = DOC_CACHE,
        recall_audit_delay: float = 0.05,
        keys: KeyStore | None = None,
    ) -> None:
        self.driver = driver
        #: Where the data keys of the stored text live (``graphmem.backends.keystore``):
        #: every client of one deployment must share it.
        self.keys: KeyStore = SqliteKeyStore() if keys is None else keys
        self._owns_keys = keys is None
        self._crypt = Crypt(self.keys)
        self.database = database
        self.uri = uri
        self._owns_driver = False
        self._schema_ok = False
        self._docs = DocCache(doc_cache)
        self._clean: set[str] = set()  # tenants found holding no fingerprint in clear
        self._writing = threading.local()  # open: this thread's write transaction (_Write)
        # Causal consistency across this backend's sessions: each transaction sees every one
        # this backend committed before it, on a cluster's followers too.
        self._bookmarks = neo4j.GraphDatabase.bookmark_manager()
        self._recalls = RecallLog(self._append_recalls, recall_audit_delay)

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
        keys: KeyStore | None = None,
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
        backend = cls(driver, database=database, uri=uri, doc_cache=doc_cache, keys=keys)
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
        return self.driver.session(
            database=self.database, default_access_mode=mode, bookmark_manager=self._bookmarks
        )

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
        if isinstance(err, neo4j_errors.Neo4jError) and err.is_retryable():
            return TransactionConflict(
                f"Neo4j gave up the transaction for another one ({err.code}); running it again "
                "decides on what that one wrote"
            )
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
        for reads and for writes that are idempotent. Inside this thread's ``write()`` it
        runs in that transaction instead, after the lock of its tenant."""
        query = cypher(name)
        open_ = self._open()
        if open_ is not None:
            tenant = params.get("tenant")
            return self._within(
                open_, () if tenant is None else (tenant,), lambda tx: list(tx.run(query, params)), write
            )

        def attempt() -> list[neo4j.Record]:
            with self._session(write=write) as session:
                return list(session.run(query, params))

        return self._retried(attempt, write, (neo4j_errors.Neo4jError, neo4j_errors.DriverError))

    # -- schema -----------------------------------------------------------

    def schema_version(self) -> int:
        rows = self._read("schema_version")
        version = rows[0]["version"] if rows else None
        return 0 if version is None else int(version)

    def plaintext(self) -> bool:
        """Whether records written before encryption (schema 5) are still stored: until
        ``graphmem migrate --encrypt`` rewrote them, erase is refused (``plaintext_store``)."""
        rows = self._read("schema_version")
        return bool(rows and rows[0]["plaintext"])

    def encrypt_stored(
        self,
        batch: int = 2000,
        progress: Callable[[int], None] | None = None,
        *,
        tenant: str | None = None,
    ) -> int:
        """Rewrite every record written before encryption, or holding a fingerprint in clear
        (live or kept version), in the encrypted layout (``graphmem migrate --encrypt``),
        then mark the store encrypted; idempotent, resumable, in transactions of at most
        ``batch`` records, each reading what it rewrites under its tenant's lock. With
        ``tenant``, only that tenant's records, and the store is not marked. Returns how
        many records were rewritten. The plaintext they replaced stays in Neo4j's
        transaction logs and freed store records until those are rotated and reused
        (docs/erasure.md says how to make sure)."""
        self._require_schema()
        done = 0
        seen: set[tuple[str, str]] = set()
        while True:
            pairs = [tuple(p) for p in self._read("plaintext_records", limit=batch, tenant=tenant)[0]["ids"]]
            if not pairs:
                break
            if seen.issuperset(pairs):
                raise GraphmemError(
                    f"graphmem migrate --encrypt rewrote {len(pairs)} record(s) of the Neo4j store at "
                    f"{self.uri} that still read as unencrypted; check that no client of graphmem "
                    "older than this one writes to the store, then run it again",
                    code="encrypt_stalled",
                )
            seen.update(pairs)
            by_tenant: dict[str, list[str]] = {}
            for owner, rid in pairs:
                by_tenant.setdefault(owner, []).append(rid)
            for owner, ids in sorted(by_tenant.items()):

                def work(
                    tx: neo4j.ManagedTransaction, owner: str = owner, ids: list[str] = ids
                ) -> tuple[dict[str, int], int]:
                    return self._encrypt_batch(tx, owner, ids)

                begun, rewritten = self._run(work, write=True)
                self._writes_done(begun)
                done += rewritten
                self._drop_held((owner, rid) for rid in ids)
            if progress is not None:
                progress(done)
        if tenant is None:
            self._write_one(cypher("clear_plaintext_sources"), {})
            self._write_one(cypher("schema_encrypted"), {"at": micros(datetime.now(UTC))})
        self._clean.clear()
        return done

    def _encrypt_batch(
        self, tx: neo4j.ManagedTransaction, tenant: str, ids: list[str]
    ) -> tuple[dict[str, int], int]:
        """Rewrite these records of ``tenant`` sealed, kept versions' fingerprints too, in
        ``tx`` after the tenant's lock (so what is read is what is rewritten); returns the
        lock's number and how many were rewritten."""
        begun = _lock(tx, [tenant])
        rows = tx.run(cypher("get_records"), {"tenant": tenant, "ids": ids}).single()
        records = self._crypt.records(tenant, rows["records"] if rows else [])
        send_ops(tx, [PutRecord(record=r, replace=True) for r in records], self._crypt)
        kept = tx.run(cypher("kept_versions"), {"tenant": tenant, "ids": ids}).single()
        erased = {r.id for r in records if r.status is Status.ERASED}
        resealed: list[list[Any]] = []
        for rid, until, fingerprints in kept["records"] if kept else []:
            if rid in erased:  # read as erased (its key is gone): it keeps no version
                resealed.append([rid, None, None, None])
                continue
            if not fingerprints or all(f.startswith(SEALED_FINGERPRINT) for f in fingerprints):
                continue
            sealed = [
                f
                if f.startswith(SEALED_FINGERPRINT)
                else self._crypt.seal_version_fingerprint(tenant, rid, f, u)
                for f, u in zip(fingerprints, until, strict=True)
            ]
            tokens = [stored_tokens(f) for f in sealed]
            resealed.append([rid, sealed, [t[0] for t in tokens], [t[1] for t in tokens]])
        if resealed:
            tx.run(cypher("seal_kept_fingerprints"), {"tenant": tenant, "rows": resealed}).consume()
        return begun, len(records)

    def name_digest(self, tenant: str, value: str) -> str:
        """HMAC-SHA-256 (hex) of ``value`` under the tenant's naming key in the key store, for
        names derived from content (proposal ids, hashed LangGraph names): the tombstone of
        an erased record keeps its id, and an unkeyed hash there would confirm a guess of
        the erased text. The naming key is never shredded, so a name stays the same."""
        return self._crypt.name_digest(tenant, value)

    def erasure_guarantee(self) -> str:
        """What an erase guarantees on this backend, for reports."""
        return (
            "crypto-shredded: the erased records' and sources' data keys are deleted from the key "
            f"store {self.keys.location}; what Neo4j keeps of them in its store files and "
            "transaction logs is ciphertext no key can open"
        )

    def _require_schema(self) -> None:
        """Refuse to read or write a store whose schema this version of graphmem does not know.

        Checked once per backend. A database never set up (version 0) is refused too, and
        checked again on each call until it is set up: the gate seeks indexes only the schema
        step creates, and the uniqueness constraints are what keep a record's id and a
        tenant's write lock single when two first writers race (lock_tenants.cypher).
        """
        if self._schema_ok:
            return
        version = self.schema_version()
        if version == 0:
            raise BackendUnavailable(
                f"the Neo4j store at {self.uri} has no graphmem schema yet: run `graphmem schema "
                "apply` (store.setup()) once; it creates the indexes recall seeks and the "
                "constraints that keep ids and each tenant's write lock unique",
                code="schema_missing",
            )
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
        """Apply every op or none of them: in this thread's ``write()`` transaction if one is
        open, else in a transaction of their own. Either way the lock of every tenant they
        touch is taken first."""
        self._require_schema()
        written = [(op.record.tenant, op.record.id) for op in ops if isinstance(op, PutRecord | UpdateRecord)]
        self._shred(ops)
        # Before the write, so no reader can keep text this write replaces (an erasure);
        # again once it is committed (see DocCache.put_many).
        self._drop_held(written)
        tenants = {op_row(op)[1] for op in ops}
        open_ = self._open()
        if open_ is not None:
            open_.written += written
            counted = self._within(open_, tenants, lambda tx: send_ops(tx, ops, self._crypt), True)
            open_.erasures.update(counted)
            return

        def work(tx: neo4j.ManagedTransaction) -> tuple[dict[str, int], dict[str, int]]:
            begun = _lock(tx, tenants)
            return begun, send_ops(tx, ops, self._crypt)

        begun, counted = self._run(work, write=True)
        self._writes_done(begun)
        self._drop_held(written)
        self._docs.own_erasures(counted)

    def _writes_done(self, begun: dict[str, int]) -> None:
        """Record that the write transaction the locks numbered ``begun`` gave has committed
        (writes_done.cypher), so readers may keep what they derive from the tenants again.
        Best effort: the write has committed either way, and until a later write of the
        tenant records its own number, readers keep nothing (gate_state.cypher)."""
        if not begun:
            return
        done = sorted([done_name(tenant), number] for tenant, number in begun.items())

        def work(tx: neo4j.ManagedTransaction) -> None:
            tx.run(cypher("writes_done"), {"done": done}).consume()

        with suppress(BackendUnavailable, TransactionConflict):
            self._run(work, write=True)

    def _shred(self, ops: Sequence[Op]) -> None:
        """An erase deletes the data keys first, then updates the graph: a crash in between
        leaves the records unreadable, which is erased, never readable. Refused while
        records written before encryption are stored: deleting keys would not erase them.
        (A tombstone an import puts in place of a record loses its keys too.)"""
        erasing = [op.record for op in ops if isinstance(op, UpdateRecord) and op.erase]
        if erasing and (self.plaintext() or self._clear_fingerprints({r.tenant for r in erasing})):
            raise ContractViolation(
                f"the Neo4j store at {self.uri or 'this URI'} holds records written before graphmem "
                "encrypted stored text or sealed their fingerprints, so deleting data keys cannot "
                "erase them (or a hash that confirms their text) from the server's files; run "
                "`graphmem migrate --encrypt` once, let Neo4j rotate its transaction logs "
                "(docs/erasure.md), then erase again. Nothing was changed",
                code="plaintext_store",
            )
        erasing += [
            op.record for op in ops if isinstance(op, PutRecord) and op.record.status is Status.ERASED
        ]
        by_tenant: dict[str, list[MemoryRecord]] = {}
        for record in erasing:
            by_tenant.setdefault(record.tenant, []).append(record)
        for tenant, records in by_tenant.items():
            self._crypt.shred(tenant, records)

    def _clear_fingerprints(self, tenants: Iterable[str]) -> bool:
        """Whether a record of one of ``tenants`` still holds a fingerprint in clear (written
        before fingerprints were sealed). A tenant found without one is not read again: this
        version of graphmem writes none."""
        for tenant in sorted(set(tenants) - self._clean):
            if self._read("clear_fingerprints", tenant=tenant)[0]["found"]:
                return True
            self._clean.add(tenant)
        return False

    def _drop_held(self, written: Iterable[tuple[str, str]]) -> None:
        """Forget what the document cache holds of these records."""
        self._docs.drop(list(written))

    # -- transactions -----------------------------------------------------

    def _open(self) -> _Write | None:
        found: _Write | None = getattr(self._writing, "open", None)
        return found

    def write(self) -> AbstractContextManager[object]:
        """One explicit write transaction for every read and ``apply`` this thread makes
        inside the block (re-entrant: a nested block joins it); committed when the block
        ends, rolled back when it raises.

        Neo4j reads at read committed: what a transaction reads may change before it
        writes. So the first statement a transaction runs for a tenant updates that
        tenant's lock node (lock_tenants.cypher), and every writer of a tenant, in any
        process, waits there until the one before it has committed: its reads, its
        decisions and its writes are one step. Readers take no lock. A deadlock or
        another transient failure of the server is a ``TransactionConflict``, which the
        store answers by running the whole operation again.
        """
        return self._transaction()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        if self._open() is not None:
            yield
            return
        self._require_schema()
        with self._errors(True):
            session = self._session(True)
            try:
                tx = session.begin_transaction()
            except BaseException:
                session.close()
                raise
        open_ = _Write(session, tx)
        self._writing.open = open_
        committed = False
        try:
            yield
            if open_.poisoned is not None:
                raise TransactionConflict(
                    "a write of this operation failed part-way, so its transaction was rolled back; "
                    "run the operation again"
                ) from open_.poisoned
            self._within(open_, (), self._commit, True)
            committed = True
        finally:
            self._writing.open = None
            if committed:
                session.close()
            else:
                # Rolls the transaction back, unless the server already did (the driver
                # then holds no connection for this session any more and touches none).
                with suppress(neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError):
                    session.close()
            if committed:
                self._writes_done(open_.begun)
            self._drop_held(open_.written)
            if committed:
                self._docs.own_erasures(open_.erasures)
            for step in open_.after:
                step()

    def after_commit(self, step: Callable[[], None]) -> None:
        """Run ``step`` once this thread's write transaction has ended, committed or not (now,
        outside one)."""
        open_ = self._open()
        if open_ is None:
            step()
        else:
            open_.after.append(step)

    def _commit(self, tx: Tx) -> None:
        assert isinstance(tx, neo4j.Transaction)
        try:
            tx.commit()
        except (neo4j_errors.ServiceUnavailable, neo4j_errors.SessionExpired) as err:
            raise BackendUnavailable(
                f"lost the connection to Neo4j at {self.uri} while it committed: the write may have "
                f"been stored or rolled back; check before you retry ({err})",
                code="connection_lost",
            ) from err

    def _within(self, open_: _Write, tenants: Iterable[str], work: Callable[[Tx], T], changes: bool) -> T:
        """``work`` in this thread's open transaction, after the locks of ``tenants`` it does
        not hold yet. A failure in a statement breaks the transaction; any failure of
        ``work`` that ``changes`` the graph poisons it (it may have written part)."""
        if open_.broken or open_.poisoned is not None:
            raise TransactionConflict(
                "an earlier failure already rolled this operation's transaction back; run the operation again"
            )
        try:
            with self._errors(True):
                try:
                    new = set(tenants) - open_.begun.keys()
                    if new:
                        open_.begun.update(_lock(open_.tx, new))
                    return work(open_.tx)
                except (neo4j_errors.Neo4jError, neo4j_errors.DriverError):
                    open_.broken = True
                    raise
        except BaseException as err:
            if changes:
                open_.poisoned = err
            raise

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
        """The gate's one row, read again while it is torn.

        Read committed: one statement may read a candidate's APPLIES_TO edge (its gate
        list: status, fingerprint tokens, last change) before a write committed and its
        node (fingerprint, kept versions) after, or the other way round; a replay would
        then see today's version in place of the one it held. The statement counts the
        candidates whose node's last change is not the edge's (``torn``); the row must be
        whole (``_whole``): a candidate met twice by the index scan (a write moved its entry
        past the scan) or a kept version's lists read on either side of the write that
        appended to them (a null token, which ``collect`` drops) is torn too; and with
        ``fingerprints`` every reported fingerprint must be the one its tokens are of.
        The write has committed by the next read. A scan can also miss a candidate whose
        index entry a write was moving, which no check of the rows sees: a read during
        which a write of the tenant was being applied (not ``quiet``) is taken only when
        the next read reports the same (``_same_report``). ``TransactionConflict`` if no
        read of ``_TORN_READS`` is taken.
        """
        self._require_schema()
        previous: neo4j.Record | None = None
        for _ in range(_TORN_READS):
            gated = self._read(
                "gate",
                tenant=ctx.tenant,
                lock_name=lock_names([ctx.tenant])[0],
                done_name=done_name(ctx.tenant),
                record_id=record_id,
                entry_scopes=list(ctx.entry_scopes),
                own_runs=list(ctx.own_runs),
                kind_mask=[kind in ctx.kinds for kind in KINDS],
                policy=ctx.policy,
                statuses=STATUSES,
                now=micros(ctx.now),
                as_of=micros(ctx.known_at),
                forgotten=_FORGOTTEN_CODES,
                clearance_rank=ctx.clearance.rank,
                environment=[*ctx.environment, *self._crypt.tokens(ctx.tenant, ctx.environment)],
                fingerprints=fingerprints,
                with_content=with_content,
                erasures_name=erasures_name(ctx.tenant),
            )[0]
            if gated["torn"] or not _whole(gated):
                continue
            pairs = zip(gated["fingerprints"], gated["first"], gated["second"], strict=True)
            if fingerprints and not all(stored_tokens(fp) == (a, b) for (fp, _), a, b in pairs):
                continue
            if gated["quiet"] or (previous is not None and _same_report(previous, gated)):
                return gated
            previous = gated
        raise TransactionConflict(
            f"records of tenant {ctx.tenant!r} changed during each of {_TORN_READS} reads of the gate; "
            "recall again"
        )

    def gate_probe(self, ctx: ReadContext) -> GateProbe:
        """One small read (gate_state.cypher). Key: the scopes the context reaches and its
        terms, as the embedded backend's; token: the tenant's count of write transactions
        (every write of the tenant takes its lock and is counted there, in any process),
        which holds while no write of the tenant commits; erasures: its count of erasing
        writes. While a counted write is still being applied (or its writer stopped before
        recording it done) the probe is unsettled, and nothing derived under it is kept. A
        count of erasures greater than the last this backend saw (an erase by any process)
        first drops what the document cache holds of the tenant."""
        self._require_schema()
        tenant = ctx.tenant
        epoch = self._docs.epoch(tenant)
        state = self._read(
            "gate_state",
            tenant=tenant,
            lock_name=lock_names([tenant])[0],
            done_name=done_name(tenant),
            erasures_name=erasures_name(tenant),
            entry_scopes=list(ctx.entry_scopes),
            as_of=micros(ctx.known_at),
        )[0]
        erasures = int(state["erasures"])
        self._docs.erasures(tenant, erasures, epoch)
        writes, done = int(state["writes"]), int(state["done"])
        key = (
            tuple(sorted(state["reached"])),
            ctx.own_runs,
            ctx.policy,
            ctx.kinds,
            ctx.clearance,
            ctx.environment,
        )
        return GateProbe(key, writes, _Probed(writes == done), erasures)

    def gate_rows(self, ctx: ReadContext, probe: GateProbe) -> GateRows:
        """The gate's report (one read: each candidate's id, fingerprint tokens, drop reason,
        recency and times, no text), with fingerprints and survivors' text from the
        document cache, and the times between which its verdicts hold (``boundaries``).

        What the cache lacks is fetched by a second read. If one of those records
        changed in between (its fingerprint no longer matches the tokens), the gate
        runs again with every fingerprint and survivor's text (rows not to keep). Rows of
        an unsettled probe, or of a read as of a knowledge time before a candidate's last
        change (whose verdict depends on its edges' own times), are not kept either.
        """
        tenant = ctx.tenant
        if not isinstance(probe.state, _Probed):  # not this backend's probe: its own, not to keep
            own = self.gate_rows(ctx, self.gate_probe(ctx))
            own.keep = False
            return own
        # Before the read: what a write drops meanwhile is not kept from it.
        epoch = self._docs.epoch(tenant)
        gated = self._gate(ctx, None, fingerprints=False, with_content=False)
        epoch = self._docs.erasures(tenant, int(gated["erasures"]), epoch)
        ids: list[str] = gated["ids"]
        first: list[int] = gated["first"]
        second: list[int] = gated["second"]
        reasons: list[str] = gated["reasons"]
        recency: list[int] = gated["recency"]
        survivor = [not r for r in reasons]
        fingerprints, stored, held, wanted = self._docs.held(tenant, ids, first, second, survivor)
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
                if row is None or stored_tokens(row[1]) != (first[k], second[k]):
                    return self._gate_with_content(ctx)
            # Each state's fingerprint is opened once, then held beside its text.
            keys = self._crypt.record_keys(tenant, (row[0] for row in fetched))
            opened = self._crypt.docs(
                tenant, [(row[0], row[2], row[3], row[4]) for row in fetched if row[2] is not None], keys
            )
            clear = self._crypt.fingerprints(tenant, [(row[0], row[1], None) for row in fetched], keys)
            rows: list[tuple[str, str, str, str | None, Sequence[float] | None, str | None]] = []
            for row, fingerprint in zip(fetched, clear, strict=True):
                rid = row[0]
                if fingerprint is None or opened.get(rid, ...) is None:
                    # Its key is gone (an erase that had not updated the graph yet): erased.
                    return self._gate_with_content(ctx)
                content, vector, model = opened.get(rid) or (None, None, None)
                rows.append((rid, row[1], fingerprint, content, vector, model))
            by_id = {row[0]: row for row in rows}
            for k in wanted:
                _, stored[k], fingerprints[k], text, embedding, model = by_id[ids[k]]
                if survivor[k]:
                    held[ids[k]] = (text or "", None if embedding is None else tuple(embedding), model)
            self._docs.put_many(tenant, rows, epoch)
        out = GateRows(
            ids,
            fingerprints,
            [_REASONS[r] for r in reasons],
            states=[],
            boundaries=_boundaries(gated["times"], gated["later_at"]),
            keep=probe.state.settled and not gated["replayed"],
        )
        assert out.states is not None
        alive = [k for k, alive in enumerate(survivor) if alive]
        for k, at in zip(alive, recency, strict=True):
            rid = ids[k]
            text, embedding, model = held[rid]
            out.survivor_ids.append(rid)
            out.texts.append(text)
            out.recency.append(at / 1_000_000)
            out.embeddings.append(embedding)
            out.models.append(model)
            out.states.append(stored[k])
        return out

    def _gate_with_content(self, ctx: ReadContext) -> GateRows:
        """The gate with every fingerprint and survivor's text from the server (a record
        changed mid-read)."""
        tenant = ctx.tenant
        gated = self._gate(ctx, None, fingerprints=True, with_content=True)
        reasons: list[str] = list(gated["reasons"])
        alive_ids = [rid for rid, r in zip(gated["ids"], reasons, strict=True) if not r]
        docs = {rid: doc for rid, doc in zip(alive_ids, gated["docs"], strict=True)}
        keys = self._crypt.record_keys(tenant, gated["ids"])
        opened = self._crypt.docs(tenant, [(rid, c, e, m) for rid, (c, e, m) in docs.items()], keys)
        stored = {rid: fp for rid, (fp, _) in zip(gated["ids"], gated["fingerprints"], strict=True)}
        clear = self._fingerprints(tenant, gated["ids"], gated["fingerprints"], keys)
        recency = dict(zip(alive_ids, gated["recency"], strict=True))
        for k, rid in enumerate(gated["ids"]):
            if not reasons[k] and (opened[rid] is None or clear[k] is None):
                reasons[k] = DropReason.ERASED.value  # its key is gone: erased, never readable
        shown = [fp or _unopened(stored[rid]) for rid, fp in zip(gated["ids"], clear, strict=True)]
        out = GateRows(list(gated["ids"]), shown, [_REASONS[r] for r in reasons], states=[], keep=False)
        assert out.states is not None
        for rid, reason in zip(out.ids, out.reasons, strict=True):
            if reason is not None:
                continue
            content, embedding, model = opened[rid] or ("", None, None)
            out.survivor_ids.append(rid)
            out.texts.append(content)
            out.recency.append(recency[rid] / 1_000_000)
            out.embeddings.append(embedding)
            out.models.append(model)
            out.states.append(stored[rid])
        return out

    def _fingerprints(
        self, tenant: str, ids: Sequence[str], reported: Sequence[Sequence[Any]], keys: dict[str, bytes]
    ) -> list[str | None]:
        """The fingerprints of the gate's ``[stored fingerprint, until µs of the kept version
        it reported or null]`` pairs, opened; None where the key is gone."""
        return self._crypt.fingerprints(
            tenant, [(rid, fp, until) for rid, (fp, until) in zip(ids, reported, strict=True)], keys
        )

    def gate_one(self, ctx: ReadContext, record_id: str) -> tuple[str, DropReason | None] | None:
        gated = self._gate(ctx, record_id, fingerprints=True, with_content=False)
        if not gated["ids"]:
            return None
        reason = _REASONS[gated["reasons"][0]]
        reported = gated["fingerprints"][0]
        fingerprint = self._crypt.fingerprints(ctx.tenant, [(gated["ids"][0], reported[0], reported[1])])[0]
        if reason is None:
            record = self.get(ctx.tenant, record_id)
            if fingerprint is None or record is None or record.status is Status.ERASED:
                reason = DropReason.ERASED  # its key is gone: erased, never readable
        return fingerprint or _unopened(reported[0]), reason

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
        """The selected records as of ``as_of`` (the version kept after it, where a later
        overwrite replaced one), read in read access mode; the recall's audit event is
        queued (``RecallLog``), or with ``sync`` appended before this returns.

        A record the gate saw (``seen``: its fingerprint and its fingerprint as
        stored) is taken from the document cache if it is held whole with that
        fingerprint; the others are read from the server and held for the next recall. Raises
        ``TransactionConflict``, appending nothing, when one of those no longer has
        the fingerprint the gate saw (forgotten or changed since): the caller gates
        again, so a recall never returns a record in a state its gate did not pass.
        ``parsed`` is not used: the document cache holds what this backend parsed.
        """
        seen = seen or {}
        held = self._docs.records(tenant, ((rid, seen[rid][0]) for rid in record_ids if rid in seen))
        missing = [rid for rid in record_ids if rid not in held]
        if missing:
            self._require_schema()
            stored = [seen[rid][1] if rid in seen else None for rid in missing]
            params = {"tenant": tenant, "ids": missing, "fingerprints": stored}
            found = self._auto("recalled_records", False, params)[0]
            if not found["current"]:
                raise TransactionConflict(
                    f"a record recall selected in tenant {tenant!r} changed before it was read; recall again"
                )
            rows = found["records"]
            records = self._crypt.records(tenant, rows)
            replaced: set[str] = set()
            standing_in: set[str] = set()
            if as_of is not None:
                records, replaced, standing_in = self._as_of(tenant, rows, records, as_of)
            if any(
                r.id in seen and r.id not in standing_in and r.fingerprint() != seen[r.id][0] for r in records
            ):
                # Not the state its gate passed: the node's fingerprint and body, or a version's
                # time and body, read on either side of a write's commit.
                raise TransactionConflict(
                    f"a record recall selected in tenant {tenant!r} was read while a write changed it; "
                    "recall again"
                )
            if any(r.status is not Status.ACTIVE for r in records):
                # Only active records pass the gate. This one was erased (its key deleted, or
                # its node rewritten while the gate read it at read committed) or otherwise
                # forgotten since: the selection is stale.
                raise TransactionConflict(
                    f"a record recall selected in tenant {tenant!r} was forgotten before it was read; "
                    "recall again"
                )
            for row, record in zip(rows, records, strict=True):
                held[record.id] = record
                if record.id not in replaced:  # the cache holds today's records only
                    self._docs.put_record(tenant, row[5], record)
        if audit is not None:
            if sync:
                self._append_recalls([audit])
            else:
                self._recalls.add(audit)
        return [held[rid] for rid in record_ids if rid in held]

    def _as_of(
        self, tenant: str, rows: Sequence[Sequence[Any]], records: list[MemoryRecord], as_of: datetime
    ) -> tuple[list[MemoryRecord], set[str], set[str]]:
        """``records`` (read as ``rows``) as the store held them at ``as_of``: the first
        version kept after it, where one is; the ids so replaced; and the ids of versions
        kept before versions had bodies (an empty one), for which today's record stands in.

        Raises ``TransactionConflict`` when a row's version times and bodies differ in
        length (read on either side of an overwrite appending to them): the caller gates
        again. A body paired with another version's time does not open (its sealing names
        the time) and leaves today's record, which the caller's fingerprint check refuses.
        """
        at = micros(as_of)
        kept: list[tuple[str, int, str]] = []
        standing_in: set[str] = set()
        for row in rows:
            until, bodies = row[6] or [], row[7] or []
            if len(until) != len(bodies):
                raise TransactionConflict(
                    f"a record recall selected in tenant {tenant!r} was read while an overwrite kept a "
                    "version of it; recall again"
                )
            first = _first_after(until, at)
            if first is not None and bodies[first]:
                kept.append((row[4], until[first], bodies[first]))
            elif first is not None:
                standing_in.add(row[4])
        opened = self._crypt.versions(tenant, kept) if kept else {}
        return [opened.get(r.id, r) for r in records], set(opened), standing_in

    def kept_fingerprints(self, tenant: str, record_ids: Sequence[str], as_of: datetime) -> dict[str, str]:
        """The fingerprints of the versions of ``record_ids`` kept after ``as_of``, where one
        is and still opens (an erased version's key is gone). Read again while torn: a
        record's version times and fingerprints read on either side of an overwrite that
        appended to them (lists of unequal length, or a fingerprint sealed for another
        time); ``TransactionConflict`` if every read is."""
        if not record_ids:
            return {}
        at = micros(as_of)
        for _ in range(_TORN_READS):
            kept: list[tuple[str, str, int | None]] = []
            rows = self._read("kept_versions", tenant=tenant, ids=list(record_ids))[0]["records"]
            if any(len(until or []) != len(fingerprints or []) for _, until, fingerprints in rows):
                continue
            for rid, until, fingerprints in rows:
                first = _first_after(until or [], at)
                if first is not None:
                    kept.append((rid, fingerprints[first], until[first]))
            keys = self._crypt.record_keys(tenant, (rid for rid, _, _ in kept))
            opened = self._crypt.fingerprints(tenant, kept, keys)
            if any(fp is None and rid in keys for (rid, _, _), fp in zip(kept, opened, strict=True)):
                continue
            # A version whose key is gone (erased) has no fingerprint to compare.
            return {rid: fp for (rid, _, _), fp in zip(kept, opened, strict=True) if fp is not None}
        raise TransactionConflict(
            f"records of tenant {tenant!r} changed during each of {_TORN_READS} reads of their kept "
            "versions; verify again"
        )

    def _append_recalls(self, events: Sequence[AuditEvent]) -> None:
        self._require_schema()
        rows = [{**op_row(AppendAudit(event=e))[2], "tenant": e.tenant} for e in events]
        self._auto("append_recalls", True, {"rows": rows})

    def flush_audit(self) -> None:
        """Append every recall audit event still queued (``audit``, ``export`` and ``close`` do)."""
        self._recalls.flush()

    def all_records(self, tenant: str) -> list[MemoryRecord]:
        return self._records("all_records", tenant=tenant)

    def _records(self, name: str, **params: Any) -> list[MemoryRecord]:
        """The records a one-row read collects (a row per record costs the driver more than the data)."""
        return self._crypt.records(params["tenant"], self._read(name, **params)[0]["records"])

    def records_with_status(self, tenant: str, statuses: Sequence[Status]) -> list[MemoryRecord]:
        return self._records("records_with_status", tenant=tenant, statuses=[s.value for s in statuses])

    def by_content_hash(self, tenant: str, content_hash: str) -> list[MemoryRecord]:
        hashes = self._crypt.lookup(tenant, content_hash)
        return self._records("by_content_hash", tenant=tenant, content_hashes=hashes)

    def with_tag(self, tenant: str, tag: str) -> list[MemoryRecord]:
        return self._records("with_tag", tenant=tenant, tags=self._crypt.lookup(tenant, tag))

    def with_id_prefix(self, tenant: str, prefix: str) -> list[MemoryRecord]:
        return self._records("with_id_prefix", tenant=tenant, prefix=prefix)

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
        return self._crypt.source(tenant, rows[0]["source"]) if rows else None

    def downstream(self, tenant: str, record_ids: Sequence[str]) -> list[Dependent]:
        return self._dependents("downstream", tenant, record_ids)

    def support_of(self, tenant: str, record_ids: Sequence[str]) -> list[Dependent]:
        return self._dependents("support_of", tenant, record_ids)

    def _dependents(self, name: str, tenant: str, record_ids: Sequence[str]) -> list[Dependent]:
        found = self._read(name, tenant=tenant, ids=list(record_ids))[0]["dependents"]
        records = self._crypt.records(tenant, [stored for stored, _, _ in found])
        return [
            Dependent(
                record,
                tuple(
                    ParentState(pid, Status(status), from_micros(sup), from_micros(inv))
                    for pid, status, sup, inv in parents
                ),
                from_micros(invalidated),
            )
            for record, (_, parents, invalidated) in zip(records, found, strict=True)
        ]

    def related_scopes(
        self, tenant: str, anchor: str, via: Sequence[str], hops: int, *, as_of: datetime | None
    ) -> set[str]:
        seen = {anchor}
        frontier = [anchor]
        for _ in range(hops):
            if not frontier:
                break
            step = self._read(
                "related_step", tenant=tenant, keys=frontier, via=list(via), as_of=micros(as_of)
            )
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
                other = self._crypt.records(tenant, [row["memory"]])[0]
                memories[other.id] = other
            if row["source"] is not None:
                source = self._crypt.source(tenant, row["source"])
                sources[source.id] = source
            edges.add(
                LineageEdgeRow(
                    row["src"],
                    row["dst"],
                    row["type"],
                    from_micros(row["at"]),
                    row["reason"],
                    from_micros(row["recorded"]),
                )
            )
        for record in self.get_many(tenant, sorted(upstream)):
            memories[record.id] = record
        return (
            [memories[k] for k in sorted(memories)],
            [sources[k] for k in sorted(sources)],
            sorted(edges, key=lambda e: (e.src, e.type, e.dst)),
        )

    def export_ops(self, tenant: str) -> list[Op]:
        self._recalls.flush()
        records: list[Op] = [PutRecord(record=r) for r in self.all_records(tenant)]
        edges: list[Op] = []
        for row in self._read("export_scope_edges", tenant=tenant):
            if row["label"] == "WITHIN":
                edges.append(
                    ScopeWithin(
                        tenant=tenant, child=row["a"], parent=row["b"], recorded=from_micros(row["recorded"])
                    )
                )
            else:
                edges.append(
                    RelateScopes(
                        tenant=tenant,
                        a=row["a"],
                        rel_type=row["rel_type"],
                        b=row["b"],
                        recorded=from_micros(row["recorded"]),
                    )
                )
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
                    recorded=from_micros(row["recorded"]),
                )
            )
        edges.sort(key=lambda op: op.model_dump_json())
        audit: list[Op] = [AppendAudit(event=e) for e in self.audit(tenant, None, None)]
        return [*records, *edges, *audit]

    def audit(self, tenant: str, record_id: str | None, since: datetime | None) -> list[AuditEvent]:
        self._recalls.flush()
        rows = self._read("audit_events", tenant=tenant, record_id=record_id, since=micros(since))
        return [AuditEvent.model_validate_json(r["json"]) for r in rows]

    def reading(self) -> AbstractContextManager[object]:
        """Every read is its own auto-commit transaction: Neo4j reads at read committed, so one
        read transaction would not be one snapshot either. Recall instead has ``recalled``
        refuse a selected record that changed since the gate saw it, and gates again."""
        return nullcontext()

    def close(self) -> None:
        with suppress(BackendUnavailable):  # an unreachable server: nothing more can be done
            self._recalls.close()
        self._docs.clear()
        if self._owns_keys:
            self.keys.close()
        if self._owns_driver:
            self.driver.close()


def _unopened(stored: str) -> str:
    """The fingerprint reported for a record whose sealed fingerprint no key opens (its key
    was deleted by an erase that had not updated the graph yet): a digest of the sealed
    string, which matches no record's fingerprint."""
    return sha256(stored)


def _first_after(until: Sequence[int], at: int | None) -> int | None:
    """Where the version held at ``at`` is among kept versions held until ``until`` (oldest
    first): the first held past it; None when none was (today's record is)."""
    return next((i for i, u in enumerate(until) if at is None or u > at), None)
