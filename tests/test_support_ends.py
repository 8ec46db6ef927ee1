"""Support that ends in the future (SPEC §5): a derived record is invalidated from the time
the last support it needs ends, whatever the order in which the ends were recorded.

A property test applies random orders of supersede, invalidate and forget to random
lineage DAGs and compares every record's state with a reference that recomputes
support from scratch; on every backend.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphmem import (
    DropReason,
    ForgetMode,
    ForgetRequest,
    Kind,
    LineageError,
    MemoryRecord,
    MemoryStore,
    ReadContext,
    Source,
)
from graphmem.backends.base import ParentState
from graphmem.lineage import FORGOTTEN, support_ends
from graphmem.model import Status
from tests.conftest import KNOWN, T0

DAY = timedelta(days=1)
SCOPE = "user:alice"
CLOCK = T0 + 400 * DAY


def claim(
    tenant: str, rid: str, parents: tuple[str, ...], sourced: bool, valid_from: datetime = T0
) -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        tenant=tenant,
        kind=Kind.SEMANTIC,
        scope=SCOPE,
        content=f"Alice prefers email follow-ups ({rid}).",
        created_at=T0,
        valid_from=valid_from,
        derived_from=parents,
        sources=(Source(id=f"src-{rid}"),) if sourced or not parents else (),
    )


def at_day(month: int, day: int) -> datetime:
    return datetime(2026, month, day, tzinfo=T0.tzinfo)


def end_of(store: MemoryStore, tenant: str, rid: str) -> datetime | None:
    """The earliest time the record stops holding: its supersessions and invalidations."""
    edges = store.trace(tenant, rid, 0).edges
    ends = [
        e.at
        for e in edges
        if e.at is not None
        and ((e.type == "SUPERSEDES" and e.dst == rid) or (e.type == "INVALIDATED_BY" and e.src == rid))
    ]
    return min(ends, default=None)


def test_the_last_support_ending_invalidates_whatever_the_order(store: MemoryStore, tenant: str) -> None:
    """The issue's case: D of A, B, C; supersede A from 28 June, B from 1 April, invalidate A
    at 23 May, C at 4 March. Every support of D has ended by 23 May."""
    timed = MemoryStore(store.backend, clock=lambda: at_day(12, 1))
    timed.add_many([claim(tenant, p, (), True) for p in "ABC"] + [claim(tenant, "D", ("A", "B", "C"), False)])
    timed.supersede(tenant, "A", claim(tenant, "A2", (), True, at_day(6, 28)), reason="new version")
    timed.supersede(tenant, "B", claim(tenant, "B2", (), True, at_day(4, 1)), reason="new version")
    timed.invalidate(tenant, "A", by="src-A", reason="retracted", at=at_day(5, 23))
    timed.invalidate(tenant, "C", by="src-C", reason="retracted", at=at_day(3, 4))
    assert end_of(timed, tenant, "D") == at_day(5, 23)
    ctx = ReadContext(tenant=tenant, scopes=(SCOPE,), kinds=(Kind.SEMANTIC,), now=at_day(5, 23), as_of=KNOWN)
    assert timed.explain(ctx, "D").reason is DropReason.INVALIDATED
    before = ctx.model_copy(update={"now": at_day(5, 22)})
    assert timed.explain(before, "D").reason is None


# -- the property --------------------------------------------------------------------------


@st.composite
def dags(draw: st.DrawFn) -> list[tuple[tuple[int, ...], bool]]:
    """Records 0..n-1, each derived from a subset of earlier ones (roots cite a source)."""
    n = draw(st.integers(2, 7))
    out: list[tuple[tuple[int, ...], bool]] = []
    for i in range(n):
        parents = tuple(sorted(draw(st.sets(st.integers(0, i - 1), max_size=3)))) if i else ()
        out.append((parents, draw(st.integers(0, 4)) == 0))
    return out


ops = st.lists(
    st.one_of(
        st.tuples(st.just("supersede"), st.integers(0, 6), st.integers(1, 90)),
        st.tuples(st.just("invalidate"), st.integers(0, 6), st.integers(1, 90)),
        st.tuples(
            st.just("forget"), st.integers(0, 6), st.sampled_from([ForgetMode.REVOKE, ForgetMode.ERASE])
        ),
    ),
    min_size=1,
    max_size=8,
)


def reference(
    dag: list[tuple[tuple[int, ...], bool]], primary: dict[int, datetime], targets: set[int]
) -> tuple[set[int], dict[int, datetime | None]]:
    """(forgotten records, each remaining record's end) recomputed from scratch."""
    forgotten = set(targets)
    changed = True
    while changed:
        changed = False
        for i, (parents, sourced) in enumerate(dag):
            if i in forgotten or not parents:
                continue
            if not sourced and all(p in forgotten for p in parents):
                forgotten.add(i)
                changed = True
    ends: dict[int, datetime | None] = {}
    for i, (parents, sourced) in enumerate(dag):
        if i in forgotten:
            continue
        derived = None
        if parents:
            record = claim("t", f"r{i}", tuple(f"r{p}" for p in parents), sourced)
            states = [
                ParentState(f"r{p}", Status.REVOKED if p in forgotten else Status.ACTIVE, None, ends.get(p))
                for p in parents
            ]
            found = support_ends(record, states, set(), 1)
            derived = None if found is None else found[0]
        candidates = [t for t in (primary.get(i), derived) if t is not None]
        ends[i] = min(candidates, default=None)
    return forgotten, ends


def _status(store: MemoryStore, tenant: str, rid: str) -> Status:
    record = store.get(tenant, rid)
    assert record is not None
    return record.status


def _check(
    store: MemoryStore, dag: list[tuple[tuple[int, ...], bool]], script: list[tuple[Any, ...]]
) -> None:
    tenant = f"t-{uuid.uuid4().hex[:12]}"
    timed = MemoryStore(store.backend, clock=lambda: CLOCK)
    n = len(dag)
    records = [
        claim(tenant, f"r{i}", tuple(f"r{p}" for p in parents), sourced)
        for i, (parents, sourced) in enumerate(dag)
    ]
    # A witness elsewhere cites one source per invalidation, so each has its own INVALIDATED_BY edge.
    witness = claim(tenant, "witness", (), True).model_copy(
        update={"scope": "case:w", "sources": tuple(Source(id=f"inv-{k}") for k in range(len(script)))}
    )
    timed.add_many([*records, witness])
    primary: dict[int, datetime] = {}
    superseded: set[int] = set()
    targets: set[int] = set()
    forgotten_now: set[int] = set()
    for k, (op, index, arg) in enumerate(script):
        i = index % n
        rid = f"r{i}"
        if op == "supersede":
            if i in superseded or i in forgotten_now:
                continue
            at = T0 + arg * DAY
            timed.supersede(tenant, rid, claim(tenant, f"v{k}", (), True, at), reason="newer")
            superseded.add(i)
        elif op == "invalidate":
            if i in forgotten_now:
                continue
            at = T0 + arg * DAY
            timed.invalidate(tenant, rid, by=f"inv-{k}", reason="wrong", at=at)
        else:
            timed.forget(ForgetRequest(tenant=tenant, target=rid, mode=arg, reason="asked", requested_by="u"))
            targets.add(i)
            forgotten_now = {j for j in range(n) if _status(timed, tenant, f"r{j}") in FORGOTTEN}
            continue
        primary[i] = min(at, primary.get(i, at))
    forgotten, ends = reference(dag, primary, targets)
    for i in range(n):
        record = timed.get(tenant, f"r{i}")
        assert record is not None
        assert (record.status in FORGOTTEN) == (i in forgotten), (i, record.status)
        if i not in forgotten:
            assert end_of(timed, tenant, f"r{i}") == ends[i], (i, ends)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dag=dags(), script=ops)
