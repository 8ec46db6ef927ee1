"""Benchmarks behind ``graphmem bench``: medians and tails, never asserted in unit tests."""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from graphmem.model import Kind, MemoryRecord, Outcome, ReadContext, Source
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


def recall_workload(
    store: MemoryStore, tenant: str, total: int, scopes: int, repeats: int = 200, batch: int = 5000
) -> dict[str, Any]:
    """Load ``total`` records, then time recall for a caller whose scope holds ``total/scopes`` of them."""
    records = list(synthetic_records(tenant, total, scopes))
    start = time.perf_counter()
    for i in range(0, total, batch):
        store.add_many(records[i : i + batch])
    ingest_s = time.perf_counter() - start
    for c in range(scopes):
        store.scope_within(tenant, f"case:c{c}", "domain:bench") if c < 3 else None
    rng = random.Random(11)
    queries = [" ".join(rng.choices(_WORDS, k=3)) for _ in range(50)]
    contexts = [
        ReadContext(
            tenant=tenant,
            scopes=(f"case:c{rng.randrange(scopes)}",),
            now=NOW,
            environment=("cap-a",),
            limit=10,
        )
        for _ in range(50)
    ]
    i = 0

    def one() -> object:
        nonlocal i
        i += 1
        return store.recall(contexts[i % len(contexts)], queries[i % len(queries)])

    latency = measure(one, repeats)
    return {
        "records": total,
        "in_scope": total // scopes,
        "ingest_records_per_s": round(total / ingest_s),
        "recall": latency.summary(),
    }
