"""What an erase keeps and what it clears, field by field, for every model (SPEC §5).

A tombstone keeps only what identifies the record and its history: id, kind, tenant,
scope, times, the reason and requester of the erase, and its lineage as ids. Everything
that carries user text or identifying data is cleared: content, embedding, tags (subject
tags too), outcome labels, procedure name and version, preconditions, writer, the quotes
of its sources, and their locators and digests once the source is erased or cited only by
erased records. ``ERASURE_RULES`` says so for every field of every model; a test walks the
models and fails when a text-bearing field has no rule, so a new field cannot slip past.

Scope keys are kept: they are identifiers the application chooses and must not hold
personal data (``user:u-1842``, not ``user:alice@example.com``); keys that look like
e-mail addresses or phone numbers are refused when written (``personal_data_in_scope``).
"""

from __future__ import annotations

from collections.abc import Collection
from enum import StrEnum
from functools import cache
from typing import Any

from pydantic_core import PydanticUndefined

from graphmem.model.audit import AuditEvent
from graphmem.model.base import GraphmemModel
from graphmem.model.enums import Status
from graphmem.model.lineage import (
    ForgetEntry,
    ForgetReport,
    ForgetRequest,
    Lineage,
    LineageEdge,
    LineageNode,
)
from graphmem.model.read import Decision, ReadContext, Receipt, Selection, VerifyResult
from graphmem.model.records import MemoryRecord, Source, Tombstone
from graphmem.model.write import WriteDecision, WritePolicy, WriteProposal

__all__ = [
    "ERASED_FIELDS",
    "ERASURE_RULES",
    "FieldRule",
    "cleared_fields",
    "erase_record",
    "erase_sources",
    "is_tombstone",
]


class FieldRule(StrEnum):
    """What an erase does to one field."""

    KEEP = "keep"
    """An identifier, time, code or number the tombstone keeps (never user text)."""
    CLEAR = "clear"
    """User text or identifying data: reset to its empty value on the tombstone."""
    CLEAR_WITH_SOURCE = "clear_with_source"
    """A source's identifying data: cleared once the source is erased or cited only by
    erased records (while a live record cites it, it is that record's evidence)."""
    SET = "set"
    """Written by the erase itself (the status, the tombstone)."""
    NESTED = "nested"
    """A model (or models) whose own fields have rules."""
    NOT_STORED = "not_stored"
    """A value a call takes or returns; never stored as such (what a proposal becomes is a
    ``MemoryRecord``, with its rules)."""


_K, _C, _CS, _S, _N, _X = (
    FieldRule.KEEP,
    FieldRule.CLEAR,
    FieldRule.CLEAR_WITH_SOURCE,
    FieldRule.SET,
    FieldRule.NESTED,
    FieldRule.NOT_STORED,
)


def _all(model: type[GraphmemModel], rule: FieldRule) -> dict[str, FieldRule]:
    return dict.fromkeys(model.model_fields, rule)


