"""What the store needs from the write gate beyond ``decide``: dedup, conflicts, approval.

Pure: the store fetches candidate records and passes them in (SPEC §4).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from graphmem.model import Kind, MemoryRecord, Source, Status, Trust, content_hash, scope_type
from graphmem.model.canonical import canonical_json, sha256
from graphmem.model.write import WritePolicy, subject_tag

__all__ = [
    "approved_record",
    "dedup_text",
    "find_conflicts",
    "find_duplicate",
    "normalised_key",
    "untrusted_promotion",
]

_LIVE = (Status.ACTIVE, Status.PENDING_APPROVAL, Status.CONTESTED)


def normalised_key(tenant: str, scope: str, kind: Kind | str, content: str) -> str:
    """Dedup key: SHA-256 over tenant, scope, kind and the normalised content hash.

    Content is normalised as in ``content_hash`` (NFKC, case-folded, whitespace
    collapsed), so "Prefers  EMAIL" and "prefers email" are one memory.
    """
    return sha256(dedup_text(tenant, scope, kind, content))


def dedup_text(tenant: str, scope: str, kind: Kind | str, content: str) -> str:
    """What ``normalised_key`` hashes: tenant, scope, kind and the normalised content hash as
    canonical JSON (proposal ids are a backend's ``name_digest`` of it)."""
    return canonical_json([tenant, scope, str(Kind(kind)), content_hash(content)])


def find_duplicate(record: MemoryRecord, existing: Iterable[MemoryRecord]) -> MemoryRecord | None:
    """The stored record ``record`` duplicates: same ``normalised_key``, still live.

    The store passes the tenant's records of the same scope and kind (active,
    pending or contested); on a hit it merges ``record.sources`` into the
    existing record (no second record) and answers ``duplicate_merged``.
    """
    key = normalised_key(record.tenant, record.scope, record.kind, record.content)
    for other in existing:
        if (
            other.id != record.id
            and other.status in _LIVE
            and normalised_key(other.tenant, other.scope, other.kind, other.content) == key
        ):
            return other
    return None


def find_conflicts(record: MemoryRecord, existing: Iterable[MemoryRecord]) -> list[MemoryRecord]:
    """Live records making a *different* claim on the same subject.

    A subject is carried as the tag ``subject:<key>`` (``WriteProposal.to_record``
    adds it). A conflict is a record in the same tenant and of the same kind,
    status active, pending or contested, with that tag and different normalised
    content. The store marks the new record and every conflict ``contested``
    and answers ``conflict_contested`` — never newest-wins.
    """
    tags = [t for t in record.tags if t.startswith(subject_tag(""))]
    if not tags:
        return []
    mine = content_hash(record.content)
    return [
        other
        for other in existing
        if other.id != record.id
        and other.tenant == record.tenant
        and other.kind == record.kind
        and other.status in _LIVE
        and any(t in other.tags for t in tags)
        and content_hash(other.content) != mine
    ]


def approved_record(record: MemoryRecord, approver: str, at: datetime | None = None) -> MemoryRecord:
    """``record`` made active by ``approver``, citing a trusted ``human_approval`` source."""
    approval = Source(
        type="human_approval",
        trust=Trust.TRUSTED,
        locator=f"approver:{approver}" + (f"@{at.isoformat()}" if at else ""),
    )
    data = record.model_dump()
    data.update(status=Status.ACTIVE, sources=(*record.sources, approval))
    return MemoryRecord(**data)


def untrusted_promotion(
    record: MemoryRecord, supports: Sequence[MemoryRecord], policy: WritePolicy
) -> str | None:
    """Why ``record``, derived from ``supports``, must wait for a person, or ``None``.

    A record supported only by untrusted sources (``MemoryRecord.tainted``) may not
    become, unapproved, a procedure or a *broad* claim: one whose scope's type is
    in ``policy.approval_scope_types`` (tenant, domain, global by default), or whose
    scope is none of its supports' scopes (what was observed in one run or case,
    applied beyond it).
    """
    if not record.tainted:
        return None
    if record.kind is Kind.PROCEDURAL:
        return "a procedure derived only from untrusted sources needs a person's approval"
    if scope_type(record.scope) in policy.approval_scope_types:
        return f"a {scope_type(record.scope)}-wide claim derived only from untrusted sources needs approval"
    if supports and record.scope not in {s.scope for s in supports}:
        return (
            f"a claim derived only from untrusted sources, widened to {record.scope} beyond the "
            "scopes it was observed in, needs approval"
        )
    return None
