"""Support along lineage: which derived records lose enough support after a change. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime

from graphmem.backends.base import Dependent, ParentState
from graphmem.model import MemoryRecord, Status

__all__ = ["FORGOTTEN", "lost_support", "support_count", "support_ends", "support_runs_out"]

FORGOTTEN = frozenset({Status.REVOKED, Status.ERASED, Status.RELEASED})


def _parent_alive(parent: ParentState, dead: set[str], at: datetime | None) -> bool:
    if parent.id in dead or parent.status in FORGOTTEN:
        return False
    if at is None:  # forgetting: only removals from memory count, for every `now`
        return True
    return not (
        (parent.superseded_at is not None and parent.superseded_at <= at)
        or (parent.invalidated_at is not None and parent.invalidated_at <= at)
    )


def support_count(
    record: MemoryRecord,
    parents: Iterable[ParentState],
    dead: set[str],
    at: datetime | None,
    dead_sources: frozenset[str] = frozenset(),
) -> int:
    """Live sources plus live DERIVED_FROM parents of ``record``."""
    sources = sum(1 for s in record.sources if s.status == "active" and s.id not in dead_sources)
    return sources + sum(1 for p in parents if _parent_alive(p, dead, at))


def lost_support(
    dependents: list[Dependent],
    removed: Iterable[str],
    *,
    at: datetime | None,
    min_support: int,
) -> list[tuple[MemoryRecord, str]]:
    """Dependents that fall below ``min_support`` once ``removed`` no longer support anything.

    ``at`` is the time of an invalidation or supersession (parents superseded or
    invalidated by then count as lost), or None for forgetting. Returns
    (record, the dead parent that caused it) transitively, in the order they fell.
    """
    dead = set(removed)
    fallen: list[tuple[MemoryRecord, str]] = []
    pending = [d for d in dependents if d.record.id not in dead and d.record.status not in FORGOTTEN]
    changed = True
    while changed:
        changed = False
        still: list[Dependent] = []
        for dep in pending:
            if support_count(dep.record, dep.parents, dead, at) < min_support:
                cause = next(
                    (p.id for p in dep.parents if p.id in dead), dep.parents[0].id if dep.parents else ""
                )
                dead.add(dep.record.id)
                fallen.append((dep.record, cause))
                changed = True
            else:
                still.append(dep)
        pending = still
    return fallen


def support_ends(
    record: MemoryRecord,
    parents: Iterable[ParentState],
    dead: set[str],
    min_support: int,
    dead_sources: frozenset[str] = frozenset(),
) -> tuple[datetime, str] | None:
    """When a record that still has support now runs out of it, as its parents are superseded or
    invalidated: (that time, the parent whose change ends it), or None if support never runs out."""
    lasting = sum(1 for s in record.sources if s.status == "active" and s.id not in dead_sources)
    ends: list[tuple[datetime, str]] = []
    for p in parents:
        if p.id in dead or p.status in FORGOTTEN:
            continue
        end = min((t for t in (p.superseded_at, p.invalidated_at) if t is not None), default=None)
        if end is None:
            lasting += 1
        else:
            ends.append((end, p.id))
    if lasting >= min_support or lasting + len(ends) < min_support:
        return None
    ends.sort()
    return ends[lasting + len(ends) - min_support]


def support_runs_out(
    dependents: Iterable[Dependent],
    ends: Mapping[str, datetime],
    min_support: int,
    dead: frozenset[str] = frozenset(),
    dead_sources: frozenset[str] = frozenset(),
) -> list[tuple[MemoryRecord, datetime, str]]:
    """Dependents whose support runs out earlier than they are invalidated now, once the
    records in ``ends`` stop holding at the given times (and ``dead`` records and
    ``dead_sources`` are forgotten): (record, when its support runs out, the parent whose end
    ends it), transitively: a dependent's new end moves the ends of those derived from it.

    Support is recomputed from every parent's end, whatever the order the ends were
    recorded in: the record is invalidated when the last support it needs has ended,
    even if that end was recorded before the change that made it the last.
    """
    deps = [d for d in dependents if d.record.status not in FORGOTTEN and d.record.id not in dead]
    states = {p.id: p for d in deps for p in d.parents}
    for rid, at in ends.items():
        held = states.get(rid)
        if held is not None and (held.invalidated_at is None or at < held.invalidated_at):
            states[rid] = replace(held, invalidated_at=at)
    own = {d.record.id: d.invalidated_at for d in deps}
    for rid, at in ends.items():  # a change in the same batch already ends these
        if rid in own:
            current = own[rid]
            own[rid] = at if current is None or at < current else current
    fallen: dict[str, tuple[MemoryRecord, datetime, str]] = {}
    changed = True
    while changed:
        changed = False
        for dep in deps:
            rid = dep.record.id
            found = support_ends(
                dep.record, (states.get(p.id, p) for p in dep.parents), set(dead), min_support, dead_sources
            )
            if found is None:
                continue
            at, cause = found
            current = own[rid]
            if current is not None and current <= at:
                continue
            own[rid] = at
            fallen[rid] = (dep.record, at, cause)
            held = states.get(rid)
            if held is not None:
                states[rid] = replace(held, invalidated_at=at)
            changed = True
    return list(fallen.values())
