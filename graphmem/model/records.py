"""Memory records and the sources they cite."""

from __future__ import annotations

import hashlib
import os
import time
import unicodedata
from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from graphmem.model.base import (
    AwareDatetime,
    EmbeddingModel,
    GraphmemModel,
    Identifier,
    ScopeKey,
    Tenant,
    all_finite,
    utcnow,
)
from graphmem.model.canonical import sha256
from graphmem.model.enums import Kind, Outcome, Sensitivity, Status, Trust

__all__ = ["MemoryRecord", "Source", "Tombstone", "content_hash", "new_id"]


def new_id(prefix: str = "mem") -> str:
    """A fresh id, e.g. ``mem-019ae4c2…``: a version 7 UUID (RFC 9562) in hex, 48 bits of Unix
    time in milliseconds, then 74 random bits.

    Ids made later sort after those made earlier (to the millisecond), so a store's indexes
    on record and source ids grow at their end instead of at random places: at a million
    records a random id dirties another index page with nearly every insert."""
    rand = int.from_bytes(os.urandom(10), "big")  # 80 bits: 12 for rand_a, 62 for rand_b
    value = (
        (time.time_ns() // 1_000_000 & _MS_MASK) << 80
        | 0x7 << 76  # version 7
        | (rand >> 68) << 64
        | 0b10 << 62  # the RFC 9562 variant
        | rand & _RAND_B_MASK
    )
    return f"{prefix}-{value:032x}"


_MS_MASK = (1 << 48) - 1
_RAND_B_MASK = (1 << 62) - 1


def content_hash(content: str) -> str:
    """SHA-256 of the normalised content (NFKC, case-folded, whitespace collapsed)."""
    # str.split() splits on exactly the characters ``\s`` matches, so this collapses and strips.
    if content.isascii():  # NFKC leaves ASCII as it is, and ASCII case-folds to its lower case
        # Printable ASCII has one whitespace character, the space: without a double, leading or
        # trailing one, splitting and joining would give the text back.
        if content.isprintable() and "  " not in content and content[:1] != " " and content[-1:] != " ":
            normal = content.lower()
        else:
            normal = " ".join(content.lower().split())
    else:
        normal = " ".join(unicodedata.normalize("NFKC", content).casefold().split())
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()


class Source(GraphmemModel):
    """Evidence a record cites: a message, document, tool receipt, test, approval."""

    id: Identifier = Field(default_factory=lambda: new_id("src"))
    type: str = Field(default="message", min_length=1, max_length=64)
    trust: Trust = Trust.UNTRUSTED
    locator: str | None = Field(default=None, max_length=2048)
    quote: str | None = Field(default=None, max_length=20_000)
    digest: str | None = Field(default=None, max_length=128)
    status: Literal["active", "revoked", "erased"] = "active"


#: A tombstone's reason for a record whose data key is gone while the graph had not
#: recorded its erase (an erase in progress between the two, or one a crash cut short):
#: erased, never readable, and no forget recorded yet.
ERASED_UNREAD = "erased: its data key was deleted before the graph was updated"


class Tombstone(GraphmemModel):
    """What remains known about an erased record: when, why and at whose request."""

    at: AwareDatetime
    reason: str = Field(max_length=2000)
    requested_by: str = Field(max_length=256)


class MemoryRecord(GraphmemModel):
    """One typed memory. Kind contracts are enforced when it is written (``graphmem.contracts``)."""

    _track_validated: ClassVar[bool] = True

    id: Identifier = Field(default_factory=new_id)
    tenant: Tenant
    kind: Kind
    scope: ScopeKey
    content: str = Field(max_length=100_000)
    created_at: AwareDatetime = Field(default_factory=utcnow)
    event_time: AwareDatetime | None = None
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None
    expires_at: AwareDatetime | None = None
    outcome: str | None = Field(default=None, max_length=128)
    sources: tuple[Source, ...] = ()
    derived_from: tuple[Identifier, ...] = ()
    status: Status = Status.ACTIVE
    policy: str = Field(default="default", min_length=1, max_length=64)
    sensitivity: Sensitivity = Sensitivity.INTERNAL
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    writer: str | None = Field(default=None, max_length=128)
    procedure_name: str | None = Field(default=None, max_length=128)
    procedure_version: str | None = Field(default=None, max_length=64)
    preconditions: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    embedding: tuple[float, ...] | None = None
    # Written only when set, so records (and their fingerprints) from before the fields are unchanged.
    embedding_model: EmbeddingModel | None = Field(default=None, exclude_if=lambda v: v is None)
    tombstone: Tombstone | None = None
    proposal_id: str | None = Field(default=None, max_length=128)
    untrusted_lineage: bool = Field(default=False, exclude_if=lambda v: not v)

    @model_validator(mode="after")
    def _model_has_embedding(self) -> MemoryRecord:
        if self.embedding_model is not None and self.embedding is None:
            raise PydanticCustomError(
                "embedding_model_without_embedding",
                "embedding_model names the model that made the embedding; set the embedding too, "
                "or leave embedding_model out",
            )
        return self

    @field_validator("outcome")
    @classmethod
    def _outcome_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("outcome must be 'verified-success', 'failure', 'unknown' or a failure label")
        return value

    @field_validator("embedding")
    @classmethod
    def _embedding_finite(cls, value: tuple[float, ...] | None) -> tuple[float, ...] | None:
        if value is not None and not all_finite(value):
            raise PydanticCustomError("embedding_not_finite", "embedding values must be finite numbers")
        return value

    @property
    def content_hash(self) -> str:
        return content_hash(self.content)

    def fingerprint(self) -> str:
        """Digest of every field: any change to the record changes it (receipts use it).

        The JSON form is canonical: fields in declaration order, timestamps in UTC.
        """
        return sha256(self.model_dump_json())

    @property
    def tainted(self) -> bool:
        """Supported only by untrusted sources: no cited source is trusted, and the record either
        cites sources and derives from nothing, or derives only from tainted records
        (``untrusted_lineage``, set by the store when it writes a derived record).

        A tainted record is recalled like any other but says so (``render``, ``trace``), and the
        store holds it for approval before promoting it to a procedure or a broad scope.
        Approval cites a trusted ``human_approval`` source, which lifts the taint.
        """
        if any(s.trust is Trust.TRUSTED for s in self.sources):
            return False
        return self.untrusted_lineage or (bool(self.sources) and not self.derived_from)

    @property
    def succeeded(self) -> bool:
        """True only for a verified success; unknown and failure labels are not."""
        return self.outcome == Outcome.VERIFIED_SUCCESS
