"""What the Neo4j backend keeps in process between recalls: each gated candidate's
fingerprint (opened once per record state: the server holds it sealed), the survivors'
text for ranking, and the records recall selected.

Every entry is pinned to the state it was read in (fingerprint tokens), so a changed
record is never ranked, receipted or returned from here in an old state; the backend's
writes drop what they touch, so erased text does not stay here.

Why this stays in the backend when the store owns the cache of derived verdicts
(``graphmem.gate_cache``): it saves round trips and cryptography that only this
backend has. The server's gate report carries fingerprint tokens, not text, so that
the first read of every recall stays small; a survivor whose text is held here for
its tokens needs no second read, and its sealed fingerprint and text are opened
(decrypted) once per record state rather than once per report. When a write changes
one record of a scope, the store's entry for that report is invalid as a whole, but
every other candidate's text is still held here for its unchanged tokens: the next
recall reads the one changed record, not a thousand. And the store's cache cannot
stand in for it, since it is keyed by whole reports, not by record state.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Sequence

from graphmem.model import MemoryRecord

__all__ = ["DocCache", "fingerprint_tokens", "stored_tokens"]


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
    own writes drop the entries of the records they touch, and a gate report whose
    erasure count grew (an erase by another process) drops the tenant's
    (``erasures``), so erased text does not stay here. Oldest entries go first once
    ``capacity`` is reached.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._epochs: dict[str, int] = {}  # tenant -> how many drops it has seen
        self._erasures: dict[str, int] = {}  # tenant -> the greatest erasure count reported
        self._lock = threading.Lock()

    def epoch(self, tenant: str) -> int:
        """A number that changes whenever records of ``tenant`` are dropped: taken before a
        read, it tells ``put_many`` whether a write may have replaced what was read."""
        with self._lock:
            return self._epochs.get(tenant, 0)

    def erasures(self, tenant: str, count: int, epoch: int) -> int:
        """Take the tenant's erasure count a gate report gave (read before its candidates),
        and return the epoch the report's read may keep what it fetches under (in place of
        ``epoch``, taken before it). A count greater than any seen drops every entry of the
        tenant first (an erase by another process, whose text must not stay here); the
        read keeps what it fetches only if nothing else was dropped since ``epoch``. A
        smaller count is an older report: nothing it fetches is kept."""
        with self._lock:
            seen = self._erasures.get(tenant)
            current = self._epochs.get(tenant, 0)
            if seen is not None and count < seen:
                return -1  # no epoch is negative: put_many keeps nothing
            if seen is not None and count == seen:
                return epoch
            self._erasures[tenant] = count
            for key in [k for k in self._entries if k[0] == tenant]:
                del self._entries[key]
            self._epochs[tenant] = current + 1
            return current + 1 if current == epoch else -1

    def own_erasures(self, counts: dict[str, int]) -> None:
        """Take the erasure counts this backend's own committed erases left (tenant ->
        count): where the count before it was the last one seen, no other erase came in
        between, and the erase already dropped what it touched, so the next report need not
        drop the tenant again."""
        with self._lock:
            for tenant, count in counts.items():
                if self._erasures.get(tenant) == count - 1:
                    self._erasures[tenant] = count

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

    def texts(self, tenant: str | None = None) -> list[str]:
        """Every text held (of ``tenant``'s entries, if given): the survivors' content and
        the content of the records held whole; what an erase must leave nowhere here."""
        with self._lock:
            return [
                text
                for (owner, _), entry in self._entries.items()
                if tenant is None or owner == tenant
                for text in (entry[3], None if entry[6] is None else entry[6].content)
                if text is not None
            ]
