"""What the gate hands to recall: verdicts, the ranking of survivors, receipt digests.

The store turns a backend's ``GateRows`` (plain columns) into ``Verdicts`` once
(``Verdicts.of_columns``): the survivors prepared for ranking, the digests'
fragments made. ``graphmem.gate_cache`` keeps them between reads while the
backend's probe says they hold; ``ViewGate`` serves them to recall.
``RowGate`` ranks and hashes the reference gate's ``GateResult`` from scratch;
both give identical rankings and digests, and the shared suite and property
tests hold them to that.
"""

from __future__ import annotations

import hashlib
import heapq
from bisect import bisect_left, bisect_right
from collections.abc import ItemsView, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Protocol

import numpy as np

from graphmem.model import DropReason, GateRows
from graphmem.model.canonical import float_reprs
from graphmem.ranking import Document, EmbeddingKind, Prepared, Ranked, embedding_kinds, rank, rank_prepared
from graphmem.receipts import (
    decision_fragment,
    digest_of_fragments,
)

__all__ = [
    "LIMITED",
    "Gated",
    "Outcomes",
    "RankedOutcomes",
    "RowGate",
    "Verdicts",
    "ViewGate",
]

Outcomes = Mapping[str, tuple[bool, DropReason | None, float]]
"""Ranked survivors' final decisions: record id → (selected, reason, score).

A survivor missing from it has the usual outcome, ``LIMITED``."""

LIMITED = (False, DropReason.SELECTION_LIMIT, 0.0)
"""Not selected: scored zero and the selection was full."""


def _negated_score(item: tuple[str, float]) -> float:
    return -item[1]


class RankedOutcomes(Mapping[str, tuple[bool, DropReason | None, float]]):
    """The decision (selected, reason, score) on each ranked survivor, as ``Outcomes``, kept
    as the ranking and where its parts end; a mapping by id only when asked as one.

    In rank order: the first ``chosen`` are selected; the scored ones after them up to
    ``matched`` were past the limit; those up to ``eligible`` scored zero (``LIMITED``, held
    only with ``every``: receipts' digests take them as read); the rest scored below the
    context's minimum."""

    __slots__ = ("_by_id", "chosen", "eligible", "every", "matched", "ranked")

    def __init__(self, ranked: list[tuple[str, float]], limit: int, min_score: float, every: bool) -> None:
        # Scores are descending (and not negative), so those below the minimum form a
        # suffix and, before it, those that scored zero.
        self.ranked = ranked
        self.eligible = bisect_right(ranked, -min_score, key=_negated_score)
        self.chosen = min(limit, self.eligible)
        self.matched = bisect_left(ranked, 0.0, lo=self.chosen, hi=self.eligible, key=_negated_score)
        self.every = every
        self._by_id: dict[str, tuple[bool, DropReason | None, float]] | None = None

    def selected(self) -> list[tuple[str, float]]:
        """(id, score) of the selected, in rank order."""
        return self.ranked[: self.chosen]

    def scored(self) -> Iterator[tuple[str, tuple[bool, DropReason | None, float]]]:
        """(id, outcome) of every survivor but those that scored zero past the limit."""
        ranked, chosen, matched, eligible = self.ranked, self.chosen, self.matched, self.eligible
        limit, below = DropReason.SELECTION_LIMIT, DropReason.BELOW_MIN_SCORE
        yield from ((rid, (True, None, score)) for rid, score in ranked[:chosen])
        yield from ((rid, (False, limit, score)) for rid, score in ranked[chosen:matched])
        yield from ((rid, (False, below, score)) for rid, score in ranked[eligible:])

    def _outcomes(self) -> dict[str, tuple[bool, DropReason | None, float]]:
        if self._by_id is not None:
            return self._by_id
        ranked, chosen, matched, eligible = self.ranked, self.chosen, self.matched, self.eligible
        limit, below = DropReason.SELECTION_LIMIT, DropReason.BELOW_MIN_SCORE  # looked up once
        by_id: dict[str, tuple[bool, DropReason | None, float]] = {
            rid: (True, None, score) for rid, score in ranked[:chosen]
        }
        by_id.update((rid, (False, limit, s)) for rid, s in ranked[chosen:matched])
        if self.every:
            by_id.update((rid, LIMITED) for rid, _ in ranked[matched:eligible])
        by_id.update((rid, (False, below, s)) for rid, s in ranked[eligible:])
        self._by_id = by_id
        return by_id

    def __getitem__(self, rid: str) -> tuple[bool, DropReason | None, float]:
        return self._outcomes()[rid]

    def __iter__(self) -> Iterator[str]:
        return iter(self._outcomes())

    def __contains__(self, rid: object) -> bool:
        return rid in self._outcomes()

    def items(self) -> ItemsView[str, tuple[bool, DropReason | None, float]]:
        return self._outcomes().items()

    def __len__(self) -> int:
        unscored = self.eligible - self.matched
        return len(self.ranked) - (0 if self.every else unscored)


