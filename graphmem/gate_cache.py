"""The store's one cache: the verdicts recent reads derived from their backend's gate rows.

Entries are keyed by tenant and what the backend's probe names (``GateProbe.key``)
and served only while the probe's token is equal and the read's ``now`` and
knowledge time stay in the intervals of the rows' time boundaries where they
were derived: a write the backend counts (in any process) changes the token,
so nothing changed is served. Bounded by the candidates held, oldest first out.

Beside the verdicts it holds the records recalls returned, parsed, by tenant and
fingerprint (``parsed``; a tenth of the bound in records): a recall reads each
selected record's stored body again and reuses the record held for a body equal to
the held one, instead of hashing and parsing it. Purges drop them with the verdicts.

An operation that erases text purges its tenant's entries inside its write
and again once it committed (``MemoryStore._send``). A read takes the tenant's
``epoch`` before its snapshot begins and keeps what it derived only if no purge
came in between, so erased text is neither served from here nor held here.

Every store over one backend object shares that backend's cache (``of``), so a
purge by any of them reaches what any of them holds. An erase in another process
(or through another backend object) cannot call ``purge`` here; the backend counts
every erasing write per tenant durably, in the erase's transaction, and its probe
reports the count (``GateProbe.erasures``). A count greater than the last one seen
for the tenant purges it as ``purge`` does, and a smaller one (a read of an older
state) is never kept, so such text is held here only until this process next reads
the tenant.
"""

from __future__ import annotations

import threading
import weakref
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Hashable
from datetime import datetime

from graphmem.gated import Verdicts
from graphmem.model import GateProbe, GateRows, MemoryRecord

__all__ = ["DEFAULT_CANDIDATES", "GateCache", "HeldRecords"]

DEFAULT_CANDIDATES = 50_000
"""How many candidates' verdicts a store keeps between reads by default."""

_Entry = tuple[object, tuple[list[datetime], list[datetime]] | None, tuple[int, int], Verdicts]
"""(token, time boundaries, where the derived read's times fell among them, verdicts)."""

_BY_BACKEND: weakref.WeakKeyDictionary[object, GateCache] = weakref.WeakKeyDictionary()
_BY_BACKEND_LOCK = threading.Lock()