def test_every_order_of_ends_gives_the_state_recomputed_from_scratch(
    store: MemoryStore, dag: list[tuple[tuple[int, ...], bool]], script: list[tuple[Any, ...]]
) -> None:
    _check(store, dag, script)


def test_a_survivor_derived_from_another_survivor_ends_when_that_one_now_ends(store: MemoryStore) -> None:
    """Found by the property above: r4 derives from r1 and r2, r5 from r0 and r4. r1 is superseded
    from day 2 and r2 from day 1, so r4 stops holding from day 2 (its last support). Revoking r0
    revokes r1 too: r4 is left with r2 alone and stops holding from day 1, and so must r5, whose
    other parent is gone. Both survive the revocation; r5's end was computed from r4's old one."""
    dag = [((), True), ((0,), False), ((), True), ((), True), ((1, 2), False), ((0, 4), False)]
    _check(store, dag, [("supersede", 1, 2), ("supersede", 2, 1), ("forget", 0, ForgetMode.REVOKE)])
    # The same along a chain, erased instead of revoked.
    chain = [((), True), ((0,), False), ((), True), ((1, 2), False), ((0, 3), False), ((0, 4), False)]
    _check(store, chain, [("supersede", 1, 3), ("supersede", 2, 1), ("forget", 0, ForgetMode.ERASE)])


def test_a_store_asking_for_no_support_still_ends_a_record_whose_only_support_ends(
    store: MemoryStore, tenant: str
) -> None:
    """``min_support=0`` is read as 1 on every path: forget already did (a derived record that loses
    its last support is taken out of use, SPEC §5), while a supersession or an invalidation of the
    last parent left its dependents holding for ever."""
    timed = MemoryStore(store.backend, clock=lambda: at_day(12, 1), min_support=0)
    timed.add_many([claim(tenant, p, (), True) for p in "AB"] + [claim(tenant, "D", ("A",), False)])
    timed.add_many([claim(tenant, "E", ("B",), False), claim(tenant, "F", ("E",), False)])
    timed.supersede(tenant, "A", claim(tenant, "A2", (), True, at_day(6, 28)), reason="new version")
    timed.invalidate(tenant, "B", by="src-B", reason="retracted", at=at_day(3, 4))
    assert end_of(timed, tenant, "D") == at_day(6, 28)
    assert end_of(timed, tenant, "E") == at_day(3, 4)
    assert end_of(timed, tenant, "F") == at_day(3, 4)
    # A record written after its only parent ended is refused, as with the default minimum.
    with pytest.raises(LineageError, match="insufficient_support"):
        timed.add(claim(tenant, "G", ("B",), False))
