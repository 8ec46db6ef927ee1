"""The ``lgstore`` workload of ``graphmem bench``: LangGraph's ``GraphmemStore`` against
``InMemoryStore``, both with an index and the same embedding function.

For each namespace size, both stores get the same items (a short sentence under ``text``,
embedded at put); then ``get`` of a random key, ``put`` that updates a random key (one
embedding), and ``search`` with a query (cosine ranking, top 10) are timed on both, in the
same run, alternating, so a noisy machine slows both alike. Each row carries both
latencies and their ratio (the target: graphmem within 3 times ``InMemoryStore``) and
whether the two returned the same keys. A last row times 1,000 mixed operations on one
namespace (target: ≤ 5 s).

The rows run once per embedding function (``EMBEDDERS``), each row labelled with it:
``hash`` (hashed word counts, nearly free, so the rows show the stores' own cost) and
``minilm`` (the all-MiniLM-L6-v2 model, ``graphmem.embeddings.MiniLMEmbedder``: what a
LangGraph user pays, one model call per put and per search query on both sides). The
namespaces are filled from vectors computed once, in batches, and handed to both stores
by a lookup; every timed call embeds with the model itself.
"""

from __future__ import annotations

import contextlib
import hashlib
import random
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from graphmem.bench.core import Latency
from graphmem.errors import GraphmemError
from graphmem.store import MemoryStore

__all__ = ["EMBEDDERS", "SharedEmbed", "embed", "lgstore_workload", "sentences", "shared_embed"]

EMBEDDERS = ("hash", "minilm")
"""The embedding functions the workload can share between the two stores."""
_FILL_BATCH = 256  # texts a model call while the fill's vectors are computed

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


class SharedEmbed:
    """The embedding function both stores are given (LangGraph's ``embed``: texts to vectors).

    While ``filling`` a namespace it answers from vectors computed beforehand (the same for
    both stores); otherwise it calls the model, and keeps each call's milliseconds
    (``calls_ms``) so a row can say what the model itself cost."""

    def __init__(self, name: str, model: Callable[[list[str]], Sequence[Sequence[float]]], dims: int):
        self.name = name
        self.model_name = name  # LangGraph's model id of the index (``embedding_model_id``)
        self.dims = dims
        self._model = model
        self._table: dict[str, list[float]] | None = None
        self.calls_ms: list[float] = []

    def __call__(self, texts: list[str]) -> list[list[float]]:
        if self._table is not None:
            return [self._table[text] for text in texts]
        start = time.perf_counter()
        out = [[float(x) for x in vector] for vector in self._model(list(texts))]
        self.calls_ms.append((time.perf_counter() - start) * 1000.0)
        return out

    def vectors(self, texts: list[str]) -> dict[str, list[float]]:
        """The model's vectors of ``texts``, computed in batches (untimed: the fill's)."""
        table: dict[str, list[float]] = {}
        for i in range(0, len(texts), _FILL_BATCH):
            chunk = texts[i : i + _FILL_BATCH]
            table.update(zip(chunk, ([float(x) for x in v] for v in self._model(chunk)), strict=True))
        return table

    @contextlib.contextmanager
    def filling(self, table: dict[str, list[float]]) -> Iterator[None]:
        """Answer from ``table`` (a text missing from it is a ``KeyError``) until the block ends."""
        self._table = table
        try:
            yield
        finally:
            self._table = None

    def index(self) -> dict[str, Any]:
        """LangGraph's ``IndexConfig`` with this function, over the items' ``text``."""
        return {"dims": self.dims, "embed": self, "fields": ["text"]}


def shared_embed(embedder: str) -> SharedEmbed:
    """The ``SharedEmbed`` named ``embedder`` (one of ``EMBEDDERS``), loaded and ready.

    ``minilm`` raises ``GraphmemError`` (``embedder_unavailable``) when the optional model
    package is not installed."""
    if embedder == "hash":
        return SharedEmbed(f"hash-{_DIMS}", embed, _DIMS)
    if embedder == "minilm":
        from graphmem.embeddings import MINILM_DIMENSIONS, MiniLMEmbedder

        try:
            model = MiniLMEmbedder()
            model.embed(["load the model"])
        except GraphmemError as err:
            raise GraphmemError(
                f"the lgstore workload with the minilm embedder needs the MiniLM model: {err}",
                code="embedder_unavailable",
            ) from err
        return SharedEmbed(model.name, model.embed, MINILM_DIMENSIONS)
    raise GraphmemError(
        f"unknown LangGraph bench embedder {embedder!r}: choose from {', '.join(EMBEDDERS)}",
        code="invalid_embedder",
    )