class Gated(Protocol):
    """The gate's output for one read, whichever backend evaluated it."""

    @property
    def survivors(self) -> list[Document]:
        """Ranking inputs (id, content, recency, embedding) of the eligible candidates."""
        ...

    def dropped(self) -> Iterable[tuple[str, DropReason]]:
        """(record id, reason) of every candidate the gate dropped, by id."""
        ...

    def ranked(self, query: str, query_embedding: Sequence[float] | None) -> list[tuple[str, float]]:
        """Survivors best first, as ``graphmem.ranking.rank`` orders them."""
        ...

    def embedding_kinds(self) -> frozenset[EmbeddingKind]:
        """The (dimensions, model id or None) of the survivors' embeddings."""
        ...

    def candidates_digest(self) -> str: ...

    def candidates_digest_with(self, fingerprints: Mapping[str, str]) -> str:
        """The candidates digest had the candidates in ``fingerprints`` (record id →
        fingerprint) had those fingerprints; ids that are no candidate are ignored."""
        ...

    def decisions_digest(self, outcomes: Outcomes) -> str:
        """Digest of every decision: the gate's drops plus ``outcomes`` for the survivors."""
        ...


@dataclass(slots=True)
class RowGate:
    """A ``GateResult``'s rows: one (record id, fingerprint, drop reason or None) per candidate."""

    verdicts: list[tuple[str, str, DropReason | None]]
    survivors: list[Document]
    models: dict[str, str] = field(default_factory=dict)

    def dropped(self) -> Iterable[tuple[str, DropReason]]:
        return [(rid, reason) for rid, _, reason in self._by_id() if reason is not None]

    def ranked(self, query: str, query_embedding: Sequence[float] | None) -> list[tuple[str, float]]:
        return rank(self.survivors, query, query_embedding)

    def embedding_kinds(self) -> frozenset[EmbeddingKind]:
        return embedding_kinds(self.survivors, self.models)

    def _by_id(self) -> list[tuple[str, str, DropReason | None]]:
        # Candidates are distinct records, so id order is the order of the digests' rows.
        self.verdicts.sort(key=itemgetter(0))
        return self.verdicts

    def candidates_digest(self) -> str:
        return self.candidates_digest_with({})

    def candidates_digest_with(self, fingerprints: Mapping[str, str]) -> str:
        return digest_of_fragments(
            [_candidate_fragment(_id_json(rid), fingerprints.get(rid, fp)) for rid, fp, _ in self._by_id()]
        )

    def decisions_digest(self, outcomes: Outcomes) -> str:
        fragments = [
            decision_fragment(_id_json(rid), False, reason, None)
            if reason is not None
            else f'["{rid}"{_LIMITED_TAIL}'
            if rid not in outcomes
            else decision_fragment(_id_json(rid), *outcomes[rid])
            for rid, _, reason in self._by_id()
        ]
        return digest_of_fragments(fragments)


