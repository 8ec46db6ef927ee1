"""The write path's values (SPEC §4): proposals, the policy that judges them, decisions."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import Field, model_validator

from graphmem.model.base import AwareDatetime, EmbeddingModel, GraphmemModel, Identifier, ScopeKey, Tenant
from graphmem.model.enums import Kind, Sensitivity, Status
from graphmem.model.records import MemoryRecord, Source, new_id

__all__ = [
    "WriteDecision",
    "WriteOutcome",
    "WritePolicy",
    "WriteProposal",
    "WriteReason",
    "subject_tag",
]

SUBJECT_TAG_PREFIX = "subject:"


def subject_tag(subject: str) -> str:
    """The tag a record carries for its conflict-detection subject, e.g. ``subject:user:alice/email``."""
    return f"{SUBJECT_TAG_PREFIX}{subject}"


class WriteOutcome(StrEnum):
    ACCEPTED = "accepted"
    PENDING_APPROVAL = "pending_approval"
    REJECTED = "rejected"


class WriteReason(StrEnum):
    """Why a proposal got its outcome; stable codes, safe to branch on."""

    ACCEPTED = "accepted"
    DUPLICATE_MERGED = "duplicate_merged"
    SECRET_REDACTED = "secret_redacted"  # noqa: S105 - a reason code, not a secret
    CONFLICT_CONTESTED = "conflict_contested"
    NEEDS_APPROVAL_BROAD_SCOPE = "needs_approval_broad_scope"
    NEEDS_APPROVAL_PROCEDURAL = "needs_approval_procedural"
    NEEDS_APPROVAL_UNTRUSTED = "needs_approval_untrusted"
    APPROVED = "approved"
    RESTRICTED_SENSITIVITY = "restricted_sensitivity"
    SECRET_DETECTED = "secret_detected"  # noqa: S105 - a reason code, not a secret
    POISONING = "poisoning"
    SUSPECTED_INJECTION = "suspected_injection"
    MISSING_PROVENANCE = "missing_provenance"
    LOW_CONFIDENCE = "low_confidence"
    INVALID = "invalid"


class WritePolicy(GraphmemModel):
    """The write gate's rules as data; the defaults are SPEC §4's.

    ``version`` is stamped on every record written (``MemoryRecord.policy``).
    ``secrets``: ``"reject"`` the proposal, or ``"redact"`` each secret to
    ``[REDACTED:<kind>]`` and judge the rest. ``trusted_proposers`` are proposers
    whose unsourced proposals count as trusted; ``trusted_source_types``, if set,
    limits which source types may count as trusted at all. ``provenance_kinds``
    need at least ``min_support`` sources or ``derived_from`` ids.
    ``approval_scope_types`` and (with ``procedural_needs_approval``) procedures
    wait for a person.

    ``trusted_poisoning`` says how instruction-like text from a *trusted* source is
    judged: ``"hidden"`` (default) rejects it only when it is concealed — in HTML
    comments or attributes, Markdown link targets, zero-width or homoglyph
    obfuscation, or encoded payloads — outside quoted passages and code; what a
    trusted author writes visibly (a preference, a runbook step, a quoted attack in
    an incident report) is accepted. ``"all"`` judges trusted text like untrusted
    text; ``"off"`` never rejects trusted text as poisoning.

    ``reported_quotations`` says what becomes of instruction-like text that an
    untrusted author only *reports*, inside a quotation in a sentence of their own
    ("the email said \"ignore previous instructions …\"; we blocked the sender"):
    ``"accept"`` (default) does not count it as poisoning, and the rest of the gate
    (the detector among it) judges the text; ``"quarantine"`` makes such text wait
    for a person (``suspected_injection``); ``"reject"`` rejects it as poisoning.
    Quotations in code, data, markup, link titles and blockquotes, and text hidden
    or encoded, are never reported speech. Either way the verdict's findings name
    the rules, prefixed ``quotation:``.

    ``injection_detector`` (``"on"``) scores untrusted text with the learned
    detector (``graphmem.policy.detector``): above its reject threshold the
    proposal is rejected as poisoning; between its two thresholds it waits for
    a person as ``pending_approval`` with reason ``suspected_injection``.

    ``rules_detector_floor`` (0.5) asks the detector to confirm the poisoning
    rules on untrusted text: where every rule that fired did so on words the
    detector reads too, in the open (not hidden, obfuscated or encoded, not in a
    quotation or string literal the detector leaves out), and the detector
    scores the text's most suspicious sentence below the floor (that
    sentence's own probability, before the document stage weighs it against
    the rest of the text), the rules do not reject it; the verdict
    names them, prefixed ``unconfirmed:``, and the rest of the gate judges the
    text. ``0.0`` lets every rule reject on its own; so does turning the
    detector off.
    """

    version: str = Field(default="default", min_length=1, max_length=64)
    min_confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    reject_restricted: bool = True
    secrets: Literal["reject", "redact"] = "reject"
    poisoning_check: bool = True
    trusted_poisoning: Literal["hidden", "all", "off"] = "hidden"
    reported_quotations: Literal["accept", "quarantine", "reject"] = "accept"
    injection_detector: Literal["on", "off"] = "on"
    rules_detector_floor: float = Field(default=0.5, ge=0.0, le=1.0)
    trusted_proposers: tuple[str, ...] = ()
    trusted_source_types: tuple[str, ...] | None = None
    provenance_kinds: tuple[Kind, ...] = (Kind.SEMANTIC, Kind.PROCEDURAL)
    min_support: int = Field(default=1, ge=1)
    approval_scope_types: tuple[str, ...] = ("tenant", "domain", "global")
    procedural_needs_approval: bool = True


class WriteProposal(GraphmemModel):
    """What an agent asks the store to remember; the store decides (``MemoryStore.propose``).

    ``subject`` names what the claim is about (``"user:alice/contact-channel"``):
    two different claims on one subject are a conflict and are both contested.
    """

    proposal_id: Identifier = Field(default_factory=lambda: new_id("prop"))
    proposed_by: str = Field(min_length=1, max_length=128)
    rationale: str = Field(default="", max_length=10_000)
    subject: str | None = Field(default=None, min_length=1, max_length=256)

    id: Identifier | None = None
    tenant: Tenant
    kind: Kind
    scope: ScopeKey
    content: str = Field(max_length=100_000)
    sources: tuple[Source, ...] = ()
    derived_from: tuple[Identifier, ...] = ()
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    sensitivity: Sensitivity = Sensitivity.INTERNAL
    event_time: AwareDatetime | None = None
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None
    expires_at: AwareDatetime | None = None
    outcome: str | None = Field(default=None, max_length=128)
    procedure_name: str | None = Field(default=None, max_length=128)
    procedure_version: str | None = Field(default=None, max_length=64)
    preconditions: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    embedding: tuple[float, ...] | None = None
    embedding_model: EmbeddingModel | None = None

    def to_record(
        self,
        status: Status,
        policy_version: str,
        *,
        content: str | None = None,
        created_at: datetime | None = None,
    ) -> MemoryRecord:
        """The record this proposal becomes, with ``status`` and the policy it was judged under.

        ``content`` replaces the proposed text (the gate passes redacted text here);
        the subject, if any, becomes a ``subject:…`` tag. Raises ``ContractViolation``
        if the result is not a valid ``MemoryRecord``.
        """
        tags = self.tags
        if self.subject is not None and subject_tag(self.subject) not in tags:
            tags = (*tags, subject_tag(self.subject))
        fields = self.model_dump(
            exclude={"proposal_id", "proposed_by", "rationale", "subject", "id", "tags", "content"}
        )
        fields.update(
            status=status,
            policy=policy_version,
            writer=self.proposed_by,
            content=self.content if content is None else content,
            tags=tags,
        )
        if self.id is not None:
            fields["id"] = self.id
        if created_at is not None:
            fields["created_at"] = created_at
        return MemoryRecord(**fields)


class WriteDecision(GraphmemModel):
    """The store's answer to a proposal. ``message`` and ``findings`` never repeat secret text."""

    outcome: WriteOutcome
    reason: WriteReason
    proposal_id: Identifier
    record_id: Identifier | None = None
    message: str = ""
    findings: tuple[str, ...] = ()
    policy: str = Field(default="default", min_length=1, max_length=64)

    @model_validator(mode="after")
    def _rejection_writes_nothing(self) -> WriteDecision:
        if self.outcome is WriteOutcome.REJECTED and self.record_id is not None:
            raise ValueError("a rejected proposal has no record_id: nothing was written")
        if self.outcome is not WriteOutcome.REJECTED and self.record_id is None:
            raise ValueError("an accepted or pending proposal names the record it wrote")
        return self
