"""The ``concurrency`` workload of ``graphmem bench`` (the long mixed run and recall throughput
with several client threads) and ``recall_threads`` (recall throughput from 1, 2 and 4 client
threads alone)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from graphmem.bench.concurrency import MixedConfig, run_mixed
from graphmem.bench.core import Latency, ratios_to_first
from graphmem.bench.workloads import BenchConfig, Loaded
from graphmem.model import ReadContext
from graphmem.store import MemoryStore

__all__ = [
    "Asked",
    "clients_row",
    "concurrency_workload",
    "recall_clients",
    "recall_threads",
    "recall_threads_workload",
]


def concurrency_workload(
    store: MemoryStore, tenant: str, loaded: Loaded, cfg: BenchConfig
) -> list[dict[str, Any]]:
    """One ``concurrency_mixed`` row (operations, violations per invariant) from ``cfg.mixed_threads``
    threads of ``cfg.mixed_ops`` operations each on ``tenant``, then a ``concurrency_recall`` row per
    client count: selective recalls on the loaded tenant for ``cfg.clients_s`` seconds."""
    mixed = MixedConfig(threads=cfg.mixed_threads, ops_per_thread=cfg.mixed_ops, timeout_s=3600.0)
    tick = cfg.progress("mixed operations on many threads", mixed.threads * mixed.ops_per_thread)
    report = run_mixed(store, tenant, mixed, tick)
    rows: list[dict[str, Any]] = [
        {
            "workload": "concurrency_mixed",
            "threads": report.threads,
            "readers": report.readers,
            "operations": report.operations,
            "acknowledged": sum(report.acknowledged.values()),
            "refused": sum(report.refused.values()),
            "recalls": report.recalls,
            "seconds": report.seconds,
            "per_s": round(report.operations / report.seconds, 1) if report.seconds else 0.0,
            "violations": report.counts(),
            "violations_total": len(report.violations),
            "crashes_by_operation": report.crashes(),
            "examples": [f"{v.invariant}: {v.detail}" for v in report.violations[:10]],
            "by_operation": report.acknowledged,
            "refused_by_code": report.refused,
        }
    ]
    rows += [recall_clients(store, loaded, n, cfg.clients_s) for n in cfg.recall_clients]
    return rows


def recall_clients(store: MemoryStore, loaded: Loaded, clients: int, seconds: float) -> dict[str, Any]:
    """Recalls from ``clients`` threads at once for ``seconds``, round-robin over the loaded
    callers; recalls per second of wall time, and whether every selection equalled the oracle."""
    asked: list[Asked] = [(q, None) for q in loaded.queries]
    return {
        "workload": "concurrency_recall",
        **clients_row(store, loaded.contexts, asked, loaded.expected, clients, seconds),
    }


Asked = tuple[str, tuple[float, ...] | None]
"""A caller's query and query embedding (None: BM25 alone)."""


def clients_row(
    store: MemoryStore,
    contexts: Sequence[ReadContext],
    asked: Sequence[Asked],
    expected: Sequence[list[str]],
    clients: int,
    seconds: float,
) -> dict[str, Any]:
    """Recalls from ``clients`` threads at once for ``seconds``, round-robin over the callers
    (``contexts[k]`` asking ``asked[k]``, the oracle expecting ``expected[k]``), each caller
    recalled once untimed first: the row's ``clients``, ``recalls``, ``seconds`` (wall),
    ``per_s``, ``latency`` of every recall and ``recall_equals_oracle``."""
    count = len(contexts)

    def recall(at: int) -> list[str]:
        query, embedding = asked[at]
        return store.recall(contexts[at], query, query_embedding=embedding).ids

    for k in range(count):  # the callers' caches, filled before timing
        recall(k)
    samples: list[list[float]] = [[] for _ in range(clients)]
    wrong = [0] * clients
    deadline: list[float] = []
    barrier = threading.Barrier(clients, action=lambda: deadline.append(time.perf_counter() + seconds))

    def client(i: int) -> None:
        barrier.wait()
        k = i
        while time.perf_counter() < deadline[0]:
            at = k % count
            start = time.perf_counter()
            ids = recall(at)
            samples[i].append((time.perf_counter() - start) * 1000.0)
            wrong[i] += ids != expected[at]
            k += clients

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - (deadline[0] - seconds)
    total = sum(len(s) for s in samples)
    return {
        "clients": clients,
        "recalls": total,
        "seconds": round(wall, 3),
        "per_s": round(total / wall, 1),
        "latency": Latency([ms for s in samples for ms in s]).summary(),
        "recall_equals_oracle": sum(wrong) == 0,
    }


def recall_threads(
    store: MemoryStore,
    workload: str,
    contexts: Sequence[ReadContext],
    asked: Sequence[Asked],
    expected: Sequence[list[str]],
    cfg: BenchConfig,
) -> list[dict[str, Any]]:
    """A ``workload`` row per number of client threads in ``cfg.thread_clients`` (``clients_row``
    for ``cfg.clients_s`` seconds each), with ``ratio_to_one``: its recalls per second over the
    first count's (one thread)."""
    tick = cfg.progress(f"{workload}: recalls from {', '.join(map(str, cfg.thread_clients))} threads", 1)
    rows = [
        {"workload": workload, **clients_row(store, contexts, asked, expected, n, cfg.clients_s)}
        for n in cfg.thread_clients
    ]
    tick(1)
    return ratios_to_first(rows)


def recall_threads_workload(store: MemoryStore, loaded: Loaded, cfg: BenchConfig) -> list[dict[str, Any]]:
    """``recall_threads`` rows: BM25 recalls of the loaded recall tenant's callers (each in its
    one case scope) from 1, 2 and 4 threads, without the long mixed run."""
    asked: list[Asked] = [(q, None) for q in loaded.queries]
    return recall_threads(store, "recall_threads", loaded.contexts, asked, loaded.expected, cfg)
