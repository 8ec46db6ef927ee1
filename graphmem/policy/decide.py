"""The write gate's decision for one proposal (SPEC §4). Pure: no store, no clock unless given.

``decide`` covers every rule that needs only the proposal. The two rules that
need stored records — exact duplicates and conflicting claims — are the
store's: it calls ``graphmem.policy.merge`` with the records it fetched, after
an accepted or pending verdict.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from graphmem.errors import ContractViolation
from graphmem.model import Kind, MemoryRecord, Sensitivity, Status, Trust, scope_type
from graphmem.model.base import GraphmemModel
from graphmem.model.write import WriteDecision, WriteOutcome, WritePolicy, WriteProposal, WriteReason
from graphmem.policy.detector import InjectionScore, load_detector, own_text
from graphmem.policy.poisoning import concealed_findings, only_in_reported_quotations, scan_poisoning
from graphmem.policy.prefilter import Literals
from graphmem.policy.secrets import find_secrets, redact_secrets

__all__ = ["PolicyVerdict", "decide", "effective_trust"]


class PolicyVerdict(GraphmemModel):
    """What the pure gate decided, and the record to write if anything is written.

    When rejected, ``record`` and ``proposal`` are ``None`` (nothing of a rejected
    proposal should be kept). Otherwise ``proposal`` is the proposal as judged
    (secrets redacted) — keep it for ``approve`` and audit — and ``record`` is
    what to write, with status ``active`` or ``pending_approval``.
    """

    outcome: WriteOutcome
    reason: WriteReason
    proposal_id: str
    message: str
    findings: tuple[str, ...] = ()
    record: MemoryRecord | None = None
    proposal: WriteProposal | None = None
    policy: str = "default"

    def created_at(self, now: datetime | None) -> PolicyVerdict:
        """This verdict with its record created at ``now`` (the same record ``decide`` makes when
        given ``now``): the store judges a proposal before its write transaction, and dates the
        record inside it, by the clock the rest of the write reads."""
        if self.record is None or self.proposal is None:
            return self
        record = self.proposal.to_record(self.record.status, self.policy, created_at=now)
        return self.model_copy(update={"record": record})

    def to_decision(self, record_id: str | None = None) -> WriteDecision:
        """The ``WriteDecision`` to return; ``record_id`` defaults to the verdict's record."""
        if record_id is None and self.record is not None:
            record_id = self.record.id
        return WriteDecision(
            outcome=self.outcome,
            reason=self.reason,
            proposal_id=self.proposal_id,
            record_id=None if self.outcome is WriteOutcome.REJECTED else record_id,
            message=self.message,
            findings=self.findings,
            policy=self.policy,
        )


def effective_trust(proposal: WriteProposal, policy: WritePolicy) -> Trust:
    """Trusted if any source is trusted (of a type the policy trusts), or, with no
    sources, if the proposer is one of ``policy.trusted_proposers``."""
    if not proposal.sources:
        return Trust.TRUSTED if proposal.proposed_by in policy.trusted_proposers else Trust.UNTRUSTED
    for source in proposal.sources:
        type_ok = policy.trusted_source_types is None or source.type in policy.trusted_source_types
        if source.trust is Trust.TRUSTED and type_ok:
            return Trust.TRUSTED
    return Trust.UNTRUSTED


def _verdict(
    proposal: WriteProposal,
    policy: WritePolicy,
    outcome: WriteOutcome,
    reason: WriteReason,
    message: str,
    findings: Iterable[str] = (),
    now: datetime | None = None,
) -> PolicyVerdict:
    record = judged = None
    if outcome is not WriteOutcome.REJECTED:
        status = Status.ACTIVE if outcome is WriteOutcome.ACCEPTED else Status.PENDING_APPROVAL
        record = proposal.to_record(status, policy.version, created_at=now)
        judged = proposal
    return PolicyVerdict(
        outcome=outcome,
        reason=reason,
        proposal_id=proposal.proposal_id,
        message=message,
        findings=tuple(dict.fromkeys(findings)),
        record=record,
        proposal=judged,
        policy=policy.version,
    )


def _stored_text(proposal: WriteProposal) -> dict[str, str]:
    """Every free-text field the store keeps or audits, by field path."""
    fields = {"content": proposal.content, "rationale": proposal.rationale}
    for i, source in enumerate(proposal.sources):
        fields[f"sources[{i}].quote"] = source.quote or ""
        fields[f"sources[{i}].locator"] = source.locator or ""
    for name in ("tags", "preconditions"):
        for i, value in enumerate(getattr(proposal, name)):
            fields[f"{name}[{i}]"] = value
    for name in ("procedure_name", "procedure_version", "outcome", "subject"):
        fields[name] = getattr(proposal, name) or ""
    return {k: v for k, v in fields.items() if v}


