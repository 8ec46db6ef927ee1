"""The fixed vocabularies of graphmem."""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "DropReason",
    "ForgetMode",
    "Kind",
    "Outcome",
    "Sensitivity",
    "Status",
    "Trust",
]


class Kind(StrEnum):
    """What a record may be used for (SPEC §1)."""

    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"


class Status(StrEnum):
    """Lifecycle state of a record; anything but ``active`` is a drop reason."""

    ACTIVE = "active"
    PENDING_APPROVAL = "pending_approval"
    CONTESTED = "contested"
    REVOKED = "revoked"
    RELEASED = "released"
    ERASED = "erased"


class Outcome(StrEnum):
    """Well-known outcomes. Any other non-empty string is a free-form failure label."""

    VERIFIED_SUCCESS = "verified-success"
    FAILURE = "failure"
    UNKNOWN = "unknown"


class Trust(StrEnum):
    TRUSTED = "trusted"
    UNTRUSTED = "untrusted"


class Sensitivity(StrEnum):
    """Ordered: public < internal < confidential < restricted."""

    PUBLIC = "public"
    INTERNAL = "internal"
    CONFIDENTIAL = "confidential"
    RESTRICTED = "restricted"

    @property
    def rank(self) -> int:
        return _SENSITIVITY_RANK[self]

    # Compare by rank, not alphabetically as a plain StrEnum would.
    def __lt__(self, other: object) -> bool:
        return self.rank < Sensitivity(other).rank if isinstance(other, str) else NotImplemented

    def __le__(self, other: object) -> bool:
        return self.rank <= Sensitivity(other).rank if isinstance(other, str) else NotImplemented

    def __gt__(self, other: object) -> bool:
        return self.rank > Sensitivity(other).rank if isinstance(other, str) else NotImplemented

    def __ge__(self, other: object) -> bool:
        return self.rank >= Sensitivity(other).rank if isinstance(other, str) else NotImplemented


_SENSITIVITY_RANK = {s: i for i, s in enumerate(Sensitivity)}


class DropReason(StrEnum):
    """Why a candidate was not selected; declared in the gate's fixed order."""

    KIND_NOT_REQUESTED = "kind_not_requested"
    WRONG_TENANT = "wrong_tenant"
    POLICY_MISMATCH = "policy_mismatch"
    PENDING_APPROVAL = "pending_approval"
    CONTESTED = "contested"
    REVOKED = "revoked"
    RELEASED = "released"
    ERASED = "erased"
    NOT_YET_VALID = "not_yet_valid"
    EXPIRED = "expired"
    SUPERSEDED = "superseded"
    INVALIDATED = "invalidated"
    SCOPE_MISMATCH = "scope_mismatch"
    INSUFFICIENT_CLEARANCE = "insufficient_clearance"
    OUTCOME_INELIGIBLE = "outcome_ineligible"
    PRECONDITION_UNMET = "precondition_unmet"
    BELOW_MIN_SCORE = "below_min_score"
    SELECTION_LIMIT = "selection_limit"


class ForgetMode(StrEnum):
    RELEASE = "release"
    REVOKE = "revoke"
    ERASE = "erase"
