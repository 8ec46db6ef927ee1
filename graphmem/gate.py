"""The read gate (SPEC §3): the first failing check is a candidate's drop reason.

Pure functions over a record and the graph facts a backend found for it. The
Neo4j backend evaluates the same checks inside the database; the shared test
suite proves both give the same reason for every candidate.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from graphmem.model import DropReason, Kind, MemoryRecord, ReadContext, Status

__all__ = ["Candidate", "drop_reason", "validity_window"]

_STATUS_REASONS = {
    Status.PENDING_APPROVAL: DropReason.PENDING_APPROVAL,
    Status.CONTESTED: DropReason.CONTESTED,
    Status.REVOKED: DropReason.REVOKED,
    Status.RELEASED: DropReason.RELEASED,
    Status.ERASED: DropReason.ERASED,
}


@dataclass(frozen=True, slots=True)
class Candidate:
    """A record plus what the graph says about it at read time.

    ``superseded_at`` / ``invalidated_at`` are the earliest times a
    ``SUPERSEDES`` / ``INVALIDATED_BY`` edge took effect; ``in_scope`` is whether
    an ``APPLIES_TO`` path leads from the record to the context's scopes.
    """

    record: MemoryRecord
    superseded_at: datetime | None
    invalidated_at: datetime | None
    in_scope: bool
    fingerprint: str


def validity_window(record: MemoryRecord) -> tuple[datetime | None, datetime | None]:
    """Half-open ``[start, end)``.

    Start is valid_from (else event time); end is the earlier of valid_to and expires_at.
    """
    start = record.valid_from or record.event_time
    ends = [t for t in (record.valid_to, record.expires_at) if t is not None]
    return start, (min(ends) if ends else None)


def drop_reason(candidate: Candidate, ctx: ReadContext) -> DropReason | None:
    """The first failing check in SPEC §3's order, or ``None`` if the record is eligible.

    ``selection_limit`` and ``below_min_score`` are decided after ranking, not here.
    """
    record = candidate.record
    now = ctx.now
    if record.kind not in ctx.kinds:
        return DropReason.KIND_NOT_REQUESTED
    if record.tenant != ctx.tenant:
        return DropReason.WRONG_TENANT
    if record.policy != ctx.policy:
        return DropReason.POLICY_MISMATCH
    if record.status is not Status.ACTIVE:
        return _STATUS_REASONS[record.status]
    start, end = validity_window(record)
    if start is not None and now < start:
        return DropReason.NOT_YET_VALID
    if end is not None and now >= end:
        return DropReason.EXPIRED
    if candidate.superseded_at is not None and candidate.superseded_at <= now:
        return DropReason.SUPERSEDED
    if candidate.invalidated_at is not None and candidate.invalidated_at <= now:
        return DropReason.INVALIDATED
    if not candidate.in_scope:
        return DropReason.SCOPE_MISMATCH
    if record.sensitivity.rank > ctx.clearance.rank:
        return DropReason.INSUFFICIENT_CLEARANCE
    if record.kind is Kind.PROCEDURAL:
        if not record.succeeded:
            return DropReason.OUTCOME_INELIGIBLE
        if not set(record.preconditions) <= set(ctx.environment):
            return DropReason.PRECONDITION_UNMET
    return None
