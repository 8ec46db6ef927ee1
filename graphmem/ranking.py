"""Ranking of gate survivors: BM25 over content, fused with cosine similarity.

Scores are computed over the survivors only, so a record's rank never depends
on records the gate dropped. Pure and deterministic: the same survivors and
query give the same scores in any order, on any backend.
"""

from __future__ import annotations

import heapq
import math
import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TypeVar

import numpy as np

__all__ = [
    "SELECTOR_VERSION",
    "Document",
    "EmbeddingKind",
    "Prepared",
    "Ranked",
    "Vectors",
    "cosine",
    "embedding_kinds",
    "embedding_mismatch",
    "forget_cached_terms",
    "rank",
    "rank_prepared",
    "term_counts",
    "tokenize",
]

_T = TypeVar("_T")

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


EmbeddingKind = tuple[int, str | None]
"""What a stored embedding is: (its dimensions, the id of the model that made it or None)."""


def embedding_kinds(docs: Iterable[Document], models: Mapping[str, str]) -> frozenset[EmbeddingKind]:
    """The kinds of the documents' embeddings; ``models`` maps a document id to its model."""
    return frozenset((len(emb), models.get(rid)) for rid, _, _, emb in docs if emb is not None)


def embedding_mismatch(kinds: Iterable[EmbeddingKind], dimensions: int, model: str | None) -> str | None:
    """Why a query embedding of ``dimensions`` (made by ``model``, if named) cannot be ranked
    against survivors whose embeddings are of ``kinds``, or None when it can: every one must
    have the query's dimensions and, where both name a model, the same model. The message
    names the first clash in a fixed order, so every backend words it alike."""
    query = f"{dimensions} dimensions" + ("" if model is None else f", model {model!r}")
    for dims, other in sorted(kinds, key=lambda k: (k[0], k[1] or "")):
        if dims != dimensions or (model is not None and other is not None and other != model):
            record = f"{dims} dimensions" + ("" if other is None else f", model {other!r}")
            return (
                f"the query embedding ({query}) cannot be compared with the embedding of a record "
                f"this read may use ({record}); embed the query with the records' model, or embed "
                "the records again with the query's (embed_records) — similarity across models "
                "or dimensions means nothing"
            )
    return None


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
    raw: dict[int, float] = {}  # by position; documents matching no term score 0
    best = 0.0
    if terms and n:
        avg_len = sum(doc[2] for doc in docs) / n or 1.0
        postings = {t: [i for i, doc in enumerate(docs) if t in doc[1]] for t in terms}
        idf = {t: math.log(1.0 + (n - len(hits) + 0.5) / (len(hits) + 0.5)) for t, hits in postings.items()}
        # Normalise by the most any document could score for this query, not by the best
        # survivor, so one weak term match does not get full weight against semantic similarity.
        best = sum(idf.values()) * (_K1 + 1.0)
        for t, hits in postings.items():  # each document's terms summed in query order
            for i in hits:
                _, counts, length, _, _ = docs[i]
                tf = counts[t]
                norm = _K1 * (1.0 - _B + _B * length / avg_len)
                raw[i] = raw.get(i, 0.0) + idf[t] * tf * (_K1 + 1.0) / (tf + norm)

    similarity: dict[str, float] = {}
    if query_embedding is not None:
        similarity = Vectors((rid, emb) for rid, _, _, _, emb in docs).similarities(query_embedding)
    keyed: list[tuple[float, float, str]] = []
    for i, (rid, _, _, recency, _) in enumerate(docs):
        lexical = raw.get(i, 0.0)
        score = lexical / best if lexical else 0.0
        if rid in similarity:
            score = _LEXICAL_WEIGHT * score + (1.0 - _LEXICAL_WEIGHT) * similarity[rid]
        keyed.append((-round(score, _DIGITS) if score else -0.0, -recency, rid))
    keyed.sort()
    return [(rid, -neg_score) for neg_score, _, rid in keyed]


