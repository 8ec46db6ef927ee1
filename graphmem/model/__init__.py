"""graphmem's values: pydantic v2 models, no I/O and no dependency on the rest of graphmem."""

from graphmem.model.audit import AuditEvent
from graphmem.model.base import GraphmemModel, scope_type, utcnow
from graphmem.model.enums import DropReason, ForgetMode, Kind, Outcome, Sensitivity, Status, Trust
from graphmem.model.gate_rows import GateProbe, GateRows
from graphmem.model.lineage import (
    ForgetEntry,
    ForgetReport,
    ForgetRequest,
    Lineage,
    LineageEdge,
    LineageNode,
)
from graphmem.model.read import Decision, ReadContext, Receipt, Selection, VerifyResult
from graphmem.model.records import MemoryRecord, Source, Tombstone, content_hash, new_id
from graphmem.model.write import (
    WriteDecision,
    WriteOutcome,
    WritePolicy,
    WriteProposal,
    WriteReason,
    subject_tag,
)

__all__ = [
    "AuditEvent",
    "Decision",
    "DropReason",
    "ForgetEntry",
    "ForgetMode",
    "ForgetReport",
    "ForgetRequest",
    "GateProbe",
    "GateRows",
    "GraphmemModel",
    "Kind",
    "Lineage",
    "LineageEdge",
    "LineageNode",
    "MemoryRecord",
    "Outcome",
    "ReadContext",
    "Receipt",
    "Selection",
    "Sensitivity",
    "Source",
    "Status",
    "Tombstone",
    "Trust",
    "VerifyResult",
    "WriteDecision",
    "WriteOutcome",
    "WritePolicy",
    "WriteProposal",
    "WriteReason",
    "content_hash",
    "new_id",
    "scope_type",
    "subject_tag",
    "utcnow",
]
