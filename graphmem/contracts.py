"""Kind contracts checked on every write (SPEC §1). Pure: model only."""

from __future__ import annotations

from graphmem.errors import ContractViolation
from graphmem.model import Kind, MemoryRecord, Sensitivity, Status, scope_type
from graphmem.model.erasure import is_tombstone

__all__ = ["check_record", "check_stored"]


def check_record(record: MemoryRecord) -> None:
    """Raise ``ContractViolation`` if ``record`` may not be written as it is."""
    if not record.content.strip():
        raise ContractViolation(
            f"record {record.id!r} has empty content; write what was seen, concluded or learned",
            code="empty_content",
        )
    if record.status is Status.ERASED:
        raise ContractViolation(
            f"record {record.id!r} is written as erased; erase stored records with forget()",
            code="erased_on_write",
        )
    _check_shape(record)


def check_stored(record: MemoryRecord) -> None:
    """Raise ``ContractViolation`` if ``record`` may not be stored as it is (an import): the
    write contracts, except that an erased record must be a tombstone — every field an erase
    clears (``graphmem.model.erasure``) empty, its sources' quotes gone, and the tombstone
    saying when, why and at whose request. A tombstone no longer meets its kind's contract
    (its procedure name or outcome are gone): only its shape is checked."""
    if record.status is not Status.ERASED:
        check_record(record)
        return
    if not is_tombstone(record):
        raise ContractViolation(
            f"record {record.id!r} is erased but is no tombstone: an erased record keeps no content, "
            "embedding, tags, outcome, procedure fields, writer or quotes, and carries its tombstone",
            code="bad_tombstone",
        )
    _check_shape(record, kind_rules=False)


def _check_shape(record: MemoryRecord, *, kind_rules: bool = True) -> None:
    if record.sensitivity is Sensitivity.RESTRICTED:
        raise ContractViolation(
            f"record {record.id!r} is restricted; restricted data is never written to memory — keep a "
            "pointer to the system of record instead",
            code="restricted_sensitivity",
        )
    if record.valid_from and record.valid_to and record.valid_to <= record.valid_from:
        raise ContractViolation(
            f"record {record.id!r}: valid_to must be after valid_from (validity is [from, to))",
            code="empty_validity",
        )
    start = record.valid_from or record.event_time
    if record.expires_at and start and record.expires_at <= start:
        field = "valid_from" if record.valid_from else "event_time"
        raise ContractViolation(
            f"record {record.id!r}: expires_at must be after {field} or the record is never usable",
            code="empty_validity",
        )
    if record.embedding is not None and not record.embedding:
        raise ContractViolation(
            f"record {record.id!r}: an embedding must have at least one dimension, or be None",
            code="empty_embedding",
        )
    if kind_rules:
        _KIND_CHECKS[record.kind](record)


def _working(record: MemoryRecord) -> None:
    if scope_type(record.scope) != "run":
        raise ContractViolation(
            f"working record {record.id!r} must apply to a run scope such as 'run:r-42' "
            f"(got {record.scope!r}); use an episodic or semantic record for durable memory",
            code="working_needs_run_scope",
        )


def _episodic(record: MemoryRecord) -> None:
    if record.event_time is None:
        raise ContractViolation(
            f"episodic record {record.id!r} needs event_time: when did it happen?",
            code="episodic_needs_event_time",
        )
    if record.outcome is None:
        raise ContractViolation(
            f"episodic record {record.id!r} needs an outcome; use 'unknown' if it is not known",
            code="episodic_needs_outcome",
        )


def _semantic(record: MemoryRecord) -> None:
    if not record.sources and not record.derived_from:
        raise ContractViolation(
            f"semantic record {record.id!r} needs provenance: at least one source or derived_from id",
            code="semantic_needs_provenance",
        )
    if record.valid_from is None:
        raise ContractViolation(
            f"semantic record {record.id!r} needs valid_from: since when does it hold?",
            code="semantic_needs_valid_from",
        )


def _procedural(record: MemoryRecord) -> None:
    if not record.procedure_name or not record.procedure_version:
        raise ContractViolation(
            f"procedural record {record.id!r} needs procedure_name and procedure_version",
            code="procedure_needs_name_version",
        )
    if not record.preconditions or not all(p.strip() for p in record.preconditions):
        raise ContractViolation(
            f"procedural record {record.id!r} needs non-empty preconditions "
            "(the capabilities the caller's environment must have)",
            code="procedure_needs_preconditions",
        )
    if not record.sources and not record.derived_from:
        raise ContractViolation(
            f"procedural record {record.id!r} needs validation evidence: a source (e.g. a test) "
            "or the episodes it was derived from",
            code="procedure_needs_evidence",
        )


_KIND_CHECKS = {
    Kind.WORKING: _working,
    Kind.EPISODIC: _episodic,
    Kind.SEMANTIC: _semantic,
    Kind.PROCEDURAL: _procedural,
}
