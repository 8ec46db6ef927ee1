"""Forgetting requests and reports, and the lineage DAG ``trace`` returns."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from graphmem.model.base import AwareDatetime, GraphmemModel, Tenant, utcnow
from graphmem.model.enums import ForgetMode

__all__ = ["ForgetEntry", "ForgetReport", "ForgetRequest", "Lineage", "LineageEdge", "LineageNode"]

TargetType = Literal["record", "source", "scope"]


class ForgetRequest(GraphmemModel):
    """Take a record, a source, or everything applying to a scope out of memory."""

    tenant: Tenant
    target: str = Field(min_length=1, max_length=256)
    mode: ForgetMode
    reason: str = Field(min_length=1, max_length=2000)
    requested_by: str = Field(min_length=1, max_length=256)
    cascade: bool = True
    target_type: TargetType | None = None


class ForgetEntry(GraphmemModel):
    """One record the request touched, what happened to it and why."""

    record_id: str
    action: Literal["released", "revoked", "erased", "kept"]
    reason: str


class ForgetReport(GraphmemModel):
    tenant: str
    target: str
    target_type: TargetType
    mode: ForgetMode
    at: AwareDatetime = Field(default_factory=utcnow)
    entries: tuple[ForgetEntry, ...] = ()
    erased_sources: tuple[str, ...] = ()

    @property
    def touched(self) -> list[str]:
        """Ids of the records taken out of use."""
        return [e.record_id for e in self.entries if e.action != "kept"]


class LineageNode(GraphmemModel):
    id: str
    type: Literal["memory", "source"]
    kind: str | None = None
    status: str | None = None
    label: str = ""
    tainted: bool = False  # a memory supported only by untrusted sources (MemoryRecord.tainted)


class LineageEdge(GraphmemModel):
    """One edge of a lineage: ``at`` is when a supersession or invalidation took effect
    (valid time), ``recorded`` when the store learned it (knowledge time)."""

    src: str
    dst: str
    type: Literal["DERIVED_FROM", "CITES", "SUPERSEDES", "INVALIDATED_BY"]
    at: AwareDatetime | None = None
    reason: str | None = None
    recorded: AwareDatetime | None = None


class Lineage(GraphmemModel):
    """The lineage DAG of one record, as data; draw it with the methods below."""

    root: str
    nodes: tuple[LineageNode, ...]
    edges: tuple[LineageEdge, ...]

    def node(self, node_id: str) -> LineageNode:
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise KeyError(node_id)

    def to_networkx(self) -> Any:
        """A ``networkx.MultiDiGraph`` with node and edge attributes, for notebooks."""
        import networkx as nx

        graph = nx.MultiDiGraph()
        for n in self.nodes:
            graph.add_node(n.id, **n.model_dump(exclude={"id"}))
        for e in self.edges:
            graph.add_edge(e.src, e.dst, key=e.type, **e.model_dump(exclude={"src", "dst"}))
        return graph

    def render_tree(self) -> str:
        """A printable tree from the root along outgoing edges (repeats marked with ↑)."""
        out: dict[str, list[LineageEdge]] = {}
        for e in self.edges:
            out.setdefault(e.src, []).append(e)
        lines: list[str] = [self._describe(self.root)]
        seen = {self.root}

        def walk(node_id: str, prefix: str) -> None:
            children = sorted(out.get(node_id, []), key=lambda e: (e.type, e.dst))
            for i, edge in enumerate(children):
                last = i == len(children) - 1
                branch = "└── " if last else "├── "
                repeat = " ↑" if edge.dst in seen else ""
                lines.append(f"{prefix}{branch}{edge.type} → {self._describe(edge.dst)}{repeat}")
                if edge.dst not in seen:
                    seen.add(edge.dst)
                    walk(edge.dst, prefix + ("    " if last else "│   "))

        walk(self.root, "")
        return "\n".join(lines)

    def _describe(self, node_id: str) -> str:
        n = self.node(node_id)
        what = n.kind if n.type == "memory" else "source"
        status = f", {n.status}" if n.status and n.status != "active" else ""
        status += ", untrusted sources only" if n.tainted else ""
        label = f": {n.label}" if n.label else ""
        return f"{n.id} ({what}{status}){label}"

    def to_mermaid(self) -> str:
        """A Mermaid ``flowchart`` of the DAG."""
        ids = {n.id: f"n{i}" for i, n in enumerate(self.nodes)}
        lines = ["flowchart TD"]
        for n in self.nodes:
            text = self._describe(n.id).replace('"', "'")
            shape = f'(["{text}"])' if n.type == "source" else f'["{text}"]'
            lines.append(f"    {ids[n.id]}{shape}")
        for e in self.edges:
            lines.append(f"    {ids[e.src]} -->|{e.type}| {ids[e.dst]}")
        return "\n".join(lines)
