"""What the Neo4j backend keeps in process between recalls: each gated candidate's
fingerprint (opened once per record state: the server holds it sealed), the survivors'
text for ranking, the records recall selected, and the verdicts recent gate reports
were turned into.

Every entry is pinned to the state it was read in (fingerprint tokens), so a changed
record is never ranked, receipted or returned from here in an old state; the backend's
writes drop what they touch, so erased text does not stay here.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from graphmem.gated import Verdicts
from graphmem.model import MemoryRecord

__all__ = ["DocCache", "GateMemo", "Memo", "fingerprint_tokens", "stored_tokens"]


def fingerprint_tokens(fingerprint: str) -> tuple[int, int]:
    """The two integers the gate reports in place of a fingerprint: its first 120 bits
    (30 hex digits, 15 per integer, so each fits a signed 64-bit integer)."""
    return int(fingerprint[:15], 16), int(fingerprint[15:30], 16)


def stored_tokens(stored: str) -> tuple[int, int]:
    """The gate's tokens of a fingerprint as the server stores it: of the SHA-256 of a
    sealed one (``s1:…``: a hash of ciphertext, which confirms nothing without the key),
    of the fingerprint itself for one stored in clear (a tombstone's, or written before
    fingerprints were sealed)."""
    if stored.startswith("s1:"):
        return fingerprint_tokens(hashlib.sha256(stored.encode()).hexdigest())
    return fingerprint_tokens(stored)


_Doc = tuple[str, tuple[float, ...] | None, str | None]
"""A survivor's ranking text: content, embedding, the embedding's model."""
_Entry = tuple[int, int, str, str | None, tuple[float, ...] | None, str | None, MemoryRecord | None, str]
"""Fingerprint tokens, fingerprint, content, embedding and its model (content None when
not held), the whole record once a recall selected it, and the fingerprint as stored
(sealed)."""


class DocCache:
    """What recall reads of recently gated records, by tenant and id: each candidate's
    fingerprint, the survivors' text (content, embedding, its model) for ranking, and the
    selected records themselves.

    The gate reports each candidate's fingerprint tokens (``fingerprint_tokens``)
    instead of its 64-digit fingerprint; an entry is used only while those tokens
    are the ones it holds, so a changed record is never ranked on old text,
    receipted with an old fingerprint or returned in an old state. This backend's
    own writes drop the entries of the records they touch, so erased text does
    not stay here. Oldest entries go first once ``capacity`` is reached.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._epochs: dict[str, int] = {}  # tenant -> how many drops it has seen
        self._lock = threading.Lock()

    def epoch(self, tenant: str) -> int:
        """A number that changes whenever records of ``tenant`` are dropped: taken before a
        read, it tells ``put_many`` whether a write may have replaced what was read."""
        with self._lock:
            return self._epochs.get(tenant, 0)

    def held(
        self, tenant: str, ids: list[str], first: list[int], second: list[int], survivor: list[bool]
    ) -> tuple[list[str], list[str], dict[str, _Doc], list[int]]:
        """For the gate's parallel lists (ids, both fingerprint tokens, survivor flags): each
        candidate's fingerprint and stored fingerprint ("" where not held for its tokens),
        the survivors' held text, and the positions of the candidates whose fingerprint or
        (survivors) text is missing."""
        fingerprints: list[str] = []
        stored: list[str] = []
        docs: dict[str, _Doc] = {}
        missing: list[int] = []
        entries = self._entries
        with self._lock:
            for k, rid in enumerate(ids):
                entry = entries.get((tenant, rid))
                if entry is None or entry[0] != first[k] or entry[1] != second[k]:
                    fingerprints.append("")
                    stored.append("")
                    missing.append(k)
                    continue
                fingerprints.append(entry[2])
                stored.append(entry[7])
                if survivor[k]:
                    if entry[3] is None:
                        missing.append(k)
                    else:
                        docs[rid] = (entry[3], entry[4], entry[5])
        return fingerprints, stored, docs, missing

    def put_many(
        self,
        tenant: str,
        rows: Iterable[tuple[str, str, str, str | None, Sequence[float] | None, str | None]],
        epoch: int | None = None,
    ) -> None:
        """Hold (id, stored fingerprint, fingerprint, content or None, embedding, its model)
        rows, replacing what was held; nothing if records of the tenant were dropped since
        ``epoch`` (a write committing around the read, perhaps an erasure, whose old text
        must not stay here)."""
        if self.capacity <= 0:
            return
        entries = self._entries
        with self._lock:
            if epoch is not None and self._epochs.get(tenant, 0) != epoch:
                return
            for rid, stored, fingerprint, content, embedding, model in rows:
                entries.pop((tenant, rid), None)
                entries[(tenant, rid)] = (
                    *stored_tokens(stored),
                    fingerprint,
                    content,
                    None if embedding is None else tuple(embedding),
                    model,
                    None,
                    stored,
                )
            while len(entries) > self.capacity:
                del entries[next(iter(entries))]

    def records(self, tenant: str, keys: Iterable[tuple[str, str]]) -> dict[str, MemoryRecord]:
        """The records held whole with the fingerprint asked for, of (id, fingerprint) ``keys``."""
        found: dict[str, MemoryRecord] = {}
        with self._lock:
            for rid, fingerprint in keys:
                entry = self._entries.get((tenant, rid))
                if entry is not None and entry[2] == fingerprint and entry[6] is not None:
                    found[rid] = entry[6]
        return found

    def put_record(self, tenant: str, stored: str, record: MemoryRecord) -> None:
        """Hold a record whole, if its entry is for the same stored fingerprint."""
        with self._lock:
            entry = self._entries.get((tenant, record.id))
            if entry is not None and entry[7] == stored:
                self._entries[(tenant, record.id)] = (*entry[:6], record, stored)

    def drop(self, keys: Iterable[tuple[str, str]]) -> None:
        with self._lock:
            for key in keys:
                self._entries.pop(key, None)
                self._epochs[key[0]] = self._epochs.get(key[0], 0) + 1

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


