"""The read gate (SPEC §3): the first failing check is a candidate's drop reason.

Pure functions over a record and the graph facts a backend found for it: part of
the model, so a backend that needs a record's validity window or drop reason reads
them here without importing the store's layers. The Neo4j backend evaluates the
same checks inside the database; the shared test suite proves both give the same
reason for every candidate.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from graphmem.model.enums import DropReason, Kind, Status
from graphmem.model.read import ReadContext
from graphmem.model.records import MemoryRecord

__all__ = [
    "Candidate",
    "Change",
    "GateResult",
    "Version",
    "drop_reason",
    "known_ends",
    "run_gate",
    "steady_until",
    "unknown_at",
    "validity_window",
]

_STATUS_REASONS = {
    Status.PENDING_APPROVAL: DropReason.PENDING_APPROVAL,
    Status.CONTESTED: DropReason.CONTESTED,
    Status.REVOKED: DropReason.REVOKED,
    Status.RELEASED: DropReason.RELEASED,
    Status.ERASED: DropReason.ERASED,
}


Version = tuple[datetime, Status, str]
"""An earlier version of a record: (until when the store held it, its status, its fingerprint)."""

_FORGOTTEN = frozenset({Status.REVOKED, Status.RELEASED, Status.ERASED})

Change = tuple[bool, datetime, datetime | None]
"""A lineage change to a record: (a supersession, else an invalidation; when it takes
effect; when the store recorded it — None for a change known at every time)."""


def known_ends(changes: Iterable[Change], as_of: datetime) -> tuple[datetime | None, datetime | None]:
    """(superseded at, invalidated at) as the store knew them at ``as_of``: the earliest
    effect of the changes recorded by then."""
    superseded: datetime | None = None
    invalidated: datetime | None = None
    for is_supersession, at, recorded in changes:
        if recorded is not None and recorded > as_of:
            continue
        if is_supersession:
            superseded = at if superseded is None or at < superseded else superseded
        else:
            invalidated = at if invalidated is None or at < invalidated else invalidated
    return superseded, invalidated


@dataclass(frozen=True, slots=True)
class Candidate:
    """A record plus what the graph says about it, independent of who asks.

    ``superseded_at`` / ``invalidated_at`` are the earliest times a
    ``SUPERSEDES`` / ``INVALIDATED_BY`` edge took effect; ``start``/``end`` are
    the validity window (see ``validity_window``); ``known_from`` is when the store
    recorded the record (its ``created_at``) and ``changed_at`` the latest recorded time
    of its supersessions, invalidations and overwrites: a read whose knowledge time is
    earlier needs ``changes`` (every such change) and ``versions`` (the versions it
    replaced) to see the record as it was then. ``recency`` (valid from,
    else event time, else creation, as a timestamp) breaks ranking ties. The
    gate's inputs are copied into the candidate's own slots so that checking a
    thousand candidates touches a thousand small objects, not every record's
    dictionary. Backends may cache candidates until the record or its edges change.
    """

    record: MemoryRecord | None  # None when a backend built it from stored gate columns
    superseded_at: datetime | None
    invalidated_at: datetime | None
    fingerprint: str
    start: datetime | None
    end: datetime | None
    recency: float
    sensitivity_rank: int
    id: str
    kind: Kind
    tenant: str
    policy: str
    status: Status
    succeeded: bool
    preconditions: frozenset[str]
    known_from: datetime | None = None
    changed_at: datetime | None = None
    changes: tuple[Change, ...] | None = None
    versions: tuple[Version, ...] = ()

    @classmethod
    def of(
        cls,
        record: MemoryRecord,
        superseded_at: datetime | None = None,
        invalidated_at: datetime | None = None,
        changes: Iterable[Change] | None = None,
        versions: Iterable[Version] = (),
    ) -> Candidate:
        """The candidate of ``record``: given every lineage change to it (``changes``), or
        only the earliest effect times of its supersessions and invalidations (known always)."""
        held = None if changes is None else tuple(changes)
        if held is not None:
            superseded_at, invalidated_at = known_ends(((c[0], c[1], None) for c in held), record.created_at)
        kept = tuple(sorted(versions))
        recorded = [c[2] for c in held or () if c[2] is not None] + [v[0] for v in kept]
        start, end = validity_window(record)
        recency = (record.valid_from or record.event_time or record.created_at).timestamp()
        return cls(
            record,
            superseded_at,
            invalidated_at,
            record.fingerprint(),
            start,
            end,
            recency,
            record.sensitivity.rank,
            record.id,
            record.kind,
            record.tenant,
            record.policy,
            record.status,
            record.succeeded,
            frozenset(record.preconditions),
            record.created_at,
            max(recorded, default=None),
            held,
            kept,
        )

    def version_at(self, as_of: datetime) -> tuple[Status, str]:
        """(status, fingerprint) as the store held them at ``as_of``; forgetting holds always."""
        if self.changed_at is None or as_of >= self.changed_at or self.status in _FORGOTTEN:
            return self.status, self.fingerprint
        for until, status, fingerprint in self.versions:  # oldest first
            if until > as_of:
                return status, fingerprint
        return self.status, self.fingerprint

    def ends_known_at(self, as_of: datetime) -> tuple[datetime | None, datetime | None]:
        """(superseded at, invalidated at) as the store knew them at ``as_of``."""
        if self.changed_at is None or as_of >= self.changed_at:
            return self.superseded_at, self.invalidated_at
        if self.changes is None:  # a backend leaves them out when only versions changed since
            return self.superseded_at, self.invalidated_at
        return known_ends(self.changes, as_of)


def steady_until(candidate: Candidate, at: datetime) -> datetime | None:
    """The earliest of the candidate's own times later than ``at`` (None: none is).

    ``drop_reason`` compares a read's ``now`` and knowledge time only with the candidate's
    times (known from, validity start and end, changed at, lineage ends, kept versions'
    ends, each change's effect and recording), always as ``x >= t`` or its negation. Each
    such test is the same for every ``x`` in ``[at, steady_until(candidate, at))``: for a
    context (everything else the same) whose ``now`` and knowledge time each stay in the
    interval that began where they were checked, the verdict is the one found there."""
    times = [
        candidate.known_from,
        candidate.start,
        candidate.end,
        candidate.changed_at,
        candidate.superseded_at,
        candidate.invalidated_at,
    ]
    times += [until for until, _, _ in candidate.versions]
    for _, effect, recorded in candidate.changes or ():
        times += (effect, recorded)
    return min((t for t in times if t is not None and t > at), default=None)


def validity_window(record: MemoryRecord) -> tuple[datetime | None, datetime | None]:
    """Half-open ``[start, end)``.

    Start is valid_from (else event time); end is the earlier of valid_to and expires_at.
    """
    start = record.valid_from or record.event_time
    ends = [t for t in (record.valid_to, record.expires_at) if t is not None]
    return start, (min(ends) if ends else None)


def drop_reason(candidate: Candidate, ctx: ReadContext, in_scope: bool) -> DropReason | None:
    """The first failing check in SPEC §3's order, or ``None`` if the record is eligible.

    ``in_scope`` is whether an ``APPLIES_TO`` path leads from the record into the
    context's scopes (a traversal the backend made). ``selection_limit`` and
    ``below_min_score`` are decided after ranking, not here.
    """
    now, as_of = ctx.now, ctx.known_at
    if candidate.kind not in ctx.kinds:
        return DropReason.KIND_NOT_REQUESTED
    if candidate.tenant != ctx.tenant:
        return DropReason.WRONG_TENANT
    if candidate.policy != ctx.policy:
        return DropReason.POLICY_MISMATCH
    status = candidate.version_at(as_of)[0]
    if status is not Status.ACTIVE:
        return _STATUS_REASONS[status]
    if candidate.known_from is not None and as_of < candidate.known_from:
        return DropReason.NOT_YET_VALID  # recorded after the read's knowledge time
    if candidate.start is not None and now < candidate.start:
        return DropReason.NOT_YET_VALID
    if candidate.end is not None and now >= candidate.end:
        return DropReason.EXPIRED
    superseded_at, invalidated_at = candidate.ends_known_at(as_of)
    if superseded_at is not None and superseded_at <= now:
        return DropReason.SUPERSEDED
    if invalidated_at is not None and invalidated_at <= now:
        return DropReason.INVALIDATED
    if not in_scope:
        return DropReason.SCOPE_MISMATCH
    if candidate.sensitivity_rank > ctx.clearance.rank:
        return DropReason.INSUFFICIENT_CLEARANCE
    if candidate.kind is Kind.PROCEDURAL:
        if not candidate.succeeded:
            return DropReason.OUTCOME_INELIGIBLE
        if not candidate.preconditions.issubset(ctx.environment):
            return DropReason.PRECONDITION_UNMET
    return None


@dataclass(slots=True)
class GateResult:
    """The gate's output for one read, whichever backend evaluated it.

    ``verdicts`` has one (record id, fingerprint, drop reason or None) per
    candidate; ``survivors`` the ranking inputs (id, content, recency,
    embedding) of those whose reason is None; ``models`` the embedding model of
    each survivor whose embedding names one.
    """

    verdicts: list[tuple[str, str, DropReason | None]]
    survivors: list[tuple[str, str, float, tuple[float, ...] | None]]
    models: dict[str, str] = field(default_factory=dict)


def unknown_at(candidate: Candidate, as_of: datetime) -> bool:
    """Whether the store had not recorded the candidate yet at ``as_of``: a recall as of
    then leaves it out altogether (it was no candidate then), so later writes leave the
    receipt of an earlier recall as it was; ``explain`` calls it ``not_yet_valid``."""
    return candidate.known_from is not None and as_of < candidate.known_from


def run_gate(candidates: list[tuple[Candidate, bool]], ctx: ReadContext) -> GateResult:
    """The reference gate over (candidate, in_scope) pairs."""
    verdicts: list[tuple[str, str, DropReason | None]] = []
    survivors: list[tuple[str, str, float, tuple[float, ...] | None]] = []
    models: dict[str, str] = {}
    as_of = ctx.known_at
    for cand, in_scope in candidates:
        if unknown_at(cand, as_of):
            continue
        reason = drop_reason(cand, ctx, in_scope)
        verdicts.append((cand.id, cand.version_at(as_of)[1], reason))
        if reason is None:
            record = cand.record
            assert record is not None, "the reference gate runs over whole records"
            survivors.append((cand.id, record.content, cand.recency, record.embedding))
            if record.embedding_model is not None:
                models[cand.id] = record.embedding_model
    return GateResult(verdicts, survivors, models)
