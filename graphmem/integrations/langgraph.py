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
  scope name would pass graphmem's 200-character limit, or that looks like
  personal data, is named ``ns:langgraph.h/<digest of the path>`` instead (still
  linked to its parent; ``GraphmemStore.scope_of`` names it).
* **Item → record.** One record per *version* of an item, ``semantic`` by
  default (``kind=Kind.EPISODIC`` is the alternative): valid_from = the put
  time, one ``Source(type="langgraph")`` as provenance, tag ``langgraph``,
  writer ``langgraph``. The id is ``lg-<digest(namespace, key)[:32]>-<seq>``.
  Digests are the backend's ``name_digest`` (tombstones keep ids and scopes):
  SHA-256 on the embedded store, keyed HMAC-SHA-256 on Neo4j, so a tombstone
  there confirms no guess of an erased namespace or key. Items and scopes an
  earlier version named with SHA-256 on Neo4j are still read, and a put
  supersedes their current version (in the item's scope, as a supersession
  must: such an item keeps its SHA-256 scope name).
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
  ``get`` and ``put`` find an item's versions by id prefix (an index range),
  so their cost does not grow with the namespace; ``search`` reads the gate's
  survivors under the prefix and decodes each record once (a bounded cache
  by record id: records never change in place). ``search`` orders like
  ``InMemoryStore``: items in the order they were first put (an update keeps
  the position; a delete and re-put moves to the end), namespaces by their
  oldest live item.
* **Semantic search** (``index={"dims": …, "embed": …, "fields": […]}``, as
  ``InMemoryStore``): at put, the text at each field path (``"$"`` for the
  whole value, ``a.b``, ``a[*].b``, per-put ``index=False`` or a list of
  paths) is embedded and the vectors are kept with the item's content; a
  search with ``query`` ranks the gate's survivors by cosine similarity, the
  best of an item's vectors, with ``score``; items without vectors follow,
  unscored, when the page has room. Without an index ``query`` is ignored and
  ``score`` is ``None``.
* **Filters** are ``InMemoryStore``'s (equality, nested objects, arrays,
  ``$eq $ne $gt $gte $lt $lte``); a key with dots that is not itself a key of
  the value is a path into nested objects (``{"user.level": 2}``), as in
  LangGraph's SQL stores.
* **TTL** (``supports_ttl``; ``ttl=TTLConfig``): a put with ``ttl`` minutes
  sets the record's ``expires_at``; reads with ``refresh_ttl`` move it to
  now + ttl in place (an audited ``ttl_refreshed`` event — expiry is a
  lifecycle field, like status; content is never rewritten).

Deliberate differences from ``InMemoryStore``
---------------------------------------------
* A namespace exists while it holds a live item. ``InMemoryStore`` also lists
  (and orders by) namespaces that a ``get`` or ``delete`` merely touched, or
  whose items were all deleted. A namespace's place in ``search`` results is
  that of its oldest live item (``InMemoryStore``: of the first put ever).
* Values go through JSON: non-JSON values raise ``TypeError``; tuples come back
  as lists; object keys come back sorted; the stored value is a deep copy
  (``InMemoryStore`` keeps a shallow copy of the mapping), and so is the value
  every read returns (``InMemoryStore`` returns the item it holds: changing it
  changes what later reads see). A value whose JSON exceeds graphmem's content
  limit raises ``ContractViolation``.
* TTL works (``InMemoryStore`` raises ``NotImplementedError``). Expired items
  are omitted from every read at once (``omit_expired`` is always on); there is
  no sweeper — expired records stay stored but are never eligible again; use
  ``MemoryStore.forget(..., mode=ForgetMode.ERASE)`` to remove them.
* A batch is not one transaction: each put (add or supersede) and each delete
  is its own. Reads in a batch see the state before its writes, and repeated
  writes to one key keep the last, as in ``InMemoryStore``.
* Reads do not write recall audit events or receipts (they use the gate, not
  ``recall``); writes, deletes and TTL refreshes are audited.
* Concurrent puts to one key from several threads or processes each
  supersede the version they read; the store refuses a second supersession
  of one version (``already_superseded``), and the put reads the new head and
  supersedes that instead, so the last put wins and one version is current.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import string
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
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
    _ensure_refresh,
    _validate_namespace_labels,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
)

