"""``MemoryStore``: the one public facade over every backend.

It enforces contracts and invariants before anything is written, composes
writes into all-or-nothing batches, runs the gate before ranking, and builds
receipts. Backends only move graph data.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self
from urllib.parse import unquote, urlparse

from graphmem._args import (
    MAX_QUERY_CHARS,
    check_aware,
    check_embedding,
    check_embedding_model,
    check_flag,
    check_id,
    check_instance,
    check_int,
    check_query,
    check_rel_type,
    check_scope,
    check_tenant,
    check_text,
)
from graphmem._core import RECALL_ATTEMPTS, bulk, transactional
from graphmem.backends.base import (
    AppendAudit,
    Backend,
    Op,
    ParentState,
    PutRecord,
    RelateScopes,
    ScopeWithin,
)
from graphmem.contracts import check_record
from graphmem.errors import ConflictError, ContractViolation, LineageError, NotFound, TransactionConflict
from graphmem.gate_cache import DEFAULT_CANDIDATES, GateCache
from graphmem.gated import Gated, RankedOutcomes, Verdicts, ViewGate
from graphmem.lineage import FORGOTTEN, support_count, support_ends
from graphmem.lineage_ops import LineageOps, invalidation_edges
from graphmem.model import (
    AuditEvent,
    Decision,
    DropReason,
    GateProbe,
    Kind,
    MemoryRecord,
    ReadContext,
    Receipt,
    Selection,
    VerifyResult,
    WritePolicy,
    utcnow,
)
from graphmem.model.base import validated
from graphmem.model.records import ERASED_UNREAD
from graphmem.ranking import SELECTOR_VERSION, Document, embedding_mismatch
from graphmem.receipts import build_receipt, receipt_differences, receipt_problems
from graphmem.write_ops import WriteGateOps

__all__ = ["MemoryStore"]

_FORGOTTEN_REASONS = frozenset({DropReason.REVOKED, DropReason.RELEASED, DropReason.ERASED})
"""What the gate says of a forgotten record."""

Clock = Callable[[], datetime]


def _ended(parent: ParentState, now: datetime) -> bool:
    """Whether ``parent`` was superseded or invalidated by ``now``."""
    return any(t is not None and t <= now for t in (parent.superseded_at, parent.invalidated_at))


def _parents_first(group: list[MemoryRecord]) -> list[MemoryRecord]:
    """``group`` ordered so that every record comes after its parents within the group."""
    by_id = {r.id: r for r in group}
    done: set[str] = set()
    order: list[MemoryRecord] = []
    for record in group:
        stack: list[tuple[MemoryRecord, int]] = [(record, 0)]
        while stack:
            node, i = stack.pop()
            if node.id in done:
                continue
            parents = [p for p in node.derived_from if p in by_id and p not in done]
            if i < len(parents):
                stack.append((node, i + 1))
                stack.append((by_id[parents[i]], 0))
            else:
                done.add(node.id)
                order.append(node)
    return order


def _check_no_cycle(group: list[MemoryRecord]) -> None:
    """Parents outside the batch already exist, so a DERIVED_FROM cycle can only lie inside it."""
    # A record without parents is on no cycle: only the derived ones are walked.
    parents = {r.id: r.derived_from for r in group if r.derived_from}
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(node: str) -> None:
        state[node] = 1
        for parent in parents.get(node, ()):
            if state.get(parent) == 1:
                raise LineageError(
                    f"DERIVED_FROM would form a cycle through {node!r} and {parent!r}", code="lineage_cycle"
                )
            if parent in parents and state.get(parent) is None:
                visit(parent)
        state[node] = 2

    for record_id in parents:
        if record_id not in state:
            visit(record_id)


_NEO4J_SCHEMES = frozenset({"bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc"})
_STORE_OPTIONS = ("clock", "min_support", "write_policy", "audit_recalls", "max_query_chars", "gate_cache")


def _check_store_options(options: dict[str, Any]) -> None:
    """Refuse unknown store options and values of the wrong type, before any backend opens."""
    unknown = sorted(set(options) - set(_STORE_OPTIONS))
    if unknown:
        raise ContractViolation(
            f"unknown store option(s) {unknown!r}; the options are {', '.join(_STORE_OPTIONS)}",
            code="unknown_option",
        )
    if "clock" in options and not callable(options["clock"]):
        raise ContractViolation("clock must be a callable returning an aware datetime", code="bad_argument")
    if "min_support" in options:
        check_int(options["min_support"], "min_support", low=0, high=1_000_000)
    if options.get("write_policy") is not None:
        check_instance(options["write_policy"], WritePolicy, "not_a_policy", "write_policy")
    if options.get("audit_recalls", True) != "sync" and not isinstance(
        options.get("audit_recalls", True), bool
    ):
        raise ContractViolation(
            f"audit_recalls must be True, False or 'sync', got {options['audit_recalls']!r}",
            code="bad_argument",
        )
    if "max_query_chars" in options:
        check_int(options["max_query_chars"], "max_query_chars", low=1, high=100_000_000)
    if "gate_cache" in options:
        check_int(options["gate_cache"], "gate_cache", low=0, high=100_000_000)


def _check_neo4j_options(options: dict[str, Any]) -> None:
    auth = options.get("auth")
    if auth is not None and not (
        isinstance(auth, tuple) and len(auth) == 2 and all(isinstance(a, str) for a in auth)
    ):
        raise ContractViolation("auth must be (user, password) or None", code="bad_argument")
    if options.get("database") is not None:
        check_text(options["database"], "database", max_chars=63)
    if "connection_timeout" in options:
        timeout = options["connection_timeout"]
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < 3600:
            raise ContractViolation(
                "connection_timeout must be a number of seconds between 0 and 3600", code="bad_argument"
            )
    if "doc_cache" in options:
        check_int(options["doc_cache"], "doc_cache", low=0, high=100_000_000)
    if options.get("driver") is not None:
        import neo4j

        check_instance(options["driver"], neo4j.Driver, "bad_argument", "driver")


class MemoryStore(LineageOps, WriteGateOps):
    """Typed, governed memory. Open with ``embedded()``, ``neo4j()`` or ``open(uri)``."""

    def __init__(
        self,
        backend: Backend,
        *,
        clock: Clock = utcnow,
        min_support: int = 1,
        write_policy: WritePolicy | None = None,
        audit_recalls: bool | Literal["sync"] = True,
        max_query_chars: int = MAX_QUERY_CHARS,
        gate_cache: int = DEFAULT_CANDIDATES,
    ) -> None:
        """A store over ``backend``. ``max_query_chars`` caps query text (``query_too_long``
        beyond it); ``gate_cache`` bounds the candidates whose derived verdicts are kept
        between reads, and a tenth of it the records recalls parsed (``graphmem.gate_cache``;
        shared by every store over one backend).
        ``audit_recalls``: every recall's audit event is appended off the read path within a
        moment (``True``; a crash may lose the last moment's events, a clean
        close none), before recall returns (``"sync"``), or not at all (``False``). Raises
        ``ContractViolation`` for an option of the wrong type or range."""
        if not all(callable(getattr(backend, name, None)) for name in ("apply", "write", "gate_rows")):
            raise ContractViolation(
                f"MemoryStore needs a graphmem backend, got {type(backend).__name__}; "
                "open one with MemoryStore.embedded(), .neo4j() or .open()",
                code="not_a_backend",
            )
        _check_store_options(
            {
                "clock": clock,
                "min_support": min_support,
                "write_policy": write_policy,
                "audit_recalls": audit_recalls,
                "max_query_chars": max_query_chars,
                "gate_cache": gate_cache,
            }
        )
        self.backend = backend
        self.clock = clock
        self.min_support = min_support
        self.write_policy = write_policy or WritePolicy()
        self.audit_recalls = audit_recalls
        self.max_query_chars = max_query_chars
        self._gate_cache = GateCache.of(backend, gate_cache)

    # -- opening and closing ----------------------------------------------

    @classmethod
    def embedded(cls, path: str | Path | None = None, **store_options: Any) -> MemoryStore:
        """An in-process store; with ``path``, persisted there with crash-safe writes.

        ``store_options`` are the constructor's: clock, min_support, write_policy,
        audit_recalls, max_query_chars, gate_cache.
        """
        from graphmem.backends.embedded import EmbeddedBackend

        if path is not None and not isinstance(path, str | os.PathLike):
            raise ContractViolation(
                f"path must be a directory path or None, got {type(path).__name__}", code="bad_argument"
            )
        _check_store_options(store_options)
        return cls(EmbeddedBackend(path), **store_options)

    @classmethod
    def open(cls, uri: str, **options: Any) -> MemoryStore:
        """Open ``memory://``, ``file:///path``, ``bolt://…`` or ``neo4j://…``.

        ``options`` are the constructor's, plus the Neo4j connection options.
        """
        if not isinstance(uri, str):
            raise ContractViolation(f"uri must be a string, got {type(uri).__name__}", code="unsupported_uri")
        parsed = urlparse(uri)
        if parsed.scheme == "memory":
            return cls.embedded(**options)
        if parsed.scheme == "file":
            return cls.embedded(unquote(parsed.path), **options)
        if parsed.scheme in _NEO4J_SCHEMES:
            return cls.neo4j(uri, **options)
        raise ContractViolation(
            f"cannot open {uri!r}: use memory://, file:///path, bolt://host:port or neo4j://host:port",
            code="unsupported_uri",
        )

    @classmethod
    def neo4j(cls, uri: str, **options: Any) -> MemoryStore:
        """A store on a Neo4j 5 server: ``auth=(user, password)``, ``database=``, ``driver=``,
        ``connection_timeout=``, plus the constructor's options. Raises ``BackendUnavailable``,
        or ``ContractViolation`` for a bad URI or option."""
        from graphmem.backends.neo4j import Neo4jBackend

        if not isinstance(uri, str) or urlparse(uri).scheme not in _NEO4J_SCHEMES:
            raise ContractViolation(
                f"cannot open {uri!r} on Neo4j: use bolt://host:port or neo4j://host:port",
                code="unsupported_uri",
            )
        store_options = {k: options.pop(k) for k in list(options) if k in _STORE_OPTIONS}
        _check_store_options(store_options)
        try:
            inspect.signature(Neo4jBackend.connect).bind(uri, **options)
        except TypeError as err:
            raise ContractViolation(f"MemoryStore.neo4j(): {err}", code="unknown_option") from None
        _check_neo4j_options(options)
        return cls(Neo4jBackend.connect(uri, **options), **store_options)

    def setup(self, embedding_dimensions: int | None = None) -> int:
        """Apply the backend's schema (constraints, indexes; a vector index when
        ``embedding_dimensions`` is given) — explicit, versioned, idempotent.

        The embedded backend needs none and returns 0.
        """
        if embedding_dimensions is not None:
            check_int(embedding_dimensions, "embedding_dimensions", low=1, high=4096)
        setup = getattr(self.backend, "setup", None)
        return 0 if setup is None else int(setup(embedding_dimensions))

    def close(self) -> None:
        """Release drivers and files. The store is unusable afterwards."""
        self.backend.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- writing ----------------------------------------------------------

    def add(self, record: MemoryRecord) -> MemoryRecord:
        """Write one record. Raises ``ContractViolation``, ``ConflictError`` or ``LineageError``
        (e.g. ``forgotten_record`` or ``insufficient_support`` for a record derived from
        records that no longer support anything)."""
        return self.add_many([record])[0]

    @transactional
    def add_many(self, records: Iterable[MemoryRecord]) -> list[MemoryRecord]:
        """Write records in one all-or-nothing batch: any violation writes none of them."""
        if isinstance(records, MemoryRecord | str | bytes) or not isinstance(records, Iterable):
            raise ContractViolation(
                f"add_many() takes a list of MemoryRecord values, got {type(records).__name__}",
                code="not_a_record",
            )
        with bulk():
            return self._write_new(list(records))

    def _write_new(
        self,
        batch: list[MemoryRecord],
        *,
        extra: Sequence[Op] = (),
        action: str | None = "added",
        reason: str | None = None,
        record_ids: tuple[str, ...] = (),
    ) -> list[MemoryRecord]:
        if not batch:
            return []
        seen: set[tuple[str, str]] = set()
        for i, record in enumerate(batch):
            if not isinstance(record, MemoryRecord):
                raise ContractViolation(
                    f"add() takes MemoryRecord values, got {type(record).__name__}",
                    code="not_a_record",
                )
            # Re-validate what skipped validation (model_copy(update=...), model_construct):
            # the store must not.
            if not validated(record):
                record = batch[i] = MemoryRecord.model_validate(record.model_dump())
            check_record(record)
            key = (record.tenant, record.id)
            if key in seen:
                raise ConflictError(
                    f"record id {record.id!r} appears twice in one batch for tenant {record.tenant!r}",
                    code="duplicate_id",
                )
            seen.add(key)
        by_tenant: dict[str, list[MemoryRecord]] = {}
        for record in batch:
            by_tenant.setdefault(record.tenant, []).append(record)
        now = self.clock()
        timed: list[Op] = []
        for tenant, group in by_tenant.items():
            taken = self.backend.existing_ids(tenant, [r.id for r in group])
            if taken:
                raise ConflictError(
                    f"record id(s) {sorted(taken)!r} already exist in tenant {tenant!r}; "
                    "ids are unique per tenant — use supersede() to replace a record",
                    code="duplicate_id",
                )
            batch_ids = {r.id for r in group}
            parents = {p for r in group for p in r.derived_from}
            missing = parents - batch_ids - self.backend.existing_ids(tenant, sorted(parents - batch_ids))
            if missing:
                raise LineageError(
                    f"derived_from names record(s) {sorted(missing)!r} that do not exist in tenant "
                    f"{tenant!r}; lineage never crosses tenants",
                    code="unknown_parent",
                )
            _check_no_cycle(group)
            self._check_procedure_evidence(tenant, group)
            timed += self._check_support(tenant, group, now)
        ops: list[Op] = [PutRecord(record=r) for r in batch]
        ops.extend(extra)
        ops.extend(timed)
        if action is not None:
            ops.extend(
                AppendAudit(
                    event=AuditEvent(
                        tenant=tenant,
                        action=action,
                        actor=group[0].writer,
                        record_ids=record_ids or tuple(r.id for r in group),
                        reason=reason,
                        at=now,
                    )
                )
                for tenant, group in by_tenant.items()
            )
        self._apply(ops)
        return batch

    def _parent_states(self, tenant: str, record_ids: Sequence[str]) -> dict[str, ParentState]:
        """What support each stored record still gives: its status and effect times."""
        states: dict[str, ParentState] = {}
        for record_id in record_ids:
            memories, _, edges = self.backend.trace(tenant, record_id, 0)
            record = next((m for m in memories if m.id == record_id), None)
            if record is None:
                continue
            superseded = [e.at for e in edges if e.type == "SUPERSEDES" and e.dst == record_id and e.at]
            invalidated = [e.at for e in edges if e.type == "INVALIDATED_BY" and e.src == record_id and e.at]
            states[record_id] = ParentState(
                record_id, record.status, min(superseded, default=None), min(invalidated, default=None)
            )
        return states

    def _check_support(self, tenant: str, group: list[MemoryRecord], now: datetime) -> list[Op]:
        """Refuse a live record derived from records that no longer support it, by consolidate()'s
        rule: no forgotten parent (``forgotten_record``), and enough support left as of ``now``
        (``insufficient_support``). Support that runs out later, when a parent's supersession or
        invalidation takes effect, gets the INVALIDATED_BY edge the cascade gives at that time."""
        if not any(r.derived_from and r.status not in FORGOTTEN for r in group):
            return []
        in_batch = {r.id: r for r in group}
        outside = sorted({p for r in group for p in r.derived_from if p not in in_batch})
        states = self._parent_states(tenant, outside)
        minimum = self._needed_support
        ends_at: dict[str, datetime] = {}
        edges: list[Op] = []
        for record in _parents_first(group):
            if not record.derived_from or record.status in FORGOTTEN:
                continue
            parents = tuple(
                states[p] if p in states else ParentState(p, in_batch[p].status, None, ends_at.get(p))
                for p in record.derived_from
            )
            forgotten = [f"{p.id} ({p.status.value})" for p in parents if p.status in FORGOTTEN]
            if forgotten:
                raise LineageError(
                    f"record {record.id!r} is derived from {', '.join(forgotten)}; a forgotten record "
                    "cannot support new memory",
                    code="forgotten_record",
                )
            lost = [p.id for p in parents if _ended(p, now)]
            if lost and support_count(record, parents, set(), now) < minimum:
                raise LineageError(
                    f"record {record.id!r} needs at least {minimum} supporting record(s) or source(s); "
                    f"{lost!r} no longer hold (superseded or invalidated) as of {now.isoformat()}",
                    code="insufficient_support",
                )
            ends = support_ends(record, parents, set(), minimum)
            if ends is not None:
                at, cause = ends
                ends_at[record.id] = at
                edges += invalidation_edges(tenant, [(record, at, cause)])
        return edges

    def _check_procedure_evidence(self, tenant: str, group: list[MemoryRecord]) -> None:
        """A procedure derived from episodes needs every one of them verified successful."""
        in_batch = {r.id: r for r in group}
        for record in group:
            if record.kind is not Kind.PROCEDURAL or not record.derived_from:
                continue
            outside = [p for p in record.derived_from if p not in in_batch]
            parents = [in_batch[p] for p in record.derived_from if p in in_batch]
            parents += self.backend.get_many(tenant, outside)
            for parent in parents:
                if parent.kind is Kind.EPISODIC and not parent.succeeded:
                    raise LineageError(
                        f"procedure {record.id!r} cannot rest on episode {parent.id!r}: its outcome is "
                        f"{parent.outcome!r}; only 'verified-success' episodes can support a procedure",
                        code="unverified_episode",
                    )

    def get(self, tenant: str, record_id: str) -> MemoryRecord | None:
        """The stored record, or ``None``. Raises ``ContractViolation`` for a missing tenant
        or a malformed id."""
        return self.backend.get(check_tenant(tenant), check_id(record_id))

    @transactional
    def scope_within(self, tenant: str, child: str, parent: str) -> None:
        """Declare ``child`` WITHIN ``parent``: records of ``parent`` apply inside ``child``."""
        tenant, child, parent = check_tenant(tenant), check_scope(child), check_scope(parent)
        if child == parent or child in self.backend.scope_ancestors(tenant, [parent]):
            raise LineageError(
                f"{child!r} WITHIN {parent!r} would make a cycle of scopes", code="scope_cycle"
            )
        if parent in self.backend.scope_parents(tenant, child):
            return
        self._apply([ScopeWithin(tenant=tenant, child=child, parent=parent)])

    @transactional
    def relate_scopes(self, tenant: str, a: str, rel_type: str, b: str) -> None:
        """Declare a typed relation between two scopes, e.g. ``merchant:m1 USES system:gw-2``."""
        tenant, a, b = check_tenant(tenant), check_scope(a), check_scope(b)
        check_rel_type(rel_type)
        self._apply([RelateScopes(tenant=tenant, a=a, rel_type=rel_type, b=b)])

    # -- reading ----------------------------------------------------------

    def recall(
        self,
        ctx: ReadContext,
        query: str = "",
        explain: bool = False,
        *,
        query_embedding: Sequence[float] | None = None,
        query_embedding_model: str | None = None,
        actor: str | None = None,
    ) -> Selection:
        """Gate every candidate in SPEC §3's order, rank only the survivors, and receipt it.

        With ``explain=True`` the selection carries a ``Decision`` for every
        candidate, ranked ones in rank order and then the gate's drops by id;
        otherwise only for the selected records. ``query_embedding_model`` names the model
        that made ``query_embedding`` (the receipt keeps it). Raises ``ContractViolation``
        (``not_a_context``, ``query_too_long``, ``embedding_not_finite``, ``bad_argument``,
        ``invalid_embedding_model``, ``embedding_model_without_embedding``), and
        ``embedding_model_mismatch`` when a record the gate let through was embedded in
        another dimension than the query, or by another model than the one named.
        """
        return self._recall(
            ctx,
            query,
            explain,
            query_embedding,
            query_embedding_model=query_embedding_model,
            audit=self.audit_recalls is not False,
            actor=actor,
        )

    def _read_args(
        self, verb: str, ctx: object, query: object, query_embedding: object = None
    ) -> tuple[ReadContext, str, tuple[float, ...] | None]:
        """The checked (context, query, query embedding) of a read."""
        ctx = check_instance(ctx, ReadContext, "not_a_context", f"{verb}()'s context")
        return ctx, check_query(query, self.max_query_chars), check_embedding(query_embedding)

    def _recall(
        self,
        ctx: ReadContext,
        query: str,
        explain: bool,
        query_embedding: Sequence[float] | None,
        *,
        query_embedding_model: str | None = None,
        audit: bool = False,
        actor: str | None = None,
        narrow: Callable[[ReadContext], ReadContext] | None = None,
    ) -> Selection:
        """``recall``; ``narrow``, when given, turns the checked context into the one the recall
        reads with, inside the recall's read (``precedents`` reaches its scopes there)."""
        ctx, query, embedding = self._read_args("recall", ctx, query, query_embedding)
        model = check_embedding_model(query_embedding_model, embedding)
        check_flag(explain, "explain")
        actor = check_text(actor, "actor", max_chars=256, optional=True)
        asked = ctx
        for attempt in range(1, RECALL_ATTEMPTS + 1):
            epoch = self._gate_cache.epoch(asked.tenant)  # before the read's snapshot begins
            with self.backend.reading():
                ctx = asked if narrow is None else narrow(asked)
                gated = self._gated(ctx, epoch)
                receipt, decisions = self._receipt_of(gated, ctx, query, explain, embedding, model)
                event = None
                if audit:
                    event = AuditEvent(
                        tenant=ctx.tenant,
                        action="recalled",
                        actor=actor,
                        record_ids=receipt.selected_ids,
                        at=self.clock(),
                        details={"receipt": receipt.digest, "context": receipt.context_digest},
                    )
                # The selected records and the audit event in one round trip where the backend
                # can. A backend whose reads are not one snapshot refuses records that changed
                # since its gate saw them (TransactionConflict): then gate again.
                try:
                    records = tuple(
                        self.backend.recalled(
                            ctx.tenant,
                            receipt.selected_ids,
                            event,
                            sync=self.audit_recalls == "sync",
                            as_of=ctx.known_at,
                            seen=gated.seen(receipt.selected_ids),
                            parsed=self._gate_cache.parsed(ctx.tenant, epoch),
                        )
                    )
                except TransactionConflict:
                    if attempt == RECALL_ATTEMPTS:
                        raise
                    # A change the probe did not count (a backend reading at read committed, a
                    # schema upgrade): what the cache holds of the tenant is derived again.
                    self._gate_cache.purge({ctx.tenant})
                    continue
            return Selection(records=records, decisions=decisions, receipt=receipt)
        raise AssertionError("unreachable")  # pragma: no cover

    def _gate_view(self, ctx: ReadContext) -> ViewGate:
        """``_gated`` in a read of its own."""
        epoch = self._gate_cache.epoch(ctx.tenant)
        with self.backend.reading():
            return self._gated(ctx, epoch)

    def _survivors(self, ctx: ReadContext) -> list[Document]:
        """The ranking inputs of ``ctx``'s survivors alone, in a read of its own: from the
        backend's ``survivor_rows`` where it has them (they leave out what is out of use for
        good), held in the gate cache under a key of their own; else ``_gate_view``'s."""
        rows_of = getattr(self.backend, "survivor_rows", None)
        if rows_of is None:
            return self._gate_view(ctx).survivors
        epoch = self._gate_cache.epoch(ctx.tenant)
        cache = self._gate_cache
        with self.backend.reading():
            probe = self.backend.gate_probe(ctx)
            probe = GateProbe(("survivors", probe.key), probe.token, probe.state, probe.erasures)
            found = cache.get(ctx.tenant, probe, ctx.now, ctx.known_at)
            if found is None:
                rows = rows_of(ctx, probe)
                found = Verdicts.of_columns(rows)
                cache.put(ctx.tenant, probe, rows, ctx.now, ctx.known_at, found, epoch)
        return ViewGate(found).survivors

    def _gated(self, ctx: ReadContext, epoch: int) -> ViewGate:
        """The gate's verdicts on ``ctx``'s candidates, from the cache while the backend's
        probe says they hold, else derived from its rows (and kept, unless the tenant was
        purged since ``epoch``, taken before this read's snapshot began)."""
        probe = self.backend.gate_probe(ctx)
        cache = self._gate_cache
        found = cache.get(ctx.tenant, probe, ctx.now, ctx.known_at)
        if found is None:
            rows = self.backend.gate_rows(ctx, probe)
            found = Verdicts.of_columns(rows)
            cache.put(ctx.tenant, probe, rows, ctx.now, ctx.known_at, found, epoch)
        return ViewGate(found)

    def _receipt_of(
        self,
        gated: Gated,
        ctx: ReadContext,
        query: str,
        explain: bool,
        query_embedding: Sequence[float] | None,
        query_model: str | None,
    ) -> tuple[Receipt, tuple[Decision, ...]]:
        if query_embedding is not None:
            # Over the survivors only: a record the gate dropped says nothing, not even its model.
            problem = embedding_mismatch(gated.embedding_kinds(), len(query_embedding), query_model)
            if problem is not None:
                raise ContractViolation(problem, code="embedding_model_mismatch")
        ranked = gated.ranked(query, query_embedding)
        # Without explain, survivors past the limit that scored zero (LIMITED) are left out:
        # receipts' digests take them as read.
        outcomes = RankedOutcomes(ranked, ctx.limit, ctx.min_score, every=explain)
        selected = outcomes.selected()
        selected_ids = [rid for rid, _ in selected]
        receipt = build_receipt(
            ctx,
            query,
            query_embedding,
            gated.candidates_digest(),
            gated.decisions_digest(outcomes),
            selected_ids,
            SELECTOR_VERSION,
            embedding_model=query_model,
        )
        if explain:
            decisions = tuple(
                [
                    *(
                        Decision.model_construct(record_id=i, selected=s, reason=r, score=v)
                        for i, (s, r, v) in outcomes.items()
                    ),
                    *(
                        Decision.model_construct(record_id=i, selected=False, reason=r, score=None)
                        for i, r in gated.dropped()
                    ),
                ]
            )
        else:
            decisions = tuple(
                Decision.model_construct(record_id=i, selected=True, reason=None, score=score)
                for i, score in selected
            )
        return receipt, decisions

    def explain(self, ctx: ReadContext, record_id: str, query: str = "") -> Decision:
        """Why ``record_id`` was (not) used for ``ctx``: its decision, wherever the record applies.

        Raises ``NotFound`` if the tenant has no such record.
        """
        ctx, query, _ = self._read_args("explain", ctx, query)
        record_id = check_id(record_id)
        found = self.backend.gate_one(ctx, record_id)
        if found is None:
            raise NotFound(f"no record {record_id!r} in tenant {ctx.tenant!r}")
        if found[1] is not None:
            return Decision(record_id=record_id, selected=False, reason=found[1])
        ranked = self._gate_view(ctx).ranked(query, None)
        outcome = RankedOutcomes(ranked, ctx.limit, ctx.min_score, every=True).get(record_id)
        if outcome is None:
            raise NotFound(f"record {record_id!r} changed while it was explained; ask again")
        return Decision(record_id=record_id, selected=outcome[0], reason=outcome[1], score=outcome[2])

    def verify(self, receipt: Receipt, ctx: ReadContext) -> VerifyResult:
        """Replay ``receipt``'s recall as of its knowledge time and say what differs.

        ``verified`` when the store still gives exactly this recall (whatever was written
        after ``as_of``); ``changed_since`` when candidates of the recall were forgotten
        since (``forgotten`` lists them: forgetting holds at every time, so it legitimately
        changes a replay); else ``mismatch`` with ``differences``. ``bool(result)`` is true
        only for ``verified``. Raises ``ContractViolation`` for a value of the wrong type.
        """
        receipt = check_instance(receipt, Receipt, "not_a_receipt", "verify()'s receipt")
        ctx, _, _ = self._read_args("verify", ctx, receipt.query, receipt.query_embedding)
        problems = receipt_problems(receipt, ctx)
        if problems:
            return VerifyResult(status="mismatch", differences=tuple(problems))
        epoch = self._gate_cache.epoch(ctx.tenant)
        with self.backend.reading():
            gated = self._gated(ctx, epoch)
            try:
                again, decisions = self._receipt_of(
                    gated, ctx, receipt.query, True, receipt.query_embedding, receipt.embedding_model
                )
            except ContractViolation as err:
                if err.code != "embedding_model_mismatch":
                    raise
                # Records the recall ranked were embedded again (by another model) since.
                return VerifyResult(status="mismatch", differences=(f"embedding: {err.message}",))
            if again == receipt:
                return VerifyResult(status="verified")
        reasons = {d.record_id: d.reason for d in decisions}
        gone = sorted(set(receipt.selected_ids) - set(reasons))
        # Outside the read: the audit log flushes queued recall events first (a write). The
        # log only grows and a version kept after as_of never changes, so reading them after
        # the replay cannot disagree with it. An erase the replay saw by its deleted key alone
        # (its graph update and forget event not committed yet) is one of them too: read
        # before the log, so an erase that commits in between is in the log instead.
        unrecorded = self._erased_unrecorded(ctx.tenant, reasons)
        touched = sorted({*self._touched_by_forgets(ctx.tenant, ctx.known_at, reasons), *unrecorded})
        if not touched or gone:
            return VerifyResult(
                status="mismatch", differences=tuple(receipt_differences(receipt, again, gone))
            )
        # The forgotten records as they were then, where a kept version says (revoke and
        # release keep one; an erase takes them): every other candidate must be unchanged.
        kept = self.backend.kept_fingerprints(ctx.tenant, touched, ctx.known_at)
        lost = [rid for rid in touched if rid not in kept]
        forgotten = [rid for rid in touched if rid in lost or reasons[rid] in _FORGOTTEN_REASONS]
        unchecked = ["order and decisions: ranked again without the records forgotten since"]
        if lost:
            unchecked.append(
                "candidates: an erase took the fingerprints of " + ", ".join(lost) + "; the others "
                "were not compared"
            )
        elif gated.candidates_digest_with(kept) != receipt.candidates_digest:
            return VerifyResult(
                status="mismatch",
                forgotten=tuple(forgotten),
                differences=(
                    "candidates: a record's content or fingerprint, or the set of candidates, "
                    "differs beside the records forgotten since",
                ),
            )
        if not forgotten:  # only records changed by a forget whose versions replay exactly
            return VerifyResult(
                status="mismatch", differences=tuple(receipt_differences(receipt, again, gone))
            )
        return VerifyResult(status="changed_since", forgotten=tuple(forgotten), unchecked=tuple(unchecked))

    def _erased_unrecorded(self, tenant: str, reasons: dict[str, DropReason | None]) -> set[str]:
        """The candidates dropped as erased because their data key is gone while the graph
        has not recorded their erase (an erase between deleting the key and committing, on
        a backend that deletes it first, or one a crash cut short)."""
        erased = [rid for rid, reason in reasons.items() if reason is DropReason.ERASED]
        if not erased:
            return set()
        return {
            r.id
            for r in self.backend.get_many(tenant, erased)
            if r.tombstone is not None and r.tombstone.reason == ERASED_UNREAD
        }

    def _touched_by_forgets(
        self, tenant: str, as_of: datetime, reasons: dict[str, DropReason | None]
    ) -> list[str]:
        """The candidates a forget request recorded after ``as_of`` took out of use or changed."""
        out = {
            rid
            for event in self.backend.audit(tenant, None, as_of)
            if event.action == "forgotten" and event.at > as_of
            for rid in event.record_ids
            if rid in reasons
        }
        return sorted(out)

    def pending_reasons(self, tenant: str) -> dict[str, str]:
        """Why each record waiting for approval waits (record id → reason code, e.g.
        ``suspected_injection``), from its latest ``pending_approval`` audit event."""
        tenant = check_tenant(tenant)
        # The events are read after the waiting records, so every one of those has its event
        # (a record approved in between is simply left out).
        pending = {r.id for r in self.approvals(tenant)}
        events = self.audit(tenant)
        reasons: dict[str, str] = {}
        for event in events:
            if event.action == "pending_approval" and event.reason:
                for record_id in event.record_ids:
                    if record_id in pending:
                        reasons[record_id] = event.reason
        return reasons

    def audit(
        self, tenant: str, record_id: str | None = None, since: datetime | None = None
    ) -> list[AuditEvent]:
        """Audit events of ``tenant``, optionally about one record and/or since a time (aware)."""
        tenant = check_tenant(tenant)
        record_id = None if record_id is None else check_id(record_id)
        since = None if since is None else check_aware(since, "since")
        return self.backend.audit(tenant, record_id, since)