class GateMemo:
    """The verdicts recent gates were turned into, by exactly what the server reported.

    A gate whose report (candidates' fingerprint tokens, reasons and recency) equals
    an earlier one's gets that one's verdicts back: the same ranking inputs, the
    digests already made. The tokens pin every candidate's state, so nothing
    changed can match. Entries go by tenant when this backend writes a record of
    it (as the document cache's do), the oldest first once ``capacity``
    candidates are held.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._entries: dict[tuple[object, ...], Memo] = {}
        self._held = 0
        self._epochs: dict[str, int] = {}  # tenant -> how many drops it has seen
        self._lock = threading.Lock()

    def epoch(self, tenant: str) -> int:
        """As ``DocCache.epoch``, for ``put``."""
        with self._lock:
            return self._epochs.get(tenant, 0)

    def get(self, key: tuple[object, ...], ids: list[str]) -> Memo | None:
        with self._lock:
            found = self._entries.pop(key, None)
            if found is not None:
                self._entries[key] = found  # most recently used last
        return found if found is not None and found.ids == ids else None

    def put(self, key: tuple[object, ...], memo: Memo, epoch: int | None = None) -> None:
        """Keep ``memo`` (its key's first entry is the tenant), unless the tenant's memos
        were dropped since ``epoch``."""
        size = len(memo.ids)
        if size > self.capacity:
            return
        with self._lock:
            if epoch is not None and self._epochs.get(str(key[0]), 0) != epoch:
                return
            old = self._entries.pop(key, None)
            self._held += size - (0 if old is None else len(old.ids))
            self._entries[key] = memo
            while self._held > self.capacity:
                oldest = next(iter(self._entries))
                self._held -= len(self._entries.pop(oldest).ids)

    def drop_tenants(self, tenants: set[str]) -> None:
        if not tenants:
            return
        with self._lock:
            for tenant in tenants:
                self._epochs[tenant] = self._epochs.get(tenant, 0) + 1
            for key in [k for k in self._entries if k[0] in tenants]:
                self._held -= len(self._entries.pop(key).ids)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._held = 0


@dataclass(frozen=True, slots=True)
class Memo:
    """A gate's verdicts with what recall needs beside them."""

    ids: list[str]
    verdicts: Verdicts
    fingerprints: dict[str, str]  # survivor id -> fingerprint
    stored: dict[str, str]  # survivor id -> its fingerprint as stored (what recall re-checks)