from graphmem._args import check_embedding_model, check_tenant
from graphmem._core import transactional
from graphmem.backends.base import AppendAudit, Backend, PutRecord
from graphmem.backends.base import Op as GraphOp
from graphmem.errors import ContractViolation
from graphmem.model import (
    AuditEvent,
    DropReason,
    ForgetMode,
    ForgetRequest,
    Kind,
    MemoryRecord,
    ReadContext,
    Source,
    Status,
)
from graphmem.model.base import holds_personal_data
from graphmem.model.canonical import canonical_json
from graphmem.model.gate import Candidate, drop_reason, steady_until
from graphmem.ranking import embedding_mismatch
from graphmem.store import MemoryStore

__all__ = ["ROOT_SCOPE", "GraphmemStore", "embedding_model_id", "namespace_of_scope", "namespace_scope"]

ROOT_SCOPE = "ns:langgraph"
_SAFE = frozenset(string.ascii_letters + string.digits + "_@+-")
_MAX_NAME = 200  # graphmem's limit on the name part of a scope key
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_ATTEMPTS = 5
_DECODED = 50_000  # decoded items held by record id

Namespace = tuple[str, ...]


def _escape(label: str) -> str:
    if not isinstance(label, str):
        raise InvalidNamespaceError(f"namespace labels must be strings, got {type(label).__name__}")
    return "".join(c if c in _SAFE else "".join(f".{b:02X}" for b in c.encode()) for c in label)


def _sha256(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def namespace_scope(namespace: Namespace, digest: Callable[[str], str] = _sha256) -> str:
    """The graphmem scope a LangGraph namespace maps to (``()`` is the root ``ns:langgraph``);
    a hashed one (too long, or naming a person) with ``digest`` (SHA-256 by default, the
    embedded store's ``name_digest``; ``GraphmemStore.scope_of`` uses its backend's)."""
    name = "/".join(["langgraph", *(_escape(label) for label in namespace)])
    # A namespace naming a person by address (("users", "alice@example.com")) must not become
    # a scope key, which tombstones keep: hashed, it lives only in its records (erasable).
    if (
        len(name) > _MAX_NAME
        or holds_personal_data(f"ns:{name}")
        or holds_personal_data("ns:" + "/".join(namespace))
    ):
        return f"{ROOT_SCOPE}.h/{digest(canonical_json(list(namespace)))}"
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
    """An item version as stored: its envelope decoded."""

    id: str
    namespace: Namespace
    key: str
    value: dict[str, Any]
    order: tuple[int, int]  # (unused since search orders namespaces by their oldest item, first put)
    seq: int
    ttl: float | None
    vectors: dict[str, list[float]] = field(default_factory=dict)  # field path → embedding
    model: str | None = None  # the id of the model that made the vectors, if named

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
                dict(env.get("vectors") or {}),
                env.get("embedding_model"),
            )
        except (ValueError, TypeError, KeyError, AttributeError, IndexError):
            return None  # not an item this adapter wrote

    def content(self) -> str:
        envelope: dict[str, Any] = {
            "langgraph": 1,
            "namespace": list(self.namespace),
            "key": self.key,
            "value": self.value,
            "order": list(self.order),
            "seq": self.seq,
            "ttl": self.ttl,
        }
        if self.vectors:
            envelope["vectors"] = self.vectors
            if self.model is not None:  # only when named: items from before it read the same
                envelope["embedding_model"] = self.model
        return canonical_json(envelope)


def _copied(value: Any) -> Any:
    """A JSON value copied all the way down: what a read hands out is the caller's to change,
    never what the adapter holds."""
    kind = type(value)
    if kind is dict:
        return {k: v if type(v) not in _NESTED else _copied(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) not in _NESTED else _copied(v) for v in value]
    return value


_NESTED = (dict, list)


def _item(entry: _Entry, record: MemoryRecord) -> Item:
    """The LangGraph item an entry's current version reads as (its value copied)."""
    return Item(
        value=_copied(entry.value),
        key=entry.key,
        namespace=entry.namespace,
        created_at=record.created_at,
        updated_at=record.created_at,
    )


