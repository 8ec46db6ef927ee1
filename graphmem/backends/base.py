"""The primitive operations every backend implements; the store composes them.

Writes are batches of ``Op`` values applied all-or-nothing. Reads return
records and the graph facts the gate needs; the gate itself lives in
``graphmem.model.gate`` and runs in the store (or, for speed, in the database).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Literal, Protocol, Union

from pydantic import Field

from graphmem.model import (
    AuditEvent,
    DropReason,
    GateProbe,
    GateRows,
    GraphmemModel,
    MemoryRecord,
    ReadContext,
    Source,
    Status,
)
from graphmem.model.base import AwareDatetime

__all__ = [
    "AddEdge",
    "AppendAudit",
    "Backend",
    "Op",
    "ParsedRecords",
    "PriorVersion",
    "PutRecord",
    "RelateScopes",
    "ScopeWithin",
    "UpdateRecord",
    "erased_tenants",
]


class ParsedRecords(Protocol):
    """Records parsed by earlier reads of one tenant, by fingerprint (the SHA-256 of the
    stored body): ``recalled`` may return the one held for a row whose body is exactly the
    held body (so the row still hashes to its fingerprint) instead of hashing and parsing
    it again."""

    def get(self, fingerprint: str) -> tuple[str, MemoryRecord] | None:
        """(body, record) held for ``fingerprint``, or None."""
        ...

    def put(self, fingerprint: str, body: str, record: MemoryRecord) -> None:
        """Hold ``record``, parsed from ``body``, which hashes to ``fingerprint``."""
        ...


class PriorVersion(GraphmemModel):
    """The version of a record an overwrite replaces, kept so that a replay as of an earlier
    knowledge time sees the record as it was: its status and fingerprint until ``until``,
    when the store recorded the change (an approval, a contest or its resolution, merged
    sources), and the whole record (``record``), which such a replay returns. Forgetting
    keeps none: it holds at every time, and an erase removes them."""

    until: AwareDatetime
    status: Status
    fingerprint: str | None = None
    """None: the fingerprint the backend stores for the record (a backend with
    ``copies_fingerprints`` only)."""
    record: MemoryRecord | None = None


class PutRecord(GraphmemModel):
    """Create a record node with its APPLIES_TO, CITES and DERIVED_FROM edges, or, with
    ``replace``, overwrite a stored one (keeping ``prior``, if given, for replays).
    Creating an id that exists is a ``ConflictError``."""

    op: Literal["put_record"] = "put_record"
    record: MemoryRecord
    replace: bool = False
    prior: PriorVersion | None = None


class UpdateRecord(GraphmemModel):
    """Overwrite a stored record whose scope, sources and parents are unchanged
    (status changes, erasure): no edge is touched. ``prior`` as for ``PutRecord``."""

    op: Literal["update_record"] = "update_record"
    record: MemoryRecord
    #: Part of an erase: before applying it the backend removes what would keep the erased
    #: text readable (on Neo4j, the data keys).
    erase: bool = False
    prior: PriorVersion | None = None
    #: Only the record's status and its cited sources' statuses differ from the stored record
    #: (a revoke or release): a backend may leave every other stored field as it is.
    status_only: bool = False


class ScopeWithin(GraphmemModel):
    """``child`` WITHIN ``parent``, recorded at ``recorded`` (None: known at every time): a
    read as of an earlier knowledge time does not reach through it."""

    op: Literal["scope_within"] = "scope_within"
    tenant: str
    child: str
    parent: str
    recorded: AwareDatetime | None = None


class RelateScopes(GraphmemModel):
    """``a`` RELATED {``rel_type``} ``b``, recorded at ``recorded`` (None: known at every
    time): ``precedents`` as of an earlier knowledge time does not follow it."""

    op: Literal["relate_scopes"] = "relate_scopes"
    tenant: str
    a: str
    rel_type: str
    b: str
    recorded: AwareDatetime | None = None


class AddEdge(GraphmemModel):
    """A lineage edge that takes effect at ``at``: SUPERSEDES (memory → memory) or
    INVALIDATED_BY (memory → memory or source). ``recorded`` is when the store learned
    it (knowledge time); None means known at every time (edges of older stores)."""

    op: Literal["add_edge"] = "add_edge"
    tenant: str
    label: Literal["SUPERSEDES", "INVALIDATED_BY"]
    src: str
    dst: str
    dst_is_source: bool = False
    at: AwareDatetime
    reason: str | None = None
    recorded: AwareDatetime | None = None


class AppendAudit(GraphmemModel):
    op: Literal["append_audit"] = "append_audit"
    event: AuditEvent


Op = Annotated[
    Union[PutRecord, UpdateRecord, ScopeWithin, RelateScopes, AddEdge, AppendAudit],  # noqa: UP007 - discriminated union
    Field(discriminator="op"),
]


def erased_tenants(ops: Sequence[Op]) -> set[str]:
    """The tenants whose text ``ops`` erase: a record written erased or rewritten as part of
    an erase (``UpdateRecord.erase``: its own text, or its erased sources' quotes). Every
    backend counts such a write per tenant in its transaction (``GateProbe.erasures``);
    the store purges those tenants' cached verdicts around it."""
    return {
        op.record.tenant
        for op in ops
        if isinstance(op, PutRecord | UpdateRecord)
        and (op.record.status is Status.ERASED or (isinstance(op, UpdateRecord) and op.erase))
    }


@dataclass(frozen=True, slots=True)
class ParentState:
    """What support a DERIVED_FROM parent still gives: its status and effect times."""

    id: str
    status: Status
    superseded_at: datetime | None
    invalidated_at: datetime | None


@dataclass(frozen=True, slots=True)
class Dependent:
    """A record downstream of a change, with the state of each of its parents and the
    earliest time it is itself invalidated (None: never)."""

    record: MemoryRecord
    parents: tuple[ParentState, ...]
    invalidated_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class LineageEdgeRow:
    src: str
    dst: str
    type: str
    at: datetime | None
    reason: str | None
    recorded: datetime | None = None


class Backend(Protocol):
    """Graph I/O for one store. Implementations: embedded (networkx) and Neo4j."""

    def apply(self, ops: Sequence[Op]) -> None:
        """Apply every op or none of them."""
        ...

    def get(self, tenant: str, record_id: str) -> MemoryRecord | None: ...

    def name_digest(self, tenant: str, value: str) -> str:
        """A 64-hex-digit digest of ``value`` for names derived from content (proposal ids,
        hashed LangGraph scopes and item ids): the same for the same value and tenant, always.
        Tombstones keep such names, so where the store's files outlive an erase (Neo4j) it is
        keyed, and confirms no guess of the erased text."""
        ...

    def existing_ids(self, tenant: str, record_ids: Sequence[str]) -> set[str]: ...

    def scope_ancestors(self, tenant: str, scopes: Sequence[str]) -> set[str]:
        """The given scopes plus every scope they are transitively WITHIN."""
        ...

    def scope_parents(self, tenant: str, scope: str) -> set[str]: ...

    def source_exists(self, tenant: str, source_id: str) -> bool: ...

    def gate_probe(self, ctx: ReadContext) -> GateProbe:
        """What the gate's verdicts on ``ctx`` depend on, found cheaply (``GateProbe``): the
        store serves verdicts it derived under an equal key and token without asking for
        rows. Called in the read's snapshot, before ``gate_rows``. ``erasures`` is the
        tenant's count of committed erasing writes (``erased_tenants``), read in the same
        query and, where reads are not one snapshot, before any candidate."""
        ...

    def gate_rows(self, ctx: ReadContext, probe: GateProbe) -> GateRows:
        """Gate every candidate of ``ctx``: the tenant's records whose scope lies in the context's closure.

        The closure is the context's scopes and run plus every scope they are
        transitively WITHIN; a run scope other than the context's own runs
        (``ctx.own_runs``) is in the closure but out of scope (``scope_mismatch``).
        ``probe`` is this read's ``gate_probe``; rows that are not its state (read
        again because a record changed in between) say so (``GateRows.keep``).
        """
        ...

    def gate_one(self, ctx: ReadContext, record_id: str) -> tuple[str, DropReason | None] | None:
        """(fingerprint, drop reason) of one record of ``ctx.tenant`` wherever it applies, or None."""
        ...

    def get_many(self, tenant: str, record_ids: Sequence[str]) -> list[MemoryRecord]:
        """The records with these ids, in the given order (missing ones left out)."""
        ...

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
        """``get_many`` of a recall's selection, each record as the store held it at the
        knowledge time ``as_of`` (its kept version when a later overwrite replaced it; today's
        when ``as_of`` is None); the recall's audit event (if any) is queued
        and appended off the read path (``graphmem.backends.recall_log``), or with ``sync``
        appended before this returns, in a write of its own once the read has ended.
        ``seen``: record id → (fingerprint, state) as the gate's rows reported them; a
        backend whose reads are not one snapshot raises ``TransactionConflict`` for a
        record no longer in that state. ``parsed``: records the store parsed before, which a
        backend that reads each selected row's body may reuse for a row whose body is the
        held one (a damaged body is refused all the same)."""
        ...

    def all_records(self, tenant: str) -> list[MemoryRecord]: ...

    def scope_exists(self, tenant: str, scope: str) -> bool: ...

    def records_with_status(self, tenant: str, statuses: Sequence[Status]) -> list[MemoryRecord]: ...

    def by_content_hash(self, tenant: str, content_hash: str) -> list[MemoryRecord]:
        """Records whose normalised content hash is ``content_hash`` (dedup candidates)."""
        ...

    def with_tag(self, tenant: str, tag: str) -> list[MemoryRecord]: ...

    def with_id_prefix(self, tenant: str, prefix: str) -> list[MemoryRecord]:
        """Records whose id starts with ``prefix``, by id: an index range, whatever the tenant's size."""
        ...

    def scope_descendants(self, tenant: str, scope: str) -> set[str]:
        """``scope`` plus every scope transitively WITHIN it."""
        ...

    def records_applying(self, tenant: str, scopes: Sequence[str]) -> list[MemoryRecord]:
        """Records whose APPLIES_TO scope is one of ``scopes``."""
        ...

    def citing(self, tenant: str, source_id: str) -> list[MemoryRecord]:
        """Records with a CITES edge to the source."""
        ...

    def citing_ids(self, tenant: str, source_id: str) -> list[str]:
        """The ids of the records that cite ``source_id``, without loading the records."""
        ...

    def source(self, tenant: str, source_id: str) -> Source | None: ...

    def support_of(self, tenant: str, record_ids: Sequence[str]) -> list[Dependent]:
        """The records with the state of each of their DERIVED_FROM parents."""
        ...

    def downstream(self, tenant: str, record_ids: Sequence[str]) -> list[Dependent]:
        """Every record transitively derived from ``record_ids`` (not those themselves)."""
        ...

    def kept_fingerprints(self, tenant: str, record_ids: Sequence[str], as_of: datetime) -> dict[str, str]:
        """The fingerprint each of ``record_ids`` had at ``as_of`` where a version kept after
        it says so (record id → fingerprint; records without one are left out): what a
        verify needs of records forgotten since, which the gate reports as they are now."""
        ...

    def related_scopes(
        self, tenant: str, anchor: str, via: Sequence[str], hops: int, *, as_of: datetime | None
    ) -> set[str]:
        """Scopes reachable from ``anchor`` over RELATED edges of the given types, either direction,
        at most ``hops`` away, through edges recorded by ``as_of`` (None: every edge; an edge with
        no recorded time is known at every time)."""
        ...

    def trace(
        self, tenant: str, record_id: str, depth: int
    ) -> tuple[list[MemoryRecord], list[Source], list[LineageEdgeRow]]:
        """The upstream lineage of a record: DERIVED_FROM ancestors up to ``depth`` hops, with the
        CITES, SUPERSEDES (both directions) and INVALIDATED_BY edges of every record reached."""
        ...

    def export_ops(self, tenant: str) -> list[Op]:
        """Operations that rebuild the tenant exactly: records, scope edges, lineage edges, audit."""
        ...

    def audit(self, tenant: str, record_id: str | None, since: datetime | None) -> list[AuditEvent]: ...

    def reading(self) -> AbstractContextManager[object]:
        """One consistent snapshot for every read this thread makes inside it."""
        ...

    def after_commit(self, step: Callable[[], None]) -> None:
        """Run ``step`` once this thread's write transaction has ended (now, outside one)."""
        ...

    def write(self) -> AbstractContextManager[object]:
        """One write transaction for every read and ``apply`` this thread makes inside it:
        committed when the block ends, rolled back when it raises. Re-entrant: a nested
        ``write()`` joins the outer transaction."""
        ...

    def close(self) -> None: ...
