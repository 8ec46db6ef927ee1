"""Differential test: the Neo4j backend decides exactly like the embedded one (SPEC §3, §6).

Hypothesis generates operation sequences (adds of every kind, scope nesting,
supersession, invalidation) and read contexts. Each sequence is applied to an
embedded store and to a Neo4j store (a fresh tenant per example); every
operation must succeed or fail the same way on both, and for every context
``recall(ctx, q, explain=True)`` must give the same selection, decisions
(record id, selected, reason, score) and receipt, and ``explain(ctx, id)`` the
same decision for every record.

A second test adds ``forget`` (release / revoke / erase of a record, source or
scope, with and without cascade) and compares forget reports and ``trace``.

Programs also relate scopes, each relation recorded at a drawn time; every read
then compares ``precedents`` from a drawn anchor on both stores, and the scopes it
reaches with a plain walk over the relations recorded by the read's knowledge time.
"""

from __future__ import annotations

import contextlib
import os
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import neo4j
import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

from graphmem import (
    ForgetMode,
    GraphmemError,
    Kind,
    MemoryRecord,
    MemoryStore,
    ReadContext,
    Sensitivity,
    Source,
    Status,
    Trust,
)
from graphmem.backends.neo4j import Neo4jBackend
from graphmem.model.lineage import ForgetRequest
from graphmem.testing.neo4j_server import Neo4jTarget

pytestmark = pytest.mark.neo4j

# Hypothesis imports its patch writer (libcst -> mypy_extensions) only when reporting a failure;
# that import emits a DeprecationWarning which pyproject's filterwarnings=error turns into an
# INTERNALERROR that hides the falsifying example. Import it once here, warnings ignored.
with warnings.catch_warnings(), contextlib.suppress(ImportError):
    warnings.simplefilter("ignore")
    import hypothesis.extra._patching  # noqa: F401

T0 = datetime(2026, 1, 1, tzinfo=UTC)
#: the stores' injected clock (used by invalidate(at=None) and supersede without times)
CLOCK = T0 + timedelta(hours=3, microseconds=1)
#: what the clock reads now: CLOCK, except while a relation is written at its drawn time
_NOW = [CLOCK]


def clock() -> datetime:
    return _NOW[0]


RELATION_TYPES = ["USES", "SUCCEEDS"]
#: the ends of the representable range (microsecond integers in Neo4j, datetimes in embedded)
EXTREMES = [datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)]

#: parents come before children: scope_within only ever goes child -> earlier parent
SCOPES = ["domain:payments", "workspace:w1", "case:c1", "case:c2", "user:alice", "run:r1", "run:r2"]
RUN_SCOPES = ["run:r1", "run:r2"]
#: scopes a read starts from, leaves weighted up (their ancestors are reachable too)
READ_SCOPES = ["case:c1", "case:c1", "case:c2", "user:alice", "run:r1", "workspace:w1", "domain:payments"]
WORDS = ["capture", "retry", "gateway", "timeout", "refund", "idempotency", "key", "status", "charge"]
CAPS = ["gw-v1", "gw-v2", "readback"]
SOURCES = ["src-a", "src-b", "src-c"]
OUTCOMES = ["verified-success", "verified-success", "failure", "unknown", "duplicate-charge"]
STATUSES = [Status.ACTIVE] * 12 + [
    Status.PENDING_APPROVAL,
    Status.CONTESTED,
    Status.REVOKED,
    Status.RELEASED,
]

# --------------------------------------------------------------------------
# strategies: plain data, turned into records once the tenant is known
# --------------------------------------------------------------------------


def times(lo: int = 0, hi: int = 6) -> st.SearchStrategy[datetime]:
    """Instants on a grid of hours lo..hi with microsecond offsets, so that ``now`` often hits
    a window's start or end exactly (SPEC §3: half-open, ``now == end`` is expired)."""
    grid = st.builds(
        lambda h, us: T0 + timedelta(hours=h, microseconds=us),
        st.integers(lo, hi),
        st.sampled_from([0, 1, 500_000, 999_999]),
    )
    return st.integers(0, 15).flatmap(lambda k: st.sampled_from(EXTREMES) if k == 0 else grid)