class GateCache:
    """Derived gate verdicts by (tenant, probe key), bounded by ``max_candidates``; thread-safe."""

    def __init__(self, max_candidates: int = DEFAULT_CANDIDATES) -> None:
        self.max_candidates = max_candidates
        self.max_records = max_candidates // 10
        self._lock = threading.Lock()
        # (tenant, fingerprint) -> (the body it hashes, the record parsed from it), oldest first.
        self._records: OrderedDict[tuple[str, str], tuple[str, MemoryRecord]] = OrderedDict()
        self._held = 0
        self._entries: OrderedDict[tuple[str, Hashable], _Entry] = OrderedDict()
        self._epochs: dict[str, int] = {}  # tenant -> purges so far
        # tenant -> (the greatest erasure count a probe reported, the epoch before and after
        # the purge it caused): a read that took the epoch before and saw that count may keep
        # what it derived, since its state holds every erase the count includes.
        self._erasures: dict[str, tuple[int, int, int]] = {}

    @classmethod
    def of(cls, backend: object, max_candidates: int = DEFAULT_CANDIDATES) -> GateCache:
        """The cache of every store over ``backend`` (made with ``max_candidates`` by the first)."""
        with _BY_BACKEND_LOCK:
            try:
                found = _BY_BACKEND.get(backend)
                if found is None:
                    found = _BY_BACKEND[backend] = cls(max_candidates)
            except TypeError:  # a backend that cannot be referenced weakly: a cache of its own
                found = cls(max_candidates)
            return found

    @property
    def held(self) -> int:
        """How many candidates' verdicts are held."""
        return self._held

    def epoch(self, tenant: str) -> int:
        """A number that changes whenever ``tenant``'s entries are purged: taken before a read's
        snapshot begins, it tells ``put`` whether an erase may have committed around the read.
        (One dictionary read, atomic: ``purge`` bumps it before it drops anything.)"""
        return self._epochs.get(tenant, 0)

    def get(self, tenant: str, probe: GateProbe, now: datetime, as_of: datetime) -> Verdicts | None:
        """The verdicts held for ``probe``, if still valid for a read at (``now``, ``as_of``).
        A probe reporting more erasures of ``tenant`` than seen so far purges it first; an
        entry whose token is not the probe's is dropped (it would not be served again)."""
        key = (tenant, probe.key)
        with self._lock:
            if probe.erasures is not None:
                self._observe(tenant, probe.erasures)
            found = self._entries.get(key)
            if found is None:
                return None
            token, boundaries, interval, verdicts = found
            if token != probe.token:
                del self._entries[key]
                self._held -= len(verdicts.rows)
                return None
            if (
                boundaries is not None
                and (bisect_right(boundaries[0], now), bisect_right(boundaries[1], as_of)) != interval
            ):
                return None
            self._entries.move_to_end(key)
            return verdicts

    def _observe(self, tenant: str, erasures: int) -> None:
        """Purge ``tenant`` if ``erasures`` is more than any probe reported before (the
        first count reported purges too: nothing held can be known to predate it). Under
        the lock."""
        seen = self._erasures.get(tenant)
        if seen is not None and erasures <= seen[0]:
            return
        before = self._epochs.get(tenant, 0)
        self._drop({tenant})
        self._erasures[tenant] = (erasures, before, before + 1)

    def put(
        self,
        tenant: str,
        probe: GateProbe,
        rows: GateRows,
        now: datetime,
        as_of: datetime,
        verdicts: Verdicts,
        epoch: int,
    ) -> None:
        """Hold ``verdicts`` derived from ``rows`` for ``probe``, unless the rows are not the
        probe's (``keep``), the entry would take more than a quarter of the bound, the
        tenant was purged since ``epoch`` (other than for the erasures the probe counts), or
        the probe counts fewer erasures than one already seen (an older state)."""
        size = len(rows)
        if not rows.keep or size > self.max_candidates // 4:
            return
        boundaries = rows.boundaries
        interval = (0, 0)
        if boundaries is not None:
            interval = (bisect_right(boundaries[0], now), bisect_right(boundaries[1], as_of))
        key = (tenant, probe.key)
        with self._lock:
            seen = None
            if probe.erasures is not None:
                self._observe(tenant, probe.erasures)
                seen = self._erasures[tenant]
                if probe.erasures < seen[0]:  # an older state than one already read
                    return
            current = self._epochs.get(tenant, 0)
            # Purged since ``epoch`` only for the erasures its state counts (and so holds): kept.
            if current != epoch and (probe.erasures, epoch, current) != seen:
                return
            old = self._entries.pop(key, None)
            if old is not None:
                self._held -= len(old[3].rows)
            while self._entries and self._held + size > self.max_candidates:
                _, dropped = self._entries.popitem(last=False)
                self._held -= len(dropped[3].rows)
            self._entries[key] = (probe.token, boundaries, interval, verdicts)
            self._held += size

    def parsed(self, tenant: str, epoch: int) -> HeldRecords:
        """The records held for ``tenant`` as a read that took ``epoch`` before its snapshot
        began may use them: what it parses is kept only if no purge came since."""
        return HeldRecords(self, tenant, epoch)

    def _parsed_get(self, tenant: str, fingerprint: str) -> tuple[str, MemoryRecord] | None:
        key = (tenant, fingerprint)
        with self._lock:
            found = self._records.get(key)
            if found is not None:
                self._records.move_to_end(key)
            return found

    def _parsed_put(self, tenant: str, epoch: int, fingerprint: str, body: str, record: MemoryRecord) -> None:
        if self.max_records <= 0:
            return
        with self._lock:
            if self._epochs.get(tenant, 0) != epoch:  # purged since the read began: keep nothing
                return
            self._records[tenant, fingerprint] = (body, record)
            self._records.move_to_end((tenant, fingerprint))
            while len(self._records) > self.max_records:
                self._records.popitem(last=False)

    def purge(self, tenants: set[str]) -> None:
        """Drop every entry of ``tenants`` and refuse what reads begun before now would keep."""
        if not tenants:
            return
        with self._lock:
            self._drop(tenants)

    def _drop(self, tenants: set[str]) -> None:
        """``purge`` under the lock: the epochs first, then the entries."""
        for tenant in tenants:
            self._epochs[tenant] = self._epochs.get(tenant, 0) + 1
        for key in [k for k in self._entries if k[0] in tenants]:
            self._held -= len(self._entries.pop(key)[3].rows)
        for held in [k for k in self._records if k[0] in tenants]:
            del self._records[held]

    def clear(self) -> None:
        with self._lock:
            for tenant in {k[0] for k in self._entries}:
                self._epochs[tenant] = self._epochs.get(tenant, 0) + 1
            for tenant, _ in self._records:
                self._epochs[tenant] = self._epochs.get(tenant, 0) + 1
            self._entries.clear()
            self._records.clear()
            self._held = 0

    def texts(self, tenant: str | None = None) -> list[str]:
        """Every survivor text and parsed record's body and content held (of ``tenant``'s,
        if given): what an erase must leave nowhere here."""
        with self._lock:
            return [
                doc[1]
                for key, (*_, verdicts) in self._entries.items()
                if tenant is None or key[0] == tenant
                for doc in verdicts.corpus.docs.values()
            ] + [
                text
                for key, (body, record) in self._records.items()
                if tenant is None or key[0] == tenant
                for text in (body, record.content)
            ]


class HeldRecords:
    """One tenant's parsed records in a ``GateCache``, for one read (``GateCache.parsed``)."""

    __slots__ = ("_cache", "_epoch", "_tenant")

    def __init__(self, cache: GateCache, tenant: str, epoch: int) -> None:
        self._cache, self._tenant, self._epoch = cache, tenant, epoch

    def get(self, fingerprint: str) -> tuple[str, MemoryRecord] | None:
        return self._cache._parsed_get(self._tenant, fingerprint)

    def put(self, fingerprint: str, body: str, record: MemoryRecord) -> None:
        self._cache._parsed_put(self._tenant, self._epoch, fingerprint, body, record)
