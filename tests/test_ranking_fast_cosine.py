"""Hybrid ranking's fast cosine pass: within its proven bound of the oracle's cosines, and a
ranking that is the oracle's to the bit, even where a score lies at a rounding boundary."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem.ranking import Document, Prepared, Vectors, cosine_error, rank, rank_prepared

_DIMS = st.integers(min_value=1, max_value=64)


def _unit(rng: np.random.Generator, dims: int) -> np.ndarray:
    v = rng.standard_normal(dims)
    return v / np.linalg.norm(v)


@settings(max_examples=200, deadline=None)
@given(
    dims=_DIMS,
    rows=st.integers(min_value=1, max_value=40),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
    scale=st.sampled_from([1.0, 1e-100, 1e100, 3.7, 1e-3]),
    cancel=st.booleans(),
)
def test_fast_cosines_lie_within_the_bound_of_the_exact_ones(
    dims: int, rows: int, seed: int, scale: float, cancel: bool
) -> None:
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(dims) * scale
    matrix = rng.standard_normal((rows, dims)) * scale
    if cancel and dims > 1:
        # Rows nearly orthogonal to the query, of large terms that cancel: the worst case of a
        # sum's rounding against its value.
        matrix -= np.outer(matrix @ q / (q @ q), q)
        matrix *= 1e6 ** rng.random((rows, 1))
    vectors = Vectors((f"r{i}", tuple(row.tolist())) for i, row in enumerate(matrix))
    query = tuple(q.tolist())
    exact = vectors.cosines(query)
    fast = vectors.fast_cosines(query)
    assert exact is not None
    assert fast is not None
    assert fast[0] == exact[0]
    _, values, bounded = fast
    assert bounded.all()
    assert np.all(np.abs(values - exact[1]) <= cosine_error(dims))
    chosen = np.array(sorted(rng.choice(rows, size=min(rows, 5), replace=False)), dtype=np.intp)
    assert vectors.exact_cosines(query, chosen).tolist() == exact[1][chosen].tolist()


def test_norms_out_of_the_bounds_range_have_no_bound() -> None:
    vectors = Vectors([("a", (1e-200, 0.0)), ("b", (1e150, 1.0)), ("c", (1.0, 1.0))])
    fast = vectors.fast_cosines((1.0, 0.5))
    assert fast is not None
    assert fast[2].tolist() == [False, False, True]


def _boundary_docs(dims: int, seed: int, count: int) -> tuple[list[Document], tuple[float, ...]]:
    """Documents whose hybrid score (no query term: half the cosine) lies within a few ulps of
    a rounding boundary of 10^-9: cosines near odd multiples of 10^-9, and near 0.5 + 10^-9k."""
    rng = np.random.default_rng(seed)
    q = _unit(rng, dims)
    docs: list[Document] = []
    for i in range(count):
        other = _unit(rng, dims)
        other -= (other @ q) * q
        other /= np.linalg.norm(other)
        k = int(rng.integers(0, 900_000_000))
        target = (2 * k + 1) * 1e-9 + float(rng.integers(-4, 5)) * 2.0**-52
        target = min(max(target, 0.0), 1.0)
        embedding = target * q + math.sqrt(1.0 - target * target) * other
        docs.append((f"d{i:03d}", "", float(i % 7), tuple(embedding.tolist())))
    return docs, tuple(q.tolist())


@settings(max_examples=40, deadline=None)
@given(dims=st.integers(min_value=2, max_value=384), seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_near_boundary_scores_rank_as_the_oracle(dims: int, seed: int) -> None:
    docs, q = _boundary_docs(dims, seed, 60)
    assert rank_prepared([Prepared(docs)], "", q) == rank(docs, "", q)


@pytest.mark.parametrize("direction", [-1.0, 1.0])
def test_fast_cosines_off_by_their_whole_bound_still_rank_as_the_oracle(
    direction: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fast pass is allowed to be anywhere within its bound: moved by all of it, across
    the boundaries of the scores placed next to them, the ranking is still the oracle's (the
    unsure scores are taken again from the oracle's cosines)."""
    docs, q = _boundary_docs(32, 7, 200)
    expected = rank(docs, "", q)
    exact = Vectors.cosines

    def shifted(self: Vectors, query: tuple[float, ...]) -> tuple[list[str], np.ndarray, np.ndarray]:
        found = exact(self, query)
        assert found is not None
        ids, values = found
        return ids, values + direction * cosine_error(len(query)), np.ones(len(ids), dtype=bool)

    monkeypatch.setattr(Vectors, "fast_cosines", shifted)
    asked: list[int] = []
    exact_at = Vectors.exact_cosines

    def counted(self: Vectors, query: tuple[float, ...], rows: np.ndarray) -> np.ndarray:
        asked.append(len(rows))
        return exact_at(self, query, rows)

    monkeypatch.setattr(Vectors, "exact_cosines", counted)
    assert rank_prepared([Prepared(docs)], "", q) == expected
    assert asked
    assert sum(asked) < len(docs)