def sometimes(strategy: st.SearchStrategy[Any], one_in: int = 2) -> st.SearchStrategy[Any]:
    """``strategy`` with probability 1/one_in, else None."""
    return st.integers(1, one_in).flatmap(lambda k: strategy if k == 1 else st.none())


#: starts mostly early and ends mostly late, so that plenty of records are eligible at ``now``
opt_starts = sometimes(times(0, 4))
opt_ends = sometimes(times(1, 6), one_in=4)
POLICIES = ["default"] * 7 + ["strict"]
SENSITIVITIES = [Sensitivity.PUBLIC, Sensitivity.INTERNAL, Sensitivity.INTERNAL, Sensitivity.CONFIDENTIAL]
#: mostly three dimensions: a survivor of another dimension than the query's refuses the read
embeddings = sometimes(
    st.integers(0, 7).flatmap(
        lambda k: st.lists(
            st.sampled_from([-1.0, -0.5, 0.0, 0.25, 1.0]), min_size=2 if k == 0 else 3, max_size=3
        )
    )
)
#: the model that made an embedding: mostly one, sometimes another or none named
embedding_models = st.sampled_from(["m-a", "m-a", "m-a", "acme:m-b", None])
contents = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)


@st.composite
def record_specs(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(list(Kind)))
    scope = draw(st.sampled_from(RUN_SCOPES if kind is Kind.WORKING else SCOPES))
    return {
        "kind": kind,
        "scope": scope,
        "content": draw(contents),
        "created_at": draw(times(0, 4)),
        "event_time": draw(opt_starts),
        "valid_from": draw(opt_starts),
        "valid_to": draw(opt_ends),
        "expires_at": draw(opt_ends),
        "outcome": draw(st.none() | st.sampled_from(OUTCOMES)),
        "status": draw(st.sampled_from(STATUSES)),
        "policy": draw(st.sampled_from(POLICIES)),
        # restricted records are refused at write (SPEC §4), so only the other levels are stored
        "sensitivity": draw(st.sampled_from(SENSITIVITIES)),
        "preconditions": draw(st.lists(st.sampled_from(CAPS), max_size=2, unique=True)),
        "sources": draw(st.lists(st.sampled_from(SOURCES), max_size=2, unique=True)),
        "embedding": draw(embeddings),
        "embedding_model": draw(embedding_models),
        "version": draw(st.integers(1, 9)),
        "parents": draw(st.lists(st.integers(0, 63), max_size=2)),
    }


def _source(source_id: str) -> Source:
    trust = Trust.TRUSTED if source_id == "src-a" else Trust.UNTRUSTED
    return Source(id=source_id, type="document", trust=trust, locator=f"doc://{source_id}")


def build_record(
    spec: dict[str, Any],
    tenant: str,
    record_id: str,
    kind: Kind | None = None,
    scope: str | None = None,
    derived_from: tuple[str, ...] = (),
) -> MemoryRecord:
    """A record that satisfies its kind's contract, from a spec (kind/scope overridable)."""
    kind = kind or spec["kind"]
    scope = scope or spec["scope"]
    event_time, valid_from, valid_to = spec["event_time"], spec["valid_from"], spec["valid_to"]
    outcome, preconditions, sources = spec["outcome"], spec["preconditions"], spec["sources"]
    if kind is Kind.EPISODIC:
        event_time = event_time or spec["created_at"]
        outcome = outcome or "unknown"
    if kind is Kind.SEMANTIC:
        valid_from = valid_from or spec["created_at"]
    if kind in (Kind.SEMANTIC, Kind.PROCEDURAL):
        sources = sources or ["src-a"]
    if kind is Kind.PROCEDURAL:
        preconditions = preconditions or ["gw-v2"]
    if valid_from is not None and valid_to is not None and valid_to <= valid_from:
        valid_to = None
    expires_at, start = spec["expires_at"], valid_from or event_time
    if expires_at is not None and start is not None and expires_at <= start:
        expires_at = None
    procedural = kind is Kind.PROCEDURAL
    return MemoryRecord(
        id=record_id,
        tenant=tenant,
        kind=kind,
        scope=scope,
        content=spec["content"],
        created_at=spec["created_at"],
        event_time=event_time,
        valid_from=valid_from,
        valid_to=valid_to,
        expires_at=expires_at,
        outcome=outcome,
        status=spec["status"],
        policy=spec["policy"],
        sensitivity=spec["sensitivity"],
        preconditions=tuple(preconditions),
        sources=tuple(_source(s) for s in sources),
        embedding=None if spec["embedding"] is None else tuple(spec["embedding"]),
        embedding_model=None if spec["embedding"] is None else spec["embedding_model"],
        procedure_name="capture-retry" if procedural else None,
        procedure_version=str(spec["version"]) if procedural else None,
        derived_from=derived_from,
    )


