"""What ``import_`` checks before it writes: an import is no way around the store's rules.

Records meet the write contracts and the write gate's secret rule; nothing stored is
overwritten unless the caller asks for replacement; every edge has both ends in the store
or in the import, inside one tenant; lineage stays acyclic, with at most one successor per
record, and scopes gain no WITHIN cycle. All reads run in the import's transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from graphlib import CycleError, TopologicalSorter

from graphmem._args import check_id, check_rel_type, check_scope, check_tenant
from graphmem._core import StoreCore
from graphmem.backends.base import (
    AddEdge,
    AppendAudit,
    Op,
    PutRecord,
    RelateScopes,
    ScopeWithin,
    UpdateRecord,
)
from graphmem.contracts import check_stored
from graphmem.errors import ConflictError, ContractViolation, LineageError
from graphmem.model import MemoryRecord, Status
from graphmem.policy import record_secret_labels, redacted_record

__all__ = ["ImportPlan", "plan_import"]


@dataclass
class _Tenant:
    records: dict[str, MemoryRecord] = field(default_factory=dict)
    edges: list[AddEdge] = field(default_factory=list)
    within: list[ScopeWithin] = field(default_factory=list)


@dataclass(frozen=True)
class ImportPlan:
    """The ops to apply, and whether stored text is replaced by tombstones (files to compact)."""

    ops: list[Op]
    erases: bool


def _cycle(edges: Iterable[tuple[str, str]]) -> list[str] | None:
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as err:
        return [str(n) for n in err.args[1]]
    return None


def _group(ops: Sequence[Op]) -> tuple[dict[str, _Tenant], list[Op]]:
    """Records folded to their last state per tenant (an update line applies to the record put
    before it), and every other op, checked, in stream order."""
    tenants: dict[str, _Tenant] = {}
    rest: list[Op] = []
    for op in ops:
        if isinstance(op, PutRecord | UpdateRecord):
            records = tenants.setdefault(op.record.tenant, _Tenant()).records
            if isinstance(op, PutRecord) and op.record.id in records:
                raise ConflictError(
                    f"record {op.record.id!r} is put twice in one import", code="duplicate_id"
                )
            records[op.record.id] = op.record
            continue
        rest.append(op)
        if isinstance(op, AppendAudit):
            continue
        tenant = tenants.setdefault(check_tenant(op.tenant), _Tenant())
        if isinstance(op, ScopeWithin):
            check_scope(op.child)
            check_scope(op.parent)
            if op.child == op.parent:
                raise LineageError(f"{op.child!r} cannot be WITHIN itself", code="scope_cycle")
            tenant.within.append(op)
        elif isinstance(op, RelateScopes):
            check_scope(op.a)
            check_scope(op.b)
            check_rel_type(op.rel_type)
        else:
            check_id(op.src)
            check_id(op.dst, "edge target")
            if op.label == "SUPERSEDES" and op.dst_is_source:
                raise ContractViolation("SUPERSEDES joins two records, not a source", code="bad_import")
            if op.src == op.dst:
                code = "self_supersession" if op.label == "SUPERSEDES" else "self_invalidation"
                raise LineageError(f"record {op.src!r} cannot {op.label} itself", code=code)
            tenant.edges.append(op)
    return tenants, rest


def _checked(record: MemoryRecord, secrets: str) -> MemoryRecord:
    check_stored(record)
    labels = record_secret_labels(record)
    if not labels:
        return record
    if secrets == "redact":
        return redacted_record(record)
    raise ContractViolation(
        f"record {record.id!r} contains secrets ({', '.join(labels)}); nothing was imported — "
        "remove them, or import under a write policy that redacts secrets",
        code="secret_detected",
    )


def plan_import(store: StoreCore, ops: Sequence[Op], *, replace: bool) -> ImportPlan:
    """The ops that load ``ops`` into ``store``, after every check; raises ``ContractViolation``,
    ``ConflictError`` or ``LineageError`` and writes nothing when one fails."""
    tenants, rest = _group(ops)
    policy = store.write_policy
    records: list[Op] = []
    erases = False
    for tenant, group in tenants.items():
        for rid, record in group.records.items():
            group.records[rid] = _checked(record, policy.secrets)
        existing = store.backend.existing_ids(tenant, list(group.records)) if group.records else set()
        if existing and not replace:
            raise ConflictError(
                f"import would overwrite record(s) {sorted(existing)[:5]!r} in tenant {tenant!r}; "
                "pass replace=True to overwrite stored records",
                code="duplicate_id",
            )
        erases |= _check_replacements(store, tenant, group, existing)
        _check_edges(store, tenant, group, tenants, existing)
        cycle = _cycle((r.id, p) for r in group.records.values() for p in r.derived_from)
        if cycle:
            raise LineageError(f"DERIVED_FROM would form a cycle: {' → '.join(cycle)}", code="lineage_cycle")
        store._check_procedure_evidence(tenant, list(group.records.values()))
        _check_within(store, tenant, group.within)
        records += [PutRecord(record=r, replace=r.id in existing) for r in group.records.values()]
    if replace:
        rest = _new_events(store, rest)
    return ImportPlan(ops=[*records, *rest], erases=erases)


def _new_events(store: StoreCore, ops: list[Op]) -> list[Op]:
    """``ops`` without the audit events already stored, so restoring an export over its own
    store repeats no event."""
    stored: dict[str, set[str]] = {}
    kept: list[Op] = []
    for op in ops:
        if isinstance(op, AppendAudit):
            tenant = op.event.tenant
            if tenant not in stored:
                stored[tenant] = {e.id for e in store.backend.audit(tenant, None, None)}
            if op.event.id in stored[tenant]:
                continue
        kept.append(op)
    return kept


def _check_replacements(store: StoreCore, tenant: str, group: _Tenant, existing: set[str]) -> bool:
    """A replacement keeps the stored lineage and undoes no erasure; True if it erases text."""
    erases = False
    for old in store.backend.get_many(tenant, sorted(existing)):
        new = group.records[old.id]
        if old.status is Status.ERASED and new.status is not Status.ERASED:
            raise ConflictError(
                f"record {old.id!r} is erased; an import cannot bring its content back", code="erased_record"
            )
        if old.derived_from != new.derived_from or not {s.id for s in old.sources} <= {
            s.id for s in new.sources
        }:
            raise LineageError(
                f"replacing {old.id!r} would change what it derives from or drop a source it cites; "
                "lineage is not rewritten by an import",
                code="lineage_changed",
            )
        erases |= new.status is Status.ERASED and old.status is not Status.ERASED
    return erases


def _check_edges(
    store: StoreCore, tenant: str, group: _Tenant, tenants: dict[str, _Tenant], existing: set[str]
) -> None:
    """Both ends of every DERIVED_FROM, SUPERSEDES and INVALIDATED_BY edge exist in ``tenant``."""
    imported = set(group.records)
    wanted = {p for r in group.records.values() for p in r.derived_from}
    wanted |= {e.src for e in group.edges} | {e.dst for e in group.edges if not e.dst_is_source}
    outside = sorted(wanted - imported)
    known = imported | (store.backend.existing_ids(tenant, outside) if outside else set())
    cited = {s.id for r in group.records.values() for s in r.sources}

    def dangling(what: str, target: str) -> LineageError:
        elsewhere = sorted(t for t, g in tenants.items() if t != tenant and target in g.records)
        if elsewhere:
            return LineageError(
                f"{what} points at {target!r} of tenant {elsewhere[0]!r} from tenant {tenant!r}; "
                "no edge crosses tenants",
                code="cross_tenant",
            )
        return LineageError(
            f"{what} points at {target!r}, which is neither in the store nor in the import "
            f"(tenant {tenant!r})",
            code="dangling_edge",
        )

    for record in group.records.values():
        for parent in record.derived_from:
            if parent not in known:
                raise dangling(f"DERIVED_FROM of {record.id!r}", parent)
    for edge in group.edges:
        if edge.src not in known:
            raise dangling(f"{edge.label} edge to {edge.dst!r}", edge.src)
        if edge.dst_is_source:
            if edge.dst not in cited and not store.backend.source_exists(tenant, edge.dst):
                raise dangling(f"INVALIDATED_BY of {edge.src!r}", edge.dst)
        elif edge.dst not in known:
            raise dangling(f"{edge.label} of {edge.src!r}", edge.dst)
    _check_supersessions(store, tenant, group, set(group.records) - existing)


def _check_supersessions(store: StoreCore, tenant: str, group: _Tenant, new: set[str]) -> None:
    """One current successor per record, same kind and scope, and no SUPERSEDES cycle,
    counting the edges already stored."""
    edges = [e for e in group.edges if e.label == "SUPERSEDES"]
    if not edges:
        return
    ends = {e.src for e in edges} | {e.dst for e in edges}
    records = dict(group.records)
    records.update({r.id: r for r in store.backend.get_many(tenant, sorted(ends - set(records)))})
    successor: dict[str, str] = {}
    graph: set[tuple[str, str]] = set()
    for e in edges:
        if successor.setdefault(e.dst, e.src) != e.src:
            raise LineageError(
                f"record {e.dst!r} would be superseded by both {successor[e.dst]!r} and {e.src!r}",
                code="already_superseded",
            )
        newer, older = records[e.src], records[e.dst]
        if (newer.kind, newer.scope) != (older.kind, older.scope):
            raise LineageError(
                f"replacement {e.src!r} must share the kind and scope of {e.dst!r}",
                code="replacement_mismatch",
            )
        graph.add((e.src, e.dst))
    # Stored chains below each stored end, so a cycle through stored versions shows too.
    frontier = sorted(ends - new)
    seen = set(frontier)
    while frontier:
        rid = frontier.pop()
        _, _, stored = store.backend.trace(tenant, rid, 0)
        for s in stored:
            if s.type != "SUPERSEDES":
                continue
            if s.dst == rid and successor.get(rid, s.src) != s.src:
                raise LineageError(
                    f"record {rid!r} was already superseded by {s.src!r}", code="already_superseded"
                )
            graph.add((s.src, s.dst))
            for end in (s.src, s.dst):
                if end not in seen:
                    seen.add(end)
                    frontier.append(end)
    cycle = _cycle(graph)
    if cycle:
        raise LineageError(f"SUPERSEDES would form a cycle: {' → '.join(cycle)}", code="lineage_cycle")


def _check_within(store: StoreCore, tenant: str, within: list[ScopeWithin]) -> None:
    """No WITHIN cycle once the imported edges join the stored ones."""
    if not within:
        return
    scopes = sorted({w.child for w in within} | {w.parent for w in within})
    edges = {(w.child, w.parent) for w in within}
    for scope in scopes:
        # A stored path between two scopes of the import stands for the edges along it.
        reach = store.backend.scope_ancestors(tenant, [scope]) & set(scopes)
        edges |= {(scope, up) for up in reach if up != scope}
    cycle = _cycle(edges)
    if cycle:
        raise LineageError(f"WITHIN would form a cycle of scopes: {' → '.join(cycle)}", code="scope_cycle")
