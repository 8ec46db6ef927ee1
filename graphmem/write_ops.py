"""The write gate on ``MemoryStore`` (SPEC §4): agents propose, the store decides.

``propose`` runs the pure policy (``graphmem.policy``), then deduplicates,
detects conflicting claims on the same subject, and writes — with an audit
event for every step. ``approve``/``reject`` settle pending proposals;
``contest``/``resolve`` settle conflicts; ``reauthorise`` copies records under
a new policy version instead of editing them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphmem._args import check_id, check_ids, check_instance, check_tenant, check_text
from graphmem._core import StoreCore, transactional
from graphmem.backends.base import AddEdge, AppendAudit, Op, PutRecord, UpdateRecord
from graphmem.contracts import check_record
from graphmem.errors import ConflictError, ContractViolation, GraphmemError, NotFound
from graphmem.model import (
    AuditEvent,
    MemoryRecord,
    Source,
    Status,
    Trust,
    WriteDecision,
    WriteOutcome,
    WritePolicy,
    WriteProposal,
    WriteReason,
)
from graphmem.model.canonical import sha256
from graphmem.policy import PolicyVerdict, approved_record, decide, dedup_text, find_conflicts, find_duplicate
from graphmem.policy.merge import untrusted_promotion

__all__ = ["WriteGateOps"]

_LIVE = (Status.ACTIVE, Status.PENDING_APPROVAL, Status.CONTESTED)


def _actor(value: object, what: str) -> str:
    """Who acts (an approver, a contester): 1-128 characters, not blank."""
    actor = str(check_text(value, what, max_chars=128))
    if not actor.strip():
        raise ContractViolation(f"{what} must name who acts", code="bad_argument")
    return actor


def _subject_tags(record: MemoryRecord) -> list[str]:
    return [t for t in record.tags if t.startswith("subject:")]


class WriteGateOps(StoreCore):
    """Mixed into ``MemoryStore``: proposals, approvals, conflicts, policy versions."""

    def _audit(
        self, tenant: str, action: str, ids: tuple[str, ...], reason: str | None, **details: Any
    ) -> Op:
        event = AuditEvent(
            tenant=tenant,
            action=action,
            actor=details.pop("actor", None),
            record_ids=ids,
            reason=reason,
            at=self.clock(),
            details=details,
        )
        return AppendAudit(event=event)

    def propose(
        self, proposal: WriteProposal, *, source_trust: Trust | None = None, policy: WritePolicy | None = None
    ) -> WriteDecision:
        """Submit a proposed memory; the store accepts it, holds it for approval, or rejects it.

        ``source_trust`` is what the caller's platform knows about the sources
        (agents' own trust claims are not believed otherwise). Rejections,
        redactions, merges and conflicts are decisions, not exceptions; the
        audit log records each without the proposed text.
        """
        if not isinstance(proposal, WriteProposal):
            raise ContractViolation("propose() takes a WriteProposal", code="not_a_proposal")
        if policy is not None:
            check_instance(policy, WritePolicy, "not_a_policy", "policy")
        policy = policy or self.write_policy
        # The gate needs only the proposal and the policy (no store, no clock): it judges before the
        # write transaction, so the transaction (on the embedded store, the database's write lock)
        # is held for the store's part alone, not for the rules and the detector.
        return self._propose_judged(proposal, policy, decide(proposal, policy, source_trust))

    @transactional
    def _propose_judged(
        self, proposal: WriteProposal, policy: WritePolicy, verdict: PolicyVerdict
    ) -> WriteDecision:
        """``propose``'s write: the audit, the record dated now, the merges and conflicts, in one
        transaction."""
        tenant = proposal.tenant
        proposed = self._audit(
            tenant,
            "proposed",
            (),
            None,
            actor=proposal.proposed_by,
            proposal_id=proposal.proposal_id,
            kind=proposal.kind.value,
            scope=proposal.scope,
        )
        verdict = verdict.created_at(self.clock())
        record = verdict.record
        if verdict.outcome is WriteOutcome.REJECTED or record is None:
            return self._reject(proposed, verdict.to_decision(), tenant)
        try:
            check_record(record)
        except ContractViolation as err:
            rejected = WriteDecision(
                outcome=WriteOutcome.REJECTED,
                reason=WriteReason.INVALID,
                proposal_id=proposal.proposal_id,
                message=err.message,
                findings=(err.code,),
                policy=policy.version,
            )
            return self._reject(proposed, rejected, tenant)
        if proposal.id is None:
            # Identical proposals get the same id, so concurrent ones cannot both create a
            # record. The backend's name digest (keyed on Neo4j): a tombstone keeps the id.
            key = self.backend.name_digest(
                tenant, dedup_text(tenant, record.scope, record.kind, record.content)
            )
            record = record.model_copy(update={"id": f"mem-{key[:32]}"})
        record = record.model_copy(update={"proposal_id": proposal.proposal_id})
        decision = verdict.to_decision(record.id)
        if record.derived_from:
            record, decision = self._derived_taint(record, decision, policy)
        for attempt in range(3):
            try:
                return self._write_proposal(proposed, decision, record, policy)
            except ConflictError:
                if attempt == 2:
                    raise
        raise GraphmemError("unreachable", code="internal")  # pragma: no cover

    def _derived_taint(
        self, record: MemoryRecord, decision: WriteDecision, policy: WritePolicy
    ) -> tuple[MemoryRecord, WriteDecision]:
        """A proposal derived only from tainted records is tainted; promoted (see
        ``untrusted_promotion``) it waits for approval instead of being accepted."""
        supports = self.backend.get_many(record.tenant, list(record.derived_from))
        if not supports or not all(s.tainted for s in supports):
            return record, decision
        record = record.model_copy(update={"untrusted_lineage": True})
        held = untrusted_promotion(record, supports, policy)
        if held is None or decision.outcome is not WriteOutcome.ACCEPTED:
            return record, decision
        record = record.model_copy(update={"status": Status.PENDING_APPROVAL})
        decision = decision.model_copy(
            update={
                "outcome": WriteOutcome.PENDING_APPROVAL,
                "reason": WriteReason.NEEDS_APPROVAL_UNTRUSTED,
                "message": held,
            }
        )
        return record, decision

    def _reject(self, proposed: Op, decision: WriteDecision, tenant: str) -> WriteDecision:
        rejected = self._audit(
            tenant,
            "rejected",
            (),
            decision.reason.value,
            proposal_id=decision.proposal_id,
            findings=list(decision.findings),
            policy=decision.policy,
        )
        self._apply([proposed, rejected])
        return decision

    def _write_proposal(
        self, proposed: Op, decision: WriteDecision, record: MemoryRecord, policy: WritePolicy
    ) -> WriteDecision:
        tenant = record.tenant
        same_content = [
            r
            for r in self.backend.by_content_hash(tenant, record.content_hash)
            if (r.scope, r.kind) == (record.scope, record.kind)
        ]
        taken = self.backend.get(tenant, record.id)
        # Another writer may have created this deterministic id since the hash lookup.
        live_twin = taken if taken is not None and taken.status in _LIVE else None
        duplicate = find_duplicate(record, same_content) or live_twin
        if duplicate is not None:
            known = {s.id for s in duplicate.sources}
            merged = duplicate.model_copy(
                update={"sources": (*duplicate.sources, *(s for s in record.sources if s.id not in known))}
            )
            outcome = decision.model_copy(
                update={
                    "outcome": WriteOutcome.ACCEPTED,
                    "reason": WriteReason.DUPLICATE_MERGED,
                    "record_id": duplicate.id,
                    "message": f"merged into {duplicate.id}",
                }
            )
            audit = self._audit(
                tenant,
                "accepted",
                (duplicate.id,),
                WriteReason.DUPLICATE_MERGED.value,
                proposal_id=decision.proposal_id,
                policy=policy.version,
            )
            self._apply(
                [proposed, PutRecord(record=merged, replace=True, prior=self._prior(duplicate)), audit]
            )
            return outcome
        if taken is not None:
            # The deterministic id belongs to a forgotten record: this is a new memory.
            record = record.model_copy(update={"id": f"{record.id[:40]}-{decision.proposal_id[-12:]}"})
            decision = decision.model_copy(update={"record_id": record.id})
        rivals = self._rivals(record)
        ops: list[Op] = [proposed]
        if rivals:
            record = record.model_copy(update={"status": Status.CONTESTED})
            ops += [
                PutRecord(
                    record=r.model_copy(update={"status": Status.CONTESTED}),
                    replace=True,
                    prior=self._prior(r),
                )
                for r in rivals
            ]
            ops.append(
                self._audit(
                    tenant,
                    "contested",
                    (record.id, *(r.id for r in rivals)),
                    "conflicting claim",
                    proposal_id=decision.proposal_id,
                )
            )
            decision = decision.model_copy(
                update={
                    "outcome": WriteOutcome.ACCEPTED,
                    "reason": WriteReason.CONFLICT_CONTESTED,
                    "message": f"conflicts with {[r.id for r in rivals]}; all contested until resolve()",
                }
            )
        action = "pending_approval" if record.status is Status.PENDING_APPROVAL else "accepted"
        ops.append(
            self._audit(
                tenant,
                action,
                (record.id,),
                decision.reason.value,
                proposal_id=decision.proposal_id,
                findings=list(decision.findings),
                policy=policy.version,
            )
        )
        self._write_new([record], extra=ops, action=None)
        return decision

    def _rivals(self, record: MemoryRecord) -> list[MemoryRecord]:
        """Live records making a different claim on one of ``record``'s subjects."""
        tagged = [r for t in _subject_tags(record) for r in self.backend.with_tag(record.tenant, t)]
        return find_conflicts(record, tagged)

    # -- approvals --------------------------------------------------------

    def approvals(self, tenant: str) -> list[MemoryRecord]:
        """Records waiting for a human decision."""
        return self.backend.records_with_status(check_tenant(tenant), [Status.PENDING_APPROVAL])

    def _pending(self, tenant: str, proposal_id: str) -> MemoryRecord:
        tenant = check_tenant(tenant)
        proposal_id = check_id(proposal_id, "proposal id")
        for record in self.backend.records_with_status(tenant, list(Status)):
            if record.proposal_id == proposal_id:
                if record.status is not Status.PENDING_APPROVAL:
                    raise ConflictError(
                        f"proposal {proposal_id!r} is no longer pending (record {record.id!r} is "
                        f"{record.status.value})",
                        code="not_pending",
                    )
                return record
        raise NotFound(f"no proposal {proposal_id!r} in tenant {tenant!r}")

    @transactional
    def approve(self, tenant: str, proposal_id: str, approver: str) -> MemoryRecord:
        """Make a pending proposal's record active (contested if it now conflicts), citing the approval."""
        approver = _actor(approver, "approver")
        pending = self._pending(tenant, proposal_id)
        record = approved_record(pending, approver, at=self.clock())
        rivals = self._rivals(record)
        ops: list[Op] = []
        if rivals:
            record = record.model_copy(update={"status": Status.CONTESTED})
            ops += [
                PutRecord(
                    record=r.model_copy(update={"status": Status.CONTESTED}),
                    replace=True,
                    prior=self._prior(r),
                )
                for r in rivals
            ]
        ops.insert(0, PutRecord(record=record, replace=True, prior=self._prior(pending)))
        ops.append(
            self._audit(
                record.tenant,
                "approved",
                (record.id, *(r.id for r in rivals)),
                "approved",
                actor=approver,
                proposal_id=proposal_id,
            )
        )
        self._apply(ops)
        return record

    @transactional
    def reject(self, tenant: str, proposal_id: str, approver: str, reason: str) -> MemoryRecord:
        """Turn down a pending proposal: its record is revoked (kept for audit, never eligible)."""
        approver = _actor(approver, "approver")
        reason = str(check_text(reason, "reason", max_chars=2000))
        record = self._pending(tenant, proposal_id).model_copy(update={"status": Status.REVOKED})
        audit = self._audit(
            record.tenant, "rejected", (record.id,), reason, actor=approver, proposal_id=proposal_id
        )
        self._apply([UpdateRecord(record=record), audit])
        return record

    # -- conflicts --------------------------------------------------------

    @transactional
    def contest(self, tenant: str, record_id: str, by: str, reason: str) -> MemoryRecord:
        """Mark a record contested (excluded from recall as ``contested``) until ``resolve``."""
        tenant = check_tenant(tenant)
        record_id = check_id(record_id)
        by = _actor(by, "by")
        reason = str(check_text(reason, "reason", max_chars=2000))
        record = self.backend.get(tenant, record_id)
        if record is None:
            raise NotFound(f"no record {record_id!r} in tenant {tenant!r}")
        if record.status not in (Status.ACTIVE, Status.CONTESTED):
            raise ConflictError(
                f"record {record_id!r} is {record.status.value}; only active records can be contested",
                code="not_active",
            )
        contested = record.model_copy(update={"status": Status.CONTESTED})
        audit = self._audit(tenant, "contested", (record_id,), reason, actor=by)
        self._apply([UpdateRecord(record=contested, prior=self._prior(record)), audit])
        return contested

    @transactional
    def resolve(self, tenant: str, record_id: str, winner_id: str, reason: str) -> MemoryRecord:
        """Settle a conflict: ``winner_id`` becomes active; every other record contested on the same
        subject (or ``record_id`` itself) becomes active but superseded by the winner from now on."""
        tenant = check_tenant(tenant)
        record_id, winner_id = check_id(record_id), check_id(winner_id, "winner id")
        reason = str(check_text(reason, "reason", max_chars=2000))
        winner = self.backend.get(tenant, winner_id)
        record = self.backend.get(tenant, record_id)
        if winner is None or record is None:
            raise NotFound(f"no record {(winner_id if winner is None else record_id)!r} in tenant {tenant!r}")
        losers = {record.id: record} if record.id != winner.id else {}
        for tag in _subject_tags(winner):
            losers.update(
                {r.id: r for r in self.backend.with_tag(tenant, tag) if r.status is Status.CONTESTED}
            )
        losers.pop(winner.id, None)
        for loser in losers.values():
            if (loser.kind, loser.scope) != (winner.kind, winner.scope):
                raise ContractViolation(
                    f"{loser.id!r} and {winner_id!r} differ in kind or scope; resolve them separately",
                    code="resolve_mismatch",
                )
        now = self.clock()
        ops: list[Op] = [
            UpdateRecord(
                record=winner.model_copy(update={"status": Status.ACTIVE}), prior=self._prior(winner)
            )
        ]
        for loser in losers.values():
            ops.append(
                UpdateRecord(
                    record=loser.model_copy(update={"status": Status.ACTIVE}), prior=self._prior(loser)
                )
            )
            ops.append(
                AddEdge(tenant=tenant, label="SUPERSEDES", src=winner.id, dst=loser.id, at=now, reason=reason)
            )
        ops.append(self._audit(tenant, "resolved", (winner.id, *losers), reason))
        self._apply(ops)
        return winner.model_copy(update={"status": Status.ACTIVE})

    # -- policy versions --------------------------------------------------

    @transactional
    def reauthorise(
        self, tenant: str, record_ids: Sequence[str], policy: WritePolicy, approver: str, reason: str
    ) -> list[MemoryRecord]:
        """Copy records under ``policy.version`` as new records derived from the old ones.

        Old records keep their policy version (reads under it still see them);
        nothing is edited in place. Each copy gets a fresh id ``<old>.p-<version>``.
        """
        tenant = check_tenant(tenant)
        record_ids = check_ids(record_ids)
        check_instance(policy, WritePolicy, "not_a_policy", "policy")
        approver = _actor(approver, "approver")
        reason = str(check_text(reason, "reason", max_chars=2000))
        found = {r.id: r for r in self.backend.get_many(tenant, list(record_ids))}
        missing = [i for i in record_ids if i not in found]
        if missing:
            raise NotFound(f"no record(s) {missing!r} in tenant {tenant!r}")
        approval = Source(type="human_approval", trust=Trust.TRUSTED, locator=f"approver:{approver}")
        copies = [
            MemoryRecord.model_validate(
                {
                    **r.model_dump(),
                    "id": f"{r.id[:100]}.p-{sha256(policy.version)[:8]}",
                    "policy": policy.version,
                    "created_at": self.clock(),
                    "sources": (*r.sources, approval),
                    "derived_from": (r.id,),
                    "proposal_id": None,
                }
            )
            for r in found.values()
        ]
        return self._write_new(
            copies,
            action="reauthorised",
            reason=reason,
            record_ids=tuple(c.id for c in copies) + tuple(found),
        )