@st.composite
def scope_edges(draw: st.DrawFn) -> tuple[str, int, int]:
    parent = draw(st.integers(0, len(SCOPES) - 2))
    child = draw(st.integers(parent + 1, len(SCOPES) - 1))
    return ("within", child, parent)


#: a typical tree (child, parent); each example keeps a random part of it plus random extra edges
TREE = [
    ("run:r1", "case:c1"),
    ("run:r2", "case:c2"),
    ("case:c1", "workspace:w1"),
    ("case:c2", "workspace:w1"),
    ("user:alice", "workspace:w1"),
    ("workspace:w1", "domain:payments"),
]


relations = st.tuples(
    st.just("relate"),
    st.integers(0, len(SCOPES) - 1),
    st.sampled_from(RELATION_TYPES),
    st.integers(0, len(SCOPES) - 1),
    times(0, 6),
)


@st.composite
def nestings(draw: st.DrawFn) -> list[tuple[Any, ...]]:
    """Part of the typical tree, a few extra WITHIN edges and a few relations."""
    kept = [edge for edge in TREE if draw(st.integers(0, 4)) > 0]
    tree: list[tuple[Any, ...]] = [
        ("within", SCOPES.index(child), SCOPES.index(parent)) for child, parent in kept
    ]
    return tree + draw(st.lists(scope_edges(), max_size=3)) + draw(st.lists(relations, max_size=4))


operations = st.one_of(
    st.tuples(st.just("add"), st.lists(record_specs(), min_size=1, max_size=4)),
    scope_edges(),
    relations,
    st.tuples(st.just("supersede"), st.integers(0, 63), record_specs()),
    st.tuples(
        st.just("invalidate"),
        st.integers(0, 63),
        st.one_of(
            st.tuples(st.just("record"), st.integers(0, 63)),
            st.tuples(st.just("source"), st.sampled_from([*SOURCES, "src-missing"])),
        ),
        sometimes(times()),
    ),
)


forget_ops = st.tuples(
    st.just("forget"),
    st.one_of(
        st.tuples(st.just("record"), st.integers(0, 63)),
        st.tuples(st.just("source"), st.sampled_from(SOURCES)),
        st.tuples(st.just("scope"), st.sampled_from(SCOPES)),
    ),
    st.sampled_from(list(ForgetMode)),
    st.booleans(),
).map(lambda op: (op[0], *op[1], *op[2:]))


@st.composite
def read_specs(draw: st.DrawFn) -> dict[str, Any]:
    run_id = draw(st.sampled_from([None, "r1", "r2"]))
    scopes = draw(
        st.lists(st.sampled_from(READ_SCOPES), min_size=0 if run_id else 1, max_size=3, unique=True)
    )
    return {
        "now": draw(times(2, 6)),
        "as_of": draw(sometimes(times(0, 6))),
        "kinds": draw(
            st.just(tuple(Kind))
            | st.lists(st.sampled_from(list(Kind)), min_size=1, max_size=4, unique=True).map(tuple)
        ),
        "scopes": tuple(scopes),
        "run_id": run_id,
        "environment": tuple(draw(st.lists(st.sampled_from(CAPS), max_size=3, unique=True))),
        "clearance": draw(
            st.sampled_from([*SENSITIVITIES, Sensitivity.CONFIDENTIAL, Sensitivity.RESTRICTED])
        ),
        "limit": draw(st.integers(1, 6)),
        "min_score": draw(st.sampled_from([0.0, 0.0, 0.2, 0.6])),
        "policy": draw(st.sampled_from(POLICIES)),
        "query": draw(st.sampled_from(["", *WORDS]) | contents),
        "query_embedding": draw(embeddings),
        "query_embedding_model": draw(embedding_models),
        "anchor": draw(st.sampled_from(SCOPES)),
        "via": draw(st.lists(st.sampled_from(RELATION_TYPES), min_size=1, max_size=2, unique=True)),
        "hops": draw(st.integers(0, 3)),
    }