def _secret_labels(proposal: WriteProposal) -> list[str]:
    labels = []
    for path, text in _stored_text(proposal).items():
        for finding in find_secrets(text):
            labels.append(finding.label if path == "content" else f"{finding.label}@{path}")
    return list(dict.fromkeys(labels))


def _redacted(proposal: WriteProposal) -> WriteProposal:
    def red(text: str | None) -> str | None:
        return None if text is None else redact_secrets(text)[0]

    data = proposal.model_dump()
    data.update(
        content=red(proposal.content),
        rationale=red(proposal.rationale),
        sources=[
            {**s.model_dump(), "quote": red(s.quote), "locator": red(s.locator)} for s in proposal.sources
        ],
        tags=[red(t) for t in proposal.tags],
        preconditions=[red(p) for p in proposal.preconditions],
        procedure_name=red(proposal.procedure_name),
        procedure_version=red(proposal.procedure_version),
        outcome=red(proposal.outcome),
        subject=red(proposal.subject),
    )
    return WriteProposal.model_validate(data)


def _checked_trust(source_trust: Trust | str | None) -> Trust | None:
    """``source_trust`` as a ``Trust`` (``"untrusted"`` is ``Trust.UNTRUSTED``), or ``None``.

    Anything else is a ``ContractViolation``: a trust the gate cannot read must not pass as trusted.
    """
    if source_trust is None:
        return None
    try:
        return Trust(source_trust)
    except (TypeError, ValueError):
        raise ContractViolation(
            f"source_trust must be 'trusted', 'untrusted' or None, got {source_trust!r:.40}",
            code="bad_argument",
        ) from None


def decide(
    proposal: WriteProposal,
    policy: WritePolicy | None = None,
    source_trust: Trust | str | None = None,
    *,
    now: datetime | None = None,
) -> PolicyVerdict:
    """Judge ``proposal`` under ``policy``; the first failing rule decides.

    Order: restricted sensitivity; secrets anywhere the store keeps text
    (content, rationale, source quotes and locators, tags, …) — rejected, or
    redacted and judged further; poisoning in the content and source quotes;
    the injection detector on untrusted text (rejected above its high
    threshold); provenance for semantic/procedural; confidence; then approval —
    ``suspected_injection`` (untrusted text between the detector's thresholds, or
    quoting instruction-like text under ``reported_quotations="quarantine"``),
    broad scopes, procedures; else accepted.

    ``source_trust`` overrides ``effective_trust`` when the store knows better
    (it should not take an agent's word that its sources are trusted); ``"untrusted"`` and
    ``"trusted"`` are read as the two trusts, anything else is a ``ContractViolation``. Poisoning
    from untrusted evidence is rejected, unless it sits only inside quotations the
    author reports in prose (``WritePolicy.reported_quotations``: an incident report
    quoting an attack); from trusted evidence only concealed instructions are
    (``WritePolicy.trusted_poisoning``), so a trusted incident report may quote an
    attack. Messages and findings name detectors, kinds and fields, never the
    offending text.
    """
    source_trust = _checked_trust(source_trust)
    policy = policy or WritePolicy()
    rejected = WriteOutcome.REJECTED
    if policy.reject_restricted and proposal.sensitivity is Sensitivity.RESTRICTED:
        return _verdict(
            proposal,
            policy,
            rejected,
            WriteReason.RESTRICTED_SENSITIVITY,
            "restricted content is never stored in memory; keep it in its system of record",
        )

    notes = _secret_labels(proposal)
    if notes:
        if policy.secrets == "reject":
            return _verdict(
                proposal,
                policy,
                rejected,
                WriteReason.SECRET_DETECTED,
                f"the proposal contains secrets ({', '.join(notes)}); remove them and propose again",
                notes,
            )
        proposal = _redacted(proposal)

    trust = source_trust or effective_trust(proposal, policy)
    suspected = quoted = False
    texts = [proposal.content, *(s.quote for s in proposal.sources if s.quote)]
    detecting = policy.injection_detector == "on" and trust is Trust.UNTRUSTED
    p: float | None = None
    # A text the rules and the detector both scan (a folded text without quotations) is indexed once.
    shared: dict[str, Literals] = {}
    if policy.poisoning_check:
        judged = [_poisoning(text, trust, policy, shared) for text in texts]
        poison = sorted({label for labels, _ in judged for label in labels})
        reported = sorted({label for _, labels in judged for label in labels})
        if reported and policy.reported_quotations == "reject":
            poison = sorted({*poison, *reported})
        elif reported:
            notes = [*notes, *(f"quotation:{label}" for label in reported)]
            quoted = policy.reported_quotations == "quarantine"
        # A rule's finding the detector reads too, in the open, and scores below the policy's floor
        # does not reject on its own (``WritePolicy.rules_detector_floor``).
        if (
            poison
            and detecting
            and policy.rules_detector_floor > 0
            and not (reported and policy.reported_quotations == "reject")
        ):
            scores = _detector_scores(texts, shared)
            p = max(score.probability for score in scores)
            confirmed = max(score.segment_probability for score in scores)
            if confirmed < policy.rules_detector_floor and all(
                _read_by_detector(text, labels, shared)
                for text, (labels, _) in zip(texts, judged, strict=True)
                if labels
            ):
                notes = [*notes, *(f"unconfirmed:{label}" for label in poison)]
                poison = []
        if poison:
            where = "a trusted source, concealed" if trust is Trust.TRUSTED else "an untrusted source"
            return _verdict(
                proposal,
                policy,
                rejected,
                WriteReason.POISONING,
                f"instruction-like or authority-granting text from {where} ({', '.join(poison)})",
                [*notes, *poison],
            )

    if detecting:
        detector = load_detector()
        p = max(score.probability for score in _detector_scores(texts, shared)) if p is None else p
        if p >= detector.reject_at:
            return _verdict(
                proposal,
                policy,
                rejected,
                WriteReason.POISONING,
                f"the injection detector finds an instruction to an AI in untrusted text (p={p:.3f})",
                [*notes, "injection:detector"],
            )
        if p >= detector.quarantine_at:
            suspected = True
            notes = [*notes, "injection:suspected"]

    if proposal.kind in policy.provenance_kinds:
        support = len(proposal.sources) + len(proposal.derived_from)
        if support < policy.min_support:
            return _verdict(
                proposal,
                policy,
                rejected,
                WriteReason.MISSING_PROVENANCE,
                f"{proposal.kind} memory needs at least {policy.min_support} source or derived_from id; "
                f"it has {support}",
                notes,
            )

    if proposal.confidence < policy.min_confidence:
        return _verdict(
            proposal,
            policy,
            rejected,
            WriteReason.LOW_CONFIDENCE,
            f"confidence {proposal.confidence:g} is below the policy minimum {policy.min_confidence:g}",
            notes,
        )

    redacted = " (secrets redacted)" if any(n.startswith("secret") for n in notes) else ""
    pending = WriteOutcome.PENDING_APPROVAL
    if suspected or quoted:
        why = "may carry an instruction to an AI" if suspected else "quotes instruction-like text"
        return _verdict(
            proposal,
            policy,
            pending,
            WriteReason.SUSPECTED_INJECTION,
            f"untrusted text {why}; a person must approve{redacted}",
            notes,
            now,
        )
    if scope_type(proposal.scope) in policy.approval_scope_types:
        return _verdict(
            proposal,
            policy,
            pending,
            WriteReason.NEEDS_APPROVAL_BROAD_SCOPE,
            f"scope type {scope_type(proposal.scope)!r} is broad; a person must approve{redacted}",
            notes,
            now,
        )
    if policy.procedural_needs_approval and proposal.kind is Kind.PROCEDURAL:
        return _verdict(
            proposal,
            policy,
            pending,
            WriteReason.NEEDS_APPROVAL_PROCEDURAL,
            f"procedures are written only after a person approves{redacted}",
            notes,
            now,
        )
    reason = WriteReason.SECRET_REDACTED if redacted else WriteReason.ACCEPTED
    return _verdict(proposal, policy, WriteOutcome.ACCEPTED, reason, f"accepted{redacted}", notes, now)


