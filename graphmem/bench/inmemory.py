"""LangGraph's ``InMemoryStore`` on the selective filtered-search workload, next to graphmem.

What ``InMemoryStore.search(prefix, query=, filter=, limit=)`` does (langgraph
1.x, ``langgraph/store/memory``): it scans every item of every namespace under
the prefix and keeps those whose value matches ``filter`` — equality on
top-level keys, or ``$eq $ne $gt $gte $lt $lte`` (numeric comparisons through
``float()``). Without an ``index`` config the ``query`` is ignored: the first
``limit`` matches come back in insertion order, unranked.

To make it do the same job as graphmem's recall, each record is put at
namespace ``(tenant, scope)`` with a value holding the content and the gate's
inputs copied from the record: status, policy, sensitivity rank, and the
validity window as numbers (``start_ts``, ``end_ts``; open ends as ±inf), and
the filter says ``status == "active"``, ``policy == ctx.policy``,
``start_ts <= now < end_ts``, ``sensitivity_rank <= clearance``. It has no
notion of time validity of its own: the caller must copy the window into the
value and compute ``now``. Ranking is then done by the caller with graphmem's
own BM25 (``graphmem.ranking.rank``) over everything the filter returns, so
the top 10 can be compared with the oracle.

What the filter cannot express, and so is not part of this comparison:
supersession and invalidation as of ``now`` (graph edges, not values), scopes
reached through ``WITHIN`` (only a namespace prefix), a choice of several
kinds (no OR), and preconditions ⊆ environment (lists compare by equality
only). The timed contexts therefore give callers both capabilities, so that
the gate's and the filter's eligible sets are the same by construction
(checked); with only ``cap-a``, as in the selective workload, the filter lets
through procedures the gate drops as ``precondition_unmet`` (counted).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from graphmem.bench.core import candidates, oracle
from graphmem.bench.workloads import BenchConfig, Loaded
from graphmem.model import MemoryRecord, ReadContext
from graphmem.model.gate import run_gate, validity_window
from graphmem.ranking import rank
from graphmem.store import MemoryStore

__all__ = ["inmemory_workload"]

_ALL = 1_000_000_000


def _value(record: MemoryRecord) -> dict[str, Any]:
    start, end = validity_window(record)
    return {
        "content": record.content,
        "kind": record.kind.value,
        "status": record.status.value,
        "policy": record.policy,
        "sensitivity_rank": record.sensitivity.rank,
        "start_ts": float("-inf") if start is None else start.timestamp(),
        "end_ts": float("inf") if end is None else end.timestamp(),
        "preconditions": list(record.preconditions),
        "recency": (record.valid_from or record.event_time or record.created_at).timestamp(),
    }


def _filter(ctx: ReadContext) -> dict[str, Any]:
    now = ctx.now.timestamp()
    return {
        "status": "active",
        "policy": ctx.policy,
        "start_ts": {"$lte": now},
        "end_ts": {"$gt": now},
        "sensitivity_rank": {"$lte": ctx.clearance.rank},
    }


def inmemory_workload(store: MemoryStore, loaded: Loaded, cfg: BenchConfig) -> list[dict[str, Any]]:
    """The recall tenant's records in an ``InMemoryStore``; its filtered search timed against
    graphmem's recall on the same callers, both checked against the oracle."""
    from langgraph.store.base import PutOp
    from langgraph.store.memory import InMemoryStore

    lg = InMemoryStore()
    tenant = loaded.tenant
    tick = cfg.progress("loading InMemoryStore", len(loaded.records))
    spent = 0.0
    for i in range(0, len(loaded.records), cfg.batch):
        chunk = loaded.records[i : i + cfg.batch]
        ops = [PutOp(namespace=(tenant, r.scope), key=r.id, value=_value(r)) for r in chunk]
        start = time.perf_counter()
        lg.batch(ops)
        spent += time.perf_counter() - start
        tick(len(chunk))

    contexts = [
        ReadContext.model_validate({**ctx.model_dump(), "environment": ("cap-a", "cap-b")})
        for ctx in loaded.contexts
    ]
    reached = [candidates(loaded.case_records(k)) for k in range(len(contexts))]
    answers = [oracle(r, ctx, q) for r, ctx, q in zip(reached, contexts, loaded.queries, strict=True)]
    expected = [a.selected for a in answers]

    def search(ctx: ReadContext, query: str, limit: int) -> list[Any]:
        return lg.search((tenant, ctx.scopes[0]), query=query, filter=_filter(ctx), limit=limit)

    def search_ranked(ctx: ReadContext, query: str) -> list[str]:
        items = search(ctx, query, _ALL)
        docs = ((it.key, it.value["content"], it.value["recency"], None) for it in items)
        return [rid for rid, _ in rank(docs, query)[: ctx.limit]]

    same_sets = all(
        {it.key for it in search(ctx, q, _ALL)} == answer.eligible
        for ctx, q, answer in zip(contexts, loaded.queries, answers, strict=True)
    )
    ranked_exact = all(
        search_ranked(ctx, q) == want for ctx, q, want in zip(contexts, loaded.queries, expected, strict=True)
    )
    # The selective workload's own callers have only cap-a: what does the filter let through, and why
    # would the gate have dropped it?
    let_through: Counter[str] = Counter()
    for k, (ctx, q) in enumerate(zip(loaded.contexts, loaded.queries, strict=True)):
        extra = {it.key for it in search(ctx, q, _ALL)} - loaded.eligible[k]
        reasons = {rid: reason for rid, _, reason in run_gate(loaded.reached[k], ctx).verdicts}
        let_through.update(str(reasons[rid]) for rid in extra)
    recalled: list[tuple[int, list[str]]] = []

    def timed(call: Callable[[int], object], description: str) -> dict[str, float]:
        i = 0

        def one() -> object:
            nonlocal i
            i += 1
            return call(i % len(contexts))

        for k in range(len(contexts)):  # every caller once untimed, on both sides: caches filled
            call(k)
        return cfg.timed(one, description).summary()

    def recall(k: int) -> object:
        selection = store.recall(contexts[k], loaded.queries[k])
        recalled.append((k, selection.ids))
        return selection

    graphmem = timed(recall, "graphmem recall (both capabilities)")
    plain = timed(
        lambda k: search(contexts[k], loaded.queries[k], contexts[k].limit),
        "InMemoryStore.search, filter only",
    )
    ranked = timed(lambda k: search_ranked(contexts[k], loaded.queries[k]), "InMemoryStore.search + BM25")
    graphmem_exact = all(ids == expected[k] for k, ids in recalled)
    common = {
        "candidates": len(reached[0]),
        "graphmem_latency": graphmem,
        "graphmem_equals_oracle": graphmem_exact,
        "filter_same_ids_as_gate": same_sets,
        "cap_a_only_let_through_per_caller": round(let_through.total() / len(contexts), 1),
        "cap_a_only_let_through_reasons": dict(sorted(let_through.items())),
        "load_records_per_s": round(len(loaded.records) / spent) if spent else 0,
    }
    return [
        {
            "workload": "langgraph_filter",
            "latency": plain,
            "ranked": False,
            "speedup_p95": round(plain["p95_ms"] / graphmem["p95_ms"], 2),
            **common,
        },
        {
            "workload": "langgraph_filter_bm25",
            "latency": ranked,
            "ranked": True,
            "equals_oracle": ranked_exact,
            "speedup_p95": round(ranked["p95_ms"] / graphmem["p95_ms"], 2),
            **common,
        },
    ]