class Vectors:
    """Documents' embeddings as one matrix per dimension, for cosine similarity in one NumPy pass.

    Row by row, in pure Python, a thousand 384-dimensional cosines took ~80 ms; one pass
    over the matrix takes well under one. Every row is computed by the same elementwise
    operations whatever the other rows, so ``rank`` and ``rank_prepared`` (which keeps one
    of these) give the same scores to the last bit.
    """

    __slots__ = ("_all", "_groups")

    def __init__(self, embeddings: Iterable[tuple[str, tuple[float, ...] | None]]) -> None:
        rows: dict[int, tuple[list[str], list[tuple[float, ...]]]] = {}
        for rid, embedding in embeddings:
            if embedding is not None:
                ids, vectors = rows.setdefault(len(embedding), ([], []))
                ids.append(rid)
                vectors.append(embedding)
        self._groups: dict[int, tuple[list[str], np.ndarray, np.ndarray]] = {}
        self._all = [rid for ids, _ in rows.values() for rid in ids]
        for dims, (ids, vectors) in rows.items():
            matrix = np.array(vectors, dtype=np.float64).reshape(len(ids), dims)
            self._groups[dims] = (ids, matrix, np.sqrt((matrix * matrix).sum(axis=1)))

    def similarities(self, query: Sequence[float]) -> dict[str, float]:
        """Cosine similarity (negative counts as 0) of every document with an embedding; one of
        another dimension than the query's has similarity 0."""
        out = dict.fromkeys(self._all, 0.0)
        found = self.cosines(query)
        if found is not None:
            out.update(zip(found[0], found[1].tolist(), strict=True))
        return out

    def cosines(self, query: Sequence[float]) -> tuple[list[str], np.ndarray] | None:
        """(ids, cosine similarities, negative ones as 0) of the documents whose embedding has the
        query's dimension; None when none has."""
        group = self._groups.get(len(query))
        if group is None:
            return None
        ids, matrix, norms = group
        q = np.array(query, dtype=np.float64)
        return ids, _cosines((matrix * q).sum(axis=1), norms, _norm(q))

    def ids(self, dimensions: int) -> list[str]:
        """The ids of the rows of the matrix of ``dimensions`` (none when there is none)."""
        group = self._groups.get(dimensions)
        return [] if group is None else group[0]

    def fast_cosines(self, query: Sequence[float]) -> tuple[list[str], np.ndarray, np.ndarray] | None:
        """``cosines`` by one matrix-vector product without the products' temporary matrix,
        which sums each row's products in an order of its own, so a value may differ from
        ``cosines``' in the last bits: by at most ``cosine_error(dimensions)`` where the third
        column is True (False: no such bound, a norm out of ``[2^-450, 2^450]`` or a product
        not finite). ``exact_cosines`` gives ``cosines``' values of chosen rows. None when no
        document has the query's dimension."""
        group = self._groups.get(len(query))
        if group is None:
            return None
        ids, matrix, norms = group
        q = np.array(query, dtype=np.float64)
        q_norm = _norm(q)
        # einsum's own loop: a single-threaded pass, where BLAS's product would wake threads
        # that only queue for the same cores under load.
        dots = np.einsum("ij,j->i", matrix, q)
        bounded = (norms >= _TINY) & (norms <= _HUGE) & np.isfinite(dots)
        if not _TINY <= q_norm <= _HUGE:
            bounded[:] = False
        return ids, _cosines(dots, norms, q_norm), bounded

    def exact_cosines(self, query: Sequence[float], rows: np.ndarray) -> np.ndarray:
        """``cosines``' values (to the bit) of the matrix rows ``rows`` of the query's dimension:
        the same elementwise products and row sums, over those rows only."""
        _, matrix, norms = self._groups[len(query)]
        q = np.array(query, dtype=np.float64)
        return _cosines((matrix[rows] * q).sum(axis=1), norms[rows], _norm(q))


_TINY, _HUGE = 2.0**-450, 2.0**450
_UNIT = 2.0**-53  # the unit roundoff of a float64


def cosine_error(dimensions: int) -> float:
    """A bound on how far a cosine of ``Vectors.fast_cosines`` (and a score blended from it)
    lies from ``Vectors.cosines``' value for the same row, for rows whose norms lie in
    ``[2^-450, 2^450]``: a dot product of n terms summed in any order (fused or not) is within
    ``gamma_n * sum |x_i y_i|`` of the exact one, ``gamma_n = n u / (1 - n u)``, and
    ``sum |x_i y_i| <= |x| |y|`` (Cauchy-Schwarz), which is within ``(1 + gamma_{n+3})`` of the
    computed denominator (no square underflows enough to matter, none overflows, at those
    norms); both sums err, so two ``gamma_n`` over the denominator, then ``2u`` for the two
    divisions and ``2u`` for the blend's addition (values at most ~1), doubled for margin."""
    n = dimensions + 3
    gamma = n * _UNIT / (1.0 - n * _UNIT)
    return 2.0 * (2.0 * gamma * (1.0 + gamma) + 4.0 * _UNIT)


