"""Run the evaluation: build the workloads once per size, ask every query of every system.

Systems (all over the same store and tenant):

* ``graphmem`` — ``MemoryStore.recall``: the gate, then ranking.
* ``no-gate`` — the ablation: ``recall_without_gate`` ranks every record of
  the tenant exactly as recall ranks survivors (same ranking function, limit
  and minimum score) but with no drop reasons at all.
* ``gate-restored`` — ``MemoryStore.recall`` again after the ablation; its
  selections must equal ``graphmem``'s (``EvalRun.restored_identical``).
* ``untyped`` — ``graphmem.baselines.similarity_search``: top-k long-term
  records by text alone, keeping matches only (score ≥ the query's minimum).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphmem.baselines import similarity_search
from graphmem.eval.metrics import (
    UNSAFE_CATEGORIES,
    CapabilityResult,
    QueryOutcome,
    aggregate,
    reaches_source,
    score_query,
)
from graphmem.eval.workloads import CAPABILITIES, MATCH_ONLY, NOW, EvalQuery, Truth, Workload, build_workloads
from graphmem.model import MemoryRecord, ReadContext
from graphmem.ranking import rank
from graphmem.store import MemoryStore

__all__ = [
    "EVAL_VERSION",
    "SYSTEMS",
    "EvalReport",
    "EvalRun",
    "recall_without_gate",
    "run_eval",
    "strip_timing",
]

EVAL_VERSION = "graphmem-eval/1"
SYSTEMS = ("graphmem", "no-gate", "gate-restored", "untyped")
TIMING_KEYS = frozenset({"median_ms", "elapsed_s", "build_s"})
StoreFactory = Callable[[], MemoryStore]


def recall_without_gate(store: MemoryStore, ctx: ReadContext, query: str) -> list[MemoryRecord]:
    """The ablation: every record of ``ctx.tenant`` ranked like gate survivors, with no drop reasons.

    Same ranking (``graphmem.ranking.rank``, recency = valid_from, else event
    time, else creation), same ``ctx.limit`` and ``ctx.min_score`` as recall;
    no kind, status, validity, supersession, scope, clearance or kind-rule
    check. Never used by ``MemoryStore.recall``.
    """
    records = sorted(store.backend.all_records(ctx.tenant), key=lambda r: r.id)
    by_id = {r.id: r for r in records}
    docs = [
        (r.id, r.content, (r.valid_from or r.event_time or r.created_at).timestamp(), r.embedding)
        for r in records
    ]
    chosen = [rid for rid, score in rank(docs, query) if score >= ctx.min_score][: ctx.limit]
    return [by_id[rid] for rid in chosen]


def _untyped(store: MemoryStore, ctx: ReadContext, query: str) -> list[MemoryRecord]:
    hits = similarity_search(store, ctx.tenant, query, k=ctx.limit)
    return [record for record, score in hits if score >= ctx.min_score]


def _recall(store: MemoryStore, ctx: ReadContext, query: str) -> list[MemoryRecord]:
    return list(store.recall(ctx, query).records)


_RETRIEVERS: dict[str, Callable[[MemoryStore, ReadContext, str], list[MemoryRecord]]] = {
    "graphmem": _recall,
    "no-gate": recall_without_gate,
    "gate-restored": _recall,
    "untyped": _untyped,
}


@dataclass
class EvalRun:
    """One backend at one size: the rows of one table."""

    backend: str
    size: int
    records: int
    queries: int
    results: list[CapabilityResult] = field(default_factory=list)
    restored_identical: bool | None = None
    build_s: float = 0.0
    elapsed_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "size": self.size,
            "records": self.records,
            "queries": self.queries,
            "restored_identical": self.restored_identical,
            "build_s": self.build_s,
            "elapsed_s": self.elapsed_s,
            "results": [r.as_dict() for r in self.results],
        }


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


@dataclass
class EvalReport:
    """Every run of one evaluation, as a Markdown table and as JSON."""

    seed: int
    systems: tuple[str, ...]
    sizes: tuple[int, ...]
    runs: list[EvalRun] = field(default_factory=list)

    def as_dict(self, *, timing: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "eval_version": EVAL_VERSION,
            "seed": self.seed,
            "systems": list(self.systems),
            "sizes": list(self.sizes),
            "capabilities": list(CAPABILITIES),
            "now": NOW.isoformat(),
            "min_score": MATCH_ONLY,
            "unsafe_categories": UNSAFE_CATEGORIES,
            "runs": [run.as_dict() for run in self.runs],
        }
        return data if timing else strip_timing(data)

    def to_json(self, *, timing: bool = True) -> str:
        """The report as JSON; with ``timing=False`` the wall-clock fields are left out."""
        return json.dumps(self.as_dict(timing=timing), indent=2, sort_keys=True, ensure_ascii=False)

    def to_markdown(self) -> str:
        """One table per backend and size: a row per capability and system."""
        out: list[str] = []
        for run in self.runs:
            out.append(
                f"### {run.backend}, size {run.size} "
                f"({run.records} records, {run.queries} queries per system)"
            )
            out.append("")
            out.append(
                "| capability | system | task success | unsafe | correct abstention | provenance "
                "| cross-scope leakage | median ms |"
            )
            out.append("|---|---|--:|--:|--:|--:|--:|--:|")
            for r in run.results:
                out.append(
                    f"| {r.capability} | {r.system} | {_fmt(r.task_success)} | {_fmt(r.unsafe_rate)} "
                    f"| {_fmt(r.abstention)} | {_fmt(r.provenance)} | {_fmt(r.leakage)} | {r.median_ms:.2f} |"
                )
            if run.restored_identical is not None:
                same = "identical to" if run.restored_identical else "DIFFERENT from"
                out.append("")
                out.append(f"gate-restored selections are {same} graphmem's before the ablation.")
            out.append("")
        return "\n".join(out)


def strip_timing(data: Any) -> Any:
    """``data`` without wall-clock fields (what is reproducible for a fixed seed)."""
    if isinstance(data, dict):
        return {k: strip_timing(v) for k, v in data.items() if k not in TIMING_KEYS}
    if isinstance(data, list):
        return [strip_timing(v) for v in data]
    return data


def _backend_name(store: MemoryStore) -> str:
    name = type(store.backend).__name__.removesuffix("Backend").lower()
    return name or "unknown"


def _ask(
    system: str,
    store: MemoryStore,
    query: EvalQuery,
    truth: dict[str, Truth],
    provenance_of: Callable[[str], bool],
) -> tuple[QueryOutcome, list[str]]:
    start = time.perf_counter()
    returned = _RETRIEVERS[system](store, query.ctx, query.text)
    ms = (time.perf_counter() - start) * 1000.0
    return score_query(query, returned, truth, provenance_of, ms), [r.id for r in returned]


def _evaluate(store: MemoryStore, backend: str, seed: int, size: int, systems: Sequence[str]) -> EvalRun:
    started = time.perf_counter()
    prefix = f"eval-{seed}-{size}-{uuid.uuid4().hex[:10]}"
    workloads: list[Workload] = build_workloads(store, prefix, seed=seed, size=size)
    build_s = time.perf_counter() - started
    traced: dict[tuple[str, str], bool] = {}

    def provenance_of(tenant: str) -> Callable[[str], bool]:
        def check(record_id: str) -> bool:
            if (tenant, record_id) not in traced:
                traced[tenant, record_id] = reaches_source(store.trace(tenant, record_id))
            return traced[tenant, record_id]

        return check

    run = EvalRun(
        backend=backend,
        size=size,
        records=sum(len(store.backend.all_records(w.tenant)) for w in workloads),
        queries=sum(len(w.queries) for w in workloads),
        build_s=round(build_s, 3),
    )
    selected: dict[str, list[list[str]]] = {}
    for system in systems:
        picks: list[list[str]] = []
        for workload in workloads:
            outcomes = []
            check = provenance_of(workload.tenant)
            for query in workload.queries:
                outcome, ids = _ask(system, store, query, workload.truth, check)
                outcomes.append(outcome)
                picks.append(ids)
            run.results.append(aggregate(workload.capability, system, outcomes))
        selected[system] = picks
    if "graphmem" in selected and "gate-restored" in selected:
        run.restored_identical = selected["graphmem"] == selected["gate-restored"]
    run.elapsed_s = round(time.perf_counter() - started, 3)
    run.results.sort(key=lambda r: (CAPABILITIES.index(r.capability), list(systems).index(r.system)))
    return run


def run_eval(
    store_factory: StoreFactory | MemoryStore,
    *,
    seed: int = 7,
    systems: Sequence[str] = SYSTEMS,
    sizes: Sequence[int] = (10,),
    backend: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> EvalReport:
    """Evaluate ``systems`` on stores from ``store_factory`` at each size (scenarios per capability).

    ``store_factory`` is called once per size and the store it returns is
    closed afterwards; a ``MemoryStore`` passed instead is reused (each size
    in a fresh tenant) and left open. ``backend`` labels the rows (default:
    the store's backend, e.g. ``embedded`` or ``neo4j``). Raises
    ``ValueError`` for an unknown system, or ``gate-restored`` without a
    ``no-gate`` before it.
    """
    systems = tuple(systems)
    unknown = [s for s in systems if s not in _RETRIEVERS]
    if unknown:
        raise ValueError(f"unknown system(s) {unknown}; choose from {list(SYSTEMS)}")
    if "gate-restored" in systems and (
        "no-gate" not in systems or systems.index("no-gate") > systems.index("gate-restored")
    ):
        raise ValueError("gate-restored restores the gate after no-gate: list no-gate before it")
    report = EvalReport(seed=seed, systems=systems, sizes=tuple(sizes))
    for size in sizes:
        owned = not isinstance(store_factory, MemoryStore)
        store = store_factory() if not isinstance(store_factory, MemoryStore) else store_factory
        try:
            store.setup()
            label = backend or _backend_name(store)
            if progress is not None:
                progress(f"{label}: size {size}")
            report.runs.append(_evaluate(store, label, seed, size, systems))
        finally:
            if owned:
                store.close()
    return report
