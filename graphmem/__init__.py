"""graphmem: governed, graph-backed memory for LLM agents.

Typed records (working, episodic, semantic, procedural) in a graph whose
lineage, supersession, invalidation and scope edges are checked before any
similarity ranking. Start with ``MemoryStore.embedded()``.
"""

from graphmem.errors import (
    BackendUnavailable,
    ConflictError,
    ContractViolation,
    GraphmemError,
    LineageError,
    NotFound,
    TransactionConflict,
)
from graphmem.model import (
    AuditEvent,
    Decision,
    DropReason,
    ForgetEntry,
    ForgetMode,
    ForgetReport,
    ForgetRequest,
    Kind,
    Lineage,
    LineageEdge,
    LineageNode,
    MemoryRecord,
    Outcome,
    ReadContext,
    Receipt,
    Selection,
    Sensitivity,
    Source,
    Status,
    Tombstone,
    Trust,
    VerifyResult,
    WriteDecision,
    WriteOutcome,
    WritePolicy,
    WriteProposal,
    WriteReason,
)
from graphmem.store import MemoryStore

__version__ = "0.1.0"

__all__ = [
    "AuditEvent",
    "BackendUnavailable",
    "ConflictError",
    "ContractViolation",
    "Decision",
    "DropReason",
    "ForgetEntry",
    "ForgetMode",
    "ForgetReport",
    "ForgetRequest",
    "GraphmemError",
    "Kind",
    "Lineage",
    "LineageEdge",
    "LineageError",
    "LineageNode",
    "MemoryRecord",
    "MemoryStore",
    "NotFound",
    "Outcome",
    "ReadContext",
    "Receipt",
    "Selection",
    "Sensitivity",
    "Source",
    "Status",
    "Tombstone",
    "TransactionConflict",
    "Trust",
    "VerifyResult",
    "WriteDecision",
    "WriteOutcome",
    "WritePolicy",
    "WriteProposal",
    "WriteReason",
    "__version__",
]
