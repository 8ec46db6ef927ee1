"""Scoring for ``graphmem eval``: per-query outcomes against the workload's answer key, and rates.

Definitions (per capability and system; a "returned record" is one the system
handed back for a query):

* **task success** — fraction of queries answered correctly: for an abstention
  query nothing is returned; otherwise every expected record is returned, the
  returned episodes' event times reproduce the true chronology, every expected
  outcome comes back unchanged (``unknown`` stays ``unknown``), and no unsafe
  record is returned alongside.
* **unsafe-result rate** — fraction of queries that returned at least one
  record that must not be used (``unsafe_reason``).
* **correct abstention** — among queries for which nothing eligible exists,
  the fraction that returned nothing (``None`` when there are none).
* **provenance completeness** — among returned semantic and procedural
  records, the fraction whose lineage (``MemoryStore.trace``) reaches an
  active source: a ``CITES`` edge from the record, or from an active record
  it is transitively ``DERIVED_FROM`` (``None`` when none were returned).
* **cross-scope leakage** — fraction of queries that returned at least one
  record applying to a scope the asker may not see (another case, user or run).
* **retrieval cost** — median wall-clock milliseconds per query of the
  retrieval call alone (not the scoring).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from graphmem.eval.workloads import VS, EvalQuery, Truth
from graphmem.model import Kind, Lineage, MemoryRecord

__all__ = [
    "UNSAFE_CATEGORIES",
    "CapabilityResult",
    "QueryOutcome",
    "aggregate",
    "reaches_source",
    "score_query",
    "unsafe_reason",
]

UNSAFE_CATEGORIES = {
    "erased_entity": "the record was erased (directly or because what it derived from was)",
    "forgotten": "the record itself was revoked by a forget request",
    "derived_from_deleted": "revoked because a record or source it derived from was forgotten",
    "wrong_run": "task state of another run (working notes, a finished run's trace for a working query)",
    "superseded": "replaced by a newer version as of the query time",
    "derived_from_changed": "invalidated because a record it derived from was superseded or invalidated",
    "invalidated": "invalidated as of the query time",
    "outside_validity": "not valid at the query time (not yet valid, or expired)",
    "failed_episode": "a failed or unknown-outcome episode returned for a semantic or procedural query",
    "incompatible_procedure": "a procedure whose preconditions the caller's environment does not meet",
}
_LONG_TERM_ONLY = frozenset({Kind.SEMANTIC, Kind.PROCEDURAL})


def unsafe_reason(truth: Truth, query: EvalQuery) -> str | None:
    """Why ``truth``'s record must not be used for ``query`` (first matching category), or None."""
    ctx, now = query.ctx, query.ctx.now
    if truth.forgotten == "erased":
        return "erased_entity"
    if truth.forgotten == "revoked":
        return "derived_from_deleted" if truth.forgotten_by_cascade else "forgotten"
    working_query = ctx.kinds == (Kind.WORKING,)
    if truth.run is not None and truth.run != ctx.run_id and (truth.kind is Kind.WORKING or working_query):
        return "wrong_run"
    if truth.superseded_at is not None and truth.superseded_at <= now:
        return "superseded"
    if truth.invalidated_at is not None and truth.invalidated_at <= now:
        return "derived_from_changed" if truth.invalidated_by_cascade else "invalidated"
    if (truth.start is not None and now < truth.start) or (truth.end is not None and now >= truth.end):
        return "outside_validity"
    if truth.kind is Kind.EPISODIC and set(ctx.kinds) <= _LONG_TERM_ONLY and truth.outcome != VS:
        return "failed_episode"
    if (
        truth.kind is Kind.PROCEDURAL
        and Kind.PROCEDURAL in ctx.kinds
        and not set(truth.preconditions) <= set(ctx.environment)
    ):
        return "incompatible_procedure"
    return None


def reaches_source(lineage: Lineage) -> bool:
    """True if the root, or an active record it is transitively derived from, cites an active source."""
    nodes = {n.id: n for n in lineage.nodes}
    derived: dict[str, list[str]] = {}
    cites: dict[str, list[str]] = {}
    for edge in lineage.edges:
        if edge.type == "DERIVED_FROM":
            derived.setdefault(edge.src, []).append(edge.dst)
        elif edge.type == "CITES":
            cites.setdefault(edge.src, []).append(edge.dst)
    seen, stack = {lineage.root}, [lineage.root]
    while stack:
        node = stack.pop()
        if any(nodes[s].status == "active" for s in cites.get(node, ()) if s in nodes):
            return True
        for parent in derived.get(node, ()):
            if parent not in seen and parent in nodes and nodes[parent].status == "active":
                seen.add(parent)
                stack.append(parent)
    return False