ERASURE_RULES: dict[type[GraphmemModel], dict[str, FieldRule]] = {
    MemoryRecord: {
        "id": _K,
        "tenant": _K,
        "kind": _K,
        "scope": _K,  # an application identifier; personal data is refused (personal_data_in_scope)
        "content": _C,
        "created_at": _K,
        "event_time": _K,
        "valid_from": _K,
        "valid_to": _K,
        "expires_at": _K,
        "outcome": _C,  # free-form failure labels can carry text
        "sources": _N,
        "derived_from": _K,  # lineage, as ids
        "status": _S,
        "policy": _K,  # the policy version id
        "sensitivity": _K,
        "confidence": _K,
        "writer": _C,
        "procedure_name": _C,
        "procedure_version": _C,
        "preconditions": _C,
        "tags": _C,  # subject tags too: they name the person
        "embedding": _C,
        "embedding_model": _C,  # names the model, not the person, but goes with the embedding
        "tombstone": _S,
        "proposal_id": _K,
        "untrusted_lineage": _K,  # a flag: whether support was untrusted only (no text)
    },
    Source: {
        "id": _K,
        "type": _K,  # a category: message, document, test, …
        "trust": _K,
        "locator": _CS,
        "quote": _C,
        "digest": _CS,
        "status": _S,
    },
    Tombstone: _all(Tombstone, _K),  # when, why, at whose request: what the tombstone is for
    # The audit log holds ids, actors, reason codes and times, never record content; it is
    # append-only and outlives the records it names.
    AuditEvent: _all(AuditEvent, _K),
    # Values calls take or return. A forget request's reason and requester become the
    # tombstone's; a lineage edge's reason is the reason of the change it records.
    ForgetRequest: _all(ForgetRequest, _X),
    ForgetEntry: _all(ForgetEntry, _X),
    ForgetReport: _all(ForgetReport, _X),
    Lineage: _all(Lineage, _X),
    LineageNode: _all(LineageNode, _X),
    LineageEdge: _all(LineageEdge, _X),
    ReadContext: _all(ReadContext, _X),
    Decision: _all(Decision, _X),
    Receipt: _all(Receipt, _X),
    VerifyResult: _all(VerifyResult, _X),
    Selection: _all(Selection, _X),
    WriteProposal: _all(WriteProposal, _X),
    WriteDecision: _all(WriteDecision, _X),
    WritePolicy: _all(WritePolicy, _X),
}


#: The record fields every erase clears, in declaration order (for reports).
ERASED_FIELDS: tuple[str, ...] = tuple(
    n for n, rule in ERASURE_RULES[MemoryRecord].items() if rule is FieldRule.CLEAR
)


def _empty(model: type[GraphmemModel], name: str) -> Any:
    """The field's default (None, an empty tuple), or an empty string when it has none."""
    default = model.model_fields[name].default
    return "" if default is PydanticUndefined else default


@cache
def _cleared(model: type[GraphmemModel], rule: FieldRule) -> dict[str, Any]:
    return {n: _empty(model, n) for n, r in ERASURE_RULES[model].items() if r is rule}


def cleared_fields(model: type[GraphmemModel]) -> dict[str, Any]:
    """The fields an erase clears unconditionally, with the empty value each gets."""
    return dict(_cleared(model, FieldRule.CLEAR))


def erase_sources(
    sources: tuple[Source, ...], *, gone: Collection[str], erased: Collection[str]
) -> tuple[Source, ...]:
    """``sources`` as a tombstone keeps them: no quotes; no locator or digest for the ``gone``
    ones (erased, or cited only by erased records); the ``erased`` ones marked erased."""
    out: list[Source] = []
    for source in sources:
        update: dict[str, Any] = cleared_fields(Source)
        if source.id in gone:
            update.update(_cleared(Source, FieldRule.CLEAR_WITH_SOURCE))
        if source.id in erased:
            update["status"] = "erased"
        out.append(source.model_copy(update=update))
    return tuple(out)


def erase_record(
    record: MemoryRecord,
    tombstone: Tombstone,
    *,
    gone_sources: Collection[str] = (),
    erased_sources: Collection[str] = (),
) -> MemoryRecord:
    """The tombstone of ``record``: every ``CLEAR`` field emptied, its sources per
    ``erase_sources``, status erased, and ``tombstone`` attached."""
    update: dict[str, Any] = cleared_fields(MemoryRecord)
    update.update(
        status=Status.ERASED,
        tombstone=tombstone,
        sources=erase_sources(record.sources, gone=gone_sources, erased=erased_sources),
    )
    return record.model_copy(update=update)


def is_tombstone(record: MemoryRecord) -> bool:
    """Whether ``record`` keeps nothing an erase clears (its sources' quotes included)."""
    cleared = cleared_fields(MemoryRecord)
    return (
        record.tombstone is not None
        and all(getattr(record, n) == v for n, v in cleared.items())
        and all(s.quote is None for s in record.sources)
    )
