"""Benchmarks behind ``graphmem bench``: medians and tails, never asserted in unit tests."""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from graphmem.errors import GraphmemError
from graphmem.gate import Candidate, drop_reason, run_gate
from graphmem.model import Kind, MemoryRecord, Outcome, ReadContext, Source
from graphmem.ranking import rank, tokenize
from graphmem.store import MemoryStore

__all__ = ["Latency", "measure", "recall_workload", "synthetic_records"]

NOW = datetime(2026, 6, 1, tzinfo=UTC)
_WORDS = [f"w{i:04d}" for i in range(3000)]


def synthetic_records(tenant: str, total: int, scopes: int, seed: int = 7) -> Iterator[MemoryRecord]:
    """``total`` records spread evenly over ``scopes`` case scopes, mixed kinds and lifecycles."""
    rng = random.Random(seed)
    day = timedelta(days=1)
    for i in range(total):
        kind = (Kind.EPISODIC, Kind.SEMANTIC, Kind.PROCEDURAL)[i % 3]
        words = " ".join(rng.choices(_WORDS, k=rng.randint(8, 24)))
        fields: dict[str, Any] = {
            "id": f"r{i}",
            "tenant": tenant,
            "kind": kind,
            "scope": f"case:c{i % scopes}",
            "content": f"record {i} {words}",
            "created_at": NOW - rng.randint(1, 300) * day,
            "sources": (Source(id=f"s{i}"),),
        }
        if kind is Kind.EPISODIC:
            fields |= {"event_time": NOW - rng.randint(1, 300) * day, "outcome": Outcome.UNKNOWN}
        elif kind is Kind.SEMANTIC:
            valid_from = NOW - rng.randint(1, 300) * day
            fields |= {"valid_from": valid_from}
            if rng.random() < 0.2:
                fields["valid_to"] = valid_from + rng.randint(1, 100) * day
        else:
            fields |= {
                "procedure_name": f"proc-{i}",
                "procedure_version": "1",
                "preconditions": ("cap-a",) if rng.random() < 0.5 else ("cap-a", "cap-b"),
                "outcome": Outcome.VERIFIED_SUCCESS,
            }
        yield MemoryRecord(**fields)


class Latency:
    """Latency samples in milliseconds with the usual summaries."""

    def __init__(self, samples_ms: list[float]) -> None:
        self.samples = sorted(samples_ms)

    def pct(self, p: float) -> float:
        index = min(len(self.samples) - 1, max(0, round(p / 100 * len(self.samples)) - 1))
        return self.samples[index]

    def summary(self) -> dict[str, float]:
        return {
            "n": len(self.samples),
            "p50_ms": round(statistics.median(self.samples), 3),
            "p95_ms": round(self.pct(95), 3),
            "p99_ms": round(self.pct(99), 3),
        }


def measure(call: Callable[[], object], repeats: int, warmup: int = 5) -> Latency:
    for _ in range(warmup):
        call()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000.0)
    return Latency(samples)


def _oracle(records: list[MemoryRecord], ctx: ReadContext, query: str) -> list[str]:
    """Brute force, independent of any backend: gate and rank every record in the context's scope."""
    candidates = [(Candidate.of(r, None, None), True) for r in records]
    gated = run_gate(candidates, ctx)
    return [rid for rid, _ in rank(gated.survivors, query)[: ctx.limit]]


def _naive(store: MemoryStore, ctx: ReadContext, query: str, k: int) -> list[str]:
    """Fulltext top-k over the whole database, then the gate: what "filter after ranking" returns."""
    from graphmem.backends.neo4j import Neo4jBackend

    backend = store.backend
    if not isinstance(backend, Neo4jBackend):
        raise GraphmemError("the naive baseline needs the Neo4j backend", code="bench_backend")
    lucene = " OR ".join(tokenize(query)) or "*"
    rows = backend._read("naive_fulltext_topk", query=lucene, k=k, tenant=ctx.tenant)
    kept: list[str] = []
    for row in rows:
        record = MemoryRecord.model_validate_json(row["json"])
        in_scope = record.scope in ctx.scopes
        if drop_reason(Candidate.of(record, None, None), ctx, in_scope) is None:
            kept.append(record.id)
    return kept[: ctx.limit]


def recall_workload(
    store: MemoryStore,
    tenant: str,
    total: int,
    in_scope: int = 1000,
    repeats: int = 200,
    batch: int = 5000,
    naive_k: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Load ``total`` records, ``in_scope`` per case scope, then time recall for one case.

    Every timed recall is checked against a brute-force oracle; with
    ``naive_k`` (Neo4j only) the naive fulltext-top-k-then-filter approach is
    timed on the same queries and its recall against the oracle reported.
    """
    scopes = max(1, total // in_scope)
    records = list(synthetic_records(tenant, total, scopes))
    start = time.perf_counter()
    for i in range(0, total, batch):
        store.add_many(records[i : i + batch])
        if progress is not None:
            progress(min(batch, total - i))
    ingest_s = time.perf_counter() - start
    rng = random.Random(11)
    cases = [rng.randrange(scopes) for _ in range(20)]
    queries = [" ".join(rng.choices(_WORDS[:300], k=3)) for _ in range(20)]
    contexts = [
        ReadContext(tenant=tenant, scopes=(f"case:c{c}",), now=NOW, environment=("cap-a",), limit=10)
        for c in cases
    ]
    by_case = {c: [r for r in records[c::scopes]] for c in set(cases)}
    oracle = [_oracle(by_case[c], ctx, q) for c, ctx, q in zip(cases, contexts, queries, strict=True)]
    exact = all(
        store.recall(ctx, q).ids == want for ctx, q, want in zip(contexts, queries, oracle, strict=True)
    )
    i = 0

    def one() -> object:
        nonlocal i
        i += 1
        return store.recall(contexts[i % len(contexts)], queries[i % len(queries)])

    result: dict[str, Any] = {
        "records": total,
        "in_scope": total // scopes,
        "ingest_records_per_s": round(total / ingest_s),
        "recall": measure(one, repeats).summary(),
        "recall_equals_oracle": exact,
    }
    if naive_k is not None:
        hits = wanted = 0
        for ctx, q, want in zip(contexts, queries, oracle, strict=True):
            got = set(_naive(store, ctx, q, naive_k))
            hits += len(got & set(want))
            wanted += len(want)
        j = 0

        def naive_one() -> object:
            nonlocal j
            j += 1
            return _naive(store, contexts[j % len(contexts)], queries[j % len(queries)], naive_k)

        result["naive"] = {
            "k": naive_k,
            "recall_vs_oracle": round(hits / wanted, 4) if wanted else 1.0,
            "latency": measure(naive_one, repeats).summary(),
        }
    return result
