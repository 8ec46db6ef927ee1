"""Errors raised by graphmem: each has a stable ``code`` and an actionable message."""

from __future__ import annotations

__all__ = [
    "BackendUnavailable",
    "ConflictError",
    "ContractViolation",
    "GraphmemError",
    "LineageError",
    "NotFound",
    "TransactionConflict",
]


class GraphmemError(Exception):
    """Base of every graphmem error.

    ``code`` is stable across releases and safe to branch on; ``message`` tells a
    person what was wrong and what to do about it.
    """

    default_code = "graphmem_error"

    def __init__(self, message: str, code: str | None = None) -> None:
        self.code = code or self.default_code
        self.message = message
        super().__init__(f"[{self.code}] {message}")


class ContractViolation(GraphmemError):
    """Input breaks a model or kind contract; nothing was written."""

    default_code = "contract_violation"


class NotFound(GraphmemError):
    """A record, scope, source or proposal does not exist in the tenant."""

    default_code = "not_found"


class LineageError(GraphmemError):
    """A lineage operation would break a graph invariant (cycle, cross-tenant edge, …)."""

    default_code = "lineage_error"


class ConflictError(GraphmemError):
    """The write conflicts with what is stored (duplicate id, concurrent change, …)."""

    default_code = "conflict"


class TransactionConflict(ConflictError):
    """Another operation changed what this one read before it could finish (a deadlock
    between two writers, a selected record changed between recall's gate and fetch).

    The store runs the whole operation again on the new state, a bounded number of
    times, and raises this only when every attempt lost such a race.
    """

    default_code = "transaction_conflict"


class BackendUnavailable(GraphmemError):
    """The storage backend cannot be reached or opened."""

    default_code = "backend_unavailable"
