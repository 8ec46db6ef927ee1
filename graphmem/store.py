"""``MemoryStore``: the one public facade over every backend.

It enforces contracts and invariants before anything is written, composes
writes into all-or-nothing batches, runs the gate before ranking, and builds
receipts. Backends only move graph data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import unquote, urlparse

from graphmem._args import check_rel_type, check_scope, check_tenant
from graphmem._core import ATTEMPTS, bulk, transactional
from graphmem.backends.base import (
    AppendAudit,
    Backend,
    Op,
    PutRecord,
    RelateScopes,
    ScopeWithin,
)
from graphmem.contracts import check_record
from graphmem.errors import ConflictError, ContractViolation, LineageError, NotFound, TransactionConflict
from graphmem.gated import LIMITED, as_gated
from graphmem.lineage_ops import LineageOps
from graphmem.model import (
    AuditEvent,
    Decision,
    DropReason,
    Kind,
    MemoryRecord,
    ReadContext,
    Receipt,
    Selection,
    WritePolicy,
    utcnow,
)
from graphmem.model.base import validated
from graphmem.ranking import SELECTOR_VERSION
from graphmem.receipts import build_receipt, receipt_is_consistent
from graphmem.write_ops import WriteGateOps

__all__ = ["MemoryStore"]

Clock = Callable[[], datetime]


def _check_no_cycle(group: list[MemoryRecord]) -> None:
    """Parents outside the batch already exist, so a DERIVED_FROM cycle can only lie inside it."""
    parents = {r.id: [p for p in r.derived_from] for r in group}
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


def _outcomes(
    ranked: list[tuple[str, float]], ctx: ReadContext, every: bool
) -> dict[str, tuple[bool, DropReason | None, float]]:
    """The decision (selected, reason, score) on each ranked survivor, in rank order.

    Without ``every``, survivors past the limit that scored zero — the usual bulk,
    ``LIMITED`` — are left out: receipts' digests take them as read.
    """
    # Scores are descending, so those below the minimum form a suffix.
    eligible = len(ranked)
    while eligible and ranked[eligible - 1][1] < ctx.min_score:
        eligible -= 1
    chosen = min(ctx.limit, eligible)
    matched = chosen
    while matched < eligible and ranked[matched][1] != 0.0:
        matched += 1
    outcomes: dict[str, tuple[bool, DropReason | None, float]] = {
        rid: (True, None, score) for rid, score in ranked[:chosen]
    }
    outcomes.update((rid, (False, DropReason.SELECTION_LIMIT, s)) for rid, s in ranked[chosen:matched])
    if every:
        outcomes.update((rid, LIMITED) for rid, _ in ranked[matched:eligible])
    outcomes.update((rid, (False, DropReason.BELOW_MIN_SCORE, s)) for rid, s in ranked[eligible:])
    return outcomes


class MemoryStore(LineageOps, WriteGateOps):
    """Typed, governed memory. Open with ``embedded()``, ``neo4j()`` or ``open(uri)``."""

    def __init__(
        self,
        backend: Backend,
        *,
        clock: Clock = utcnow,
        min_support: int = 1,
        write_policy: WritePolicy | None = None,
        audit_recalls: bool = True,
    ) -> None:
        self.backend = backend
        self.clock = clock
        self.min_support = min_support
        self.write_policy = write_policy or WritePolicy()
        self.audit_recalls = audit_recalls

    # -- opening and closing ----------------------------------------------

    @classmethod
    def embedded(cls, path: str | Path | None = None, **store_options: Any) -> MemoryStore:
        """An in-process store; with ``path``, persisted there with crash-safe writes.

        ``store_options`` are the constructor's: clock, min_support, write_policy, audit_recalls.
        """
        from graphmem.backends.embedded import EmbeddedBackend

        return cls(EmbeddedBackend(path), **store_options)

    @classmethod
    def open(cls, uri: str, **options: Any) -> MemoryStore:
        """Open ``memory://``, ``file:///path``, ``bolt://…`` or ``neo4j://…``.

        ``options`` are the constructor's, plus the Neo4j connection options.
        """
        parsed = urlparse(uri)
        if parsed.scheme == "memory":
            return cls.embedded(**options)
        if parsed.scheme == "file":
            return cls.embedded(unquote(parsed.path), **options)
        if parsed.scheme in {"bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc"}:
            return cls.neo4j(uri, **options)
        raise ContractViolation(
            f"cannot open {uri!r}: use memory://, file:///path, bolt://host:port or neo4j://host:port",
            code="unsupported_uri",
        )

    @classmethod
    def neo4j(cls, uri: str, **options: Any) -> MemoryStore:
        """A store on a Neo4j 5 server: ``auth=(user, password)``, ``database=``, ``driver=``,
        ``connection_timeout=``, plus the constructor's options. Raises ``BackendUnavailable``."""
        from graphmem.backends.neo4j import Neo4jBackend

        store_keys = {"clock", "min_support", "write_policy", "audit_recalls"}
        store_options = {k: options.pop(k) for k in list(options) if k in store_keys}
        return cls(Neo4jBackend.connect(uri, **options), **store_options)

    def setup(self, embedding_dimensions: int | None = None) -> int:
        """Apply the backend's schema (constraints, indexes; a vector index when
        ``embedding_dimensions`` is given) — explicit, versioned, idempotent.

        The embedded backend needs none and returns 0.
        """
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
        """Write one record. Raises ``ContractViolation``, ``ConflictError`` or ``LineageError``."""
        return self.add_many([record])[0]

    @transactional
    def add_many(self, records: Iterable[MemoryRecord]) -> list[MemoryRecord]:
        """Write records in one all-or-nothing batch: any violation writes none of them."""
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
        now = self.clock()
        ops: list[Op] = [PutRecord(record=r) for r in batch]
        ops.extend(extra)
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
        self.backend.apply(ops)
        return batch

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
        """The stored record, or ``None``. Raises ``ContractViolation`` for a missing tenant."""
        return self.backend.get(check_tenant(tenant), record_id)

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
        self.backend.apply([ScopeWithin(tenant=tenant, child=child, parent=parent)])

    @transactional
    def relate_scopes(self, tenant: str, a: str, rel_type: str, b: str) -> None:
        """Declare a typed relation between two scopes, e.g. ``merchant:m1 USES system:gw-2``."""
        tenant, a, b = check_tenant(tenant), check_scope(a), check_scope(b)
        check_rel_type(rel_type)
        self.backend.apply([RelateScopes(tenant=tenant, a=a, rel_type=rel_type, b=b)])

    # -- reading ----------------------------------------------------------

    def recall(
        self,
        ctx: ReadContext,
        query: str = "",
        explain: bool = False,
        *,
        query_embedding: Sequence[float] | None = None,
        actor: str | None = None,
    ) -> Selection:
        """Gate every candidate in SPEC §3's order, rank only the survivors, and receipt it.

        With ``explain=True`` the selection carries a ``Decision`` for every
        candidate, ranked ones in rank order and then the gate's drops by id;
        otherwise only for the selected records.
        """
        return self._recall(ctx, query, explain, query_embedding, audit=self.audit_recalls, actor=actor)

    def _recall(
        self,
        ctx: ReadContext,
        query: str,
        explain: bool,
        query_embedding: Sequence[float] | None,
        *,
        audit: bool = False,
        actor: str | None = None,
    ) -> Selection:
        if not isinstance(ctx, ReadContext):
            raise ContractViolation("recall() needs a ReadContext", code="not_a_context")
        for attempt in range(1, ATTEMPTS + 1):
            with self.backend.reading():
                receipt, decisions = self._recall_now(ctx, query, explain, query_embedding)
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
                    records = tuple(self.backend.recalled(ctx.tenant, receipt.selected_ids, event))
                except TransactionConflict:
                    if attempt == ATTEMPTS:
                        raise
                    continue
            return Selection(records=records, decisions=decisions, receipt=receipt)
        raise AssertionError("unreachable")  # pragma: no cover

    def _recall_now(
        self, ctx: ReadContext, query: str, explain: bool, query_embedding: Sequence[float] | None
    ) -> tuple[Receipt, tuple[Decision, ...]]:
        gated = as_gated(self.backend.gate(ctx))
        ranked = gated.ranked(query, query_embedding)
        outcomes = _outcomes(ranked, ctx, every=explain)
        selected_ids = [rid for rid, _ in ranked[: ctx.limit] if outcomes[rid][0]]
        receipt = build_receipt(
            ctx,
            query,
            query_embedding,
            gated.candidates_digest(),
            gated.decisions_digest(outcomes),
            selected_ids,
            SELECTOR_VERSION,
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
                Decision.model_construct(record_id=i, selected=True, reason=None, score=outcomes[i][2])
                for i in selected_ids
            )
        return receipt, decisions

    def explain(self, ctx: ReadContext, record_id: str, query: str = "") -> Decision:
        """Why ``record_id`` was (not) used for ``ctx``: its decision, wherever the record applies.

        Raises ``NotFound`` if the tenant has no such record.
        """
        found = self.backend.gate_one(ctx, record_id)
        if found is None:
            raise NotFound(f"no record {record_id!r} in tenant {ctx.tenant!r}")
        if found[1] is not None:
            return Decision(record_id=record_id, selected=False, reason=found[1])
        with self.backend.reading():
            ranked = as_gated(self.backend.gate(ctx)).ranked(query, None)
        outcome = _outcomes(ranked, ctx, every=True).get(record_id)
        if outcome is None:
            raise NotFound(f"record {record_id!r} changed while it was explained; ask again")
        return Decision(record_id=record_id, selected=outcome[0], reason=outcome[1], score=outcome[2])

    def verify(self, receipt: Receipt, ctx: ReadContext) -> bool:
        """Recompute ``receipt`` against the store as of ``ctx.now``; False on any difference."""
        if not receipt_is_consistent(receipt, ctx):
            return False
        with self.backend.reading():
            again, _ = self._recall_now(ctx, receipt.query, False, receipt.query_embedding)
        return again == receipt

    def audit(
        self, tenant: str, record_id: str | None = None, since: datetime | None = None
    ) -> list[AuditEvent]:
        """Audit events of ``tenant``, optionally about one record and/or since a time."""
        return self.backend.audit(check_tenant(tenant), record_id, since)
