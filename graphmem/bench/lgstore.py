"""The ``lgstore`` workload of ``graphmem bench``: LangGraph's ``GraphmemStore`` against
``InMemoryStore``, both with an index and the same embedding function.

For each namespace size, both stores get the same items (a short sentence under ``text``,
embedded at put); then ``get`` of a random key, ``put`` that updates a random key (one
embedding), and ``search`` with a query (cosine ranking, top 10) are timed on both, in the
same run, alternating, so a noisy machine slows both alike. Each row carries both
latencies and their ratio (the target: graphmem within 3 times ``InMemoryStore``) and
whether the two returned the same keys. A last row times 1,000 mixed operations on one
namespace (target: ≤ 5 s).
"""

from __future__ import annotations

import hashlib
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from graphmem.bench.core import Latency
from graphmem.store import MemoryStore

__all__ = ["embed", "lgstore_workload", "sentences"]

_DIMS = 64
_SUBJECTS = [
    "The payment gateway", "Our billing service", "The checkout page", "A nightly batch job",
    "The support team", "The mobile app", "The search index", "Customer onboarding",
    "The warehouse scanner", "The refund workflow", "The login service", "The status page",
]  # fmt: skip
_VERBS = [
    "times out after", "retries once within", "reports an error after", "is paused for",
    "sends a reminder after", "recovers within", "is rate limited to", "logs a warning after",
]  # fmt: skip
_TAILS = [
    "thirty seconds", "five minutes", "two business days", "one hour of inactivity",
    "a failed capture", "the third attempt", "a schema change", "the monthly close",
    "a network partition", "a password reset", "a duplicate charge", "the weekly deploy",
]  # fmt: skip


def sentences(count: int, seed: int = 5) -> list[str]:
    """``count`` short natural-language statements (each unique by its item number)."""
    rng = random.Random(seed)
    return [
        f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_TAILS)} (item {i})." for i in range(count)
    ]


def embed(texts: list[str]) -> list[list[float]]:
    """A deterministic embedding both stores share: hashed word counts in 64 dimensions."""
    out = np.zeros((len(texts), _DIMS))
    for row, text in enumerate(texts):
        for word in text.lower().split():
            out[row, int(hashlib.blake2b(word.encode(), digest_size=2).hexdigest(), 16) % _DIMS] += 1.0
    return out.tolist()


def _index() -> dict[str, Any]:
    return {"dims": _DIMS, "embed": embed, "fields": ["text"]}


def _timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000.0


def lgstore_workload(
    store: MemoryStore,
    tenant: str,
    sizes: tuple[int, ...] = (1_000, 10_000),
    repeats: int = 200,
    mixed: int = 1_000,
) -> list[dict[str, Any]]:
    """Rows ``lgstore_get``, ``lgstore_put``, ``lgstore_search`` per size, and ``lgstore_mixed``."""

    rows: list[dict[str, Any]] = []
    for size in sizes:
        rows += _one_size(store, f"{tenant}-{size}", size, repeats)
    rows.append(_mixed(store, f"{tenant}-mixed", mixed))
    return rows


