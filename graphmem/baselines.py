"""Negative controls for evaluation: retrieval without the gate.

``similarity_search`` ranks every long-term record of a tenant by text alone,
the way a plain vector or keyword memory would. It is never used by
``MemoryStore.recall``; it exists so evaluations can show what the gate prevents.
"""

from __future__ import annotations

from graphmem.model import Kind, MemoryRecord
from graphmem.ranking import rank
from graphmem.store import MemoryStore

__all__ = ["LONG_TERM_KINDS", "similarity_search"]

LONG_TERM_KINDS = (Kind.EPISODIC, Kind.SEMANTIC, Kind.PROCEDURAL)


def similarity_search(
    store: MemoryStore, tenant: str, query: str, k: int = 5
) -> list[tuple[MemoryRecord, float]]:
    """The top ``k`` long-term records by BM25 alone: no kinds, validity, scope or status checks."""
    records = {r.id: r for r in store.backend.all_records(tenant) if r.kind in LONG_TERM_KINDS}
    docs = [
        (r.id, r.content, (r.valid_from or r.event_time or r.created_at).timestamp(), None)
        for r in records.values()
    ]
    return [(records[rid], score) for rid, score in rank(docs, query)[:k]]
