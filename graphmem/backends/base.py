"""The primitive operations every backend implements; the store composes them.

Writes are batches of ``Op`` values applied all-or-nothing. Reads return
records and the graph facts the gate needs; the gate itself lives in
``graphmem.gate`` and runs in the store (or, for speed, in the database).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Literal, Protocol, Union

from pydantic import Field

from graphmem.gate import GateResult
from graphmem.model import AuditEvent, DropReason, GraphmemModel, MemoryRecord, ReadContext
from graphmem.model.base import AwareDatetime

__all__ = [
    "AddEdge",
    "AppendAudit",
    "Backend",
    "Op",
    "PutRecord",
    "RelateScopes",
    "ScopeWithin",
]


class PutRecord(GraphmemModel):
    """Create or replace a record node with its APPLIES_TO, CITES and DERIVED_FROM edges."""

    op: Literal["put_record"] = "put_record"
    record: MemoryRecord


class ScopeWithin(GraphmemModel):
    op: Literal["scope_within"] = "scope_within"
    tenant: str
    child: str
    parent: str


class RelateScopes(GraphmemModel):
    op: Literal["relate_scopes"] = "relate_scopes"
    tenant: str
    a: str
    rel_type: str
    b: str


class AddEdge(GraphmemModel):
    """A lineage edge that takes effect at ``at``: SUPERSEDES (memory → memory) or
    INVALIDATED_BY (memory → memory or source)."""

    op: Literal["add_edge"] = "add_edge"
    tenant: str
    label: Literal["SUPERSEDES", "INVALIDATED_BY"]
    src: str
    dst: str
    dst_is_source: bool = False
    at: AwareDatetime
    reason: str | None = None


class AppendAudit(GraphmemModel):
    op: Literal["append_audit"] = "append_audit"
    event: AuditEvent


Op = Annotated[
    Union[PutRecord, ScopeWithin, RelateScopes, AddEdge, AppendAudit],  # noqa: UP007 - discriminated union
    Field(discriminator="op"),
]


class Backend(Protocol):
    """Graph I/O for one store. Implementations: embedded (networkx) and Neo4j."""

    def apply(self, ops: Sequence[Op]) -> None:
        """Apply every op or none of them."""
        ...

    def get(self, tenant: str, record_id: str) -> MemoryRecord | None: ...

    def existing_ids(self, tenant: str, record_ids: Sequence[str]) -> set[str]: ...

    def scope_ancestors(self, tenant: str, scopes: Sequence[str]) -> set[str]:
        """The given scopes plus every scope they are transitively WITHIN."""
        ...

    def scope_parents(self, tenant: str, scope: str) -> set[str]: ...

    def source_exists(self, tenant: str, source_id: str) -> bool: ...

    def gate(self, ctx: ReadContext) -> GateResult:
        """Gate every candidate of ``ctx``: the tenant's records whose scope lies in the context's closure.

        The closure is the context's scopes and run plus every scope they are
        transitively WITHIN; a run scope other than the context's own run is
        in the closure but out of scope (``scope_mismatch``).
        """
        ...

    def gate_one(self, ctx: ReadContext, record_id: str) -> tuple[str, DropReason | None] | None:
        """(fingerprint, drop reason) of one record of ``ctx.tenant`` wherever it applies, or None."""
        ...

    def get_many(self, tenant: str, record_ids: Sequence[str]) -> list[MemoryRecord]:
        """The records with these ids, in the given order (missing ones left out)."""
        ...

    def all_records(self, tenant: str) -> list[MemoryRecord]: ...

    def audit(self, tenant: str, record_id: str | None, since: datetime | None) -> list[AuditEvent]: ...

    def close(self) -> None: ...
