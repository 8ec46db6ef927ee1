"""The ``hybrid`` workload of ``graphmem bench``: recall with a query embedding over records
that carry embeddings, selective and broad, against the brute-force oracle, its floor and
LangGraph's ``InMemoryStore`` with a vector index.

Every record of a tenant of its own (as many as the recall tenant) is embedded with
``WordVectors``: each word of the record (BM25's tokens) has a fixed random unit vector, and
a text's embedding is the normalised sum of its words' vectors. It costs microseconds a
record, so a million records embed in seconds, and texts that share words lie closer
together; it is a workload for speed, not a model of meaning (``graphmem.eval_retrieval``
measures ranking quality with real embeddings). Records are made and written in batches and
only the callers' records are kept, so a million 384-dimensional records never sit in the
bench's memory at once.

Rows:

* ``recall_hybrid`` — one case scope of ``in_scope`` records (1,000 by default) per caller,
  callers with one capability as in ``recall_selective``; each recall checked against the
  oracle (``graphmem.ranking.rank`` over the gate's survivors with the query embedding). Its
  floor: one NumPy pass over the same candidates' embedding matrix (float64 matrix-vector
  product plus a top-10 by ``argpartition``), timed in the same run.
* ``recall_hybrid_broad`` — a scope WITHIN the first case scopes reaching
  ``min(broad_fraction x records, broad_cap)`` candidates (10,000 at 100k and more), same
  checks and floor.
* ``inmemory_hybrid`` — the callers' case scopes also put into an ``InMemoryStore`` with an
  index (same vectors, ``fields=["content"]``) at namespace (tenant, scope), its filter
  holding the gate's inputs as values (``graphmem.bench.inmemory``); its filtered semantic
  search (``search(ns, query=, filter=, limit=10)``) and graphmem's hybrid recall timed
  alternately on the same callers, each given both capabilities so the two eligible sets are
  the same (checked).
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from graphmem.bench.core import KNOWN, NOW, Latency, candidates, measure, queries, synthetic_records
from graphmem.bench.workloads import BenchConfig
from graphmem.model import MemoryRecord, ReadContext
from graphmem.model.gate import Candidate, run_gate
from graphmem.ranking import rank, tokenize
from graphmem.store import MemoryStore

__all__ = ["WordVectors", "hybrid_threads_workload", "hybrid_workload"]


class WordVectors:
    """The bench's embedding: the normalised sum of fixed random unit vectors of a text's words."""

    def __init__(self, dimensions: int = 384, seed: int = 29) -> None:
        self.dimensions = dimensions
        self.name = f"bench-wordvec-{dimensions}-s{seed}"
        self._seed = seed
        self._words: dict[str, np.ndarray] = {}

    def _word(self, word: str) -> np.ndarray:
        vector = self._words.get(word)
        if vector is None:
            key = int.from_bytes(
                hashlib.blake2b(f"{self._seed}:{word}".encode(), digest_size=8).digest(), "big"
            )
            vector = np.random.default_rng(key).standard_normal(self.dimensions)
            vector /= np.linalg.norm(vector)
            self._words[word] = vector
        return vector

    def vector(self, text: str) -> np.ndarray:
        """``text``'s embedding as a float64 array (the zero vector for a text without words)."""
        words = tokenize(text)
        if not words:
            return np.zeros(self.dimensions)
        total: np.ndarray = np.sum([self._word(w) for w in words], axis=0)
        norm = float(np.linalg.norm(total))
        return total / norm if norm else total

    def __call__(self, text: str) -> tuple[float, ...]:
        return tuple(self.vector(text).tolist())


