"""What the gate hands to recall: verdicts, the ranking of survivors, receipt digests.

``RowGate`` serves a ``GateResult``, the rows any backend can fill. The
embedded backend keeps each scope group's verdicts as a ``GroupView`` until a
record of the group changes or ``now`` crosses one of the group's validity
boundaries, and combines the views a context reaches with ``ViewGate``. Both
give identical rankings and digests; the shared suite and property tests
hold them to that.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right, insort
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from graphmem.gate import Candidate, GateResult, drop_reason
from graphmem.model import DropReason, ReadContext
from graphmem.ranking import Document, Prepared, rank, rank_prepared
from graphmem.receipts import (
    candidates_digest,
    decision_fragment,
    decisions_digest,
    digest_of_fragments,
    json_string,
)

__all__ = ["LIMITED", "Gated", "GroupView", "Outcomes", "RowGate", "ScopeGroup", "ViewGate", "as_gated"]

Outcomes = Mapping[str, tuple[bool, DropReason | None, float]]
"""Ranked survivors' final decisions: record id → (selected, reason, score).

A survivor missing from it has the usual outcome, ``LIMITED``."""

LIMITED = (False, DropReason.SELECTION_LIMIT, 0.0)
"""Not selected: scored zero and the selection was full."""


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

    def candidates_digest(self) -> str: ...

    def decisions_digest(self, outcomes: Outcomes) -> str:
        """Digest of every decision: the gate's drops plus ``outcomes`` for the survivors."""
        ...


@dataclass(slots=True)
class RowGate:
    """A ``GateResult``'s rows: one (record id, fingerprint, drop reason or None) per candidate."""

    verdicts: list[tuple[str, str, DropReason | None]]
    survivors: list[Document]

    def dropped(self) -> Iterable[tuple[str, DropReason]]:
        return sorted((rid, reason) for rid, _, reason in self.verdicts if reason is not None)

    def ranked(self, query: str, query_embedding: Sequence[float] | None) -> list[tuple[str, float]]:
        return rank(self.survivors, query, query_embedding)

    def candidates_digest(self) -> str:
        return candidates_digest((rid, fp) for rid, fp, _ in self.verdicts)

    def decisions_digest(self, outcomes: Outcomes) -> str:
        rows: list[tuple[str, bool, DropReason | None, float | None]] = [
            (rid, False, reason, None) for rid, _, reason in self.verdicts if reason is not None
        ]
        rows.extend((rid, *outcomes.get(rid, LIMITED)) for rid, *_ in self.survivors)
        return decisions_digest(rows)


def as_gated(result: GateResult | Gated) -> Gated:
    """What recall reads from a backend's gate result."""
    if isinstance(result, GateResult):
        return RowGate(result.verdicts, result.survivors)
    return result


class ScopeGroup:
    """The candidates applying to one scope, with the gate views of recent reads kept in step."""

    __slots__ = ("_boundaries", "_inserted", "_ordered", "_times", "_views", "members")

    def __init__(self) -> None:
        self.members: dict[object, Candidate] = {}
        self._ordered: list[tuple[str, str, Candidate]] | None = []
        self._times: Counter[datetime] = Counter()
        self._boundaries: list[datetime] | None = None
        self._views: list[GroupView] = []
        self._inserted = 0

    def put(self, key: object, candidate: Candidate) -> None:
        old = self.members.get(key)
        self.members[key] = candidate
        self._count_times(old, -1)
        self._count_times(candidate, 1)
        id_json = json_string(candidate.id)
        if self._ordered is not None:  # kept in step between reads; sorted once after a bulk load
            at = bisect_left(self._ordered, (candidate.id,))
            if old is not None:
                self._ordered[at] = (candidate.id, id_json, candidate)
            elif self._inserted < 64:
                self._inserted += 1
                self._ordered.insert(at, (candidate.id, id_json, candidate))
            else:
                self._ordered = None
                self._views.clear()
        for view in self._views:
            view.patch(candidate.id, old, candidate, id_json)

    def pop(self, key: object) -> None:
        old = self.members.pop(key, None)
        if old is not None:
            self._count_times(old, -1)
            if self._ordered is not None:
                del self._ordered[bisect_left(self._ordered, (old.id,))]
            for view in self._views:
                view.patch(old.id, old, None, "")

    def _count_times(self, candidate: Candidate | None, step: int) -> None:
        if candidate is not None:
            self._boundaries = None
            for t in (candidate.start, candidate.end, candidate.superseded_at, candidate.invalidated_at):
                if t is not None:
                    self._times[t] += step
                    if not self._times[t]:
                        del self._times[t]

    def ordered(self) -> list[tuple[str, str, Candidate]]:
        """(id, id as JSON, candidate) by id."""
        self._inserted = 0
        if self._ordered is None:
            cands = sorted(self.members.values(), key=lambda c: c.id)
            self._ordered = [(c.id, json_string(c.id), c) for c in cands]
        return self._ordered

    def view(self, ctx: ReadContext, in_scope: bool) -> GroupView:
        """The verdicts for ``ctx``, shared by every ``now`` between the same two boundaries.

        Every time check flips exactly at a boundary (now < start, now >= end,
        superseded/invalidated at <= now), so two nows with the same count of
        boundaries at or before them get the same verdicts.
        """
        if self._boundaries is None:
            self._boundaries = sorted(self._times)
        boundaries = self._boundaries
        interval = bisect_right(boundaries, ctx.now)
        key = _gate_key(ctx, in_scope)
        for view in self._views:
            if view.key == key and bisect_right(boundaries, view.ctx.now) == interval:
                return view
        if len(self._views) >= 4:
            self._views.pop(0)
        view = GroupView(self.ordered(), ctx, in_scope)
        self._views.append(view)
        return view


