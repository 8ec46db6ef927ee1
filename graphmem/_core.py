"""What the ``MemoryStore`` mixins rely on: its backend, clock, settings and write path."""

from __future__ import annotations

import functools
import gc
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Concatenate, Literal, ParamSpec, Protocol, TypeVar

from graphmem.backends.base import (
    AddEdge,
    Backend,
    Op,
    PriorVersion,
    RelateScopes,
    ScopeWithin,
    erased_tenants,
)
from graphmem.errors import TransactionConflict
from graphmem.gate_cache import GateCache
from graphmem.model import MemoryRecord, ReadContext, Selection, WritePolicy

__all__ = ["ATTEMPTS", "HasBackend", "StoreCore", "bulk", "transactional"]

P = ParamSpec("P")
R = TypeVar("R")


class HasBackend(Protocol):
    """What ``transactional`` needs of its object: the backend whose transaction it runs in."""

    @property
    def backend(self) -> Backend: ...


S = TypeVar("S", bound=HasBackend)

#: How often an operation runs before a ``TransactionConflict`` is raised to the caller.
ATTEMPTS = 6
#: How often a recall gates again when records it selected were forgotten or changed before it
#: read them, before its ``TransactionConflict`` reaches the caller. A recall writes nothing, so
#: gating again costs only its own time; a tenant forgotten record after record, on a busy
#: machine, can make several selections in a row stale.
RECALL_ATTEMPTS = 24
#: Pauses before each repeat of a transaction that lost a race (with jitter, so two
#: writers that deadlocked do not collide again in step).
_PAUSES = (0.005, 0.02, 0.05, 0.1, 0.2)
#: Per thread: the backends this thread is inside a ``transactional`` call of.
_running = threading.local()

_bulk_lock = threading.Lock()
_bulk_depth = 0
_bulk_reenable = False


@contextmanager
def bulk() -> Iterator[None]:
    """Pause Python's cyclic garbage collector around one big batch (a bulk write, a
    forget cascade) and restore it after; nested and concurrent batches share the pause.

    Such a batch allocates hundreds of thousands of objects that live until it
    ends, and the collector would walk them again and again (about a second of a
    10,000-record cascade). Reference counting still frees everything else as usual.
    """
    global _bulk_depth, _bulk_reenable
    with _bulk_lock:
        if _bulk_depth == 0:
            _bulk_reenable = gc.isenabled()
            gc.disable()
        _bulk_depth += 1
    try:
        yield
    finally:
        with _bulk_lock:
            _bulk_depth -= 1
            if _bulk_depth == 0 and _bulk_reenable:
                gc.enable()


def transactional(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """Run a public write in one backend transaction: everything it reads to decide and every
    op it applies commit together, or not at all (SPEC §9). Nested calls join the outer one.

    When the backend reports that the transaction lost a race (``TransactionConflict``:
    a deadlock, a transient failure of the database), the outermost call runs the whole
    operation again in a new transaction, so it decides on the state that won; after
    ``ATTEMPTS`` runs the conflict is raised.
    """

    @functools.wraps(method)
    def run(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        active: set[int] = _running.__dict__.setdefault("backends", set())
        key = id(self.backend)
        if key in active:
            with self.backend.write():
                return method(self, *args, **kwargs)
        active.add(key)
        try:
            for pause in (*_PAUSES[: ATTEMPTS - 1], None):
                try:
                    with self.backend.write():
                        return method(self, *args, **kwargs)
                except TransactionConflict:
                    if pause is None:
                        raise
                time.sleep(pause * random.uniform(0.5, 1.5))
            raise AssertionError("unreachable")  # pragma: no cover
        finally:
            active.discard(key)

    return run


class StoreCore:
    """Attributes and methods ``MemoryStore`` provides to ``LineageOps`` and ``WriteGateOps``."""

    backend: Backend
    clock: Callable[[], datetime]
    min_support: int
    write_policy: WritePolicy
    audit_recalls: bool | Literal["sync"]
    max_query_chars: int
    _gate_cache: GateCache

    @property
    def _needed_support(self) -> int:
        """The live supports a derived record needs to hold: ``min_support``, and at least one on
        every path (SPEC §5: a derived record that loses its support is taken out of use)."""
        return max(self.min_support, 1)

    def _apply(self, ops: Sequence[Op]) -> None:
        """Apply ``ops`` as one batch, each lineage change, scope nesting and scope relation
        stamped with the time the store records it (its knowledge time; an import keeps the
        times it carries)."""
        recorded = self.clock()
        self._send(
            [
                op.model_copy(update={"recorded": recorded})
                if isinstance(op, AddEdge | ScopeWithin | RelateScopes) and op.recorded is None
                else op
                for op in ops
            ]
        )

    def _send(self, ops: Sequence[Op]) -> None:
        """``backend.apply(ops)``; ops that erase purge their tenants' cached verdicts first, in
        the write, and again once it committed (a read that overlapped the commit keeps
        nothing: ``GateCache.epoch``), so erased text is never served from the cache nor
        held in it."""
        erased = erased_tenants(ops)
        if erased:
            self._gate_cache.purge(erased)
        self.backend.apply(ops)
        if erased:
            self.backend.after_commit(lambda: self._gate_cache.purge(erased))

    def _prior(self, record: MemoryRecord, *, whole: bool = True) -> PriorVersion:
        """``record`` as stored now, kept when a change overwrites it (recorded now); without
        its body unless ``whole`` (a forgotten record is never returned by a replay: a verify
        needs only its fingerprint)."""
        # Built from typed values the store holds: no validation needed. Without the body, a
        # backend that stores each record's fingerprint copies it (a forget of 10,000
        # records no longer hashes each one again).
        copies = not whole and getattr(self.backend, "copies_fingerprints", False)
        return PriorVersion.model_construct(
            until=self.clock(),
            status=record.status,
            fingerprint=None if copies else record.fingerprint(),
            record=record if whole else None,
        )

    if TYPE_CHECKING:

        def _read_args(
            self, verb: str, ctx: object, query: object, query_embedding: object = None
        ) -> tuple[ReadContext, str, tuple[float, ...] | None]: ...

        def _write_new(
            self,
            batch: list[MemoryRecord],
            *,
            extra: Sequence[Op] = (),
            action: str | None = "added",
            reason: str | None = None,
            record_ids: tuple[str, ...] = (),
        ) -> list[MemoryRecord]: ...

        def _check_procedure_evidence(self, tenant: str, group: list[MemoryRecord]) -> None: ...

        def _recall(
            self,
            ctx: ReadContext,
            query: str,
            explain: bool,
            query_embedding: Sequence[float] | None,
            *,
            query_embedding_model: str | None = None,
            audit: bool = False,
            actor: str | None = None,
            narrow: Callable[[ReadContext], ReadContext] | None = None,
        ) -> Selection: ...