def _load(
    store: MemoryStore,
    tenant: str,
    total: int,
    scopes: int,
    keep: set[str],
    cfg: BenchConfig,
    vectors: WordVectors,
) -> tuple[dict[str, list[MemoryRecord]], float]:
    """Write the tenant's records in batches; return the records of the ``keep`` scopes by scope
    and the seconds spent writing."""
    kept: dict[str, list[MemoryRecord]] = {s: [] for s in keep}
    tick = cfg.progress(f"loading {total:,} embedded records (hybrid)", total)
    spent = 0.0
    batch: list[MemoryRecord] = []

    def flush() -> float:
        start = time.perf_counter()
        store.add_many(batch)
        tick(len(batch))
        return time.perf_counter() - start

    made = synthetic_records(
        tenant, total, scopes, seed=23, corpus=cfg.corpus, embed=vectors, embedding_model=vectors.name
    )
    for record in made:
        batch.append(record)
        if record.scope in kept:
            kept[record.scope].append(record)
        if len(batch) == cfg.batch:
            spent += flush()
            batch = []
    if batch:
        spent += flush()
    return kept, spent


def _oracle(
    reached: list[tuple[Candidate, bool]], ctx: ReadContext, query: str, embedding: tuple[float, ...]
) -> list[str]:
    gated = run_gate(reached, ctx)
    return [rid for rid, _ in rank(gated.survivors, query, embedding)[: ctx.limit]]


def _floor(matrices: list[np.ndarray], query_vectors: list[np.ndarray], cfg: BenchConfig) -> Latency:
    """One NumPy pass per call: a candidates' matrix times the query, then the top 10."""
    i = 0

    def one() -> None:
        nonlocal i
        k = i % len(matrices)
        i += 1
        scores = matrices[k] @ query_vectors[k]
        top = np.argpartition(-scores, min(10, len(scores) - 1))[:10]
        top[np.argsort(-scores[top])]

    return measure(one, cfg.repeats, warmup=cfg.warmup)


def _timed(
    store: MemoryStore,
    contexts: list[ReadContext],
    asked: list[tuple[str, tuple[float, ...]]],
    expected: list[list[str]],
    cfg: BenchConfig,
    description: str,
) -> tuple[Latency, Latency, bool]:
    """(steady latency, first recalls, every recall equal to the oracle)."""
    firsts: list[float] = []
    exact = True
    for k, ctx in enumerate(contexts):
        start = time.perf_counter()
        ids = store.recall(ctx, asked[k][0], query_embedding=asked[k][1]).ids
        firsts.append((time.perf_counter() - start) * 1000.0)
        exact &= ids == expected[k]
    seen: list[tuple[int, list[str]]] = []
    i = 0

    def one() -> None:
        nonlocal i
        k = i % len(contexts)
        i += 1
        seen.append((k, store.recall(contexts[k], asked[k][0], query_embedding=asked[k][1]).ids))

    latency = cfg.timed(one, description)
    exact &= all(ids == expected[k] for k, ids in seen)
    return latency, Latency(firsts), exact


def _row(
    workload: str,
    latency: Latency,
    firsts: Latency,
    exact: bool,
    floor: Latency,
    candidates_n: int,
    vectors: WordVectors,
) -> dict[str, Any]:
    summary = latency.summary()
    floor_summary = floor.summary()
    return {
        "workload": workload,
        "candidates": candidates_n,
        "dimensions": vectors.dimensions,
        "embedding_model": vectors.name,
        "latency": summary,
        "first_recall": firsts.summary(),
        "recall_equals_oracle": exact,
        "floor": {
            "what": f"one NumPy pass: the candidates' {candidates_n:,} x {vectors.dimensions} matrix times "
            "the query, then a top-10",
            **floor_summary,
        },
        "ratio_to_floor_p50": round(summary["p50_ms"] / max(floor_summary["p50_ms"], 1e-9), 1),
    }


def _matrix(records: list[MemoryRecord]) -> np.ndarray:
    return np.array([r.embedding for r in records], dtype=np.float64)