# --------------------------------------------------------------------------
# running a program on both stores
# --------------------------------------------------------------------------


@dataclass
class Pair:
    embedded: MemoryStore
    neo4j: MemoryStore
    tenant: str
    ids: list[str] = field(default_factory=list)
    #: (a, type, b, recorded) of every relation written: the reference for precedents' walk
    relations: list[tuple[str, str, str, datetime]] = field(default_factory=list)

    def both(self, what: str, call: Callable[[MemoryStore], Any]) -> tuple[bool, Any, Any]:
        """Run ``call`` on both stores; they must succeed alike or fail with the same error.

        Returns (succeeded, embedded result, neo4j result)."""
        results: list[tuple[str, Any]] = []
        for store in (self.embedded, self.neo4j):
            try:
                results.append(("ok", call(store)))
            except GraphmemError as err:
                results.append(("error", (type(err).__name__, err.code)))
        (kind_e, value_e), (kind_n, value_n) = results
        event(f"{what.split()[0]} {kind_e} {value_e[1] if kind_e == 'error' else ''}")
        note(f"{what}: embedded={kind_e} {value_e if kind_e == 'error' else ''} neo4j={kind_n}")
        assert kind_e == kind_n, f"{what}: embedded {kind_e} {value_e!r}, neo4j {kind_n} {value_n!r}"
        if kind_e == "error":
            assert value_e == value_n, f"{what}: embedded raised {value_e}, neo4j raised {value_n}"
        return kind_e == "ok", value_e, value_n

    def pick(self, index: int) -> str | None:
        return self.ids[index % len(self.ids)] if self.ids else None

    def parents(self, spec: dict[str, Any]) -> tuple[str, ...]:
        """DERIVED_FROM parents among the records written so far."""
        return tuple(sorted({self.ids[i % len(self.ids)] for i in spec["parents"]})) if self.ids else ()

    def run(self, op: tuple[Any, ...]) -> None:
        tenant = self.tenant
        name = op[0]
        if name == "add":
            batch = [
                build_record(spec, tenant, f"r{len(self.ids) + i}", derived_from=self.parents(spec))
                for i, spec in enumerate(op[1])
            ]
            ok, e, n = self.both(f"add {[r.id for r in batch]}", lambda s: s.add_many(batch))
            if ok:
                assert e == n
                self.ids.extend(r.id for r in batch)
        elif name == "within":
            child, parent = SCOPES[op[1]], SCOPES[op[2]]
            self.both(f"within {child} {parent}", lambda s: s.scope_within(tenant, child, parent))
        elif name == "relate":
            a, rel_type, b, recorded = SCOPES[op[1]], op[2], SCOPES[op[3]], op[4]
            _NOW[0] = recorded
            try:
                ok, _, _ = self.both(
                    f"relate {a} {rel_type} {b} at {recorded}",
                    lambda s: s.relate_scopes(tenant, a, rel_type, b),
                )
            finally:
                _NOW[0] = CLOCK
            if ok and not any(r[:3] == (a, rel_type, b) for r in self.relations):
                self.relations.append((a, rel_type, b, recorded))  # relating again keeps the first time
        elif name == "supersede":
            old_id = self.pick(op[1])
            if old_id is None:
                return
            old = self.embedded.get(tenant, old_id)
            assert old is not None
            new = build_record(
                op[2],
                tenant,
                f"r{len(self.ids)}",
                kind=old.kind,
                scope=old.scope,
                derived_from=self.parents(op[2]),
            )
            ok, e, n = self.both(
                f"supersede {old_id} by {new.id}", lambda s: s.supersede(tenant, old_id, new, "newer")
            )
            if ok:
                assert e == n
                self.ids.append(new.id)
        elif name == "invalidate":
            target = self.pick(op[1])
            if target is None:
                return
            by_kind, by_ref = op[2]
            by = self.pick(by_ref) if by_kind == "record" else by_ref
            at = op[3]
            self.both(
                f"invalidate {target} by {by} at {at}",
                lambda s: s.invalidate(tenant, target, by, "no longer holds", at=at),
            )
        elif name == "forget":
            _, target_kind, ref, mode, cascade = op
            if target_kind == "record":
                target = self.pick(ref)
                if target is None:
                    return
            else:
                target = ref
            request = ForgetRequest(
                tenant=tenant, target=target, mode=mode, reason="asked", requested_by="alice", cascade=cascade
            )
            ok, e, n = self.both(
                f"forget {target} {mode.value} cascade={cascade}", lambda s: s.forget(request)
            )
            if ok:
                assert _report(n) == _report(e)