@dataclass(frozen=True)
class QueryOutcome:
    """How one system answered one query."""

    query_id: str
    success: bool
    expected_found: bool
    unsafe: tuple[tuple[str, str], ...]
    abstain_expected: bool
    abstained: bool
    leaked: tuple[str, ...]
    provenance: tuple[bool, ...]
    ms: float


def _chronology_kept(query: EvalQuery, returned: Sequence[MemoryRecord]) -> bool:
    wanted = set(query.chronology)
    got = [r for r in returned if r.id in wanted]
    if any(r.event_time is None for r in got):
        return False
    ordered = sorted(got, key=lambda r: (r.event_time, r.id))
    return [r.id for r in ordered] == list(query.chronology)


def score_query(
    query: EvalQuery,
    returned: Sequence[MemoryRecord],
    truth: dict[str, Truth],
    provenance_of: Callable[[str], bool],
    ms: float,
) -> QueryOutcome:
    """Score one answer. ``provenance_of(record_id) -> bool`` is cached by the caller."""
    ids = [r.id for r in returned]
    unknown = [i for i in ids if i not in truth]
    if unknown:
        raise KeyError(f"returned record(s) the workload never wrote: {unknown[:3]}")
    unsafe = tuple((i, reason) for i in ids if (reason := unsafe_reason(truth[i], query)) is not None)
    leaked = tuple(i for i in ids if truth[i].scope not in query.allowed_scopes)
    provenance = tuple(bool(provenance_of(r.id)) for r in returned if r.kind in _LONG_TERM_ONLY)
    found = set(query.expect) <= set(ids)
    if query.abstain:
        correct = not ids
    else:
        correct = found
        if query.chronology:
            correct = correct and _chronology_kept(query, returned)
        if query.outcomes:
            expected = dict(query.outcomes)
            correct = correct and all(r.outcome == expected[r.id] for r in returned if r.id in expected)
    return QueryOutcome(
        query_id=query.id,
        success=correct and not unsafe,
        expected_found=found,
        unsafe=unsafe,
        abstain_expected=query.abstain,
        abstained=not ids,
        leaked=leaked,
        provenance=provenance,
        ms=ms,
    )


@dataclass(frozen=True)
class CapabilityResult:
    """The scores of one system on one capability (one row of the table)."""

    capability: str
    system: str
    queries: int
    task_success: float
    unsafe_rate: float
    unsafe_records: int
    unsafe_by_category: dict[str, int]
    abstention: float | None
    abstention_queries: int
    provenance: float | None
    provenance_records: int
    leakage: float
    median_ms: float
    failed_queries: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "capability": self.capability,
            "system": self.system,
            "queries": self.queries,
            "task_success": self.task_success,
            "unsafe_rate": self.unsafe_rate,
            "unsafe_records": self.unsafe_records,
            "unsafe_by_category": dict(sorted(self.unsafe_by_category.items())),
            "abstention": self.abstention,
            "abstention_queries": self.abstention_queries,
            "provenance": self.provenance,
            "provenance_records": self.provenance_records,
            "leakage": self.leakage,
            "median_ms": self.median_ms,
            "failed_queries": list(self.failed_queries),
        }


def _rate(hits: int, total: int) -> float:
    return round(hits / total, 4) if total else 0.0


def aggregate(capability: str, system: str, outcomes: Sequence[QueryOutcome]) -> CapabilityResult:
    """Fold per-query outcomes into one row."""
    n = len(outcomes)
    abstain = [o for o in outcomes if o.abstain_expected]
    prov = [p for o in outcomes for p in o.provenance]
    categories = Counter(reason for o in outcomes for _, reason in o.unsafe)
    return CapabilityResult(
        capability=capability,
        system=system,
        queries=n,
        task_success=_rate(sum(o.success for o in outcomes), n),
        unsafe_rate=_rate(sum(bool(o.unsafe) for o in outcomes), n),
        unsafe_records=sum(len(o.unsafe) for o in outcomes),
        unsafe_by_category=dict(categories),
        abstention=_rate(sum(o.abstained for o in abstain), len(abstain)) if abstain else None,
        abstention_queries=len(abstain),
        provenance=_rate(sum(prov), len(prov)) if prov else None,
        provenance_records=len(prov),
        leakage=_rate(sum(bool(o.leaked) for o in outcomes), n),
        median_ms=round(statistics.median(o.ms for o in outcomes), 3) if outcomes else 0.0,
        failed_queries=tuple(o.query_id for o in outcomes if not o.success),
    )