def _id_json(rid: str) -> str:
    """A record id as JSON: ids match [A-Za-z0-9][A-Za-z0-9._:@+-]*, so it is the id in quotes."""
    return f'"{rid}"'


_LIMITED_TAIL = decision_fragment("", *LIMITED)[1:]
"""A ``LIMITED`` decision's fragment after its id (the usual outcome of a survivor)."""


Row = tuple[str, str, str | None, str | None]
"""(id, id as JSON, the drop's decision fragment, the survivor's fragment for the commonest
outcome — unmatched and past the limit); one of the two fragments is None."""


class Verdicts:
    """Gate verdicts on a set of candidates, ready for ranking and digests."""

    __slots__ = (
        "_bytes",
        "_columns",
        "_digests",
        "_kinds",
        "_usual",
        "candidate_fragments",
        "corpus",
        "dropped",
        "models",
        "rows",
        "seen",
    )

    rows: list[Row]  # by id
    candidate_fragments: list[str]  # in the order of ``rows``
    dropped: list[tuple[str, DropReason]]  # by id
    corpus: Prepared
    models: dict[str, str]  # survivor id -> the model its embedding names
    seen: dict[str, tuple[str, str | None]]  # survivor id -> (fingerprint, the backend's state)

    def __init__(self) -> None:
        self.rows, self.candidate_fragments, self.dropped = [], [], []
        self.corpus = Prepared([])
        self.models = {}
        self.seen = {}
        self._digests: tuple[str, bytes, list[int], dict[str, int]] | None = None
        self._usual: tuple[list[str], list[str]] | None = None
        self._kinds: frozenset[EmbeddingKind] | None = None
        self._columns: tuple[list[str], np.ndarray] | None = None
        self._bytes: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def embedding_kinds(self) -> frozenset[EmbeddingKind]:
        """The (dimensions, model) of the survivors' embeddings, found once."""
        if self._kinds is None:
            self._kinds = embedding_kinds(self.corpus.docs.values(), self.models)
        return self._kinds

    def digests(self) -> tuple[str, bytes, list[int], dict[str, int]]:
        """(candidates digest, the decisions' canonical JSON with every survivor at the usual
        outcome, where each row's fragment starts in it — plus where the array ends — and
        each row's place by id)."""
        if self._digests is None:
            fragments = [(dropped or limited or "").encode("utf-8") for _, _, dropped, limited in self.rows]
            starts, at = [], 1
            for fragment in fragments:
                starts.append(at)
                at += len(fragment) + 1
            starts.append(at)
            usual = b"[" + b",".join(fragments) + b"]"
            places = {row[0]: i for i, row in enumerate(self.rows)}
            self._digests = (digest_of_fragments(self.candidate_fragments), usual, starts, places)
        return self._digests

    def usual_fragments(self) -> tuple[list[str], list[str]]:
        """(each row's decision fragment at its usual outcome, and each survivor's fragment
        at ``SELECTION_LIMIT`` up to its score — "" for a drop), by row."""
        if self._usual is None:
            usual = [dropped or limited or "" for _, _, dropped, limited in self.rows]
            # A survivor's usual fragment is at ``LIMITED``, whose score is written last: 0.0.
            cut = len(repr(LIMITED[2])) + 1
            prefixes = ["" if limited is None else limited[:-cut] for _, _, _, limited in self.rows]
            self._usual = (usual, prefixes)
        return self._usual

    def index_rows(self) -> np.ndarray:
        """The row of each survivor by its position in ``corpus.index()``."""
        ids = self.corpus.index()[0]
        if self._columns is None or self._columns[0] is not ids:
            places = self.digests()[3]
            self._columns = (ids, np.fromiter((places[rid] for rid in ids), dtype=np.intp, count=len(ids)))
        return self._columns[1]

    def byte_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The usual decisions' canonical JSON (``digests``) as bytes, and by row where its
        fragment's outcome starts — after ``[id,`` — and where the fragment ends."""
        if self._bytes is None:
            _, usual, starts, _ = self.digests()
            begin = np.array(starts[:-1], dtype=np.int64)
            id_lengths = np.fromiter((len(row[1]) for row in self.rows), dtype=np.int64, count=len(self.rows))
            ends = np.array(starts[1:], dtype=np.int64) - 1
            self._bytes = (np.frombuffer(usual, dtype=np.uint8), begin + id_lengths + 2, ends)
        return self._bytes

    @classmethod
    def of_rows(
        cls,
        verdicts: Iterable[tuple[str, str, DropReason | None]],
        survivors: Iterable[Document],
        models: Mapping[str, str] | None = None,
    ) -> Verdicts:
        """The verdicts a backend reported: (record id, fingerprint, drop reason or None) per
        candidate, the survivors' ranking inputs and their embeddings' models (by id, for
        those that name one)."""
        made = cls()
        made.models = dict(models or {})
        seen = made.seen
        for rid, fingerprint, reason in sorted(verdicts, key=itemgetter(0)):
            id_json = _id_json(rid)
            made.rows.append(_row(rid, id_json, reason))
            made.candidate_fragments.append(_candidate_fragment(id_json, fingerprint))
            if reason is not None:
                made.dropped.append((rid, reason))
            else:
                seen[rid] = (fingerprint, None)
        made.corpus = Prepared(survivors)
        return made

    @classmethod
    def of_columns(cls, rows: GateRows) -> Verdicts:
        """The verdicts of a backend's ``GateRows``."""
        survivors = zip(rows.survivor_ids, rows.texts, rows.recency, rows.embeddings, strict=True)
        models = {rid: m for rid, m in zip(rows.survivor_ids, rows.models, strict=True) if m is not None}
        made = cls.of_rows(zip(rows.ids, rows.fingerprints, rows.reasons, strict=True), survivors, models)
        if rows.states is not None:
            seen = made.seen
            for rid, state in zip(rows.survivor_ids, rows.states, strict=True):
                seen[rid] = (seen[rid][0], state)
        return made

    @classmethod
    def merged(cls, parts: Sequence[Verdicts]) -> Verdicts:
        """The verdicts of several disjoint sets as one."""
        merged = cls()
        pairs = list(heapq.merge(*(zip(p.rows, p.candidate_fragments, strict=True) for p in parts)))
        merged.rows = [row for row, _ in pairs]
        merged.candidate_fragments = [fragment for _, fragment in pairs]
        merged.dropped = list(heapq.merge(*(p.dropped for p in parts)))
        merged.corpus = Prepared(doc for p in parts for doc in p.corpus.docs.values())
        merged.models = {rid: model for p in parts for rid, model in p.models.items()}
        merged.seen = {rid: seen for p in parts for rid, seen in p.seen.items()}
        return merged


