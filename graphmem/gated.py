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
from bisect import bisect_right
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

__all__ = ["Gated", "GroupView", "Outcomes", "RowGate", "ScopeGroup", "ViewGate", "as_gated"]

Outcomes = Mapping[str, tuple[bool, DropReason | None, float]]
"""Ranked survivors' final decisions: record id → (selected, reason, score)."""


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
        rows.extend((rid, *outcome) for rid, outcome in outcomes.items())
        return decisions_digest(rows)


def as_gated(result: GateResult | Gated) -> Gated:
    """What recall reads from a backend's gate result."""
    if isinstance(result, GateResult):
        return RowGate(result.verdicts, result.survivors)
    return result


class ScopeGroup:
    """The candidates applying to one scope, with their receipts' fragments and cached views."""

    __slots__ = ("_boundaries", "_ordered", "_views", "members")

    def __init__(self) -> None:
        self.members: dict[object, Candidate] = {}
        self._changed()

    def put(self, key: object, candidate: Candidate) -> None:
        self.members[key] = candidate
        self._changed()

    def pop(self, key: object) -> None:
        if self.members.pop(key, None) is not None:
            self._changed()

    def _changed(self) -> None:
        self._ordered: list[tuple[str, str, Candidate]] | None = None
        self._boundaries: list[datetime] | None = None
        self._views: dict[tuple[object, ...], GroupView] = {}

    def ordered(self) -> list[tuple[str, str, Candidate]]:
        """(id, id as JSON, candidate) by id."""
        if self._ordered is None:
            cands = sorted(self.members.values(), key=lambda c: c.id)
            self._ordered = [(c.id, json_string(c.id), c) for c in cands]
        return self._ordered

    def view(self, ctx: ReadContext, in_scope: bool) -> GroupView:
        """The verdicts for ``ctx``: reused for any ``now`` between the same two boundaries."""
        if self._boundaries is None:
            times = {
                t
                for c in self.members.values()
                for t in (c.start, c.end, c.superseded_at, c.invalidated_at)
                if t is not None
            }
            self._boundaries = sorted(times)
        # Every time check flips exactly at a boundary (now < start, now >= end,
        # superseded/invalidated at <= now), so two nows with the same count of
        # boundaries at or before them get the same verdicts.
        interval = bisect_right(self._boundaries, ctx.now)
        key = (ctx.tenant, ctx.policy, ctx.kinds, ctx.clearance, ctx.environment, in_scope, interval)
        found = self._views.get(key)
        if found is None:
            if len(self._views) >= 4:
                self._views.clear()
            found = self._views[key] = GroupView(self.ordered(), ctx, in_scope)
        return found


class GroupView:
    """One scope group's verdicts for one gate key, ready for ranking and digests."""

    __slots__ = ("candidate_fragments", "corpus", "dropped", "rows")

    def __init__(
        self, ordered: Sequence[tuple[str, str, Candidate]], ctx: ReadContext, in_scope: bool
    ) -> None:
        # (id, id as JSON, the drop's decision fragment or None for a survivor), by id
        self.rows: list[tuple[str, str, str | None]] = []
        self.dropped: list[tuple[str, DropReason]] = []
        self.candidate_fragments: list[str] = []
        survivors: list[Document] = []
        for rid, id_json, cand in ordered:
            reason = drop_reason(cand, ctx, in_scope)
            self.candidate_fragments.append(f'[{id_json},"{cand.fingerprint}"]')
            if reason is None:
                survivors.append((rid, cand.record.content, cand.recency, cand.record.embedding))
                self.rows.append((rid, id_json, None))
            else:
                self.dropped.append((rid, reason))
                self.rows.append((rid, id_json, decision_fragment(id_json, False, reason, None)))
        self.corpus = Prepared(survivors)


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
        return [doc for v in self.views for doc in v.corpus.docs]

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
        def fragments() -> Iterator[str]:
            for rid, id_json, fragment in self._merged([v.rows for v in self.views]):
                yield fragment if fragment is not None else decision_fragment(id_json, *outcomes[rid])

        return digest_of_fragments(fragments())
