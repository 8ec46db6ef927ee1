"""``GraphmemStore`` (graphmem as a LangGraph ``BaseStore``) against LangGraph's own ``InMemoryStore``.

The differential test applies the same random put/get/search/delete/
list_namespaces/batch sequence to both and asserts equal results — items
(namespace, key, value, created_at, updated_at, score), order, errors — on
every backend. Both sides read one injected clock: ``GraphmemStore(clock=...)``
and ``InMemoryStore`` through its module's ``datetime``, patched.

The reference is ``InMemoryStore`` with the adapter's one documented listing
difference applied: a namespace exists while it holds items (``InMemoryStore``
also keeps namespaces a get or delete merely touched, and the positions of
emptied ones). ``InMemoryStore`` has no TTL (``put(ttl=...)`` raises
``NotImplementedError``), so TTL is tested against LangGraph's documented
semantics instead.
"""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar
from unittest.mock import patch

import langgraph.store.memory as memory_module
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from graphmem import DropReason, ForgetMode, ForgetRequest, Kind, MemoryStore, ReadContext, Status
from graphmem._args import check_scope
from graphmem.integrations.langgraph import ROOT_SCOPE, GraphmemStore, namespace_of_scope, namespace_scope

T0 = datetime(2026, 1, 1, tzinfo=UTC)
KNOWN = datetime(2100, 1, 1, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def tick(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@contextmanager
def in_memory_clock(clock: Clock) -> Iterator[None]:
    """Make ``InMemoryStore`` stamp items with ``clock`` (it calls ``datetime.now(timezone.utc)``)."""

    class Frozen(datetime):
        source: ClassVar[Clock] = clock

        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
            return cls.source()

    with patch.object(memory_module, "datetime", Frozen):
        yield


class _NoVivify(dict[tuple[str, ...], dict[str, Item]]):
    def __missing__(self, key: tuple[str, ...]) -> dict[str, Item]:
        return {}  # reading a namespace never creates it


class Reference(InMemoryStore):
    """``InMemoryStore`` with the adapter's two documented listing differences (a namespace
    exists while it holds items, and its place in ``search`` is that of its oldest item), and
    its failure on a text held twice in one put batch fixed (``_insertinmem_store``)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._data = _NoVivify()
        self._first: dict[tuple[tuple[str, ...], str], int] = {}
        self._puts = 0

    def batch(self, ops: Any) -> Any:
        order = {ns: min(self._first[(ns, k)] for k in items) for ns, items in self._data.items() if items}
        self._data = _NoVivify(sorted(self._data.items(), key=lambda pair: order.get(pair[0], 0)))
        return super().batch(ops)

    async def abatch(self, ops: Any) -> Any:
        return self.batch(list(ops))

    def _extract_texts(self, put_ops: dict[tuple[tuple[str, ...], str], PutOp]) -> Any:
        # Runs after the batch's reads, before its vectors are stored: an update's vectors
        # are the new value's only (InMemoryStore keeps an older version's vector of a
        # field the new value lacks, or of every field with index=False).
        for namespace, key in put_ops:
            self._vectors[namespace].pop(key, None)
        return super()._extract_texts(put_ops)

    def _insertinmem_store(self, to_embed: dict[str, list[Any]], embeddings: list[list[float]]) -> None:
        # InMemoryStore embeds each distinct text once, then pairs those embeddings with the
        # list of every (item, path) holding a text, so two fields or items holding the same
        # text make the put raise ValueError. The adapter embeds every field: each distinct
        # text's embedding goes to every place that holds it.
        for embedding, places in zip(embeddings, to_embed.values(), strict=True):
            for namespace, key, path in places:
                self._vectors[namespace][key][path] = embedding

    def _apply_put_ops(self, put_ops: dict[tuple[tuple[str, ...], str], PutOp]) -> None:
        for (namespace, key), op in put_ops.items():
            if op.value is None:
                items = self._data.get(namespace)
                if items is not None:
                    items.pop(key, None)
                    self._first.pop((namespace, key), None)
                    if not items:
                        del self._data[namespace]
            else:
                self._data.setdefault(namespace, {})
                if key not in self._data[namespace]:
                    self._puts += 1
                    self._first[(namespace, key)] = self._puts
                super()._apply_put_ops({(namespace, key): op})


# -- strategies ------------------------------------------------------------

LABELS = ["a", "b", "c d/é"]  # the last needs escaping in a scope name
KEYS = ["k1", "k2", "k/3 ü"]  # the last one too
# Mostly a small pool, so sequences revisit namespaces, nest them and hit their ancestors.
POOL = [("a",), ("a", "b"), ("a", "b", "c d/é"), ("b",), ("b", "a")]
pooled = st.sampled_from(POOL)
namespaces = st.one_of(
    pooled, pooled, pooled, st.lists(st.sampled_from(LABELS), min_size=1, max_size=3).map(tuple)
)
prefixes = st.one_of(st.sampled_from([(), (), ("a",), ("a", "b"), ("b",)]), namespaces)
patterns = st.lists(st.sampled_from([*LABELS, "*"]), max_size=3).map(tuple)
keys = st.sampled_from([*KEYS, "k1", "k2"])
values = st.fixed_dictionaries(
    {"n": st.integers(-2, 3)},
    optional={
        "s": st.sampled_from(["x", "y"]),
        "d": st.fixed_dictionaries({"x": st.integers(0, 2)}, optional={"y": st.sampled_from(["p", "q"])}),
        "l": st.lists(st.integers(0, 2), max_size=2),
    },
)
operators = st.dictionaries(
    st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), st.integers(-2, 3), min_size=1, max_size=2
)
conditions = st.one_of(
    st.tuples(st.just("n"), st.one_of(st.integers(-2, 3), operators)),
    st.tuples(
        st.just("s"), st.one_of(st.sampled_from(["x", "y"]), st.fixed_dictionaries({"$ne": st.just("x")}))
    ),
    st.tuples(st.just("d"), st.fixed_dictionaries({"x": st.integers(0, 2)})),
    st.tuples(st.just("l"), st.lists(st.integers(0, 2), max_size=2)),
    st.tuples(
        st.sampled_from(["s", "d"]), operators
    ),  # float() of a string/dict/None raises: same error both sides
)
filters = st.one_of(st.none(), st.none(), st.lists(conditions, min_size=1, max_size=2).map(dict))
limits = st.sampled_from([10, 10, 3, 2, 1, 0, -1])  # slices, so negative bounds count from the end
offsets = st.sampled_from([0, 0, 0, 1, 2, -1])

get_op = st.builds(GetOp, namespaces, keys)
put_op = st.builds(PutOp, namespaces, keys, st.one_of(values, st.none()), index=st.none(), ttl=st.none())
search_op = st.builds(
    SearchOp, prefixes, filter=filters, limit=limits, offset=offsets, query=st.sampled_from([None, "x"])
)


def _conditions(prefix: tuple[str, ...], suffix: tuple[str, ...]) -> tuple[MatchCondition, ...]:
    out = []
    if prefix:
        out.append(MatchCondition("prefix", prefix))
    if suffix:
        out.append(MatchCondition("suffix", suffix))
    return tuple(out)


list_op = st.builds(
    ListNamespacesOp,
    st.builds(_conditions, patterns, patterns),
    max_depth=st.one_of(st.none(), st.integers(0, 3)),
    limit=limits,
    offset=offsets,
)
put_action = st.tuples(st.just("put"), namespaces, keys, values)
actions = st.one_of(
    put_action,
    put_action,
    put_action,
    st.tuples(st.just("get"), namespaces, keys),
    st.tuples(st.just("delete"), namespaces, keys),
    st.tuples(st.just("search"), prefixes, filters, limits, offsets, st.sampled_from([None, "x"])),
    st.tuples(st.just("list"), patterns, patterns, st.one_of(st.none(), st.integers(0, 3)), limits, offsets),
    st.tuples(
        st.just("batch"), st.lists(st.one_of(get_op, put_op, search_op, list_op), min_size=1, max_size=4)
    ),
    st.tuples(st.just("tick"), st.sampled_from([0.000001, 1.0, 60.0])),
)


# -- running an action on a store --------------------------------------------


def _norm(result: Any) -> Any:
    if isinstance(result, Item):
        score = result.score if isinstance(result, SearchItem) else "-"
        score = round(score, 9) if isinstance(score, float) else score
        return (type(result).__name__, result.namespace, result.key, result.value, result.created_at,
                result.updated_at, score)  # fmt: skip
    if isinstance(result, list):
        return [_norm(r) for r in result]
    return result


def _apply(target: BaseStore, action: tuple[Any, ...]) -> Any:
    kind, *args = action
    try:
        if kind == "put":
            namespace, key, value = args
            return target.put(namespace, key, value)
        if kind == "iput":
            namespace, key, value, index = args
            return target.put(namespace, key, value, index=index)
        if kind == "get":
            return _norm(target.get(*args))
        if kind == "delete":
            return target.delete(*args)
        if kind == "search":
            prefix, filter_, limit, offset, query = args
            return _norm(target.search(prefix, filter=filter_, limit=limit, offset=offset, query=query))
        if kind == "list":
            prefix, suffix, max_depth, limit, offset = args
            found = target.list_namespaces(
                prefix=prefix or None, suffix=suffix or None, max_depth=max_depth, limit=limit, offset=offset
            )
            return _norm(found)
        return _norm(target.batch(args[0]))
    except Exception as err:  # the same error on both sides is a match
        return ("raised", type(err).__name__)


def _everything(target: BaseStore) -> Any:
    return _norm(target.search((), limit=1000)), target.list_namespaces(limit=1000)


def embed(texts: list[str]) -> list[list[float]]:
    """A deterministic embedding: character counts (a zero vector for text without them)."""
    return [[float(text.count(c)) for c in "xypq0123"] for text in texts]


INDEX: dict[str, Any] = {"dims": 8, "embed": embed, "fields": ["s", "d.y", "$"]}


def _differential(
    store: MemoryStore, steps: list[tuple[Any, ...]], kind: Kind, index: dict[str, Any] | None = None
) -> None:
    clock = Clock()
    reference = Reference(index=index) if index else Reference()
    adapter = GraphmemStore(store, f"t-{uuid.uuid4().hex[:12]}", clock=clock, kind=kind, index=index)  # type: ignore[arg-type]
    with in_memory_clock(clock):
        for i, step in enumerate(steps):
            if step[0] == "tick":
                clock.tick(step[1])
                continue
            expected = _apply(reference, step)
            assert _apply(adapter, step) == expected, f"step {i}: {step}"
            clock.tick(0.5)
        assert _everything(adapter) == _everything(reference)


runs = st.tuples(
    st.lists(put_action, min_size=2, max_size=6).flatmap(
        lambda seed: st.lists(actions, min_size=4, max_size=20).map(lambda steps: seed + steps)
    ),
    st.sampled_from([Kind.SEMANTIC, Kind.EPISODIC]),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(run=runs)
def test_matches_in_memory_store(run: tuple[list[tuple[Any, ...]], Kind]) -> None:
    """Same results, order and errors as ``InMemoryStore``, over a fresh ``MemoryStore.embedded()``."""
    with MemoryStore.embedded() as store:
        _differential(store, *run)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(run=runs)
def test_matches_in_memory_store_on_every_backend(
    store: MemoryStore, run: tuple[list[tuple[Any, ...]], Kind]
) -> None:
    """The same differential on the shared ``store`` fixture (persisted, Neo4j), a fresh tenant per example.

    Fewer examples: on Neo4j each step is a few round trips (~2 s an example on a 2-core machine).
    """
    _differential(store, *run)


indexed_actions = st.one_of(
    actions,
    st.tuples(
        st.just("iput"),
        namespaces,
        keys,
        values,
        st.sampled_from([None, False, ["s"], ["l[*]"], ["$"]]),
    ),
    st.tuples(
        st.just("search"), prefixes, filters, limits, offsets, st.sampled_from(["x", "y q", "1", "x 0 p"])
    ),
)
indexed_runs = st.tuples(
    st.lists(put_action, min_size=2, max_size=6).flatmap(
        lambda seed: st.lists(indexed_actions, min_size=4, max_size=20).map(lambda steps: seed + steps)
    ),
    st.sampled_from([Kind.SEMANTIC, Kind.EPISODIC]),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(run=indexed_runs)
def test_semantic_search_matches_in_memory_store_with_an_index(
    run: tuple[list[tuple[Any, ...]], Kind],
) -> None:
    """With ``index=`` both embed the same fields with the same function: the same ranked
    results, scores, filters and pages as ``InMemoryStore``."""
    with MemoryStore.embedded() as store:
        _differential(store, *run, index=INDEX)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(run=indexed_runs)
def test_semantic_search_matches_in_memory_store_on_every_backend(
    store: MemoryStore, run: tuple[list[tuple[Any, ...]], Kind]
) -> None:
    _differential(store, *run, index=INDEX)


def test_semantic_search_ranks_by_similarity_with_scores(store: MemoryStore, tenant: str) -> None:
    lg = GraphmemStore(store, tenant, index=INDEX)  # type: ignore[arg-type]
    lg.put(("docs",), "a", {"s": "ppp"})
    lg.put(("docs",), "b", {"s": "xxx y"})
    lg.put(("docs",), "c", {"s": "qq"}, index=False)  # never embedded: unscored, after the scored
    found = lg.search(("docs",), query="x", limit=3)
    assert [i.key for i in found] == ["b", "a", "c"]
    assert found[0].score is not None
    assert found[0].score > 0.9
    assert found[2].score is None
    # Search still goes through the gate: a revoked item is not ranked at all.
    lg.delete(("docs",), "b")
    assert [i.key for i in lg.search(("docs",), query="x")] == ["a", "c"]


def test_filters_follow_dotted_paths_into_nested_values(store: MemoryStore, tenant: str) -> None:
    lg = GraphmemStore(store, tenant)
    lg.put(("u",), "alice", {"user": {"access-level": 3, "team": "red"}})
    lg.put(("u",), "bob", {"user": {"access-level": 1, "team": "red"}})
    lg.put(("u",), "odd", {"user.access-level": 1, "user": {"access-level": 3}})  # a literal key wins
    assert [i.key for i in lg.search(("u",), filter={"user.access-level": {"$gte": 2}})] == ["alice"]
    assert [i.key for i in lg.search(("u",), filter={"user.team": "red"})] == ["alice", "bob"]
    assert [i.key for i in lg.search(("u",), filter={"user.access-level": 1})] == ["bob", "odd"]
    assert lg.search(("u",), filter={"user.missing.deeper": 1}) == []


def test_get_and_put_never_read_the_whole_namespace(store: MemoryStore, tenant: str) -> None:
    """get/put/delete find the item's versions by id prefix and gate that one record, so
    their cost does not grow with the namespace; only search and listings gate it all."""
    lg = GraphmemStore(store, tenant)
    lg.batch([PutOp(("big",), f"k{i}", {"n": i}) for i in range(30)])
    gated: list[Any] = []
    original = store.backend.gate_probe

    def counting(ctx: ReadContext) -> Any:
        gated.append(ctx)
        return original(ctx)

    store.backend.gate_probe = counting  # type: ignore[method-assign]
    try:
        lg.put(("big",), "k3", {"n": 99})
        lg.put(("big",), "new", {"n": 100})
        assert lg.get(("big",), "k3").value == {"n": 99}  # type: ignore[union-attr]
        lg.delete(("big",), "k4")
        assert lg.get(("big",), "k4") is None
        assert gated == []
    finally:
        store.backend.gate_probe = original  # type: ignore[method-assign]
    assert [i.key for i in lg.search(("big",), limit=3)] == ["k0", "k1", "k2"]
    assert len(lg.search(("big",), limit=100)) == 30


def test_a_search_reads_no_history_on_the_embedded_store(tmp_path: Any) -> None:
    """Updated and deleted items' old versions stay as history, but a search right after a
    write decodes only the rows that can pass: its cost follows the live items."""
    from graphmem.backends.embedded import EmbeddedBackend

    store = MemoryStore.embedded(tmp_path / "store")
    lg = GraphmemStore(store, "acme", index=INDEX)  # type: ignore[arg-type]
    for round_ in range(10):
        for i in range(6):
            lg.put(("ns",), f"k{i}", {"s": "x" * (i + 1), "n": round_})
    lg.delete(("ns",), "k5")
    read: list[str] = []
    original = EmbeddedBackend._candidate

    def counting(self: EmbeddedBackend, tenant: str, row: Any, *args: Any) -> Any:
        read.append(row[0])
        return original(self, tenant, row, *args)

    with patch.object(EmbeddedBackend, "_candidate", counting):
        found = lg.search(("ns",), query="xx", limit=10)
    assert sorted(i.key for i in found) == [f"k{i}" for i in range(5)]
    assert all(i.value["n"] == 9 for i in found)
    assert len(read) == 5  # of 60 versions: the live head of each item, nothing else


def test_concurrent_puts_to_one_key_leave_one_current_version(store: MemoryStore, tenant: str) -> None:
    """Threads (each its own GraphmemStore, as separate processes would be) put one key at
    once: every put is acknowledged, one version is current and it is the last one."""
    import threading

    adapters = [GraphmemStore(store, tenant) for _ in range(4)]
    adapters[0].put(("shared",), "counter", {"n": -1})
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(adapters))

    def run(w: int) -> None:
        barrier.wait()
        for i in range(5):
            try:
                adapters[w].put(("shared",), "counter", {"n": w * 100 + i})
            except BaseException as err:
                errors.append(err)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(len(adapters))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    versions = store.backend.with_tag(tenant, "langgraph")
    assert len(versions) == 21
    ctx = ReadContext(
        as_of=KNOWN, tenant=tenant, scopes=[namespace_scope(("shared",))], now=datetime.now(UTC)
    )
    current = [r for r in versions if store.explain(ctx, r.id).reason is None]
    assert len(current) == 1
    assert adapters[1].get(("shared",), "counter").value == json.loads(current[0].content)["value"]  # type: ignore[union-attr]


SCRIPT: list[tuple[Any, ...]] = [
    ("put", ("a",), "k1", {"n": 1, "s": "x"}),
    ("put", ("a",), "k2", {"n": 2, "d": {"x": 1}}),
    ("put", ("b",), "k1", {"n": 3, "l": [1, 2]}),
    ("put", ("a", "b"), "k1", {"n": -1}),
    ("put", ("a",), "k1", {"n": 4, "s": "y"}),  # an update keeps its position
    ("search", (), None, 10, 0, None),
    ("get", ("a", "b"), "k2"),  # a key of an ancestor namespace is not found
    ("delete", ("a",), "k2"),
    ("put", ("a",), "k2", {"n": 5}),  # delete + put: last in its namespace
    ("delete", ("b",), "k1"),
    ("put", ("b",), "k1", {"n": 6}),  # the emptied namespace comes back last
    ("search", (), None, 10, 0, None),
    ("search", ("a",), {"n": {"$gte": 4, "$ne": 5}}, 10, 0, None),
    ("search", ("a",), {"d": {"x": 1}}, 10, 0, None),
    ("search", (), {"s": {"$gt": 1}}, 10, 0, None),  # float("y") raises in both
    ("search", ("a",), None, 2, 1, "ignored query"),
    ("list", (), (), 1, 10, 0),
    ("list", ("a", "*"), (), None, 10, 0),
    ("list", (), ("b",), None, 10, 0),
    (
        "batch",
        [
            PutOp(("c",), "k", {"n": 7}),
            GetOp(("c",), "k"),  # reads see the state before the batch's writes
            PutOp(("a",), "k1", None),
            PutOp(("c",), "k", {"n": 8}),  # the last write to a key wins
            ListNamespacesOp(),
        ],
    ),
    ("search", (), None, 10, 0, None),
]


def test_scripted_sequence_matches_in_memory_store(store: MemoryStore) -> None:
    """The orderings and batch rules the random test may reach only rarely, on every backend."""
    _differential(store, SCRIPT, Kind.SEMANTIC)


@pytest.mark.parametrize("operator", ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"])
def test_filter_operators_match_at_every_boundary(operator: str) -> None:
    clock = Clock()
    reference, adapter = Reference(), GraphmemStore(MemoryStore.embedded(), "acme", clock=clock)
    with in_memory_clock(clock):
        for n in range(-2, 4):
            for target in (reference, adapter):
                target.put(("a",), f"k{n}", {"n": n, "f": n / 2})
        for field in ("n", "f"):
            for operand in (-2, -1, 0, 0.5, 1, 3, 4):
                query: dict[str, Any] = {field: {operator: operand}}
                assert _norm(adapter.search((), filter=query)) == _norm(reference.search((), filter=query))


def test_the_reference_differs_from_in_memory_store_only_in_listing() -> None:
    """Pin the documented difference: ``InMemoryStore`` lists namespaces that a read merely touched."""
    plain, reference = InMemoryStore(), Reference()
    for target in (plain, reference):
        target.get(("ghost",), "k")
        target.put(("kept",), "k", {"n": 1})
        target.put(("gone",), "k", {"n": 1})
        target.delete(("gone",), "k")
    assert plain.list_namespaces() == [("ghost",), ("gone",), ("kept",)]
    assert reference.list_namespaces() == [("kept",)]


# -- async -------------------------------------------------------------------


def test_async_api_matches(store: MemoryStore, tenant: str) -> None:
    clock = Clock()
    adapter = GraphmemStore(store, tenant, clock=clock)

    async def scenario(target: BaseStore) -> list[Any]:
        await target.aput(("users", "alice"), "prefs", {"n": 1, "s": "x"})
        await target.aput(("users", "bob"), "prefs", {"n": 2})
        clock.tick(1)
        await target.aput(("users", "alice"), "prefs", {"n": 3, "s": "y"})
        got = await target.aget(("users", "alice"), "prefs")
        found = await target.asearch(("users",), filter={"n": {"$gte": 2}})
        names = await target.alist_namespaces(prefix=("users",), max_depth=2)
        await target.adelete(("users", "bob"), "prefs")
        batched = await target.abatch(
            [GetOp(("users", "bob"), "prefs"), SearchOp(("users",)), ListNamespacesOp(max_depth=1)]
        )
        return [_norm(got), _norm(found), names, _norm(batched)]

    with in_memory_clock(clock):
        expected = asyncio.run(scenario(Reference()))
        clock.now = T0
        assert asyncio.run(scenario(adapter)) == expected
    assert expected[2] == [("users", "alice"), ("users", "bob")]


# -- TTL (LangGraph semantics; InMemoryStore has none) ----------------------


def test_in_memory_store_has_no_ttl() -> None:
    with pytest.raises(NotImplementedError):
        InMemoryStore().put(("a",), "k", {"n": 1}, ttl=1.0)


def test_expired_items_disappear_and_reads_refresh_ttl(store: MemoryStore, tenant: str) -> None:
    clock = Clock()
    lg = GraphmemStore(store, tenant, clock=clock, ttl={"default_ttl": 1.0})
    ns = ("users", "alice")
    lg.put(ns, "a", {"n": 1})  # default ttl: 1 minute
    lg.put(ns, "b", {"n": 2}, ttl=None)  # never expires
    lg.put(ns, "c", {"n": 3}, ttl=2.0)
    clock.tick(50)
    assert lg.get(ns, "a") is not None  # refreshed: now expires at 110 s
    clock.tick(50)
    assert lg.get(ns, "a", refresh_ttl=False) is not None  # 100 s < 110 s, and not refreshed
    assert [i.key for i in lg.search(ns, refresh_ttl=False)] == ["a", "b", "c"]
    clock.tick(10)  # 110 s: validity is half-open, so "a" is expired now
    assert lg.get(ns, "a") is None
    assert [i.key for i in lg.search(ns)] == ["b", "c"]  # refreshes "c": expires at 230 s
    clock.tick(60)  # 170 s: "c" would have expired at 120 s without the refresh
    assert [i.key for i in lg.search((), refresh_ttl=False)] == ["b", "c"]
    clock.tick(60)  # 230 s
    assert [i.key for i in lg.search(())] == ["b"]
    lg.put(ns, "a", {"n": 4})  # an expired item is gone: a new put starts a new item, last in order
    assert [(i.key, i.value) for i in lg.search(ns)] == [("b", {"n": 2}), ("a", {"n": 4})]
    # Graphmem keeps the expired versions as records its gate rejects as expired.
    expired = [
        r for r in store.backend.with_tag(tenant, "langgraph") if r.expires_at and r.expires_at <= clock()
    ]
    ctx = ReadContext(as_of=KNOWN, tenant=tenant, scopes=[namespace_scope(ns)], now=clock())
    assert expired
    assert {store.explain(ctx, r.id).reason for r in expired} == {DropReason.EXPIRED}


def test_expired_namespaces_are_not_listed_and_refresh_can_be_off_by_default(
    store: MemoryStore, tenant: str
) -> None:
    clock = Clock()
    lg = GraphmemStore(store, tenant, clock=clock, ttl={"default_ttl": 1.0, "refresh_on_read": False})
    lg.put(("a",), "k", {"n": 1})
    lg.put(("b",), "k", {"n": 1}, ttl=None)
    clock.tick(30)
    assert lg.get(("a",), "k") is not None  # refresh_on_read=False: expiry stays at 60 s
    clock.tick(30)
    assert lg.get(("a",), "k") is None
    assert lg.list_namespaces() == [("b",)]
    assert lg.get(("a",), "k", refresh_ttl=True) is None  # an expired item cannot be revived by a read


# -- the graph behind it ----------------------------------------------------


def test_namespaces_become_a_tree_of_scopes(store: MemoryStore, tenant: str) -> None:
    lg = GraphmemStore(store, tenant)
    lg.put(("users", "alice", "prefs"), "theme", {"v": "dark"})
    lg.put(("users", "bob"), "theme", {"v": "light"})
    leaf = namespace_scope(("users", "alice", "prefs"))
    assert leaf == "ns:langgraph/users/alice/prefs"
    assert store.backend.scope_ancestors(tenant, [leaf]) == {
        leaf,
        "ns:langgraph/users/alice",
        "ns:langgraph/users",
        ROOT_SCOPE,
    }
    assert store.backend.scope_descendants(tenant, "ns:langgraph/users") == {
        "ns:langgraph/users",
        "ns:langgraph/users/alice",
        leaf,
        "ns:langgraph/users/bob",
    }
    # A graphmem recall at the item's scope finds it as a semantic record with LangGraph provenance.
    (record,) = store.recall(ReadContext(tenant=tenant, scopes=[leaf]), "dark").records
    assert record.kind is Kind.SEMANTIC
    assert record.scope == leaf
    assert [s.type for s in record.sources] == ["langgraph"]


def test_put_supersedes_and_delete_revokes(store: MemoryStore, tenant: str) -> None:
    clock = Clock()
    lg = GraphmemStore(store, tenant, clock=clock)
    lg.put(("docs",), "readme", {"v": 1})
    clock.tick(1)
    lg.put(("docs",), "readme", {"v": 2})
    first, second = sorted(store.backend.with_tag(tenant, "langgraph"), key=lambda r: r.created_at)
    assert first.status is Status.ACTIVE  # never overwritten: history
    edges = {(e.src, e.dst, e.type) for e in store.trace(tenant, second.id).edges}
    assert (second.id, first.id, "SUPERSEDES") in edges
    as_of_first = ReadContext(tenant=tenant, scopes=[namespace_scope(("docs",))], now=T0)
    assert store.recall(as_of_first).ids == [first.id]  # replay: what the store said at T0
    lg.delete(("docs",), "readme")
    assert lg.get(("docs",), "readme") is None
    assert store.get(tenant, second.id).status is Status.REVOKED  # type: ignore[union-attr]
    assert [e.action for e in store.audit(tenant)] == ["added", "superseded", "recalled", "forgotten"]


def test_graphmem_forgetting_a_namespace_scope_reaches_the_langgraph_view(
    store: MemoryStore, tenant: str
) -> None:
    lg = GraphmemStore(store, tenant)
    lg.put(("users", "alice"), "prefs", {"food": "sourdough-secret"})
    lg.put(("users", "alice", "notes"), "n1", {"text": "sourdough-secret again"})
    lg.put(("users", "bob"), "prefs", {"food": "rye"})
    store.forget(
        ForgetRequest(
            tenant=tenant,
            target=namespace_scope(("users", "alice")),
            target_type="scope",
            mode=ForgetMode.ERASE,
            reason="user asked to be forgotten",
            requested_by="dpo",
        )
    )
    assert [i.namespace for i in lg.search(("users",))] == [("users", "bob")]
    assert lg.list_namespaces() == [("users", "bob")]
    assert "sourdough-secret" not in "".join(store.export(tenant))


def test_scope_names_round_trip_and_are_valid() -> None:
    @given(st.lists(st.text(min_size=0, max_size=12), max_size=4).map(tuple))
    def check(namespace: tuple[str, ...]) -> None:
        scope = namespace_scope(namespace)
        assert check_scope(scope) == scope
        if not scope.startswith(ROOT_SCOPE + ".h/"):
            assert namespace_of_scope(scope) == namespace

    check()
    long = ("x" * 150, "y/" * 40)
    assert namespace_scope(long).startswith("ns:langgraph.h/")
    # A namespace naming a person by address is hashed too: scope keys stay on tombstones.
    assert namespace_scope(("users", "alice@example.com")).startswith("ns:langgraph.h/")
    assert namespace_scope(long) != namespace_scope(("x" * 150, "y/" * 41))


def test_items_in_long_namespaces_work(store: MemoryStore, tenant: str) -> None:
    lg = GraphmemStore(store, tenant)
    long = ("x" * 150, "y" * 60)
    lg.put(long, "k", {"n": 1})
    assert lg.get(long, "k").value == {"n": 1}  # type: ignore[union-attr]
    assert [i.namespace for i in lg.search(("x" * 150,))] == [long]


def test_values_must_be_json() -> None:
    lg = GraphmemStore(MemoryStore.embedded(), "acme")
    with pytest.raises(TypeError, match="JSON"):
        lg.put(("a",), "k", {"when": datetime.now(UTC)})
    assert lg.search(()) == []


def test_only_semantic_or_episodic_items() -> None:
    from graphmem import ContractViolation

    with pytest.raises(ContractViolation, match="semantic or episodic"):
        GraphmemStore(MemoryStore.embedded(), "acme", kind=Kind.WORKING)


def test_usable_as_a_langgraph_store() -> None:
    from langgraph.config import get_store
    from langgraph.graph import START, StateGraph
    from typing_extensions import TypedDict

    class State(TypedDict):
        user: str
        seen: int

    def remember(state: State) -> dict[str, int]:
        store = get_store()  # the store the graph was compiled with
        ns = ("users", state["user"])
        previous = store.get(ns, "visits")
        count = 1 + (previous.value["count"] if previous else 0)
        store.put(ns, "visits", {"count": count})
        return {"seen": count}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    lg = GraphmemStore(MemoryStore.embedded(), "acme")
    graph = builder.compile(store=lg)
    graph.invoke({"user": "alice", "seen": 0})
    assert graph.invoke({"user": "alice", "seen": 0})["seen"] == 2
    assert lg.get(("users", "alice"), "visits").value == {"count": 2}  # type: ignore[union-attr]


def test_the_readme_langgraph_agent_runs_and_remembers_across_processes(tmp_path: Any) -> None:
    """The README's LangGraph snippet, as a user pastes it into a script: it answers from what
    the first turn stored, and a second run of the script (a new process) still recalls it."""
    import re
    from pathlib import Path

    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- readme-test: langgraph-agent -->\n```python\n(.*?)```", readme, re.DOTALL)
    assert found is not None, "README.md has no langgraph-agent snippet"
    script = tmp_path / "agent.py"
    script.write_text(found.group(1), encoding="utf-8")
    outputs = [
        subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
        for _ in range(2)
    ]
    assert outputs[0].strip() == "I remember: Call me by phone after 5pm, please."
    # The second run's first turn already recalls the first run's notes (the store file).
    assert "Call me by phone after 5pm, please." in outputs[1]
    lg = GraphmemStore(MemoryStore.embedded(tmp_path / "memory"), "acme")
    texts = sorted(item.value["text"] for item in lg.search(("memories", "alice"), limit=10))
    assert texts == sorted(["Call me by phone after 5pm, please.", "When may I phone you?"] * 2)


def test_versions_by_id_prefix_are_exactly_the_ids_with_that_prefix(store: MemoryStore, tenant: str) -> None:
    """``with_id_prefix`` (what get/put read) on every backend: the prefix range and nothing
    beside it, in id order, whatever each record's status."""
    from graphmem import MemoryRecord, Source

    ids = ["lg-a-1", "lg-a-2", "lg-a-10", "lg-a.3", "lg-ab", "lg-", "lg-a"]
    store.add_many(
        [
            MemoryRecord(
                id=i,
                tenant=tenant,
                kind=Kind.SEMANTIC,
                scope="case:p",
                content=i,
                valid_from=T0,
                sources=(Source(id=f"s-{i}"),),
            )
            for i in ids
        ]
    )
    store.forget(
        ForgetRequest(
            tenant=tenant, target="lg-a-2", target_type="record", mode=ForgetMode.REVOKE, reason="test",
            requested_by="t",
        )
    )  # fmt: skip
    assert [r.id for r in store.backend.with_id_prefix(tenant, "lg-a-")] == ["lg-a-1", "lg-a-10", "lg-a-2"]
    assert [r.id for r in store.backend.with_id_prefix(tenant, "lg-a")] == [
        "lg-a", "lg-a-1", "lg-a-10", "lg-a-2", "lg-a.3", "lg-ab"
    ]  # fmt: skip
    assert store.backend.with_id_prefix(tenant, "lg-z") == []
    assert store.backend.with_id_prefix("another-" + tenant, "lg-a-") == []


def test_a_held_get_answers_every_change_made_any_way(store: MemoryStore, tenant: str) -> None:
    """Repeated gets of one item are served from what the adapter holds (on the embedded
    store, under its revision) and still see every change: this adapter's writes, another
    adapter's, the store's own forget, time passing an expiry, and an invalidation whose
    effective time arrives later."""
    clock = Clock()
    lg = GraphmemStore(store, tenant, clock=clock)
    other = GraphmemStore(store, tenant, clock=clock)
    ns = ("users", "alice")
    lg.put(ns, "a", {"n": 1})
    lg.put(ns, "b", {"n": 2}, ttl=1.0)
    for _ in range(3):
        assert lg.get(ns, "a").value == {"n": 1}  # type: ignore[union-attr]
    other.put(ns, "a", {"n": 2})  # another adapter (another thread would do the same)
    assert lg.get(ns, "a").value == {"n": 2}  # type: ignore[union-attr]
    done = threading.Event()
    threading.Thread(target=lambda: (other.put(ns, "a", {"n": 3}), done.set())).start()
    assert done.wait(30)
    assert lg.get(ns, "a").value == {"n": 3}  # type: ignore[union-attr]
    assert lg.get(ns, "b").value == {"n": 2}  # type: ignore[union-attr]
    clock.tick(61)  # b's minute is over: no write happened, the held head expires by time
    assert lg.get(ns, "b", refresh_ttl=False) is None
    head = lg.get(ns, "a")
    assert head is not None
    [record] = [r for r in store.backend.with_tag(tenant, "langgraph") if r.status is Status.ACTIVE and
                r.content and '"n":3' in r.content]  # fmt: skip
    store.forget(
        ForgetRequest(tenant=tenant, target=record.id, mode=ForgetMode.REVOKE, reason="r", requested_by="u")
    )
    assert lg.get(ns, "a") is None
    lg.put(ns, "c", {"n": 4})
    assert lg.get(ns, "c") is not None
    [c] = [r for r in store.backend.with_tag(tenant, "langgraph") if r.content and '"n":4' in r.content]
    store.invalidate(tenant, c.id, by=record.id, reason="wrong", at=clock() + timedelta(seconds=30))
    assert lg.get(ns, "c") is not None  # invalidated from 30 s ahead
    clock.tick(30)
    assert lg.get(ns, "c") is None


def test_a_held_get_sees_a_write_by_another_store_on_the_same_file(tmp_path: Any, tenant: str) -> None:
    """Another store (another process, in effect: its own connections) writes the file; the
    held head is dropped because the file's write generation moved without a write of this store."""
    with MemoryStore.embedded(tmp_path / "m") as mine, MemoryStore.embedded(tmp_path / "m") as theirs:
        ns = ("users", "alice")
        GraphmemStore(mine, tenant).put(ns, "a", {"n": 1})
        lg = GraphmemStore(mine, tenant)
        assert lg.get(ns, "a").value == {"n": 1}  # type: ignore[union-attr]
        assert lg.get(ns, "a").value == {"n": 1}  # type: ignore[union-attr]
        GraphmemStore(theirs, tenant).put(ns, "a", {"n": 2})
        assert lg.get(ns, "a").value == {"n": 2}  # type: ignore[union-attr]


def test_a_put_holds_what_it_wrote_and_writes_to_other_items_keep_what_is_held(
    store: MemoryStore, tenant: str
) -> None:
    """On a backend that tells which records a write changed (the embedded store), a get
    after a put is served from what the put held, and a write to another item keeps every
    other held item: no read of versions or gate inputs. A revoke, supersession or
    invalidation of the item itself is always seen."""
    lg = GraphmemStore(store, tenant)
    ns = ("users", "alice")
    lg.batch([PutOp(ns, f"k{i}", {"n": i}) for i in range(20)])
    reads: list[str] = []
    backend = store.backend
    originals = {name: getattr(backend, name) for name in ("with_id_prefix", "gate_input", "gate_one")
                 if hasattr(backend, name)}  # fmt: skip

    def counting(name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            reads.append(name)
            return originals[name](*args, **kwargs)

        return call

    for name in originals:
        setattr(backend, name, counting(name))
    try:
        for i in range(20):
            assert lg.get(ns, f"k{i}").value == {"n": i}  # type: ignore[union-attr]
        held = hasattr(backend, "changed_since")
        assert (reads == []) is held
        reads.clear()
        lg.put(ns, "k3", {"n": 33})
        lg.delete(ns, "k4")
        reads.clear()
        assert lg.get(ns, "k3").value == {"n": 33}  # type: ignore[union-attr]
        assert lg.get(ns, "k4") is None
        for i in (0, 1, 2, 5, 19):
            assert lg.get(ns, f"k{i}").value == {"n": i}  # type: ignore[union-attr]
        if held:  # k3 is held by its put; only k4 (revoked: nothing held) is read again
            assert reads.count("with_id_prefix") == 1
    finally:
        for name, original in originals.items():
            setattr(backend, name, original)
    [k5] = [r for r in backend.with_tag(tenant, "langgraph") if r.content and '"n":5' in r.content]
    [k6] = [r for r in backend.with_tag(tenant, "langgraph") if r.content and '"n":6' in r.content]
    assert lg.get(ns, "k6") is not None
    store.invalidate(tenant, k6.id, by=k5.id, reason="wrong")
    assert lg.get(ns, "k6") is None
    store.forget(
        ForgetRequest(tenant=tenant, target=k5.id, mode=ForgetMode.ERASE, reason="r", requested_by="u")
    )
    assert lg.get(ns, "k5") is None
    assert lg.get(ns, "k7").value == {"n": 7}  # type: ignore[union-attr]


def test_a_rolled_back_put_is_never_served(store: MemoryStore, tenant: str) -> None:
    """A put inside the caller's transaction that rolls back leaves the item as it was,
    for gets that come after the rollback and for the adapter's held items."""
    lg = GraphmemStore(store, tenant)
    ns = ("users", "bob")
    lg.put(ns, "a", {"n": 1})
    assert lg.get(ns, "a").value == {"n": 1}  # type: ignore[union-attr]

    class Abort(Exception):
        pass

    def aborted() -> None:
        with store.backend.write():
            lg.put(ns, "a", {"n": 2})
            lg.put(ns, "new", {"n": 3})
            raise Abort

    with pytest.raises(Abort):
        aborted()
    assert lg.get(ns, "a").value == {"n": 1}  # type: ignore[union-attr]
    assert lg.get(ns, "new") is None
    lg.put(ns, "a", {"n": 4})
    assert lg.get(ns, "a").value == {"n": 4}  # type: ignore[union-attr]


def test_gets_racing_puts_and_deletes_see_every_acknowledged_write(store: MemoryStore, tenant: str) -> None:
    """Two writers put and delete keys of one namespace while three readers get them (two
    through one shared adapter, one through its own): every get returns the last write
    acknowledged before it started, or one that ran beside it; never an older one, never a
    value that was not written."""
    shared = GraphmemStore(store, tenant)
    ns = ("race",)
    keys = [f"k{i}" for i in range(6)]
    lock = threading.Lock()
    acked: dict[str, list[int | None]] = {k: [] for k in keys}  # None: a delete
    pending: dict[str, list[int | None]] = {k: [] for k in keys}  # the write in flight, if any
    written: dict[str, set[int]] = {k: set() for k in keys}
    stop = threading.Event()
    failures: list[str] = []

    def writer(parity: int) -> None:
        # One writer per key (its parity), so a key's writes are acknowledged in order.
        lg = GraphmemStore(store, tenant)
        rng = random.Random(parity)
        mine = [k for k in keys if int(k[1:]) % 2 == parity]
        n = (parity + 1) * 100_000
        while not stop.is_set():
            key, n = rng.choice(mine), n + 1
            value = None if rng.random() < 0.2 else n
            with lock:
                pending[key] = [value]
                if value is not None:
                    written[key].add(value)
            if value is None:
                lg.delete(ns, key)
            else:
                lg.put(ns, key, {"n": value})
            with lock:
                acked[key].append(value)
                pending[key] = []

    def reader(seed: int, lg: GraphmemStore) -> None:
        rng = random.Random(seed)
        while not stop.is_set():
            key = rng.choice(keys)
            with lock:
                before, flying = list(acked[key]), list(pending[key])
            item = lg.get(ns, key)
            with lock:
                after = acked[key][len(before) :]
                flying += pending[key]
                ever = set(written[key])
            got = None if item is None else item.value["n"]
            if got is not None and got not in ever:
                failures.append(f"{key}: {got} was never written")
            allowed = {before[-1] if before else None, *after, *flying}
            if got not in allowed:
                failures.append(f"{key}: got {got}, allowed {sorted(map(str, allowed))}")

    threads = [threading.Thread(target=writer, args=(parity,)) for parity in (0, 1)]
    readers = [(3, shared), (4, shared), (5, GraphmemStore(store, tenant))]
    threads += [threading.Thread(target=reader, args=args) for args in readers]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 4.0
    while time.monotonic() < deadline and not failures:
        time.sleep(0.05)
    stop.set()
    for t in threads:
        t.join(60)
    assert not failures, failures[:5]
    assert sum(len(v) for v in acked.values()) > 10


def test_what_a_read_returns_is_the_callers_to_change(store: MemoryStore, tenant: str) -> None:
    """Changing a value a get or search returned changes neither the store nor what later
    reads return, held or not."""
    lg = GraphmemStore(store, tenant)
    ns = ("users", "carol")
    lg.put(ns, "a", {"n": 1, "tags": ["x"], "inner": {"m": [1]}})
    for _ in range(2):  # the read that holds the head, then one served from it
        got = lg.get(ns, "a")
        assert got is not None
        got.value["n"] = 99
        got.value["tags"].append("y")
        got.value["inner"]["m"].append(2)
    [found] = lg.search(ns)
    found.value["tags"].clear()
    expected = {"n": 1, "tags": ["x"], "inner": {"m": [1]}}
    assert lg.get(ns, "a").value == expected  # type: ignore[union-attr]
    assert lg.search(ns)[0].value == expected
    assert GraphmemStore(store, tenant).get(ns, "a").value == expected  # type: ignore[union-attr]


def test_a_get_refuses_the_namespaces_langgraph_refuses(store: MemoryStore, tenant: str) -> None:
    lg = GraphmemStore(store, tenant)
    lg.put(("users", "dave"), "a", {"n": 1})
    assert lg.get(("users", "dave"), "a") is not None
    assert lg.get(("users", "dave"), "a") is not None  # held
    for bad in (("users", "da.ve"), ("users", ""), ("users", "da\x00ve"), ("users", 3), ("users", ["dave"])):
        with pytest.raises(InvalidNamespaceError):
            lg.get(bad, "a")  # type: ignore[arg-type]
    assert lg.get(["users", "dave"], "a") is not None  # type: ignore[arg-type]


_OTHER_PROCESS = """
import json, sys
from graphmem import ForgetMode, ForgetRequest, MemoryStore
from graphmem.integrations.langgraph import GraphmemStore
path, tenant, action = sys.argv[1:4]
with MemoryStore.embedded(path) as store:
    lg = GraphmemStore(store, tenant)
    ns = ("users", "erin")
    if action == "put":
        lg.put(ns, "a", json.loads(sys.argv[4]))
    elif action == "delete":
        lg.delete(ns, "a")
    else:
        for record in store.backend.with_tag(tenant, "langgraph"):
            store.forget(ForgetRequest(tenant=tenant, target=record.id, mode=ForgetMode.ERASE,
                                       reason="r", requested_by="u"))
"""


def test_a_held_get_sees_every_write_and_erase_by_another_process(tmp_path: Any, tenant: str) -> None:
    """Another process puts, deletes and erases while this one holds the item: each get
    after the other process finished sees its write (nothing held survives it)."""
    path = tmp_path / "m"

    def other(*args: str) -> None:
        subprocess.run(
            [sys.executable, "-c", _OTHER_PROCESS, str(path), tenant, *args], check=True, timeout=120
        )

    ns = ("users", "erin")
    with MemoryStore.embedded(path) as mine:
        lg = GraphmemStore(mine, tenant)
        lg.put(ns, "a", {"n": 1})
        for expected in ({"n": 2}, {"n": 3}):
            assert lg.get(ns, "a") is not None
            other("put", json.dumps(expected))
            assert lg.get(ns, "a").value == expected  # type: ignore[union-attr]
            assert lg.get(ns, "a").value == expected  # type: ignore[union-attr]
        other("delete")
        assert lg.get(ns, "a") is None
        lg.put(ns, "a", {"n": 4})
        assert lg.get(ns, "a").value == {"n": 4}  # type: ignore[union-attr]
        other("erase")
        assert lg.get(ns, "a") is None
        assert lg.search(ns) == []
