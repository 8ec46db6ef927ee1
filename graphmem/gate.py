"""The read gate (SPEC §3): the first failing check is a candidate's drop reason.

Pure functions over a record and the graph facts a backend found for it. The
Neo4j backend evaluates the same checks inside the database; the shared test
suite proves both give the same reason for every candidate.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from graphmem.model import DropReason, Kind, MemoryRecord, ReadContext, Status

__all__ = ["Candidate", "GateResult", "drop_reason", "run_gate", "validity_window"]

_STATUS_REASONS = {
    Status.PENDING_APPROVAL: DropReason.PENDING_APPROVAL,
    Status.CONTESTED: DropReason.CONTESTED,
    Status.REVOKED: DropReason.REVOKED,
    Status.RELEASED: DropReason.RELEASED,
    Status.ERASED: DropReason.ERASED,
}


@dataclass(frozen=True, slots=True)
class Candidate:
    """A record plus what the graph says about it, independent of who asks.

    ``superseded_at`` / ``invalidated_at`` are the earliest times a
    ``SUPERSEDES`` / ``INVALIDATED_BY`` edge took effect; ``start``/``end`` are
    the validity window (see ``validity_window``); ``recency`` (valid from,
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

    @classmethod
    def of(
        cls, record: MemoryRecord, superseded_at: datetime | None, invalidated_at: datetime | None
    ) -> Candidate:
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
        )


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
    now = ctx.now
    if candidate.kind not in ctx.kinds:
        return DropReason.KIND_NOT_REQUESTED
    if candidate.tenant != ctx.tenant:
        return DropReason.WRONG_TENANT
    if candidate.policy != ctx.policy:
        return DropReason.POLICY_MISMATCH
    if candidate.status is not Status.ACTIVE:
        return _STATUS_REASONS[candidate.status]
    if candidate.start is not None and now < candidate.start:
        return DropReason.NOT_YET_VALID
    if candidate.end is not None and now >= candidate.end:
        return DropReason.EXPIRED
    if candidate.superseded_at is not None and candidate.superseded_at <= now:
        return DropReason.SUPERSEDED
    if candidate.invalidated_at is not None and candidate.invalidated_at <= now:
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
    embedding) of those whose reason is None.
    """

    verdicts: list[tuple[str, str, DropReason | None]]
    survivors: list[tuple[str, str, float, tuple[float, ...] | None]]


def run_gate(candidates: list[tuple[Candidate, bool]], ctx: ReadContext) -> GateResult:
    """The reference gate over (candidate, in_scope) pairs."""
    verdicts: list[tuple[str, str, DropReason | None]] = []
    survivors: list[tuple[str, str, float, tuple[float, ...] | None]] = []
    for cand, in_scope in candidates:
        reason = drop_reason(cand, ctx, in_scope)
        verdicts.append((cand.id, cand.fingerprint, reason))
        if reason is None:
            record = cand.record
            assert record is not None, "the reference gate runs over whole records"
            survivors.append((cand.id, record.content, cand.recency, record.embedding))
    return GateResult(verdicts, survivors)