def _gate_key(ctx: ReadContext, in_scope: bool) -> tuple[object, ...]:
    """Everything but ``now`` that the gate reads from a context."""
    return (ctx.tenant, ctx.policy, ctx.kinds, ctx.clearance, ctx.environment, in_scope)


class GroupView:
    """One scope group's verdicts for one read, kept in step with the group's writes."""

    __slots__ = ("candidate_fragments", "corpus", "ctx", "dropped", "in_scope", "key", "rows")

    def __init__(
        self, ordered: Sequence[tuple[str, str, Candidate]], ctx: ReadContext, in_scope: bool
    ) -> None:
        self.ctx = ctx
        self.in_scope = in_scope
        self.key = _gate_key(ctx, in_scope)
        # By id: (id, id as JSON, the drop's decision fragment, the survivor's fragment for
        # the commonest outcome — unmatched and past the limit); one of the two is None.
        self.rows: list[tuple[str, str, str | None, str | None]] = []
        self.candidate_fragments: list[str] = []  # in the order of ``rows``
        self.dropped: list[tuple[str, DropReason]] = []  # by id
        survivors: list[Document] = []
        for _, id_json, cand in ordered:
            reason = drop_reason(cand, ctx, in_scope)
            self.rows.append(_row(cand, id_json, reason))
            self.candidate_fragments.append(f'[{id_json},"{cand.fingerprint}"]')
            if reason is None:
                survivors.append(_document(cand))
            else:
                self.dropped.append((cand.id, reason))
        self.corpus = Prepared(survivors)

    def patch(self, rid: str, old: Candidate | None, new: Candidate | None, id_json: str) -> None:
        """Replace the verdict on record ``rid``: ``old`` leaves (if any), ``new`` arrives (if any)."""
        at = bisect_left(self.rows, (rid,))
        if old is not None:
            id_json = self.rows[at][1]
            if self.rows[at][2] is None:
                self.corpus.remove(rid)
            else:
                del self.dropped[bisect_left(self.dropped, (rid,))]
            del self.rows[at], self.candidate_fragments[at]
        if new is not None:
            reason = drop_reason(new, self.ctx, self.in_scope)
            self.rows.insert(at, _row(new, id_json, reason))
            self.candidate_fragments.insert(at, f'[{id_json},"{new.fingerprint}"]')
            if reason is None:
                self.corpus.add(_document(new))
            else:
                insort(self.dropped, (rid, reason))


def _row(cand: Candidate, id_json: str, reason: DropReason | None) -> tuple[str, str, str | None, str | None]:
    if reason is None:
        return cand.id, id_json, None, decision_fragment(id_json, *LIMITED)
    return cand.id, id_json, decision_fragment(id_json, False, reason, None), None


def _document(cand: Candidate) -> Document:
    return cand.id, cand.record.content, cand.recency, cand.record.embedding


class ViewGate:
    """The views a context reaches, combined as one ``Gated``."""

    __slots__ = ("views",)

    def __init__(self, views: list[GroupView]) -> None:
        self.views = views

    def _merged(
        self, lists: list[list[tuple[str, str, str | None]]]
    ) -> Iterable[tuple[str, str, str | None]]:
        return lists[0] if len(lists) == 1 else heapq.merge(*lists)

    @property
    def survivors(self) -> list[Document]:
        return [doc for v in self.views for doc in v.corpus.docs.values()]

    def dropped(self) -> Iterator[tuple[str, DropReason]]:
        return heapq.merge(*(v.dropped for v in self.views))

    def ranked(self, query: str, query_embedding: Sequence[float] | None) -> list[tuple[str, float]]:
        return rank_prepared([v.corpus for v in self.views], query, query_embedding)

    def candidates_digest(self) -> str:
        if len(self.views) == 1:
            return digest_of_fragments(self.views[0].candidate_fragments)
        rows = heapq.merge(*(zip(v.rows, v.candidate_fragments, strict=True) for v in self.views))
        return digest_of_fragments(fragment for _, fragment in rows)

    def decisions_digest(self, outcomes: Outcomes) -> str:
        rows = self.views[0].rows if len(self.views) == 1 else heapq.merge(*(v.rows for v in self.views))

        def fragments() -> Iterator[str]:
            for rid, id_json, dropped, limited in rows:
                if dropped is not None:
                    yield dropped
                else:
                    outcome = outcomes.get(rid)
                    yield (
                        limited
                        if outcome is None and limited
                        else decision_fragment(id_json, *outcome or LIMITED)
                    )

        return digest_of_fragments(fragments())