def _cases(total: int, cfg: BenchConfig) -> tuple[int, list[int]]:
    """(case scopes of a tenant of ``total`` records, the selective callers' case numbers)."""
    scopes = max(1, total // cfg.in_scope)
    rng = random.Random(31)
    return scopes, [rng.randrange(scopes) for _ in range(cfg.contexts)]


def _selective_callers(
    tenant: str, cases: list[int], kept: dict[str, list[MemoryRecord]], vectors: WordVectors
) -> tuple[list[ReadContext], list[str], list[tuple[str, tuple[float, ...]]], list[list[str]]]:
    """(contexts, questions, (question, embedding) asked, the oracle's selections) of the
    callers of ``cases``, one case scope each, with one capability as in ``recall_selective``."""
    contexts = [
        ReadContext(
            tenant=tenant, scopes=(f"case:c{c}",), now=NOW, as_of=KNOWN, environment=("cap-a",), limit=10
        )
        for c in cases
    ]
    texts = [queries(1, seed=31_000 + k, against=kept[f"case:c{c}"])[0] for k, c in enumerate(cases)]
    asked = [(q, vectors(q)) for q in texts]
    reached = {c: candidates(kept[f"case:c{c}"]) for c in set(cases)}
    expected = [_oracle(reached[c], ctx, q, e) for c, ctx, (q, e) in zip(cases, contexts, asked, strict=True)]
    return contexts, texts, asked, expected


def hybrid_threads_workload(
    store: MemoryStore, tenant: str, total: int, cfg: BenchConfig
) -> list[dict[str, Any]]:
    """``recall_threads_hybrid`` rows: ``recall_hybrid``'s selective callers on a tenant of
    ``total`` embedded records, recalling from 1, 2 and 4 threads (``recall_threads``)."""
    from graphmem.bench.concurrency_workload import recall_threads

    vectors = WordVectors(cfg.hybrid_dimensions)
    scopes, cases = _cases(total, cfg)
    kept, _ = _load(store, tenant, total, scopes, {f"case:c{c}" for c in cases}, cfg, vectors)
    contexts, _, asked, expected = _selective_callers(tenant, cases, kept, vectors)
    rows = recall_threads(store, "recall_threads_hybrid", contexts, asked, expected, cfg)
    extra = {"candidates": len(kept[f"case:c{cases[0]}"]), "dimensions": vectors.dimensions}
    return [{**row, **extra} for row in rows]


def hybrid_workload(store: MemoryStore, tenant: str, total: int, cfg: BenchConfig) -> list[dict[str, Any]]:
    """Rows ``recall_hybrid``, ``recall_hybrid_broad`` and (when LangGraph is installed)
    ``inmemory_hybrid`` on a tenant of ``total`` embedded records."""
    vectors = WordVectors(cfg.hybrid_dimensions)
    scopes, cases = _cases(total, cfg)
    broad_cases = max(1, min(scopes, min(round(total * cfg.broad_fraction), cfg.broad_cap) // cfg.in_scope))
    keep = {f"case:c{c}" for c in cases} | {f"case:c{c}" for c in range(broad_cases)}
    kept, spent = _load(store, tenant, total, scopes, keep, cfg, vectors)
    rows: list[dict[str, Any]] = []

    # Selective: one case scope a caller.
    contexts, texts, asked, expected = _selective_callers(tenant, cases, kept, vectors)
    latency, firsts, exact = _timed(store, contexts, asked, expected, cfg, "hybrid recall, selective scope")
    floor = _floor([_matrix(kept[f"case:c{c}"]) for c in cases], [np.array(e) for _, e in asked], cfg)
    row = _row("recall_hybrid", latency, firsts, exact, floor, len(kept[f"case:c{cases[0]}"]), vectors)
    rows.append({**row, "ingest_records_per_s": round(total / spent) if spent else 0})

    # Broad: one scope WITHIN the first case scopes.
    for c in range(broad_cases):
        store.scope_within(tenant, "desk:hybrid-broad", f"case:c{c}")
    broad_records = [r for c in range(broad_cases) for r in kept[f"case:c{c}"]]
    broad_reached = candidates(broad_records)
    broad_ctx = ReadContext(
        tenant=tenant, scopes=("desk:hybrid-broad",), now=NOW, as_of=KNOWN, environment=("cap-a",), limit=10
    )
    broad_texts = [queries(1, seed=37_000 + k, against=broad_records[:2000])[0] for k in range(cfg.contexts)]
    broad_asked = [(q, vectors(q)) for q in broad_texts]
    broad_expected = [_oracle(broad_reached, broad_ctx, q, e) for q, e in broad_asked]
    latency, firsts, exact = _timed(
        store, [broad_ctx] * cfg.contexts, broad_asked, broad_expected, cfg, "hybrid recall, broad scope"
    )
    broad_matrix = _matrix(broad_records)
    floor = _floor([broad_matrix], [np.array(e) for _, e in broad_asked], cfg)
    rows.append(
        {
            **_row("recall_hybrid_broad", latency, firsts, exact, floor, len(broad_records), vectors),
            "scopes_reached": broad_cases,
        }
    )
    try:
        import langgraph.store.memory  # noqa: F401
    except ImportError:
        return rows
    rows.append(_inmemory(store, tenant, cases, kept, texts, vectors, cfg))
    return rows


def _inmemory(
    store: MemoryStore,
    tenant: str,
    cases: list[int],
    kept: dict[str, list[MemoryRecord]],
    texts: list[str],
    vectors: WordVectors,
    cfg: BenchConfig,
) -> dict[str, Any]:
    from langgraph.store.base import IndexConfig, PutOp
    from langgraph.store.memory import InMemoryStore

    from graphmem.bench.inmemory import _filter, _value

    known = {r.content: list(r.embedding or ()) for c in set(cases) for r in kept[f"case:c{c}"]}

    def embed(batch: Sequence[str]) -> list[list[float]]:
        return [known[t] if t in known else list(vectors(t)) for t in batch]

    index: IndexConfig = {"dims": vectors.dimensions, "embed": embed, "fields": ["content"]}
    lg = InMemoryStore(index=index)
    for c in sorted(set(cases)):
        lg.batch([PutOp(namespace=(tenant, r.scope), key=r.id, value=_value(r)) for r in kept[f"case:c{c}"]])
    contexts = [
        ReadContext(
            tenant=tenant,
            scopes=(f"case:c{c}",),
            now=NOW,
            as_of=KNOWN,
            environment=("cap-a", "cap-b"),
            limit=10,
        )
        for c in cases
    ]
    asked = [(q, vectors(q)) for q in texts]

    def search(k: int, limit: int = 10) -> list[Any]:
        ctx = contexts[k]
        return lg.search((tenant, ctx.scopes[0]), query=asked[k][0], filter=_filter(ctx), limit=limit)

    same_sets = all(
        {it.key for it in search(k, 1_000_000)}
        == {
            rid
            for rid, _, reason in run_gate(candidates(kept[ctx.scopes[0]]), ctx).verdicts
            if reason is None
        }
        for k, ctx in enumerate(contexts)
    )
    expected = [
        _oracle(candidates(kept[ctx.scopes[0]]), ctx, q, e)
        for ctx, (q, e) in zip(contexts, asked, strict=True)
    ]
    exact = True

    def ours(k: int) -> None:
        nonlocal exact
        exact &= store.recall(contexts[k], asked[k][0], query_embedding=asked[k][1]).ids == expected[k]

    samples: dict[str, list[float]] = {"graphmem": [], "inmemory": []}
    calls: dict[str, Callable[[int], object]] = {"graphmem": ours, "inmemory": search}
    for k in range(len(contexts)):  # every caller once untimed on both sides
        ours(k)
        search(k)
    for i in range(cfg.repeats):
        k = i % len(contexts)
        for side in ("graphmem", "inmemory") if i % 2 == 0 else ("inmemory", "graphmem"):
            start = time.perf_counter()
            calls[side](k)
            samples[side].append((time.perf_counter() - start) * 1000.0)
    mine, theirs = Latency(samples["graphmem"]).summary(), Latency(samples["inmemory"]).summary()
    return {
        "workload": "inmemory_hybrid",
        "candidates": len(kept[contexts[0].scopes[0]]),
        "dimensions": vectors.dimensions,
        "latency": mine,
        "inmemory": theirs,
        "ratio_p50": round(mine["p50_ms"] / max(theirs["p50_ms"], 1e-9), 2),
        "ratio_p95": round(mine["p95_ms"] / max(theirs["p95_ms"], 1e-9), 2),
        "same_eligible_sets": same_sets,
        "recall_equals_oracle": exact,
    }
