"""The embedded backend: a networkx graph in process, optionally persisted.

Nodes are keyed ``("m", tenant, id)`` for memories, ``("s", tenant, key)`` for
scopes and ``("src", tenant, id)`` for sources, so no edge can cross tenants
without naming both tenants. Audit events live in an append-only list.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Any

import networkx as nx
from pydantic import TypeAdapter

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
from graphmem.backends.journal import Journal
from graphmem.errors import ConflictError
from graphmem.gate import Candidate, drop_reason
from graphmem.gated import MergeCache, ScopeGroup, Verdicts, ViewGate
from graphmem.model import AuditEvent, DropReason, MemoryRecord, ReadContext, Source, Status, scope_type

__all__ = ["EmbeddedBackend"]

_OPS: TypeAdapter[list[Op]] = TypeAdapter(list[Op])
_COMPACT_BYTES = 64 * 1024 * 1024

Node = tuple[str, str, str]


def _mem(tenant: str, record_id: str) -> Node:
    return ("m", tenant, record_id)


def _scope(tenant: str, key: str) -> Node:
    return ("s", tenant, key)


def _src(tenant: str, source_id: str) -> Node:
    return ("src", tenant, source_id)


class EmbeddedBackend:
    """In-process graph; with ``directory`` set, every batch is journalled before it is applied."""

    def __init__(self, directory: str | Path | None = None, *, compact_bytes: int = _COMPACT_BYTES) -> None:
        self._compact_bytes = compact_bytes
        self._lock = threading.RLock()
        self.graph: nx.MultiDiGraph[Node] = nx.MultiDiGraph()
        self._audit: dict[str, list[AuditEvent]] = {}
        # Earliest effect time of incoming SUPERSEDES / outgoing INVALIDATED_BY edges, per
        # record node: kept in step with the edges so a recall need not scan them.
        self._superseded_at: dict[Node, datetime] = {}
        self._invalidated_at: dict[Node, datetime] = {}
        # Gate facts per record, grouped by the scope the record applies to.
        self._by_scope: dict[Node, ScopeGroup] = {}
        # Scopes reachable from a context's entry scopes, until a WITHIN edge is added.
        self._reach: dict[tuple[str, tuple[str, ...], tuple[str, ...]], tuple[list[str], set[str]]] = {}
        # Recent merges of several groups' views, for reads that reach many scopes.
        self._merges = MergeCache()
        # Records by (tenant, normalised content hash), for deduplication.
        self._by_hash: dict[tuple[str, str], set[Node]] = {}
        self._journal: Journal | None = None
        if directory is not None:
            self._journal = Journal(Path(directory))
            snapshot, batches = self._journal.open()
            if snapshot is not None:
                self._apply(_OPS.validate_python(snapshot["ops"]))
            for batch in batches:
                self._apply(_OPS.validate_python(batch["ops"]))

    # -- writes -----------------------------------------------------------

    def apply(self, ops: Sequence[Op]) -> None:
        with self._lock:
            self._check(ops)
            self._commit(ops)

    def _check(self, ops: Sequence[Op]) -> None:
        """Refuse the whole batch before anything is journalled or applied."""
        created = [
            (op.record.tenant, op.record.id) for op in ops if isinstance(op, PutRecord) and not op.replace
        ]
        taken = sorted(i for t, i in created if self.get(t, i) is not None)
        if taken or len(set(created)) != len(created):
            raise ConflictError(
                f"record id(s) {taken[:5]!r} already exist; nothing was written", code="duplicate_id"
            )

    def _commit(self, ops: Sequence[Op]) -> None:
        if self._journal is not None:
            payload = {"ops": _OPS.dump_python(list(ops), mode="json")}
            self._journal.append(payload)
        self._apply(ops)
        if self._journal is not None and self._journal.journal_bytes > self._compact_bytes:
            self.compact()

    def compact(self) -> None:
        """Rewrite the store's files as one snapshot of the current state."""
        if self._journal is not None:
            self._journal.compact({"ops": _OPS.dump_python(self._state_ops(), mode="json")})

    def _apply(self, ops: Sequence[Op]) -> None:
        for op in ops:
            if isinstance(op, PutRecord | UpdateRecord):
                self._put_record(op.record)
            elif isinstance(op, ScopeWithin):
                self._reach.clear()
                self._edge(_scope(op.tenant, op.child), _scope(op.tenant, op.parent), "WITHIN", {})
            elif isinstance(op, RelateScopes):
                self._edge(_scope(op.tenant, op.a), _scope(op.tenant, op.b), "RELATED", {"type": op.rel_type})
            elif isinstance(op, AddEdge):
                dst = _src(op.tenant, op.dst) if op.dst_is_source else _mem(op.tenant, op.dst)
                attrs: dict[str, Any] = {"at": op.at, "reason": op.reason}
                src = _mem(op.tenant, op.src)
                self._edge(src, dst, op.label, attrs)
                target, index = (
                    (dst, self._superseded_at) if op.label == "SUPERSEDES" else (src, self._invalidated_at)
                )
                index[target] = min(op.at, index.get(target, op.at))
                if target[0] == "m":
                    self._refresh(target)
            elif isinstance(op, AppendAudit):
                self._audit.setdefault(op.event.tenant, []).append(op.event)

    def _node(self, node: Node) -> None:
        if node not in self.graph:
            self.graph.add_node(node)

    def _edge(self, a: Node, b: Node, label: str, attrs: dict[str, Any]) -> None:
        self._node(a)
        self._node(b)
        key = f"RELATED:{attrs['type']}" if label == "RELATED" else label
        self.graph.add_edge(a, b, key=key, label=label, **attrs)

    def _refresh(self, node: Node) -> None:
        data = self.graph.nodes[node]
        if "record" in data:
            record: MemoryRecord = data["record"]
            group = self._by_scope.setdefault(_scope(record.tenant, record.scope), ScopeGroup())
            group.put(
                node, Candidate.of(record, self._superseded_at.get(node), self._invalidated_at.get(node))
            )

    def _put_record(self, record: MemoryRecord) -> None:
        node = _mem(record.tenant, record.id)
        if node in self.graph and "record" in self.graph.nodes[node]:
            old: MemoryRecord = self.graph.nodes[node]["record"]
            if old.scope != record.scope:
                old_scope = _scope(record.tenant, old.scope)
                self.graph.remove_edge(node, old_scope, key="APPLIES_TO")
                self._by_scope[old_scope].pop(node)
            self._by_hash.get((old.tenant, old.content_hash), set()).discard(node)
        self._node(node)
        self.graph.nodes[node]["record"] = record
        self._by_hash.setdefault((record.tenant, record.content_hash), set()).add(node)
        self._edge(node, _scope(record.tenant, record.scope), "APPLIES_TO", {})
        for source in record.sources:
            src = _src(record.tenant, source.id)
            self._node(src)
            # Quotes live only in the records that carry them, so erasing a record erases its quotes.
            self.graph.nodes[src]["source"] = source.model_copy(update={"quote": None})
            self._edge(node, src, "CITES", {})
        for parent in record.derived_from:
            self._edge(node, _mem(record.tenant, parent), "DERIVED_FROM", {})
        self._refresh(node)

    def _state_ops(self, tenant: str | None = None) -> list[Op]:
        """Ops that rebuild the state (of one tenant), in a canonical order."""
        records: list[Op] = []
        for node, data in self.graph.nodes(data=True):
            if node[0] == "m" and "record" in data and tenant in (None, node[1]):
                records.append(PutRecord(record=data["record"]))
        records.sort(key=lambda op: (op.record.tenant, op.record.id) if isinstance(op, PutRecord) else ())
        edges: list[Op] = []
        for a, b, data in self.graph.edges(data=True):
            if tenant not in (None, a[1]):
                continue
            if a[0] == "s" and data["label"] == "WITHIN":
                edges.append(ScopeWithin(tenant=a[1], child=a[2], parent=b[2]))
            elif a[0] == "s" and data["label"] == "RELATED":
                edges.append(RelateScopes(tenant=a[1], a=a[2], rel_type=data["type"], b=b[2]))
            elif data["label"] in {"SUPERSEDES", "INVALIDATED_BY"}:
                edges.append(
                    AddEdge(
                        tenant=a[1],
                        label=data["label"],
                        src=a[2],
                        dst=b[2],
                        dst_is_source=b[0] == "src",
                        at=data["at"],
                        reason=data["reason"],
                    )
                )
        edges.sort(key=lambda op: op.model_dump_json())
        audit: list[Op] = [
            AppendAudit(event=e)
            for t, events in self._audit.items()
            if tenant in (None, t)
            for e in sorted(events, key=lambda e: e.at)
        ]
        return [*records, *edges, *audit]

    def export_ops(self, tenant: str) -> list[Op]:
        return self._state_ops(tenant)

    # -- reads ------------------------------------------------------------

    def get(self, tenant: str, record_id: str) -> MemoryRecord | None:
        data = self.graph.nodes.get(_mem(tenant, record_id))
        return None if data is None or "record" not in data else data["record"]

    def existing_ids(self, tenant: str, record_ids: Sequence[str]) -> set[str]:
        return {i for i in record_ids if self.get(tenant, i) is not None}

    def source(self, tenant: str, source_id: str) -> Source | None:
        data = self.graph.nodes.get(_src(tenant, source_id))
        return None if data is None else data.get("source")

    def source_exists(self, tenant: str, source_id: str) -> bool:
        return self.source(tenant, source_id) is not None

    def scope_parents(self, tenant: str, scope: str) -> set[str]:
        node = _scope(tenant, scope)
        if node not in self.graph:
            return set()
        return {b[2] for _, b, label in self.graph.out_edges(node, data="label") if label == "WITHIN"}

    def scope_ancestors(self, tenant: str, scopes: Sequence[str]) -> set[str]:
        seen = set(scopes)
        stack = list(scopes)
        while stack:
            for parent in self.scope_parents(tenant, stack.pop()):
                if parent not in seen:
                    seen.add(parent)
                    stack.append(parent)
        return seen

    def _matching_scopes(self, ctx: ReadContext) -> tuple[list[str], set[str]]:
        """(every scope reachable upward from the context, sorted; the subset a record may apply to)."""
        key = (ctx.tenant, ctx.entry_scopes, ctx.own_runs)
        found = self._reach.get(key)
        if found is None:
            if len(self._reach) >= 1024:
                self._reach.clear()
            reachable = sorted(self.scope_ancestors(ctx.tenant, ctx.entry_scopes))
            own = set(ctx.own_runs)
            found = self._reach[key] = (
                reachable,
                {s for s in reachable if scope_type(s) != "run" or s in own},
            )
        return found

    def candidates(self, ctx: ReadContext) -> list[tuple[Candidate, bool]]:
        reachable, matching = self._matching_scopes(ctx)
        out: list[tuple[Candidate, bool]] = []
        for scope in reachable:
            group = self._by_scope.get(_scope(ctx.tenant, scope))
            if group:
                in_scope = scope in matching
                out.extend((c, in_scope) for c in group.members.values())
        return out

    def gate(self, ctx: ReadContext) -> ViewGate:
        with self._lock:
            reachable, matching = self._matching_scopes(ctx)
            views = []
            for scope in reachable:
                group = self._by_scope.get(_scope(ctx.tenant, scope))
                if group and group.members:
                    views.append(group.view(ctx, scope in matching))
            if len(views) == 1:
                return ViewGate(views[0])
            return ViewGate(self._merges.get(views) if views else Verdicts())

    def gate_one(self, ctx: ReadContext, record_id: str) -> tuple[str, DropReason | None] | None:
        record = self.get(ctx.tenant, record_id)
        if record is None:
            return None
        _, matching = self._matching_scopes(ctx)
        cand = self._by_scope[_scope(ctx.tenant, record.scope)].members[_mem(ctx.tenant, record_id)]
        return cand.fingerprint, drop_reason(cand, ctx, record.scope in matching)

    def get_many(self, tenant: str, record_ids: Sequence[str]) -> list[MemoryRecord]:
        return [r for r in (self.get(tenant, i) for i in record_ids) if r is not None]

    def recalled(
        self, tenant: str, record_ids: Sequence[str], audit: AuditEvent | None
    ) -> list[MemoryRecord]:
        if audit is not None:
            self.apply([AppendAudit(event=audit)])
        return self.get_many(tenant, record_ids)

    def _records(self, tenant: str) -> list[MemoryRecord]:
        groups = (g for (_, t, _), g in self._by_scope.items() if t == tenant)
        return [c.record for group in groups for c in group.members.values()]

    def records_with_status(self, tenant: str, statuses: Sequence[Status]) -> list[MemoryRecord]:
        wanted = set(statuses)
        return sorted((r for r in self._records(tenant) if r.status in wanted), key=lambda r: r.id)

    def by_content_hash(self, tenant: str, content_hash: str) -> list[MemoryRecord]:
        nodes = self._by_hash.get((tenant, content_hash), set())
        return sorted((self.graph.nodes[n]["record"] for n in nodes), key=lambda r: r.id)

    def with_tag(self, tenant: str, tag: str) -> list[MemoryRecord]:
        return sorted((r for r in self._records(tenant) if tag in r.tags), key=lambda r: r.id)

    def scope_exists(self, tenant: str, scope: str) -> bool:
        return _scope(tenant, scope) in self.graph

    def scope_descendants(self, tenant: str, scope: str) -> set[str]:
        seen = {scope}
        stack = [_scope(tenant, scope)]
        while stack:
            node = stack.pop()
            if node not in self.graph:
                continue
            for child, edges in self.graph.pred[node].items():
                if child[0] == "s" and "WITHIN" in edges and child[2] not in seen:
                    seen.add(child[2])
                    stack.append(child)
        return seen

    def records_applying(self, tenant: str, scopes: Sequence[str]) -> list[MemoryRecord]:
        out: list[MemoryRecord] = []
        for scope in scopes:
            group = self._by_scope.get(_scope(tenant, scope))
            if group is not None:
                out.extend(c.record for c in group.members.values())
        return out

    def citing(self, tenant: str, source_id: str) -> list[MemoryRecord]:
        return [self.graph.nodes[_mem(tenant, i)]["record"] for i in self.citing_ids(tenant, source_id)]

    def citing_ids(self, tenant: str, source_id: str) -> list[str]:
        node = _src(tenant, source_id)
        if node not in self.graph:
            return []
        return [m[2] for m, edges in self.graph.pred[node].items() if m[0] == "m" and "CITES" in edges]

    def _parents(self, node: Node) -> list[Node]:
        return [p for p, edges in self.graph.succ[node].items() if p[0] == "m" and "DERIVED_FROM" in edges]

    def _children(self, node: Node) -> list[Node]:
        return [c for c, edges in self.graph.pred[node].items() if c[0] == "m" and "DERIVED_FROM" in edges]

    def downstream(self, tenant: str, record_ids: Sequence[str]) -> list[Dependent]:
        start = [_mem(tenant, i) for i in record_ids]
        seen = set(start)
        order: list[Node] = []
        stack = [n for n in start if n in self.graph]
        while stack:
            for child in self._children(stack.pop()):
                if child not in seen:
                    seen.add(child)
                    order.append(child)
                    stack.append(child)
        return self._dependents(order)

    def support_of(self, tenant: str, record_ids: Sequence[str]) -> list[Dependent]:
        return self._dependents([n for n in (_mem(tenant, i) for i in record_ids) if self.get(n[1], n[2])])

    def _dependents(self, nodes: Sequence[Node]) -> list[Dependent]:
        out: list[Dependent] = []
        for node in nodes:
            parents = tuple(
                ParentState(
                    p[2],
                    self.graph.nodes[p]["record"].status,
                    self._superseded_at.get(p),
                    self._invalidated_at.get(p),
                )
                for p in self._parents(node)
            )
            out.append(Dependent(self.graph.nodes[node]["record"], parents))
        return out

    def related_scopes(self, tenant: str, anchor: str, via: Sequence[str], hops: int) -> set[str]:
        wanted = set(via)
        frontier = {_scope(tenant, anchor)}
        seen = set(frontier)
        for _ in range(hops):
            step: set[Node] = set()
            for node in frontier:
                if node not in self.graph:
                    continue
                for other, edges in (*self.graph.succ[node].items(), *self.graph.pred[node].items()):
                    if other[0] == "s" and any(
                        a["label"] == "RELATED" and a["type"] in wanted for a in edges.values()
                    ):
                        step.add(other)
            frontier = step - seen
            seen |= frontier
        return {n[2] for n in seen}

    def trace(
        self, tenant: str, record_id: str, depth: int
    ) -> tuple[list[MemoryRecord], list[Source], list[LineageEdgeRow]]:
        root = _mem(tenant, record_id)
        if self.get(tenant, record_id) is None:
            return [], [], []
        upstream = {root}
        frontier = [root]
        for _ in range(depth):
            frontier = [p for n in frontier for p in self._parents(n) if p not in upstream]
            upstream.update(frontier)
            if not frontier:
                break
        memories: set[Node] = set(upstream)
        sources: set[Node] = set()
        edges: list[LineageEdgeRow] = []
        for node in upstream:
            for other, attrs_by_key in self.graph.succ[node].items():
                for attrs in attrs_by_key.values():
                    label = attrs["label"]
                    if label in {"DERIVED_FROM", "CITES", "SUPERSEDES", "INVALIDATED_BY"}:
                        if label == "DERIVED_FROM" and other not in upstream:
                            continue
                        edges.append(
                            LineageEdgeRow(node[2], other[2], label, attrs.get("at"), attrs.get("reason"))
                        )
                        (sources if other[0] == "src" else memories).add(other)
            for other, attrs_by_key in self.graph.pred[node].items():
                attrs = attrs_by_key.get("SUPERSEDES")
                if attrs is not None:
                    edges.append(
                        LineageEdgeRow(other[2], node[2], "SUPERSEDES", attrs["at"], attrs["reason"])
                    )
                    memories.add(other)
        return (
            [self.graph.nodes[n]["record"] for n in sorted(memories)],
            [self.graph.nodes[n]["source"] for n in sorted(sources)],
            sorted(set(edges), key=lambda e: (e.src, e.type, e.dst)),
        )

    def all_records(self, tenant: str) -> list[MemoryRecord]:
        # By id, like the Neo4j backend; only this tenant's scope groups are visited.
        return sorted(self._records(tenant), key=lambda r: r.id)

    def audit(self, tenant: str, record_id: str | None, since: datetime | None) -> list[AuditEvent]:
        events = [
            e
            for e in self._audit.get(tenant, [])
            if (record_id is None or record_id in e.record_ids) and (since is None or e.at >= since)
        ]
        return sorted(events, key=lambda e: e.at)  # stable: events of one instant keep their order

    def reading(self) -> AbstractContextManager[object]:
        # Gate views are kept in step with writes in place, so a read holds the write lock.
        return self._lock

    def write(self) -> AbstractContextManager[object]:
        # The lock is re-entrant: reads and applies of one operation run under it together.
        return self._lock

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None
