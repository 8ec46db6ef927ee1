"""Ranking of gate survivors: BM25 over content, fused with cosine similarity.

Scores are computed over the survivors only, so a record's rank never depends
on records the gate dropped. Pure and deterministic: the same survivors and
query give the same scores in any order, on any backend.
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

__all__ = [
    "SELECTOR_VERSION",
    "Document",
    "Prepared",
    "cosine",
    "forget_cached_terms",
    "rank",
    "rank_prepared",
    "term_counts",
    "tokenize",
]

SELECTOR_VERSION = "graphmem-gate-bm25-cosine/2"

_TOKEN = re.compile(r"\w+", re.UNICODE)
_STOPWORDS = frozenset(
    "a an and are as at be by for from has have how i in is it its of on or that the this "
    "to was were what when where which who why will with do does did we you our".split()
)
_K1 = 1.2
_B = 0.75
_LEXICAL_WEIGHT = 0.5
_DIGITS = 9


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens without common stop words."""
    return [t for t in _TOKEN.findall(text.casefold()) if t not in _STOPWORDS]


def term_counts(text: str) -> tuple[Counter[str], int]:
    tokens = tokenize(text)
    return Counter(tokens), len(tokens)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    if len(a) != len(b):
        return 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return 0.0 if norm == 0.0 else dot / norm


Document = tuple[str, str, float, tuple[float, ...] | None]
"""What ranking needs of a survivor: (record id, content, recency timestamp, embedding)."""


@lru_cache(maxsize=262_144)
def _terms(content: str) -> tuple[Counter[str], int]:
    return term_counts(content)


def forget_cached_terms() -> None:
    """Drop cached term counts, so erased content does not linger in memory."""
    _terms.cache_clear()


def rank(
    survivors: Iterable[Document],
    query: str,
    query_embedding: Sequence[float] | None = None,
) -> list[tuple[str, float]]:
    """Score and order survivors: best first, ties newer first, then by id.

    The lexical score is BM25 divided by the most any document could score for
    this query (every term present, saturated), so it lies in [0, 1]; when the
    query and a record both carry embeddings, the score is an
    even blend with cosine similarity (negative similarity counts as 0), so a
    record that matches neither terms nor meaning scores 0. Returns (id, score).
    """
    docs = [(rid, *_terms(content), recency, emb) for rid, content, recency, emb in survivors]
    terms = list(dict.fromkeys(tokenize(query)))
    n = len(docs)
    raw: list[float] = [0.0] * n
    best = 0.0
    if terms and n:
        avg_len = sum(doc[2] for doc in docs) / n or 1.0
        df = {t: sum(1 for doc in docs if t in doc[1]) for t in terms}
        idf = {t: math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
        # Normalise by the most any document could score for this query, not by the best
        # survivor, so one weak term match does not get full weight against semantic similarity.
        best = sum(idf.values()) * (_K1 + 1.0)
        for i, (_, counts, length, _, _) in enumerate(docs):
            score = 0.0
            for t in terms:
                tf = counts.get(t, 0)
                if tf:
                    norm = _K1 * (1.0 - _B + _B * length / avg_len)
                    score += idf[t] * tf * (_K1 + 1.0) / (tf + norm)
            raw[i] = score

    keyed: list[tuple[float, float, str]] = []
    for (rid, _, _, recency, embedding), lexical in zip(docs, raw, strict=True):
        score = lexical / best if best > 0.0 else 0.0
        if query_embedding is not None and embedding is not None:
            similarity = max(0.0, cosine(query_embedding, embedding))
            score = _LEXICAL_WEIGHT * score + (1.0 - _LEXICAL_WEIGHT) * similarity
        keyed.append((-round(score, _DIGITS), -recency, rid))
    keyed.sort()
    return [(rid, -neg_score) for neg_score, _, rid in keyed]


class Prepared:
    """Survivors prepared once for many queries: term counts and the zero-score order.

    ``rank_prepared`` over a list of these gives exactly what ``rank`` gives
    over their documents concatenated, without re-tokenising or re-sorting
    documents that match no query term.
    """

    __slots__ = ("by_recency", "counts", "docs", "has_embeddings", "lengths", "total_len")

    def __init__(self, docs: Sequence[Document]) -> None:
        self.docs = list(docs)
        terms = [_terms(content) for _, content, _, _ in self.docs]
        self.counts = [counts for counts, _ in terms]
        self.lengths = [length for _, length in terms]
        self.total_len = sum(self.lengths)
        self.has_embeddings = any(embedding is not None for *_, embedding in self.docs)
        # The order of documents that score zero: newer first, then id.
        self.by_recency = sorted((-recency, rid, i) for i, (rid, _, recency, _) in enumerate(self.docs))


def rank_prepared(
    parts: Sequence[Prepared], query: str, query_embedding: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """``rank`` over the documents of ``parts``, touching only those that match a query term."""
    if query_embedding is not None and any(p.has_embeddings for p in parts):
        return rank([doc for p in parts for doc in p.docs], query, query_embedding)
    terms = list(dict.fromkeys(tokenize(query)))
    n = sum(len(p.docs) for p in parts)
    positive: list[tuple[float, float, str]] = []
    matched: set[tuple[int, int]] = set()
    if terms and n:
        avg_len = sum(p.total_len for p in parts) / n or 1.0
        hits = {
            t: [(j, i, c[t]) for j, p in enumerate(parts) for i, c in enumerate(p.counts) if t in c]
            for t in terms
        }
        idf = {t: math.log(1.0 + (n - len(hits[t]) + 0.5) / (len(hits[t]) + 0.5)) for t in terms}
        best = sum(idf.values()) * (_K1 + 1.0)
        raw: dict[tuple[int, int], float] = {}
        for t in terms:  # in query-term order, as ``rank`` adds them
            for j, i, tf in hits[t]:
                norm = _K1 * (1.0 - _B + _B * parts[j].lengths[i] / avg_len)
                raw[j, i] = raw.get((j, i), 0.0) + idf[t] * tf * (_K1 + 1.0) / (tf + norm)
        for (j, i), lexical in raw.items():
            rounded = round(lexical / best, _DIGITS)
            if rounded > 0.0:
                rid, _, recency, _ = parts[j].docs[i]
                positive.append((-rounded, -recency, rid))
                matched.add((j, i))
    positive.sort()
    out = [(rid, -neg_score) for neg_score, _, rid in positive]
    if len(parts) == 1:
        out.extend((rid, 0.0) for _, rid, i in parts[0].by_recency if (0, i) not in matched)
    else:
        tagged = ([(r, rid, (j, i)) for r, rid, i in p.by_recency] for j, p in enumerate(parts))
        out.extend((rid, 0.0) for _, rid, key in heapq.merge(*tagged) if key not in matched)
    return out