def _row(rid: str, id_json: str, reason: DropReason | None) -> Row:
    if reason is None:
        return rid, id_json, None, decision_fragment(id_json, *LIMITED)
    return rid, id_json, decision_fragment(id_json, False, reason, None), None


def _candidate_fragment(id_json: str, fingerprint: str) -> str:
    """A candidate's (id, fingerprint) pair as canonical JSON (a fingerprint is hex)."""
    return f'[{id_json},"{fingerprint}"]'


class ViewGate:
    """The verdicts a context reaches (one group's view, or several merged) as a ``Gated``."""

    __slots__ = ("verdicts",)

    def __init__(self, verdicts: Verdicts) -> None:
        self.verdicts = verdicts

    @property
    def survivors(self) -> list[Document]:
        return list(self.verdicts.corpus.docs.values())

    def dropped(self) -> Iterable[tuple[str, DropReason]]:
        return self.verdicts.dropped

    def ranked(self, query: str, query_embedding: Sequence[float] | None) -> list[tuple[str, float]]:
        return rank_prepared([self.verdicts.corpus], query, query_embedding)

    def embedding_kinds(self) -> frozenset[EmbeddingKind]:
        return self.verdicts.embedding_kinds()

    def seen(self, record_ids: Iterable[str]) -> dict[str, tuple[str, str | None]]:
        """(fingerprint, the backend's state) of each of ``record_ids`` that survived."""
        seen = self.verdicts.seen
        return {rid: seen[rid] for rid in record_ids if rid in seen}

    def candidates_digest(self) -> str:
        return self.verdicts.digests()[0]

    def candidates_digest_with(self, fingerprints: Mapping[str, str]) -> str:
        v = self.verdicts
        places = v.digests()[3]
        fragments = list(v.candidate_fragments)
        for rid, fingerprint in fingerprints.items():
            at = places.get(rid)
            if at is not None:
                fragments[at] = _candidate_fragment(v.rows[at][1], fingerprint)
        return digest_of_fragments(fragments)

    def decisions_digest(self, outcomes: Outcomes) -> str:
        # The digest of every survivor at the usual outcome is precomputed as bytes; only the
        # survivors whose outcome differs (the selected and the matched) are spliced in.
        v = self.verdicts
        _, usual, starts, places = v.digests()
        if len(outcomes) * 8 > len(v.rows):
            # Many survivors scored: the usual fragments, each scored survivor's written over,
            # joined and hashed at once, cheaper than as many splices. Ranked outcomes give
            # their scored parts without a mapping by id.
            if isinstance(outcomes, RankedOutcomes):
                if isinstance(outcomes.ranked, Ranked) and outcomes.ranked.ids is v.corpus.index()[0]:
                    return self._column_digest(outcomes, outcomes.ranked)
                return self._overwritten_digest(outcomes.scored())
            return self._overwritten_digest(outcomes.items())
        changed: list[tuple[int, bytes]] = []
        for rid, outcome in outcomes.items():
            at = places[rid]
            _, id_json, _, limited = v.rows[at]
            spliced = decision_fragment(id_json, *outcome)
            if spliced != limited:
                changed.append((at, spliced.encode("utf-8")))
        changed.sort()
        digest = hashlib.sha256()
        text = memoryview(usual)
        done = 0
        for at, fragment in changed:
            digest.update(text[done : starts[at]])
            digest.update(fragment)
            done = starts[at + 1] - 1  # the fragment ends just before the next comma (or "]")
        digest.update(text[done:])
        return digest.hexdigest()

    def _overwritten_digest(
        self, scored: Iterable[tuple[str, tuple[bool, DropReason | None, float | None]]]
    ) -> str:
        """``decisions_digest`` from the usual fragments, each of ``scored``'s written over (one
        past the limit as its prefix and its score: ``decision_fragment``'s text)."""
        v = self.verdicts
        places = v.digests()[3]
        usual_fragments, prefixes = v.usual_fragments()
        fragments = list(usual_fragments)
        rows, limit = v.rows, DropReason.SELECTION_LIMIT
        for rid, (selected, reason, score) in scored:
            at = places[rid]
            if reason is limit and not selected and score is not None:
                fragments[at] = f"{prefixes[at]}{float(score)!r}]"
            else:
                fragments[at] = decision_fragment(rows[at][1], selected, reason, score)
        return digest_of_fragments(fragments)

    def _column_digest(self, outcomes: RankedOutcomes, ranked: Ranked) -> str:
        """``_overwritten_digest`` of ranked outcomes, written as bytes column by column: each
        rewritten survivor's usual outcome (after its ``[id,``) replaced by its outcome, score
        and ``]`` (``decision_fragment``'s text)."""
        v = self.verdicts
        rows_of = v.index_rows()
        chosen, matched, eligible = outcomes.chosen, outcomes.matched, outcomes.eligible
        scored = len(ranked.positions)
        at = np.arange(scored)
        # 0 selected, 1 past the limit, 2 below the minimum, -1 the usual (scored zero)
        kinds = np.where(at < chosen, 0, np.where(at < matched, 1, np.where(at < eligible, -1, 2)))
        rows, scores = rows_of[ranked.positions], ranked.scores
        # Those that scored zero, where selected or below the minimum.
        selected_zero = outcomes.ranked[scored:chosen]
        below_zero = outcomes.ranked[max(scored, eligible) :]
        if selected_zero or below_zero:
            places = v.digests()[3]
            zero_rows = [places[rid] for rid, _ in selected_zero] + [places[rid] for rid, _ in below_zero]
            rows = np.concatenate([rows, np.array(zero_rows, dtype=np.intp)])
            kinds = np.concatenate([kinds, np.repeat([0, 2], [len(selected_zero), len(below_zero)])])
            scores = np.concatenate([scores, np.zeros(len(zero_rows))])
        # In row order: each rewritten row's outcome and score, placed by row.
        kind_of = np.full(len(v.rows), -1, dtype=np.int64)
        score_of = np.zeros(len(v.rows))
        kind_of[rows], score_of[rows] = kinds, scores
        rows = np.flatnonzero(kind_of >= 0)
        kinds, scores = kind_of[rows], score_of[rows]
        written, written_starts, written_lengths = float_reprs(scores)
        usual, starts, ends = v.byte_columns()
        starts, ends = starts[rows], ends[rows]
        # The output, piece by piece, gathered from one buffer: per rewritten row, the usual
        # bytes up to its outcome, its outcome's words, its score, "]"; then the usual rest.
        words_at = len(usual)
        scores_at = words_at + len(_OUTCOME_WORDS)
        source = np.concatenate([usual, _OUTCOME_WORDS, written])
        previous = np.concatenate([[0], ends[:-1]])
        piece_starts = np.stack(
            [
                previous,
                words_at + _OUTCOME_STARTS[kinds],
                scores_at + written_starts,
                words_at + _OUTCOME_STARTS[kinds] + _OUTCOME_LENGTHS[kinds],
            ],
            axis=1,
        ).reshape(-1)
        piece_lengths = np.stack(
            [starts - previous, _OUTCOME_LENGTHS[kinds], written_lengths, np.ones(len(rows), dtype=np.int64)],
            axis=1,
        ).reshape(-1)
        last = ends[-1] if len(rows) else 0
        piece_starts = np.append(piece_starts, last)
        piece_lengths = np.append(piece_lengths, len(usual) - last)
        placed = np.cumsum(piece_lengths) - piece_lengths
        out = source.take(
            np.repeat(piece_starts - placed, piece_lengths) + np.arange(int(piece_lengths.sum()))
        )
        return hashlib.sha256(out.tobytes()).hexdigest()


def _outcome_words() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What ``decision_fragment`` writes between a survivor's ``[id,`` and its score, for
    selected (0), past the limit (1) and below the minimum (2), each followed by "]": their
    bytes back to back, where each starts and its length (without the "]")."""
    words = [
        decision_fragment("", True, None, 0.0)[2:-4],
        decision_fragment("", False, DropReason.SELECTION_LIMIT, 0.0)[2:-4],
        decision_fragment("", False, DropReason.BELOW_MIN_SCORE, 0.0)[2:-4],
    ]
    lengths = np.array([len(w) + 1 for w in words], dtype=np.int64)
    joined = "".join(w + "]" for w in words).encode("ascii")
    return np.frombuffer(joined, dtype=np.uint8), np.cumsum(lengths) - lengths, lengths - 1


_OUTCOME_WORDS, _OUTCOME_STARTS, _OUTCOME_LENGTHS = _outcome_words()
