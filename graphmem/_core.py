"""What the ``MemoryStore`` mixins rely on: its backend, clock, settings and write path."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from graphmem.backends.base import Backend, Op
from graphmem.model import MemoryRecord, ReadContext, Selection, WritePolicy

__all__ = ["StoreCore"]


class StoreCore:
    """Attributes and methods ``MemoryStore`` provides to ``LineageOps`` and ``WriteGateOps``."""

    backend: Backend
    clock: Callable[[], datetime]
    min_support: int
    write_policy: WritePolicy
    audit_recalls: bool

    if TYPE_CHECKING:

        def _write_new(
            self,
            batch: list[MemoryRecord],
            *,
            extra: Sequence[Op] = (),
            action: str | None = "added",
            reason: str | None = None,
            record_ids: tuple[str, ...] = (),
        ) -> list[MemoryRecord]: ...

        def recall(
            self,
            ctx: ReadContext,
            query: str = "",
            explain: bool = False,
            *,
            query_embedding: Sequence[float] | None = None,
            actor: str | None = None,
        ) -> Selection: ...