@dataclass(slots=True)
class _Steady:
    """The times through which a held head's gate verdict (eligible) was last found to hold:
    ``now`` in ``[now_from, now_until)`` and the knowledge time in ``[as_of_from,
    as_of_until)`` (``steady_until``; None: no end). Empty until first found."""

    now_from: datetime | None = None
    now_until: datetime | None = None
    as_of_from: datetime | None = None
    as_of_until: datetime | None = None

    def holds(self, now: datetime, as_of: datetime) -> bool:
        return (
            self.now_from is not None
            and self.as_of_from is not None
            and self.now_from <= now
            and (self.now_until is None or now < self.now_until)
            and self.as_of_from <= as_of
            and (self.as_of_until is None or as_of < self.as_of_until)
        )

    def found(self, candidate: Candidate, now: datetime, as_of: datetime) -> None:
        self.now_from, self.now_until = now, steady_until(candidate, now)
        self.as_of_from, self.as_of_until = as_of, steady_until(candidate, as_of)


def _version_prefix(namespace: Namespace, key: str, digest: Callable[[str], str] = _sha256) -> str:
    """Every version id of one item starts with this (``lg-<digest>-<seq>``)."""
    return f"lg-{digest(canonical_json([list(namespace), key]))[:32]}-"


class GraphmemStore(BaseStore):
    """A LangGraph ``BaseStore`` over one tenant of a graphmem ``MemoryStore``.

    ``kind`` is the record kind of items (semantic or episodic); ``clock``
    defaults to the store's; ``ttl`` is LangGraph's ``TTLConfig``; ``index`` is
    LangGraph's ``IndexConfig`` (``dims``, ``embed``, ``fields``) for semantic
    search; ``policy`` and ``writer`` are stamped on every record.

    ``embedding_model`` is the id of the index's model; by default it is derived from
    ``index["embed"]`` (``embedding_model_id``). Items put with vectors carry it, and a
    search with a query is refused (``embedding_model_mismatch``) when an item it would
    rank has vectors of another dimension than the query's, or names another model.
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
        index: IndexConfig | None = None,
        policy: str = "default",
        writer: str = "langgraph",
        embedding_model: str | None = None,
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
        self.index_config: IndexConfig | None = None
        self.embeddings: Any = None
        self._fields: list[tuple[str, str | list[str]]] = []
        if index:
            embed = index.get("embed")
            if not (callable(embed) or hasattr(embed, "embed_documents") or isinstance(embed, str)):
                raise ContractViolation(
                    "index needs 'embed': an Embeddings object, a function from texts to "
                    "vectors, or a provider string such as 'openai:text-embedding-3-small'",
                    code="invalid_index",
                )
            self.index_config = index
            self.embeddings = ensure_embeddings(index.get("embed"))
            self._fields = [
                (p, tokenize_path(p)) if p != "$" else (p, p) for p in (index.get("fields") or ["$"])
            ]
        if embedding_model is not None and not index:
            raise ContractViolation(
                "embedding_model names the model of the index's embeddings; pass index= too, "
                "or leave embedding_model out",
                code="embedding_model_without_embedding",
            )
        self.embedding_model: str | None = None
        if index:
            self.embedding_model = (
                embedding_model_id(index.get("embed"))
                if embedding_model is None
                else check_embedding_model(embedding_model, (), "embedding_model")
            )
        self._lock = threading.RLock()
        self._last_seq = 0
        self._linked: set[Namespace] = set()
        self._scope_names: dict[Namespace, list[str]] = {}  # namespace -> _scopes_of it
        self._decoded: OrderedDict[str, _Entry | None] = OrderedDict()
        # (namespace, key) -> (its read context's base, head entry, record, gate candidate, in
        # scope, the times its verdict was last found to hold through), all read at or after
        # revision _heads_rev; _head_ids: the record id of each
        self._heads: OrderedDict[
            tuple[Namespace, str], tuple[ReadContext, _Entry, MemoryRecord, Candidate, bool, _Steady]
        ] = OrderedDict()
        self._head_ids: dict[str, tuple[Namespace, str]] = {}
        self._heads_rev: Any = None

    @property
    def backend(self) -> Backend:
        """The store's backend (``@transactional`` runs a put in one of its transactions)."""
        return self.store.backend

    def _digest(self, value: str) -> str:
        return self.store.backend.name_digest(self.tenant, value)

    def scope_of(self, namespace: Namespace) -> str:
        """The scope this store writes ``namespace``'s items to (``namespace_scope`` with the
        backend's name digest): a ``MemoryStore.forget`` target for the namespace."""
        return self._scopes_of(tuple(namespace))[0]

    def _scopes_of(self, namespace: Namespace) -> list[str]:
        """The scopes ``namespace``'s items may apply to: this store's name and, where it
        differs (a hashed name on Neo4j), the SHA-256 name earlier versions wrote. Found once
        per namespace: a name digest is the same for the same value and tenant, always."""
        try:
            names = self._scope_names.get(namespace)
        except TypeError:  # an unhashable label: namespace_scope refuses it
            names = None
        if names is None:
            names = list(
                dict.fromkeys((namespace_scope(namespace, self._digest), namespace_scope(namespace)))
            )
            if len(self._scope_names) >= _DECODED:
                self._scope_names.clear()
            self._scope_names[namespace] = names
        return list(names)

    def _prefixes(self, namespace: Namespace, key: str) -> list[str]:
        """The id prefixes of the item's versions: this store's, then the SHA-256 one earlier
        versions wrote where it differs."""
        return list(
            dict.fromkeys((_version_prefix(namespace, key, self._digest), _version_prefix(namespace, key)))
        )

    # -- BaseStore --------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; reads see the state before the batch's writes (as ``InMemoryStore``)."""
        with self._lock:
            results: list[Result] = []
            puts: dict[tuple[Namespace, str], PutOp] = {}
            searches: list[tuple[int, SearchOp]] = []
            for op in ops:
                if isinstance(op, GetOp):
                    results.append(self._get(op))
                elif isinstance(op, SearchOp):
                    searches.append((len(results), op))
                    results.append(None)
                elif isinstance(op, ListNamespacesOp):
                    results.append(self._list_namespaces(op))
                elif isinstance(op, PutOp):
                    puts[(tuple(op.namespace), op.key)] = op
                    results.append(None)
                else:
                    raise ValueError(f"Unknown operation type: {type(op)}")
            if searches:
                queries = self._embed_queries([op for _, op in searches])
                for i, op in searches:
                    results[i] = self._search(op, queries.get(op.query or ""))
            if puts:
                self._apply_puts(puts)
            return results

    def get(self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None) -> Item | None:
        """``BaseStore.get``; an item held since the store's last change (``_held_head``) is
        answered here, without the batch around one read."""
        _validate_namespace_labels(namespace)  # raises as BaseStore.get does
        if type(namespace) is tuple and type(key) is str:
            with self._lock:
                held = self._held_head(namespace, key, _ensure_refresh(self.ttl_config, refresh_ttl))
            if isinstance(held, Item):
                return held
            if held is False:
                return None
        return super().get(namespace, key, refresh_ttl=refresh_ttl)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` in a worker thread, so the event loop never waits on the backend."""
        return await asyncio.to_thread(self.batch, list(ops))

    # -- reads ------------------------------------------------------------

    def _ctx(self, scopes: Iterable[str]) -> ReadContext:
        # A LangGraph read is of the present: it knows everything recorded, by this adapter's
        # clock (items' created_at) or the store's (supersessions).
        now = self.clock()
        return ReadContext(
            tenant=self.tenant,
            policy=self.policy,
            scopes=tuple(scopes),
            now=now,
            as_of=max(now, self.store.clock()),
            kinds=(self.kind,),
        )

    def _decode(self, record_id: str, content: str) -> _Entry | None:
        """An envelope decoded once: a record's content never changes in place (an erase
        empties it, and the gate no longer passes the record)."""
        if record_id in self._decoded:
            self._decoded.move_to_end(record_id)
            return self._decoded[record_id]
        entry = _Entry.decode(record_id, content)
        self._decoded[record_id] = entry
        if len(self._decoded) > _DECODED:
            self._decoded.popitem(last=False)
        return entry

    def _live(self, prefix: Namespace, *, exact: bool) -> list[_Entry]:
        """Current versions under ``prefix`` (or exactly in it), gated as of now, in search order."""
        scopes = set(self._scopes_of(prefix))
        if not exact:
            for scope in list(scopes):
                scopes |= self.store.backend.scope_descendants(self.tenant, scope)
        newest: dict[tuple[Namespace, str], _Entry] = {}
        # Only what passes is needed: a backend that can leave out the rest (superseded
        # versions, deleted items) reads no history.
        for record_id, content, _, _ in self.store._survivors(self._ctx(scopes)):
            entry = self._decode(record_id, content)
            if entry is None or entry.namespace[: len(prefix)] != prefix:
                continue
            if exact and entry.namespace != prefix:
                continue
            slot = (entry.namespace, entry.key)
            if slot not in newest or entry.seq > newest[slot].seq:
                newest[slot] = entry
        first: dict[Namespace, int] = {}
        for entry in newest.values():
            first[entry.namespace] = min(first.get(entry.namespace, entry.order[1]), entry.order[1])
        return sorted(newest.values(), key=lambda e: (first[e.namespace], e.order[1], e.namespace, e.key))

    def _sync_heads(self) -> bool:
        """Bring the held heads up to the backend's revision: drop every one that a write
        since may have changed (all of them when the backend cannot tell which, or another
        connection committed). False when the backend has no revision (nothing is held)."""
        backend = self.store.backend
        revision = getattr(backend, "revision", None)
        if revision is None:
            return False
        now_rev = revision()
        held_rev = self._heads_rev
        if now_rev != held_rev:
            changed = None
            changed_since = getattr(backend, "changed_since", None)
            if changed_since is not None and held_rev is not None:
                changed = changed_since(held_rev, now_rev)
            if changed is None:
                # Nothing held is known to be current (and an erased item's text must not
                # stay here), so all of it goes.
                self._heads.clear()
                self._head_ids.clear()
            else:
                for record_id in changed:
                    slot = self._head_ids.pop(record_id, None)
                    if slot is not None:
                        del self._heads[slot]
            self._heads_rev = now_rev
        return True

    def _held_head(self, namespace: Namespace, key: str, refresh: bool) -> Item | bool | None:
        """The item from the heads held since the backend's last change: ``None`` when none is
        held (read it), ``False`` when the held one is no longer eligible now.

        A backend with ``revision()``, ``changed_since()`` and ``gate_input()`` (the embedded
        store) lets a get skip both reads: while no write touched the item, its versions and
        the gate's inputs are what they were. The gate's verdict is for the time now: the
        one found last holds while now and the knowledge time stay short of the candidate's
        next time after where it was found (``steady_until``), else it is found again.
        """
        held = self._held(namespace, key)
        if not isinstance(held, tuple):
            return held
        entry, record = held
        if refresh and entry.ttl is not None:
            return None  # a TTL refresh writes: the slow path does it in one transaction
        return _item(entry, record)

    def _held(self, namespace: Namespace, key: str) -> tuple[_Entry, MemoryRecord] | bool | None:
        """The held head of an item and its record, if the gate passes it now (``_held_head``);
        ``False`` when it no longer does, ``None`` when none is held. Inside a write
        transaction the revision is its snapshot's, its own writes counted: a head held at it
        is the item's current version there too."""
        if not self._sync_heads():
            return None
        held = self._heads.get((namespace, key))
        if held is None:
            return None
        base, entry, record, candidate, in_scope, steady = held
        now = self.clock()
        as_of = now if self.clock is self.store.clock else max(now, self.store.clock())
        if not steady.holds(now, as_of):
            # The context of the read that held it, at the time now (its fields are validated).
            ctx = base.model_copy(update={"now": now, "as_of": as_of})
            if drop_reason(candidate, ctx, in_scope) is not None:
                return False
            steady.found(candidate, now, as_of)
        return entry, record

    def _hold_head(
        self,
        namespace: Namespace,
        entry: _Entry,
        record: MemoryRecord,
        inputs: tuple[Candidate, bool],
        ctx: ReadContext,
    ) -> None:
        """Keep a head read at or after the revision ``_heads_rev`` (``_held_head``), which
        the gate passed under ``ctx``."""
        if self._heads_rev is None:
            return
        slot = (namespace, entry.key)
        replaced = self._heads.pop(slot, None)
        if replaced is not None:
            self._head_ids.pop(replaced[1].id, None)
        steady = _Steady()  # the caller found the head eligible under ctx: from there on
        steady.found(inputs[0], ctx.now, ctx.known_at)
        self._heads[slot] = (ctx, entry, record, inputs[0], inputs[1], steady)
        self._head_ids[entry.id] = slot
        if len(self._heads) > _DECODED:
            _, (_, evicted, *_) = self._heads.popitem(last=False)
            self._head_ids.pop(evicted.id, None)

    def _head(self, namespace: Namespace, key: str) -> tuple[_Entry, MemoryRecord] | None:
        """The item's current version, if the gate passes it now: its versions by id prefix
        (an index range, whatever the namespace's size), the newest one gated alone."""
        for _ in range(_ATTEMPTS):
            versions: list[MemoryRecord] = []
            for prefix in self._prefixes(namespace, key):
                # A put supersedes an item's old-named versions with one named this store's
                # way: the old names are read only for an item without such a version.
                versions = self.store.backend.with_id_prefix(self.tenant, prefix)
                if versions:
                    break
            found = [
                (entry, record)
                for record in versions
                if (entry := self._decode(record.id, record.content)) is not None
                and entry.namespace == namespace
                and entry.key == key
            ]
            if not found:
                return None
            entry, record = max(found, key=lambda pair: pair[0].seq)
            ctx = self._ctx(self._scopes_of(namespace))
            gate_input = getattr(self.store.backend, "gate_input", None)
            if gate_input is not None:  # the verdict from its inputs, which a get may keep
                inputs = gate_input(ctx, record.id)
                reason = None if inputs is None else drop_reason(inputs[0], ctx, inputs[1])
                if inputs is not None and reason is None:
                    self._hold_head(namespace, entry, record, inputs, ctx)
                verdict = None if inputs is None else (inputs[0].fingerprint, reason)
            else:
                verdict = self.store.backend.gate_one(ctx, record.id)
            if verdict is not None and verdict[1] is None:
                return entry, record
            if verdict is None or verdict[1] is not DropReason.SUPERSEDED:
                return None
            # Superseded between the two reads by another writer: read the versions again.
        return None

    def _records(self, entries: list[_Entry], refresh: bool) -> list[tuple[_Entry, MemoryRecord]]:
        """The stored records of ``entries``; with ``refresh``, TTLs restart from now."""
        if not refresh or all(e.ttl is None for e in entries):
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
        namespace = tuple(op.namespace)
        refresh = bool(op.refresh_ttl)
        held = self._held_head(namespace, op.key, refresh)
        if held is False:
            return None
        if isinstance(held, Item):
            return held
        head = self._head(namespace, op.key)
        if head is None:
            return None
        found = self._records([head[0]], True) if refresh and head[0].ttl is not None else [head]
        for entry, record in found:
            return _item(entry, record)
        return None

    def _embed_queries(self, searches: Sequence[SearchOp]) -> dict[str, list[float]]:
        if self.embeddings is None:
            return {}
        texts = sorted({op.query for op in searches if op.query})
        return dict(zip(texts, (self.embeddings.embed_query(t) for t in texts), strict=True))

    def _search(self, op: SearchOp, query_vector: list[float] | None) -> list[SearchItem]:
        entries = self._live(tuple(op.namespace_prefix), exact=False)
        if op.filter:
            conditions = op.filter.items()
            entries = [e for e in entries if all(_compare(_at_path(e.value, k), v) for k, v in conditions)]
        page: list[tuple[_Entry, float | None]]
        if query_vector is None:
            page = [(e, None) for e in entries[op.offset : op.offset + op.limit]]
        else:
            kinds = {(len(v), e.model) for e in entries for v in e.vectors.values()}
            problem = embedding_mismatch(kinds, len(query_vector), self.embedding_model)
            if problem is not None:
                raise ContractViolation(problem, code="embedding_model_mismatch")
            page = _ranked(entries, query_vector, op.offset, op.limit)
        found = {e.id: record for e, record in self._records([e for e, _ in page], op.refresh_ttl)}
        return [
            SearchItem(
                namespace=entry.namespace,
                key=entry.key,
                value=_copied(entry.value),
                created_at=found[entry.id].created_at,
                updated_at=found[entry.id].created_at,
                score=score,
            )
            for entry, score in page
            if entry.id in found
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
        values: dict[tuple[Namespace, str], dict[str, Any]] = {}
        for (namespace, key), op in puts.items():
            if op.value is None:
                continue
            try:
                values[(namespace, key)] = json.loads(canonical_json(dict(op.value)))
            except (TypeError, ValueError) as err:
                raise TypeError(f"GraphmemStore stores JSON values; {namespace}/{key!r}: {err}") from None
        vectors = self._embed_puts(puts, values)
        for (namespace, key), op in puts.items():
            if op.value is None:
                self._delete(namespace, key)
            else:
                self._put(namespace, key, values[(namespace, key)], vectors.get((namespace, key), {}), op.ttl)

    def _embed_puts(
        self, puts: dict[tuple[Namespace, str], PutOp], values: dict[tuple[Namespace, str], dict[str, Any]]
    ) -> dict[tuple[Namespace, str], dict[str, list[float]]]:
        """The vectors of every indexed field of the batch's puts, in one ``embed_documents`` call."""
        if self.embeddings is None:
            return {}
        slots: list[tuple[tuple[Namespace, str], str]] = []
        texts: list[str] = []
        for slot, value in values.items():
            op = puts[slot]
            if op.index is False:
                continue
            paths = self._fields if op.index is None else [(p, tokenize_path(p)) for p in op.index]
            for path, tokens in paths:
                found = get_text_at_path(value, tokens)
                for i, text in enumerate(found):
                    slots.append((slot, f"{path}.{i}" if len(found) > 1 else path))
                    texts.append(text)
        if not texts:
            return {}
        embedded = self.embeddings.embed_documents(texts)
        if len(embedded) != len(texts):
            raise ContractViolation(
                f"the index's embed function returned {len(embedded)} vectors for {len(texts)} texts",
                code="invalid_index",
            )
        out: dict[tuple[Namespace, str], dict[str, list[float]]] = {}
        for (slot, path), vector in zip(slots, embedded, strict=True):
            out.setdefault(slot, {})[path] = [float(x) for x in vector]
        return out

    @transactional
    def _put(
        self,
        namespace: Namespace,
        key: str,
        value: dict[str, Any],
        vectors: dict[str, list[float]],
        ttl: float | None,
    ) -> None:
        """One put in one transaction: read the item's head and supersede it (or add the
        first version), so concurrent puts to one key leave exactly one current version.
        The head is the one held since the store last changed, where there is one (read at
        this transaction's revision: nothing has written since), else read."""
        held = self._held(namespace, key)
        head = held if isinstance(held, tuple) else self._head(namespace, key)
        now = self.clock()
        if head is None:
            self._link(namespace)
        seq = self._next_seq(now, None if head is None else head[0])
        entry = _Entry(
            f"{self._prefixes(namespace, key)[0]}{seq}",
            namespace,
            key,
            value,
            (seq, seq) if head is None else head[0].order,
            seq,
            ttl,
            vectors,
            self.embedding_model if vectors else None,
        )
        # A new version stays in its item's scope (a supersession keeps kind and scope): an
        # item first put under an earlier SHA-256 scope name keeps that name.
        record = self._record(entry, now, self.scope_of(namespace) if head is None else head[1].scope)
        if head is None:
            self.store.add(record)
        else:
            self.store.supersede(self.tenant, head[0].id, record, reason="langgraph put")
        after_commit = getattr(self.store.backend, "after_commit", None)
        if after_commit is not None:
            after_commit(lambda: self._hold_put(namespace, entry, record))

    def _hold_put(self, namespace: Namespace, entry: _Entry, record: MemoryRecord) -> None:
        """Hold the version a put wrote, read again once it committed (never before: a
        rolled-back put must not be served), so a get of it skips both reads."""
        gate_input = getattr(self.store.backend, "gate_input", None)
        with self._lock:
            if gate_input is None or not self._sync_heads():
                return
            ctx = self._ctx(self._scopes_of(namespace))
            inputs = gate_input(ctx, record.id)
            if inputs is not None and drop_reason(inputs[0], ctx, inputs[1]) is None:
                self._hold_head(namespace, entry, record, inputs, ctx)

    @transactional
    def _delete(self, namespace: Namespace, key: str) -> None:
        held = self._held(namespace, key)  # as in _put
        head = held if isinstance(held, tuple) else self._head(namespace, key)
        if head is None:
            return
        request = ForgetRequest(
            tenant=self.tenant,
            target=head[0].id,
            target_type="record",
            mode=ForgetMode.REVOKE,
            reason="langgraph delete",
            requested_by=self.writer,
        )
        self.store.forget(request)

    def _record(self, entry: _Entry, now: datetime, scope: str) -> MemoryRecord:
        episodic = self.kind is Kind.EPISODIC
        return MemoryRecord(
            id=entry.id,
            tenant=self.tenant,
            kind=self.kind,
            scope=scope,
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

    def _link(self, namespace: Namespace) -> None:
        """``WITHIN`` edges from the namespace's scope up through every prefix to the root."""
        for depth in range(1, len(namespace) + 1):
            path = namespace[:depth]
            if path not in self._linked:
                self.store.scope_within(self.tenant, self.scope_of(path), self.scope_of(path[:-1]))
                self._linked.add(path)

    def _next_seq(self, now: datetime, head: _Entry | None) -> int:
        """Strictly increasing microsecond stamps: version ids and search order."""
        floor = max(self._last_seq, head.seq if head else 0) + 1
        self._last_seq = max((now - _EPOCH) // _MICROSECOND, floor)
        return self._last_seq


_NOT_IN_MODEL_IDS = re.compile(r"[^A-Za-z0-9._:@/+=-]+")


def embedding_model_id(embed: Any) -> str | None:
    """The model id of a LangGraph index's ``embed``: a provider string (such as
    ``"openai:text-embedding-3-small"``) is the id; an ``Embeddings`` object is named by
    its class and its ``model`` / ``model_name``, a function by its name — characters
    outside the id alphabet become ``-``, at most 128 are kept. None when nothing is left."""
    if isinstance(embed, str):
        raw = embed
    else:
        named = getattr(embed, "model", None) or getattr(embed, "model_name", None)
        function = None if hasattr(embed, "embed_documents") else getattr(embed, "__name__", None)
        owner = function if isinstance(function, str) else type(embed).__name__
        raw = f"{owner}:{named}" if isinstance(named, str) and named else owner
    ident = _NOT_IN_MODEL_IDS.sub("-", raw).strip("-")[:128]
    return ident or None


def _ranked(
    entries: list[_Entry], query: list[float], offset: int, limit: int
) -> list[tuple[_Entry, float | None]]:
    """``InMemoryStore``'s ranking with an index: cosine similarity, the best vector of each
    item, then unscored items (no vectors) while the page has room."""
    flat: list[_Entry] = []
    rows: list[list[float]] = []
    scoreless: list[_Entry] = []
    for entry in entries:
        for vector in entry.vectors.values():
            flat.append(entry)
            rows.append(vector)
        if not entry.vectors:
            scoreless.append(entry)
    scores = _cosine(query, rows)
    ordered = sorted(zip(scores, range(len(flat)), strict=True), key=lambda pair: pair[0], reverse=True)
    seen: set[tuple[Namespace, str]] = set()
    kept: list[tuple[_Entry, float | None]] = []
    for score, i in ordered:
        entry = flat[i]
        slot = (entry.namespace, entry.key)
        if slot in seen:
            continue
        place = len(seen)
        seen.add(slot)
        if place >= offset + limit:
            break
        if place < offset:
            continue
        kept.append((entry, float(score)))
    if scoreless and len(kept) < limit:
        kept.extend((entry, None) for entry in scoreless[: limit - len(kept)])
    return kept


def _cosine(query: list[float], rows: list[list[float]]) -> list[float]:
    if not rows:
        return []
    x = np.array(query)
    y = np.array(rows)
    x_norm = np.linalg.norm(x)
    y_norm = np.linalg.norm(y, axis=1)
    mask = y_norm != 0
    out = np.zeros_like(y_norm)
    out[mask] = np.dot(y[mask], x) / (y_norm[mask] * x_norm)
    return [float(v) for v in out]


def _at_path(value: dict[str, Any], key: str) -> Any:
    """A filter key: the value's own key, else a dotted path into nested objects."""
    if key in value or "." not in key:
        return value.get(key)
    node: Any = value
    for part in key.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


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