def _report(report: Any) -> dict[str, Any]:
    """A forget report with its entries in a canonical order (the order is not specified)."""
    data: dict[str, Any] = report.model_dump(mode="json")
    data["entries"] = sorted(data["entries"], key=lambda entry: entry["record_id"])
    data["erased_sources"] = sorted(data["erased_sources"])
    return data


def _lineage(lineage: Any) -> tuple[Any, ...]:
    """A lineage as comparable data, node and edge order aside."""
    data = lineage.model_dump(mode="json")
    nodes = sorted(data["nodes"], key=lambda n: n["id"])
    edges = sorted(data["edges"], key=lambda e: (e["type"], e["src"], e["dst"], str(e["at"])))
    return data["root"], nodes, edges


def _context(tenant: str, spec: dict[str, Any]) -> ReadContext:
    query_fields = {"query", "query_embedding", "query_embedding_model", "anchor", "via", "hops"}
    fields = {k: v for k, v in spec.items() if k not in query_fields}
    return ReadContext(tenant=tenant, **fields)


def reachable(pair: Pair, anchor: str, via: list[str], hops: int, as_of: datetime) -> set[str]:
    """The reference walk: scopes at most ``hops`` relations of the types ``via`` away from
    ``anchor``, either direction, through relations recorded by ``as_of``."""
    known = [(a, b) for a, t, b, recorded in pair.relations if t in via and recorded <= as_of]
    seen, frontier = {anchor}, {anchor}
    for _ in range(hops):
        step = {b for a, b in known if a in frontier} | {a for a, b in known if b in frontier}
        frontier = step - seen
        seen |= frontier
    return seen


def _decisions(selection: Any) -> list[tuple[str, bool, Any, float | None]]:
    return [(d.record_id, d.selected, d.reason, d.score) for d in selection.decisions]


def compare_reads(pair: Pair, spec: dict[str, Any]) -> None:
    ctx = _context(pair.tenant, spec)
    query, query_embedding = spec["query"], spec["query_embedding"]
    model = None if query_embedding is None else spec["query_embedding_model"]
    note(f"context {ctx.model_dump(mode='json')} query={query!r} embedding={query_embedding} model={model}")
    both = _unless_refused(
        pair,
        lambda s: s.recall(
            ctx, query, explain=True, query_embedding=query_embedding, query_embedding_model=model
        ),
    )
    if both is None:
        compare_precedents(pair, spec, ctx)
        return
    e, n = both
    assert n.ids == e.ids
    event(f"selected {min(len(e.ids), 3)}+" if len(e.ids) >= 3 else f"selected {len(e.ids)}")
    for decision in e.decisions:
        event(f"reason {decision.reason}")
    assert _decisions(n) == _decisions(e)
    assert n.receipt == e.receipt
    assert n.records == e.records
    assert pair.neo4j.verify(e.receipt, ctx)
    compare_precedents(pair, spec, ctx)
    for record_id in pair.ids:
        explained_e = pair.embedded.explain(ctx, record_id)
        explained_n = pair.neo4j.explain(ctx, record_id)
        assert explained_n == explained_e, record_id


def _unless_refused(pair: Pair, call: Callable[[MemoryStore], Any]) -> tuple[Any, Any] | None:
    """``call``'s results on (embedded, neo4j), or None when both refused it for an embedding
    of another model or dimension, with the same message; nothing else may differ or fail."""
    results: list[Any] = []
    refused: list[tuple[str, str] | None] = []
    for store in (pair.embedded, pair.neo4j):
        try:
            results.append(call(store))
            refused.append(None)
        except GraphmemError as err:
            refused.append((err.code, err.message))
    assert refused[0] == refused[1], refused
    assert refused[0] is None or refused[0][0] == "embedding_model_mismatch", refused
    event(f"embedding {'refused' if refused[0] else 'compared'}")
    return None if refused[0] is not None else (results[0], results[1])


