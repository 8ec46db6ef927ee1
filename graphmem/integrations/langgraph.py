"""graphmem as a LangGraph ``BaseStore``: ``GraphmemStore(MemoryStore.embedded(), "acme")``.

Hand it to a graph (``builder.compile(store=GraphmemStore(...))``) and every
``store.put/get/search/delete/list_namespaces`` an agent makes lands in
graphmem as typed, gated, auditable records. Semantics follow LangGraph's
``InMemoryStore`` (results, ordering, filters, pagination — proven by a
differential test), with the deliberate differences listed at the end.

Mapping
-------
* **Namespace → scope.** ``("users", "alice")`` applies to the scope
  ``ns:langgraph/users/alice``. Labels are escaped reversibly: letters,
  digits and ``_ @ + -`` stay, every other byte of the UTF-8 label becomes
  ``.XX`` (LangGraph labels never contain ``.``). Each namespace scope is
  ``WITHIN`` its parent prefix, up to the root ``ns:langgraph``, so the scope
  graph mirrors the namespace tree and ``MemoryStore.forget(target=
  "ns:langgraph/users/alice", ...)`` forgets a whole subtree. A path whose
  scope name would pass graphmem's 200-character limit is named
  ``ns:langgraph.h/<sha256 of the path>`` instead (still linked to its parent).
* **Item → record.** One record per *version* of an item, ``semantic`` by
  default (``kind=Kind.EPISODIC`` is the alternative): valid_from = the put
  time, one ``Source(type="langgraph")`` as provenance, tag ``langgraph``,
  writer ``langgraph``. The id is ``lg-<sha256(namespace, key)[:32]>-<seq>``.
  The content is the canonical JSON of ``{namespace, key, value, order,
  seq, ttl}``, so an erase removes the key and value with it.
* **put** of an existing item ``supersede``\\ s its current version (graphmem
  never overwrites; the old version stays as history and drops out as
  ``superseded``); a put of a new item is an ``add``. **delete** revokes the
  current version (``forget`` mode ``revoke``), superseded versions stay
  history. Item ``created_at`` and ``updated_at`` are both the time of the
  last put, as in ``InMemoryStore``.
* **Reads** run graphmem's gate (``ReadContext`` over the namespace scopes,
  now = the clock): anything graphmem took out of use — revoked, erased,
  invalidated, contested, expired — is gone from the LangGraph view too.
  ``search`` orders like ``InMemoryStore``: namespaces in the order they last
  became non-empty, items in the order they were first put (an update keeps
  the position; a delete and re-put moves to the end). ``query`` is ignored and
  ``score`` is ``None``, exactly as ``InMemoryStore`` without an index.
* **TTL** (``supports_ttl``; ``ttl=TTLConfig``): a put with ``ttl`` minutes
  sets the record's ``expires_at``; reads with ``refresh_ttl`` move it to
  now + ttl in place (an audited ``ttl_refreshed`` event — expiry is a
  lifecycle field, like status; content is never rewritten).

Deliberate differences from ``InMemoryStore``
---------------------------------------------
* A namespace exists while it holds a live item. ``InMemoryStore`` also lists
  (and orders by) namespaces that a ``get`` or ``delete`` merely touched, or
  whose items were all deleted.
* Values go through JSON: non-JSON values raise ``TypeError``; tuples come back
  as lists; object keys come back sorted; the stored value is a deep copy
  (``InMemoryStore`` keeps a shallow copy of the mapping). A value whose JSON
  exceeds graphmem's content limit raises ``ContractViolation``.
* TTL works (``InMemoryStore`` raises ``NotImplementedError``). Expired items
  are omitted from every read at once (``omit_expired`` is always on); there is
  no sweeper — expired records stay stored but are never eligible again; use
  ``MemoryStore.forget(..., mode=ForgetMode.ERASE)`` to remove them.
* A batch is not one transaction: each put (add or supersede) and each delete
  is its own. Reads in a batch see the state before its writes, and repeated
  writes to one key keep the last, as in ``InMemoryStore``.
* Reads do not write recall audit events or receipts (they use the gate, not
  ``recall``); writes, deletes and TTL refreshes are audited.
* One writer per tenant is assumed: two processes superseding the same
  version at once leave two live versions, of which reads show the newer.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import string
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from graphmem._args import check_tenant
from graphmem.backends.base import AppendAudit, PutRecord
from graphmem.backends.base import Op as GraphOp
from graphmem.errors import ConflictError, ContractViolation
from graphmem.model import (
    AuditEvent,
    ForgetMode,
    ForgetRequest,
    Kind,
    MemoryRecord,
    ReadContext,
    Source,
    Status,
)
from graphmem.model.canonical import canonical_json
from graphmem.store import MemoryStore

__all__ = ["ROOT_SCOPE", "GraphmemStore", "namespace_of_scope", "namespace_scope"]

ROOT_SCOPE = "ns:langgraph"
_SAFE = frozenset(string.ascii_letters + string.digits + "_@+-")
_MAX_NAME = 200  # graphmem's limit on the name part of a scope key
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)

Namespace = tuple[str, ...]


def _escape(label: str) -> str:
    if not isinstance(label, str):
        raise InvalidNamespaceError(f"namespace labels must be strings, got {type(label).__name__}")
    return "".join(c if c in _SAFE else "".join(f".{b:02X}" for b in c.encode()) for c in label)


def namespace_scope(namespace: Namespace) -> str:
    """The graphmem scope a LangGraph namespace maps to (``()`` is the root ``ns:langgraph``)."""
    name = "/".join(["langgraph", *(_escape(label) for label in namespace)])
    if len(name) > _MAX_NAME:
        digest = hashlib.sha256(canonical_json(list(namespace)).encode()).hexdigest()
        return f"{ROOT_SCOPE}.h/{digest}"
    return f"ns:{name}"


def namespace_of_scope(scope: str) -> Namespace:
    """Invert ``namespace_scope`` (not for hashed long paths, whose records carry their namespace)."""
    if scope == ROOT_SCOPE:
        return ()
    if not scope.startswith(ROOT_SCOPE + "/"):
        raise ValueError(f"{scope!r} is not a LangGraph namespace scope")
    labels = scope[len(ROOT_SCOPE) + 1 :].split("/")
    return tuple(_unescape(label) for label in labels)


def _unescape(text: str) -> str:
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == ".":
            out.append(int(text[i + 1 : i + 3], 16))
            i += 3
        else:
            out += text[i].encode()
            i += 1
    return out.decode()


@dataclass(frozen=True, slots=True)
class _Entry:
    """A live item version as the gate returned it."""

    id: str
    namespace: Namespace
    key: str
    value: dict[str, Any]
    order: tuple[int, int]  # (when the namespace last became non-empty, when the item was first put)
    seq: int
    ttl: float | None

    @classmethod
    def decode(cls, record_id: str, content: str) -> _Entry | None:
        try:
            env = json.loads(content)
            if env.get("langgraph") != 1:
                return None
            return cls(
                record_id,
                tuple(env["namespace"]),
                env["key"],
                env["value"],
                (int(env["order"][0]), int(env["order"][1])),
                int(env["seq"]),
                env["ttl"],
            )
        except (ValueError, TypeError, KeyError, AttributeError, IndexError):
            return None  # not an item this adapter wrote

    def content(self) -> str:
        return canonical_json(
            {
                "langgraph": 1,
                "namespace": list(self.namespace),
                "key": self.key,
                "value": self.value,
                "order": list(self.order),
                "seq": self.seq,
                "ttl": self.ttl,
            }
        )


class GraphmemStore(BaseStore):
    """A LangGraph ``BaseStore`` over one tenant of a graphmem ``MemoryStore``.

    ``kind`` is the record kind of items (semantic or episodic); ``clock``
    defaults to the store's; ``ttl`` is LangGraph's ``TTLConfig``; ``policy``
    and ``writer`` are stamped on every record.
    """

    supports_ttl = True

    def __init__(
        self,
        store: MemoryStore,
        tenant: str,
        *,
        kind: Kind = Kind.SEMANTIC,
        clock: Callable[[], datetime] | None = None,
        ttl: TTLConfig | None = None,
        policy: str = "default",
        writer: str = "langgraph",
    ) -> None:
        if kind not in (Kind.SEMANTIC, Kind.EPISODIC):
            raise ContractViolation(
                f"LangGraph items are stored as semantic or episodic records, not {kind.value!r}",
                code="unsupported_kind",
            )
        self.store = store
        self.tenant = check_tenant(tenant)
        self.kind = kind
        self.clock = clock or store.clock
        self.ttl_config = ttl
        self.policy = policy
        self.writer = writer
        self._lock = threading.RLock()
        self._last_seq = 0
        self._linked: set[Namespace] = set()

    # -- BaseStore --------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; reads see the state before the batch's writes (as ``InMemoryStore``)."""
        with self._lock:
            results: list[Result] = []
            puts: dict[tuple[Namespace, str], PutOp] = {}
            for op in ops:
                if isinstance(op, GetOp):
                    results.append(self._get(op))
                elif isinstance(op, SearchOp):
                    results.append(self._search(op))
                elif isinstance(op, ListNamespacesOp):
                    results.append(self._list_namespaces(op))
                elif isinstance(op, PutOp):
                    puts[(tuple(op.namespace), op.key)] = op
                    results.append(None)
                else:
                    raise ValueError(f"Unknown operation type: {type(op)}")
            self._apply_puts(puts)
            return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` in a worker thread, so the event loop never waits on the backend."""
        return await asyncio.to_thread(self.batch, list(ops))

    # -- reads ------------------------------------------------------------

    def _live(self, prefix: Namespace, *, exact: bool) -> list[_Entry]:
        """Current versions under ``prefix`` (or exactly in it), gated as of now, in search order."""
        scope = namespace_scope(prefix)
        scopes = {scope} if exact else {scope, *self.store.backend.scope_descendants(self.tenant, scope)}
        ctx = ReadContext(
            tenant=self.tenant, policy=self.policy, scopes=tuple(scopes), now=self.clock(), kinds=(self.kind,)
        )
        newest: dict[tuple[Namespace, str], _Entry] = {}
        for record_id, content, _, _ in self.store.backend.gate(ctx).survivors:
            entry = _Entry.decode(record_id, content)
            if entry is None or entry.namespace[: len(prefix)] != prefix:
                continue
            if exact and entry.namespace != prefix:
                continue
            slot = (entry.namespace, entry.key)
            if slot not in newest or entry.seq > newest[slot].seq:
                newest[slot] = entry
        return sorted(newest.values(), key=lambda e: (e.order, e.namespace, e.key))

    def _records(self, entries: list[_Entry], refresh: bool) -> list[tuple[_Entry, MemoryRecord]]:
        """The stored records of ``entries``; with ``refresh``, TTLs restart from now."""
        if not refresh:
            by_id = {r.id: r for r in self.store.backend.get_many(self.tenant, [e.id for e in entries])}
            return [(e, by_id[e.id]) for e in entries if e.id in by_id]
        # Read and rewrite in one transaction: a record forgotten since the gate saw it is
        # left as it is, never written back.
        with self.store.backend.write():
            return self._refreshed(entries)

    def _refreshed(self, entries: list[_Entry]) -> list[tuple[_Entry, MemoryRecord]]:
        by_id = {r.id: r for r in self.store.backend.get_many(self.tenant, [e.id for e in entries])}
        found = [(e, by_id[e.id]) for e in entries if e.id in by_id and by_id[e.id].status is Status.ACTIVE]
        now = self.clock()
        ops: list[GraphOp] = []
        out: list[tuple[_Entry, MemoryRecord]] = []
        for entry, record in found:
            if entry.ttl is not None and record.expires_at != now + timedelta(minutes=entry.ttl):
                record = record.model_copy(update={"expires_at": now + timedelta(minutes=entry.ttl)})
                ops.append(PutRecord(record=record, replace=True))
            out.append((entry, record))
        if ops:
            ids = tuple(op.record.id for op in ops if isinstance(op, PutRecord))
            event = AuditEvent(
                tenant=self.tenant, action="ttl_refreshed", actor=self.writer, record_ids=ids, at=now
            )
            self.store.backend.apply([*ops, AppendAudit(event=event)])
        return out

    def _get(self, op: GetOp) -> Item | None:
        found = [e for e in self._live(tuple(op.namespace), exact=True) if e.key == op.key]
        for entry, record in self._records(found, op.refresh_ttl):
            return Item(
                value=entry.value,
                key=entry.key,
                namespace=entry.namespace,
                created_at=record.created_at,
                updated_at=record.created_at,
            )
        return None

    def _search(self, op: SearchOp) -> list[SearchItem]:
        entries = self._live(tuple(op.namespace_prefix), exact=False)
        if op.filter:
            conditions = op.filter.items()
            entries = [e for e in entries if all(_compare(e.value.get(k), v) for k, v in conditions)]
        page = entries[op.offset : op.offset + op.limit]
        return [
            SearchItem(
                namespace=entry.namespace,
                key=entry.key,
                value=entry.value,
                created_at=record.created_at,
                updated_at=record.created_at,
            )
            for entry, record in self._records(page, op.refresh_ttl)
        ]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[Namespace]:
        conditions = op.match_conditions or ()
        start: Namespace = ()
        for condition in conditions:  # narrow the read to the literal head of a prefix condition
            if condition.match_type == "prefix":
                head = []
                for label in condition.path:
                    if label == "*":
                        break
                    head.append(label)
                start = max(start, tuple(head), key=len)
        namespaces = {e.namespace for e in self._live(start, exact=False)}
        matching = [ns for ns in namespaces if all(_does_match(c, ns) for c in conditions)]
        if op.max_depth is not None:
            result = sorted({ns[: op.max_depth] for ns in matching})
        else:
            result = sorted(matching)
        return result[op.offset : op.offset + op.limit]

    # -- writes -----------------------------------------------------------

    def _apply_puts(self, puts: dict[tuple[Namespace, str], PutOp]) -> None:
        views: dict[Namespace, dict[str, _Entry]] = {}
        for (namespace, key), op in puts.items():
            if namespace not in views:
                views[namespace] = {e.key: e for e in self._live(namespace, exact=True)}
            view = views[namespace]
            head = view.get(key)
            if op.value is None:
                if head is not None:
                    self._delete(head)
                    del view[key]
                continue
            try:
                value = json.loads(canonical_json(dict(op.value)))
            except (TypeError, ValueError) as err:
                raise TypeError(f"GraphmemStore stores JSON values; {namespace}/{key!r}: {err}") from None
            nspos = min((e.order[0] for e in view.values()), default=None)
            view[key] = self._write(namespace, key, value, head, nspos, op.ttl)

    def _write(
        self,
        namespace: Namespace,
        key: str,
        value: dict[str, Any],
        head: _Entry | None,
        nspos: int | None,
        ttl: float | None,
    ) -> _Entry:
        now = self.clock()
        digest = hashlib.sha256(canonical_json([list(namespace), key]).encode()).hexdigest()[:32]
        if head is None:
            self._link(namespace)
        for _ in range(5):  # a version id taken by another writer in the same microsecond: next seq
            seq = self._next_seq(now, head)
            entry = _Entry(
                f"lg-{digest}-{seq}",
                namespace,
                key,
                value,
                (seq if nspos is None else nspos, seq if head is None else head.order[1]),
                seq,
                ttl,
            )
            record = self._record(entry, now)
            try:
                if head is None:
                    self.store.add(record)
                else:
                    self.store.supersede(self.tenant, head.id, record, reason="langgraph put")
            except ConflictError as err:
                if err.code != "duplicate_id":
                    raise
                continue
            return entry
        raise ConflictError(f"could not find a free version id for {namespace}/{key!r}", code="duplicate_id")

    def _record(self, entry: _Entry, now: datetime) -> MemoryRecord:
        episodic = self.kind is Kind.EPISODIC
        return MemoryRecord(
            id=entry.id,
            tenant=self.tenant,
            kind=self.kind,
            scope=namespace_scope(entry.namespace),
            content=entry.content(),
            created_at=now,
            valid_from=None if episodic else now,
            event_time=now if episodic else None,
            outcome="unknown" if episodic else None,
            expires_at=None if entry.ttl is None else now + timedelta(minutes=entry.ttl),
            sources=() if episodic else (Source(id=f"src-{entry.id}", type="langgraph"),),
            policy=self.policy,
            writer=self.writer,
            tags=("langgraph",),
        )

    def _delete(self, head: _Entry) -> None:
        request = ForgetRequest(
            tenant=self.tenant,
            target=head.id,
            target_type="record",
            mode=ForgetMode.REVOKE,
            reason="langgraph delete",
            requested_by=self.writer,
        )
        self.store.forget(request)

    def _link(self, namespace: Namespace) -> None:
        """``WITHIN`` edges from the namespace's scope up through every prefix to the root."""
        for depth in range(1, len(namespace) + 1):
            path = namespace[:depth]
            if path not in self._linked:
                self.store.scope_within(self.tenant, namespace_scope(path), namespace_scope(path[:-1]))
                self._linked.add(path)

    def _next_seq(self, now: datetime, head: _Entry | None) -> int:
        """Strictly increasing microsecond stamps: version ids and search order."""
        floor = max(self._last_seq, head.seq if head else 0) + 1
        self._last_seq = max((now - _EPOCH) // _MICROSECOND, floor)
        return self._last_seq


# -- InMemoryStore's filter and namespace matching, reproduced exactly -------


def _does_match(condition: MatchCondition, namespace: Namespace) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"Unsupported match type: {condition.match_type}")
    return all(p == "*" or k == p for k, p in pairs)


def _compare(item_value: Any, filter_value: Any) -> bool:
    """JSONB-like equality with nested objects, arrays and ``$eq $ne $gt $gte $lt $lte``."""
    if isinstance(filter_value, dict):
        if any(k.startswith("$") for k in filter_value):
            return all(_operator(item_value, op, v) for op, v in filter_value.items())
        if not isinstance(item_value, dict):
            return False
        return all(_compare(item_value.get(k), v) for k, v in filter_value.items())
    if isinstance(filter_value, list | tuple):
        return (
            isinstance(item_value, list | tuple)
            and len(item_value) == len(filter_value)
            and all(_compare(i, f) for i, f in zip(item_value, filter_value, strict=False))
        )
    return bool(item_value == filter_value)


def _operator(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(value == operand)
    if operator == "$ne":
        return bool(value != operand)
    if operator == "$gt":
        return float(value) > float(operand)
    if operator == "$gte":
        return float(value) >= float(operand)
    if operator == "$lt":
        return float(value) < float(operand)
    if operator == "$lte":
        return float(value) <= float(operand)
    raise ValueError(f"Unsupported operator: {operator}")