def _one_size(store: MemoryStore, tenant: str, size: int, repeats: int) -> list[dict[str, Any]]:
    from langgraph.store.base import PutOp
    from langgraph.store.memory import InMemoryStore

    from graphmem.integrations.langgraph import GraphmemStore

    rows: list[dict[str, Any]] = []
    floors = _floors(store, size, repeats)
    texts = sentences(size)
    ns = ("bench", f"n{size}")
    reference = InMemoryStore(index=_index())  # type: ignore[arg-type]
    ours = GraphmemStore(store, tenant, index=_index())  # type: ignore[arg-type]
    for target in (reference, ours):
        for i in range(0, size, 1000):
            target.batch(
                [PutOp(ns, f"k{j}", {"text": texts[j], "n": j}) for j in range(i, min(size, i + 1000))]
            )
    rng = random.Random(size)
    keys = [f"k{rng.randrange(size)}" for _ in range(repeats)]
    queries = [texts[rng.randrange(size)].split(" (")[0] for _ in range(repeats)]
    calls: dict[str, Callable[[Any, int], object]] = {
        "get": lambda t, i: t.get(ns, keys[i]),
        "put": lambda t, i: t.put(ns, keys[i], {"text": texts[i % size] + " updated", "n": -i}),
        "search": lambda t, i: t.search(ns, query=queries[i], limit=10),
    }
    for name, call in calls.items():
        for i in range(5):  # warm both
            call(reference, i)
            call(ours, i)
        theirs_ms: list[float] = []
        ours_ms: list[float] = []
        same = True
        for i in range(repeats):
            theirs_ms.append(_timed(lambda: call(reference, i)))  # noqa: B023
            ours_ms.append(_timed(lambda: call(ours, i)))  # noqa: B023
            if name != "put":
                same = same and _keys(call(reference, i)) == _keys(call(ours, i))
        mine, base = Latency(ours_ms), Latency(theirs_ms)
        floor = floors[name]
        rows.append(
            {
                "workload": f"lgstore_{name}",
                "namespace_items": size,
                "latency": mine.summary(),
                "inmemory_latency": base.summary(),
                # Ratios of the unrounded percentiles (a get is a few microseconds: the
                # rounded milliseconds would move a ratio by a third).
                "ratio_p50": _ratio(statistics.median(ours_ms), statistics.median(theirs_ms)),
                "ratio_p95": _ratio(mine.pct(95), base.pct(95)),
                "same_results": same,
                "floor": floor.summary(),
                "ratio_to_floor_p50": _ratio(statistics.median(ours_ms), statistics.median(floor.samples)),
            }
        )
    return rows


def _ratio(ours: float, theirs: float) -> float | None:
    return round(ours / theirs, 2) if theirs else None


def _floors(store: MemoryStore, size: int, repeats: int) -> dict[str, Latency]:
    """What each operation cannot beat, measured beside it: a bare SQLite key seek (get), one
    durable SQLite commit of one row in the store's directory (put: WAL, ``synchronous=FULL``),
    and one NumPy cosine pass over ``size`` vectors (search)."""
    from graphmem.bench.engine import sqlite_key_floors

    get_ms, put_ms = sqlite_key_floors(store, size, repeats)
    vectors = np.array(embed(sentences(size)))
    query = np.array(embed(["The payment gateway times out after thirty seconds"])[0])

    def search() -> None:
        norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(query)
        np.argsort(-(vectors @ query) / np.where(norms == 0, 1, norms))[:10]

    search_ms = [_timed(search) for _ in range(repeats)]
    return {"get": Latency(get_ms), "put": Latency(put_ms), "search": Latency(search_ms)}


def _keys(result: object) -> object:
    if result is None:
        return None
    if isinstance(result, list):
        return [(item.key, item.value) for item in result]
    return (result.key, result.value)  # type: ignore[attr-defined]


def _mixed(store: MemoryStore, tenant: str, count: int = 1000) -> dict[str, Any]:
    """``count`` operations on one namespace (40% put, 30% get, 20% search, 10% delete),
    the same sequence on both stores; seconds for each."""
    from langgraph.store.memory import InMemoryStore

    from graphmem.integrations.langgraph import GraphmemStore

    texts = sentences(count, seed=9)
    rng = random.Random(3)
    ops = [(rng.random(), f"k{rng.randrange(max(1, count // 5))}", i) for i in range(count)]
    ns = ("bench", "mixed")

    def run(target: Any) -> float:
        start = time.perf_counter()
        for roll, key, i in ops:
            if roll < 0.4:
                target.put(ns, key, {"text": texts[i]})
            elif roll < 0.7:
                target.get(ns, key)
            elif roll < 0.9:
                target.search(ns, query=texts[i].split(" (")[0], limit=5)
            else:
                target.delete(ns, key)
        return time.perf_counter() - start

    reference_s = run(InMemoryStore(index=_index()))  # type: ignore[arg-type]
    ours_s = run(GraphmemStore(store, tenant, index=_index()))  # type: ignore[arg-type]
    return {
        "workload": "lgstore_mixed",
        "operations": count,
        "seconds": round(ours_s, 3),
        "per_s": round(count / ours_s, 1) if ours_s else 0.0,
        "inmemory_seconds": round(reference_s, 3),
        "ratio": round(ours_s / reference_s, 1) if reference_s else None,
    }