def compare_precedents(pair: Pair, spec: dict[str, Any], ctx: ReadContext) -> None:
    anchor, via, hops, query = spec["anchor"], spec["via"], spec["hops"], spec["query"]
    query_embedding = spec["query_embedding"]
    model = None if query_embedding is None else spec["query_embedding_model"]

    def precedents(s: MemoryStore) -> Any:
        return s.precedents(
            ctx,
            anchor,
            via=via,
            hops=hops,
            query=query,
            query_embedding=query_embedding,
            query_embedding_model=model,
        )

    ok, e, n = pair.both(f"precedents from {anchor} via {via} hops {hops}", precedents)
    if not ok:
        return
    scoped = pair.embedded.precedents_context(ctx, anchor, via, hops)
    assert set(scoped.scopes) == reachable(pair, anchor, via, hops, ctx.known_at)
    assert pair.neo4j.precedents_context(ctx, anchor, via, hops) == scoped
    event(f"precedents reach {min(len(scoped.scopes), 3)}")
    assert n.ids == e.ids
    assert n.receipt == e.receipt
    assert n.records == e.records
    assert pair.neo4j.verify(e.receipt, scoped)
    again = pair.embedded.recall(scoped, query, query_embedding=query_embedding, query_embedding_model=model)
    assert e.receipt == again.receipt


# --------------------------------------------------------------------------
# the test
# --------------------------------------------------------------------------


@pytest.fixture
def neo4j_store(neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget) -> MemoryStore:
    return MemoryStore(Neo4jBackend(neo4j_driver, uri=neo4j_target.uri or ""), clock=clock)


EXAMPLES = int(os.environ.get("GRAPHMEM_DIFF_EXAMPLES", "40"))
SETTINGS = settings(
    deadline=None,
    max_examples=EXAMPLES,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
seeds = st.lists(record_specs(), min_size=2, max_size=6).map(lambda specs: ("add", specs))


def _check(pair: Pair, reads: list[dict[str, Any]], *, lineage: bool) -> None:
    tenant = pair.tenant
    for record_id in pair.ids:
        assert pair.neo4j.get(tenant, record_id) == pair.embedded.get(tenant, record_id), record_id
        if lineage:
            traced_e = pair.embedded.trace(tenant, record_id)
            traced_n = pair.neo4j.trace(tenant, record_id)
            assert _lineage(traced_n) == _lineage(traced_e), record_id
    for spec in reads:
        compare_reads(pair, spec)


@SETTINGS
@given(
    nesting=nestings(),
    seed=seeds,
    program=st.lists(operations, max_size=10),
    reads=st.lists(read_specs(), min_size=1, max_size=4),
)
def test_neo4j_recalls_exactly_like_embedded(
    neo4j_store: MemoryStore,
    nesting: list[tuple[Any, ...]],
    seed: tuple[Any, ...],
    program: list[tuple[Any, ...]],
    reads: list[dict[str, Any]],
) -> None:
    """Adds, scope nesting, supersession, invalidation; then recall and explain must agree."""
    pair = Pair(MemoryStore.embedded(clock=clock), neo4j_store, f"t-{uuid.uuid4().hex[:12]}")
    for op in [*nesting, seed, *program]:
        pair.run(op)
    _check(pair, reads, lineage=False)


@settings(SETTINGS, max_examples=max(1, EXAMPLES // 2))
@given(
    nesting=nestings(),
    seed=seeds,
    program=st.lists(operations | forget_ops, max_size=10),
    reads=st.lists(read_specs(), min_size=1, max_size=3),
)
def test_neo4j_forgets_and_traces_exactly_like_embedded(
    neo4j_store: MemoryStore,
    nesting: list[tuple[Any, ...]],
    seed: tuple[Any, ...],
    program: list[tuple[Any, ...]],
    reads: list[dict[str, Any]],
) -> None:
    """The same with forget requests mixed in; forget reports and trace() must agree too."""
    pair = Pair(MemoryStore.embedded(clock=clock), neo4j_store, f"t-{uuid.uuid4().hex[:12]}")
    for op in [*nesting, seed, *program]:
        pair.run(op)
    _check(pair, reads, lineage=True)