def _detector_scores(texts: list[str], shared: dict[str, Literals]) -> list[InjectionScore]:
    """The detector's score of each of ``texts``."""
    detector = load_detector()
    return [detector.score(text, literals=shared) for text in texts]


def _read_by_detector(text: str, labels: list[str], shared: dict[str, Literals]) -> bool:
    """Whether every poisoning rule that fired on ``text`` (``labels``: ``poisoning:<rule>`` or
    ``poisoning:<rule>@<view>``) fired on words the detector reads, in the open: none of them
    concealed (hidden, obfuscated, encoded), and each fires again on the detector's own view of the
    text (``detector.own_text``: without the reported quotations and the string literals of code it
    leaves out)."""
    if concealed_findings(text):
        return False
    seen = {finding.rule for finding in scan_poisoning(own_text(text), literals=shared)}
    return {label.removeprefix("poisoning:").split("@")[0] for label in labels} <= seen


def _poisoning(
    content: str, trust: Trust, policy: WritePolicy, shared: dict[str, Literals]
) -> tuple[list[str], list[str]]:
    """The poisoning labels of ``content``; or, when every rule fired only inside quotations its
    author reports in prose, none, and those labels second."""
    if trust is Trust.UNTRUSTED or policy.trusted_poisoning == "all":
        findings = scan_poisoning(content, literals=shared)
        labels = sorted({f.label for f in findings})
        if findings and only_in_reported_quotations(content, findings):
            return [], labels
        return labels, []
    if policy.trusted_poisoning == "off":
        return [], []
    return sorted({f.label for f in concealed_findings(content)}), []