def _timed(call: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = call()
    return (time.perf_counter() - start) * 1000.0, result


def lgstore_workload(
    store: MemoryStore,
    tenant: str,
    sizes: tuple[int, ...] = (1_000, 10_000),
    repeats: int = 200,
    mixed: int = 1_000,
    embedders: Sequence[str] = ("hash",),
) -> list[dict[str, Any]]:
    """Rows ``lgstore_get``, ``lgstore_put``, ``lgstore_search`` per size, and ``lgstore_mixed``,
    for each of ``embedders`` (each row's ``embedder`` names the function)."""

    rows: list[dict[str, Any]] = []
    for name in embedders:
        shared = shared_embed(name)
        # sentences(n) is the first n of sentences(max): one table serves every size.
        texts = sentences(max(sizes, default=0))
        table = shared.vectors(texts)
        for size in sizes:
            rows += _one_size(store, f"{tenant}-{name}-{size}", size, repeats, shared, texts[:size], table)
        rows.append(_mixed(store, f"{tenant}-{name}-mixed", mixed, shared))
    return rows


def _one_size(
    store: MemoryStore,
    tenant: str,
    size: int,
    repeats: int,
    shared: SharedEmbed,
    texts: list[str],
    table: dict[str, list[float]],
) -> list[dict[str, Any]]:
    from langgraph.store.base import PutOp
    from langgraph.store.memory import InMemoryStore

    from graphmem.integrations.langgraph import GraphmemStore

    rows: list[dict[str, Any]] = []
    floors = _floors(store, [table[t] for t in texts], repeats)
    ns = ("bench", f"n{size}")
    reference = InMemoryStore(index=shared.index())  # type: ignore[arg-type]
    ours = GraphmemStore(store, tenant, index=shared.index())  # type: ignore[arg-type]
    with shared.filling(table):
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
        shared.calls_ms.clear()
        theirs_ms: list[float] = []
        ours_ms: list[float] = []
        same = True
        for i in range(repeats):
            theirs, expected = _timed(lambda: call(reference, i))  # noqa: B023
            mine_ms, got = _timed(lambda: call(ours, i))  # noqa: B023
            theirs_ms.append(theirs)
            ours_ms.append(mine_ms)
            if name != "put":
                same = same and _keys(expected) == _keys(got)
        mine, base = Latency(ours_ms), Latency(theirs_ms)
        floor = floors[name]
        rows.append(
            {
                "workload": f"lgstore_{name}",
                "embedder": shared.name,
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
                # One model call, as both stores made it inside their timed calls (None: get).
                "embed_latency": Latency(shared.calls_ms).summary() if shared.calls_ms else None,
            }
        )
    return rows


def _ratio(ours: float, theirs: float) -> float | None:
    return round(ours / theirs, 2) if theirs else None


def _floors(store: MemoryStore, vectors: list[list[float]], repeats: int) -> dict[str, Latency]:
    """What each operation cannot beat, measured beside it: a bare SQLite key seek (get), one
    durable SQLite commit of one row in the store's directory (put: WAL, ``synchronous=FULL``),
    and one NumPy cosine pass over the namespace's ``vectors`` (search)."""
    from graphmem.bench.engine import sqlite_key_floors

    get_ms, put_ms = sqlite_key_floors(store, len(vectors), repeats)
    matrix = np.array(vectors)
    query = matrix[0]

    def search() -> None:
        norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(query)
        np.argsort(-(matrix @ query) / np.where(norms == 0, 1, norms))[:10]

    search_ms = [_timed(search)[0] for _ in range(repeats)]
    return {"get": Latency(get_ms), "put": Latency(put_ms), "search": Latency(search_ms)}


def _keys(result: object) -> object:
    if result is None:
        return None
    if isinstance(result, list):
        return [(item.key, item.value) for item in result]
    return (result.key, result.value)  # type: ignore[attr-defined]


def _mixed(store: MemoryStore, tenant: str, count: int, shared: SharedEmbed) -> dict[str, Any]:
    """``count`` operations on one namespace (40% put, 30% get, 20% search, 10% delete),
    the same sequence on both stores; seconds for each, and of them the model's own."""
    from langgraph.store.memory import InMemoryStore

    from graphmem.integrations.langgraph import GraphmemStore

    texts = sentences(count, seed=9)
    rng = random.Random(3)
    ops = [(rng.random(), f"k{rng.randrange(max(1, count // 5))}", i) for i in range(count)]
    ns = ("bench", "mixed")

    def run(target: Any) -> tuple[float, float]:
        shared.calls_ms.clear()
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
        return time.perf_counter() - start, sum(shared.calls_ms) / 1000.0

    reference_s, reference_embed_s = run(InMemoryStore(index=shared.index()))  # type: ignore[arg-type]
    ours_s, ours_embed_s = run(GraphmemStore(store, tenant, index=shared.index()))  # type: ignore[arg-type]
    return {
        "workload": "lgstore_mixed",
        "embedder": shared.name,
        "operations": count,
        "seconds": round(ours_s, 3),
        "per_s": round(count / ours_s, 1) if ours_s else 0.0,
        "embed_seconds": round(ours_embed_s, 3),
        "inmemory_seconds": round(reference_s, 3),
        "inmemory_embed_seconds": round(reference_embed_s, 3),
        "ratio": round(ours_s / reference_s, 1) if reference_s else None,
    }