def _norm(q: np.ndarray) -> float:
    return math.sqrt(float((q * q).sum()))


def _cosines(dots: np.ndarray, norms: np.ndarray, q_norm: float) -> np.ndarray:
    """Each row's cosine from its dot product, negative ones as 0 (and 0 for a zero vector)."""
    denominator = norms * q_norm
    safe = np.where(denominator > 0.0, denominator, 1.0)
    cosines = np.where(denominator > 0.0, dots / safe, 0.0)
    return np.maximum(cosines, 0.0)


class Prepared:
    """Survivors prepared once for many queries: term counts, postings, the zero-score order.

    ``rank_prepared`` over a list of these gives exactly what ``rank`` gives
    over their documents concatenated, without re-tokenising or re-sorting
    documents that match no query term. Documents can be added and removed
    one at a time.
    """

    __slots__ = (
        "_arrays",
        "_cosine_places",
        "_index",
        "_index_columns",
        "_places",
        "_postings",
        "_vectors",
        "counts",
        "docs",
        "embedded",
        "total_len",
        "zero_scores",
        "zeros",
    )

    def __init__(self, docs: Iterable[Document]) -> None:
        self.docs: dict[str, Document] = {doc[0]: doc for doc in docs}
        self.counts = {rid: _terms(content) for rid, content, _, _ in self.docs.values()}
        self.total_len = sum(length for _, length in self.counts.values())
        self.embedded = sum(1 for *_, embedding in self.docs.values() if embedding is not None)
        # Documents that score zero come newer first, then by id.
        self.zeros = sorted((-recency, rid) for rid, _, recency, _ in self.docs.values())
        self.zero_scores = [(rid, 0.0) for _, rid in self.zeros]
        self._postings: dict[str, list[tuple[str, int]]] = {}
        self._places: dict[str, int] | None = None
        self._vectors: Vectors | None = None
        # NumPy forms, built on first use and dropped on any change: documents by position
        # (ids, lengths) and each queried term's postings as (positions, frequencies).
        self._index: tuple[list[str], dict[str, int], np.ndarray] | None = None
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        # By position of ``index()``: each document's place in ``zeros`` and whether it has an
        # embedding; built on first hybrid use, dropped with ``_index``.
        self._index_columns: tuple[np.ndarray, np.ndarray] | None = None
        # The ``index()`` positions of the rows of one of ``vectors()``' matrices, by dimension.
        self._cosine_places: tuple[Vectors, dict[int, tuple[np.ndarray, np.ndarray]]] | None = None

    def index(self) -> tuple[list[str], dict[str, int], np.ndarray]:
        """(ids by position, position by id, document lengths by position)."""
        if self._index is None:
            ids = list(self.counts)
            lengths = np.array([self.counts[rid][1] for rid in ids], dtype=np.float64)
            self._index = (ids, {rid: i for i, rid in enumerate(ids)}, lengths)
        return self._index

    def index_columns(self) -> tuple[np.ndarray, np.ndarray]:
        """(each document's place in ``zeros``, whether it has an embedding), by ``index()`` position."""
        if self._index_columns is None or self._index is None:
            ids, _, _ = self.index()
            places = np.fromiter((self.place(rid) for rid in ids), dtype=np.intp, count=len(ids))
            embedded = np.fromiter((self.docs[rid][3] is not None for rid in ids), dtype=bool, count=len(ids))
            self._index_columns = (places, embedded)
        return self._index_columns

    def similarity_column(self, query: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        """Every document's cosine similarity with ``query`` by ``index()`` position, from
        ``Vectors.fast_cosines`` (0 for another dimension or none), and how far each may lie
        from ``Vectors.cosines``' value: 0 where it is that value, infinite where no bound is
        known (``exact_similarities`` gives those values)."""
        ids, _, _ = self.index()
        out, error = np.zeros(len(ids)), np.zeros(len(ids))
        found = self.vectors().fast_cosines(query)
        if found is not None:
            _, values, bounded = found
            at = self._rows_at(len(query))[0]
            out[at] = values
            error[at] = np.where(bounded, cosine_error(len(query)), np.inf)
        return out, error

    def exact_similarities(self, query: Sequence[float], positions: np.ndarray) -> np.ndarray:
        """``Vectors.cosines``' values (to the bit) at ``positions`` of ``index()``, each a
        document whose embedding has the query's dimension."""
        rows = self._rows_at(len(query))[1][positions]
        return self.vectors().exact_cosines(query, rows)

    def _rows_at(self, dimensions: int) -> tuple[np.ndarray, np.ndarray]:
        """(the ``index()`` position of each row of ``vectors()``' matrix of ``dimensions``,
        and each position's row in it, -1 for none)."""
        ids, position, _ = self.index()
        vectors = self.vectors()
        if self._cosine_places is None or self._cosine_places[0] is not vectors:
            self._cosine_places = (vectors, {})
        held = self._cosine_places[1]
        found = held.get(dimensions)
        if found is None:
            rows = vectors.ids(dimensions)
            at = np.fromiter((position[rid] for rid in rows), dtype=np.intp, count=len(rows))
            inverse = np.full(len(ids), -1, dtype=np.intp)
            inverse[at] = np.arange(len(rows), dtype=np.intp)
            found = held[dimensions] = (at, inverse)
        return found

    def term_arrays(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """The positions (``index()``) of the documents holding ``term``, and its frequencies."""
        found = self._arrays.get(term)
        if found is None:
            _, position, _ = self.index()
            postings = self.postings(term)
            found = self._arrays[term] = (
                np.fromiter((position[rid] for rid, _ in postings), dtype=np.intp, count=len(postings)),
                np.fromiter((tf for _, tf in postings), dtype=np.float64, count=len(postings)),
            )
        return found

    def vectors(self) -> Vectors:
        """The documents' embeddings as matrices, built on first use and again after a change."""
        if self._vectors is None:
            self._vectors = Vectors((rid, doc[3]) for rid, doc in self.docs.items())
        return self._vectors

    def postings(self, term: str) -> list[tuple[str, int]]:
        """(document id, term frequency) of the documents containing ``term``."""
        found = self._postings.get(term)
        if found is None:
            found = self._postings[term] = [
                (rid, c[term]) for rid, (c, _) in self.counts.items() if term in c
            ]
        return found

    def place(self, rid: str) -> int:
        """Where document ``rid`` stands in ``zeros``."""
        if self._places is None:
            self._places = {doc: i for i, (_, doc) in enumerate(self.zeros)}
        return self._places[rid]

    def add(self, doc: Document) -> None:
        rid, content, recency, embedding = doc
        self.docs[rid] = doc
        counts, length = self.counts[rid] = _terms(content)
        self.total_len += length
        self.embedded += embedding is not None
        self._index, self._arrays, self._index_columns, self._cosine_places = None, {}, None, None
        if embedding is not None:
            self._vectors = None
        at = bisect_left(self.zeros, (-recency, rid))
        self.zeros.insert(at, (-recency, rid))
        self._places = None
        self.zero_scores.insert(at, (rid, 0.0))
        for term, tf in counts.items():
            if term in self._postings:
                self._postings[term].append((rid, tf))

    def remove(self, rid: str) -> None:
        _, _, recency, embedding = self.docs.pop(rid)
        counts, length = self.counts.pop(rid)
        self.total_len -= length
        self.embedded -= embedding is not None
        self._index, self._arrays, self._index_columns, self._cosine_places = None, {}, None, None
        if embedding is not None:
            self._vectors = None
        at = bisect_left(self.zeros, (-recency, rid))
        del self.zeros[at], self.zero_scores[at]
        self._places = None
        for term, tf in counts.items():
            if term in self._postings:
                self._postings[term].remove((rid, tf))


class Ranked(list[tuple[str, float]]):
    """``rank_prepared``'s (id, score) list over one part, with the columns it was built from:
    ``positions``, the ``index()`` position of each of the first ``len(positions)`` entries
    (those that scored above zero), and ``scores``, their scores; ``ids`` is the part's
    ``index()`` ids, to tell which part the positions are of."""

    __slots__ = ("ids", "positions", "scores")

    def __init__(self, ids: list[str], positions: np.ndarray, scores: np.ndarray) -> None:
        super().__init__(zip([ids[i] for i in positions.tolist()], scores.tolist(), strict=True))
        self.ids, self.positions, self.scores = ids, positions, scores


def rank_prepared(
    parts: Sequence[Prepared], query: str, query_embedding: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """``rank`` over the documents of ``parts``, touching only those that match a query term
    (and, with ``query_embedding``, scoring every embedded one in one pass over its matrix)."""
    hybrid = query_embedding is not None and any(p.embedded for p in parts)
    terms = list(dict.fromkeys(tokenize(query)))
    n = sum(len(p.docs) for p in parts)
    positive: list[tuple[float, float, str]] = []
    matched: list[list[int]] = [[] for _ in parts]  # per part, the places of positive documents
    raw: dict[tuple[int, str], float] = {}
    lexical_columns: list[tuple[np.ndarray, np.ndarray]] = []  # per part: BM25 sums, touched
    best = 0.0
    if terms and n:
        avg_len = sum(p.total_len for p in parts) / n or 1.0
        df = {t: sum(len(p.postings(t)) for p in parts) for t in terms}
        idf = {t: math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
        best = sum(idf.values()) * (_K1 + 1.0)
        for j, part in enumerate(parts):
            # One NumPy pass per term over its postings: the same operations, in the same
            # order, as ``rank``'s loop, element by element, so the same floats to the bit.
            ids, _, lengths = part.index()
            total = np.zeros(len(ids))
            touched = np.zeros(len(ids), dtype=bool)
            for t in terms:  # in query-term order, as ``rank`` adds them
                positions, tfs = part.term_arrays(t)
                if not len(positions):
                    continue
                norm = _K1 * (1.0 - _B + _B * lengths[positions] / avg_len)
                total[positions] += idf[t] * tfs * (_K1 + 1.0) / (tfs + norm)
                touched[positions] = True
            lexical_columns.append((total, touched))
            if len(parts) == 1:
                continue  # ranked column by column below
            where = np.flatnonzero(touched)
            for i, value in zip(where.tolist(), total[where].tolist(), strict=True):
                raw[j, ids[i]] = value
        if not hybrid:
            for (j, rid), lexical in raw.items():
                rounded = round(lexical / best, _DIGITS)
                if rounded > 0.0:  # a score that rounds to zero ties with the unmatched documents
                    recency = parts[j].docs[rid][2]
                    positive.append((-rounded, -recency, rid))
                    matched[j].append(parts[j].place(rid))
    if len(parts) == 1:
        columns = lexical_columns[0] if lexical_columns else None
        if not hybrid:
            return _lexical_one(parts[0], columns, best)
        assert query_embedding is not None
        return _hybrid_one(parts[0], columns, best, query_embedding)
    if hybrid:
        assert query_embedding is not None
        for j, part in enumerate(parts):
            similarity = part.vectors().similarities(query_embedding) if part.embedded else {}
            lexical_ids = [rid for (k, rid) in raw if k == j]
            for rid in dict.fromkeys([*lexical_ids, *similarity]):
                lexical = raw.get((j, rid), 0.0)
                score = lexical / best if lexical else 0.0
                if rid in similarity:
                    score = _LEXICAL_WEIGHT * score + (1.0 - _LEXICAL_WEIGHT) * similarity[rid]
                rounded = round(score, _DIGITS)
                if rounded > 0.0:
                    positive.append((-rounded, -part.docs[rid][2], rid))
                    matched[j].append(part.place(rid))
    positive.sort()
    out = [(rid, -neg_score) for neg_score, _, rid in positive]
    # Several parts (one part returned above): the unmatched of each, merged in place order.
    zeros = [_without(p.zeros, places) for p, places in zip(parts, matched, strict=True)]
    out += ((rid, 0.0) for _, rid in heapq.merge(*zeros))
    return out


def _lexical_one(
    part: Prepared, lexical: tuple[np.ndarray, np.ndarray] | None, best: float
) -> list[tuple[str, float]]:
    """``rank_prepared`` of one part without a query embedding, column by column: each matched
    document's BM25 sum over ``best`` (the same float division as ``rank``'s), Python's
    ``round``, then score descending and place in ``zeros`` (recency, then id) ascending."""
    if lexical is None:
        return list(part.zero_scores)
    ids, _, _ = part.index()
    places, _ = part.index_columns()
    total, touched = lexical
    where = np.flatnonzero(touched)
    rounded = rounded_column(total[where] / best)
    keep = rounded > 0.0  # a score that rounds to zero ties with the unmatched documents
    where, rounded = where[keep], rounded[keep]
    at = places[where]
    order = np.lexsort((at, -rounded))
    out = Ranked(ids, where[order], rounded[order])
    out += _others(part.zero_scores, at)
    return out


def _hybrid_one(
    part: Prepared,
    lexical: tuple[np.ndarray, np.ndarray] | None,
    best: float,
    query_embedding: Sequence[float],
) -> list[tuple[str, float]]:
    """``rank_prepared`` of one part with a query embedding, column by column: the same float
    operations as ``rank``'s per-document blend, elementwise, then Python's ``round``."""
    ids, _, _ = part.index()
    places, embedded = part.index_columns()
    if lexical is None:
        score = np.zeros(len(ids))
    else:
        total, touched = lexical
        score = np.where(touched, total / (best if best else 1.0), 0.0)
    similarity, error = part.similarity_column(query_embedding)
    blended = _LEXICAL_WEIGHT * score + (1.0 - _LEXICAL_WEIGHT) * similarity
    rounded = rounded_column(np.where(embedded, blended, score))
    # A fast cosine may differ from the oracle's in its last bits, by at most ``error``, and so
    # may the blended score; it rounds as the oracle's does unless a rounding boundary (a half
    # of 10^-d) lies within that of it. Those few are scored again with the oracle's cosines.
    scaled = blended * _SCALE
    with np.errstate(invalid="ignore"):
        gap = np.abs(scaled - np.floor(scaled) - 0.5)
        unsure = embedded & (error > 0.0) & ~(gap > (error * (1.0 + np.abs(blended)) + 1e-15) * _SCALE * 1.01)
    if unsure.any():
        at = np.flatnonzero(unsure)
        exact = part.exact_similarities(query_embedding, at)
        rounded[at] = rounded_column(_LEXICAL_WEIGHT * score[at] + (1.0 - _LEXICAL_WEIGHT) * exact)
    positive = np.flatnonzero(rounded > 0.0)
    order = positive[np.lexsort((places[positive], -rounded[positive]))]
    out = Ranked(ids, order, rounded[order])
    out += _others(part.zero_scores, places[positive])
    return out


_SCALE = 10.0**_DIGITS
_HALF_BAND = 1e-6
"""How near a half ``rounded_column`` sends a scaled value to Python's ``round`` (plus a few
ulps of the value): far wider than the error of the one multiplication that scaled it, half
an ulp (6e-8 for a score of 1)."""


def rounded_column(values: np.ndarray) -> np.ndarray:
    """``round(v, _DIGITS)`` of every value, as Python rounds (correctly, half to even), in
    NumPy: ``rint(v x 10^d) / 10^d`` is that float wherever ``v x 10^d`` is not within a
    sliver of a half, since then the product's rounding error cannot change which integer is
    nearest, and dividing that integer (exact below 2^52) by 10^d is the one correct rounding
    of the decimal ``round`` parses back; the few values near a half go through ``round``."""
    with np.errstate(over="ignore", invalid="ignore"):  # huge values: round() takes them
        scaled = values * _SCALE
        out: np.ndarray = np.rint(scaled) / _SCALE
        near = np.abs(scaled - np.floor(scaled) - 0.5) < _HALF_BAND + np.abs(scaled) * 1e-15
        near |= ~(np.abs(scaled) < 2.0**52)  # beyond exact integers, and not finite
    if near.any():
        at = np.flatnonzero(near)
        out[at] = [round(v, _DIGITS) for v in values[at].tolist()]
    return out


def _others(items: list[_T], places: np.ndarray) -> list[_T]:
    """``items`` minus those at ``places`` (distinct), in order."""
    if not len(places):
        return list(items)
    keep = np.ones(len(items), dtype=bool)
    keep[places] = False
    return list(map(items.__getitem__, np.flatnonzero(keep).tolist()))


def _without(items: list[_T], places: list[int]) -> list[_T]:
    """``items`` minus those at ``places``, by slices."""
    if not places:
        return items
    out: list[_T] = []
    start = 0
    for place in sorted(places):
        out += items[start:place]
        start = place + 1
    out += items[start:]
    return out
