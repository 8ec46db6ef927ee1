"""What every benchmark workload shares: synthetic records, timing, the brute-force oracle, loading."""

from __future__ import annotations

import gc
import random
import statistics
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from graphmem.bench.natural import NaturalCorpus
from graphmem.model import Kind, MemoryRecord, Outcome, ReadContext, Source
from graphmem.model.gate import Candidate, run_gate
from graphmem.ranking import rank
from graphmem.store import MemoryStore

__all__ = [
    "CORPORA",
    "KNOWN",
    "NOW",
    "WORDS",
    "Answer",
    "Latency",
    "Progress",
    "Tick",
    "candidates",
    "load",
    "measure",
    "oracle",
    "queries",
    "ratios_to_first",
    "synthetic_records",
]

NOW = datetime(2026, 6, 1, tzinfo=UTC)
KNOWN = datetime(9999, 1, 1, tzinfo=UTC)
"""The bench's knowledge time: its reads know every write (recorded by the store's own clock)."""
WORDS = [f"w{i:04d}" for i in range(3000)]

Tick = Callable[[int], None]
"""Advance a progress bar by n steps."""
Progress = Callable[[str, int], Tick]
"""Start a progress bar with a description and a total; returns its ``Tick``."""


CORPORA = ("natural", "tokens")
"""``natural``: plain-language notes and questions (``graphmem.bench.natural``), the default;
``tokens``: uniform random tokens ``w0000``..``w2999``, the corpus of the first bench figures."""


def synthetic_records(
    tenant: str,
    total: int,
    scopes: int,
    seed: int = 7,
    prefix: str = "case:c",
    corpus: str = "natural",
    *,
    embed: Callable[[str], tuple[float, ...]] | None = None,
    embedding_model: str | None = None,
) -> Iterator[MemoryRecord]:
    """``total`` records spread evenly over ``scopes`` scopes (record i in ``{prefix}{i % scopes}``).

    Kinds rotate episodic, semantic, procedural. About a fifth of the semantic
    records expired before ``NOW`` and about half of the procedures need a
    capability (``cap-b``) that callers with only ``cap-a`` lack, so the gate
    has something to drop. With ``embed``, each record carries ``embed(content)`` as its
    embedding, made by ``embedding_model``.
    """
    rng = random.Random(seed)
    day = timedelta(days=1)
    texts = NaturalCorpus(seed).texts(total) if _corpus(corpus) == "natural" else None
    for i in range(total):
        kind = (Kind.EPISODIC, Kind.SEMANTIC, Kind.PROCEDURAL)[i % 3]
        if texts is None:
            content = f"record {i} " + " ".join(rng.choices(WORDS, k=rng.randint(8, 24)))
        else:
            content = next(texts)
        fields: dict[str, Any] = {
            "id": f"r{i}",
            "tenant": tenant,
            "kind": kind,
            "scope": f"{prefix}{i % scopes}",
            "content": content,
            "created_at": NOW - rng.randint(1, 300) * day,
            "sources": (Source(id=f"s{i}"),),
        }
        if embed is not None:
            fields |= {"embedding": embed(content), "embedding_model": embedding_model}
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


def queries(
    count: int, seed: int = 11, corpus: str = "natural", against: Sequence[MemoryRecord] = ()
) -> list[str]:
    """``natural``: questions over the corpus's frequent words, each hitting at least a fifth of
    ``against`` (the candidates it is asked of); ``tokens``: three words of the 300 first."""
    if _corpus(corpus) == "natural":
        return NaturalCorpus(seed).questions(count, against=[r.content for r in against])
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS[:300], k=3)) for _ in range(count)]


def _corpus(name: str) -> str:
    if name not in CORPORA:
        raise ValueError(f"unknown bench corpus {name!r}: choose one of {', '.join(CORPORA)}")
    return name


class Latency:
    """Latency samples in milliseconds with the usual summaries."""

    def __init__(self, samples_ms: list[float]) -> None:
        self.samples = sorted(samples_ms)

    def pct(self, p: float) -> float:
        """The nearest-rank percentile (p95 of 3 samples is the largest)."""
        index = min(len(self.samples) - 1, max(0, round(p / 100 * len(self.samples)) - 1))
        return self.samples[index]

    def summary(self) -> dict[str, float]:
        """``n``, ``p50_ms``, ``p95_ms``, ``p99_ms``, ``max_ms`` and sequential ``throughput_per_s``."""
        total_s = sum(self.samples) / 1000.0
        return {
            "n": len(self.samples),
            "p50_ms": round(statistics.median(self.samples), 3),
            "p95_ms": round(self.pct(95), 3),
            "p99_ms": round(self.pct(99), 3),
            "max_ms": round(self.samples[-1], 3),
            "throughput_per_s": round(len(self.samples) / total_s, 1) if total_s else 0.0,
        }


def ratios_to_first(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Set each row's ``ratio_to_one``: its ``per_s`` over the first row's (0 if that is 0)."""
    one = rows[0]["per_s"] if rows else 0.0
    for row in rows:
        row["ratio_to_one"] = round(row["per_s"] / one, 2) if one else 0.0
    return rows


def measure(
    call: Callable[[], object],
    repeats: int,
    warmup: int = 5,
    *,
    budget_s: float | None = None,
    min_repeats: int = 20,
    tick: Tick | None = None,
) -> Latency:
    """Time ``repeats`` calls after ``warmup`` untimed ones.

    The garbage collector stays on (a service runs with it), but earlier
    workloads' garbage is collected first so it is not charged to this one.
    With ``budget_s``, stop early once that much time was spent and at least
    ``min_repeats`` samples exist (the summary's ``n`` says how many were taken).
    """
    gc.collect()
    for _ in range(warmup):
        call()
    samples: list[float] = []
    spent = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        elapsed = time.perf_counter() - start
        samples.append(elapsed * 1000.0)
        spent += elapsed
        if tick is not None:
            tick(1)
        if budget_s is not None and spent > budget_s and len(samples) >= min_repeats:
            break
    return Latency(samples)


def candidates(records: Iterable[MemoryRecord]) -> list[tuple[Candidate, bool]]:
    """Gate inputs for records a context reaches (no supersession or invalidation in these workloads)."""
    return [(Candidate.of(r, None, None), True) for r in records]


class Answer(NamedTuple):
    """What the oracle says a recall must return."""

    selected: list[str]
    """The ids recall must select, in order."""
    eligible: set[str]
    """Every record the gate lets through."""
    matching: list[str]
    """The selected ids that match at least one query term (score > 0)."""


def oracle(reached: list[tuple[Candidate, bool]], ctx: ReadContext, query: str) -> Answer:
    """Brute force, independent of any backend: gate and rank every record the context reaches."""
    gated = run_gate(reached, ctx)
    ranked = rank(gated.survivors, query)[: ctx.limit]
    return Answer(
        [rid for rid, _ in ranked],
        {rid for rid, _, reason in gated.verdicts if reason is None},
        [rid for rid, score in ranked if score > 0],
    )


def load(
    store: MemoryStore, records: Sequence[MemoryRecord], batch: int = 5000, tick: Tick | None = None
) -> float:
    """``add_many`` in batches; returns the seconds spent writing."""
    spent = 0.0
    for i in range(0, len(records), batch):
        chunk = records[i : i + batch]
        start = time.perf_counter()
        store.add_many(chunk)
        spent += time.perf_counter() - start
        if tick is not None:
            tick(len(chunk))
    return spent
