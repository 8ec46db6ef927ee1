"""Concurrency (SPEC §9) on every backend: a seeded mix of public operations on many threads
checked against the invariants, then each race users reported as its own threaded test.

Every backend passes every test: a failure here is a lost write, an undone erase or a
forgotten record selected.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
from pydantic import TypeAdapter

from graphmem import (
    ForgetMode,
    ForgetRequest,
    GraphmemError,
    Kind,
    MemoryRecord,
    MemoryStore,
    ReadContext,
    Source,
    Status,
    Trust,
    WriteDecision,
    WriteOutcome,
    WriteProposal,
    WriteReason,
)
from graphmem.backends.base import AddEdge, Op, PutRecord, ScopeWithin
from graphmem.bench.concurrency import MixedConfig, run_mixed
from graphmem.bench.invariants import INVARIANTS, Forgotten, Ledger, Recalled, check, within_cycles
from graphmem.model import ForgetEntry, ForgetReport, utcnow
from tests.erasure import forget_alternately

# The mixed run's 8 threads: operations each, and reader threads beside them; then the rounds
# of each race and the writes under the readers. A few seconds per test and backend.
MIXED = {"embedded": (60, 4), "persisted": (40, 4), "neo4j": (50, 1)}
ROUNDS = 20
WRITES = {"embedded": 200, "persisted": 100, "neo4j": 30}


SINCE = utcnow() - timedelta(days=1)
_OPS: TypeAdapter[Op] = TypeAdapter(Op)


@pytest.fixture(autouse=True)
def fine_switching() -> Iterator[None]:
    """Python threads switch every 0.1 ms instead of 5 ms: operations interleave far more often."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def backend_of(request: pytest.FixtureRequest) -> str:
    return str(request.node.callspec.params["store"])


def race(*calls: Callable[[], object]) -> list[object]:
    """Run each call on its own thread, all released together; each one's result or exception."""
    barrier = threading.Barrier(len(calls))
    out: list[object] = [None] * len(calls)

    def run(i: int, call: Callable[[], object]) -> None:
        barrier.wait()
        try:
            out[i] = call()
        except BaseException as err:  # returned to the test, which judges it
            out[i] = err

    threads = [threading.Thread(target=run, args=(i, c), daemon=True) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return out


def claim(tenant: str, content: str, source: str, **fields: object) -> WriteProposal:
    return WriteProposal.model_validate(
        {
            "tenant": tenant,
            "kind": Kind.SEMANTIC,
            "scope": "user:alice",
            "content": content,
            "valid_from": SINCE,
            "sources": (Source(id=source, type="message", trust=Trust.TRUSTED, quote=f"quote {source}"),),
            "proposed_by": "agent-7",
            **fields,
        }
    )


def record(tenant: str, rid: str, content: str) -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        tenant=tenant,
        kind=Kind.SEMANTIC,
        scope="user:alice",
        content=content,
        valid_from=SINCE,
        sources=(Source(id=f"src-{rid}", type="message", trust=Trust.TRUSTED),),
    )


def erase(store: MemoryStore, tenant: str, rid: str) -> Callable[[], object]:
    request = ForgetRequest(
        tenant=tenant,
        target=rid,
        target_type="record",
        mode=ForgetMode.ERASE,
        reason="user asked",
        requested_by="alice",
    )
    return lambda: store.forget(request)


def exported(store: MemoryStore, tenant: str) -> list[Op]:
    return [_OPS.validate_json(line) for line in store.export(tenant)]


# -- the mixed run ----------------------------------------------------------------------------


def test_mixed_operations_keep_every_invariant(
    store: MemoryStore, tenant: str, request: pytest.FixtureRequest
) -> None:
    ops, readers = MIXED[backend_of(request)]
    report = run_mixed(store, tenant, MixedConfig(threads=8, ops_per_thread=ops, readers=readers))
    assert report.recalls > 0
    assert sum(report.acknowledged.values()) > report.operations // 2
    assert report.violations == [], report.describe()


# -- the reported races -----------------------------------------------------------------------


@pytest.mark.parametrize("racer", ["propose", "approve", "contest"])
def test_erase_racing_a_write_stays_erased(
    store: MemoryStore, tenant: str, racer: str, request: pytest.FixtureRequest
) -> None:
    rounds = ROUNDS
    undone: list[str] = []
    for n in range(rounds):
        text = f"Alice prefers email follow-ups, note {n}."
        broad = {"scope": "tenant:acme"} if racer == "approve" else {}
        first = store.propose(claim(tenant, text, f"m-{n}-a", **broad), source_trust=Trust.TRUSTED)
        rid = first.record_id
        assert rid is not None
        twin = claim(tenant, text, f"m-{n}-b")
        others: dict[str, Callable[[], object]] = {
            "propose": lambda p=twin: store.propose(p, source_trust=Trust.TRUSTED),
            "approve": lambda pid=first.proposal_id: store.approve(tenant, pid, approver="ops"),
            "contest": lambda rid=rid: store.contest(tenant, rid, by="agent-8", reason="disputed"),
        }
        erased, raced = race(erase(store, tenant, rid), others[racer])
        assert not isinstance(erased, BaseException), erased
        assert not isinstance(raced, BaseException) or isinstance(raced, GraphmemError), raced
        after = store.get(tenant, rid)
        assert after is not None
        if not (
            after.status is Status.ERASED
            and after.content == ""
            and after.tombstone is not None
            and all(s.quote is None for s in after.sources)
        ):
            undone.append(f"round {n}: {after.status.value}, content {after.content!r}")
    assert undone == [], f"{len(undone)} of {rounds} erasures undone by a racing {racer}: {undone[:3]}"


def test_recall_racing_forget_never_selects_a_forgotten_record(
    store: MemoryStore, tenant: str, request: pytest.FixtureRequest
) -> None:
    count = 2 * ROUNDS
    ids = [
        r.id
        for r in store.add_many(record(tenant, f"r{i}", f"Alice prefers email, {i}.") for i in range(count))
    ]
    forgotten_at: dict[str, float] = {}
    selections: list[tuple[float, list[str], list[Status]]] = []
    done = threading.Event()

    def forgot(rid: str) -> None:
        forgotten_at[rid] = time.perf_counter()

    def forget_all() -> None:
        try:
            forget_alternately(store, tenant, ids, forgot)
        finally:
            done.set()

    def recall_until_done() -> None:
        ctx = ReadContext(tenant=tenant, scopes=("user:alice",), limit=count)
        while not done.is_set():
            started = time.perf_counter()
            selection = store.recall(ctx, "email")
            selections.append((started, selection.ids, [r.status for r in selection.records]))

    results = race(forget_all, recall_until_done, recall_until_done)
    assert [r for r in results if isinstance(r, BaseException)] == []
    bad = [
        f"{rid} ({status.value})"
        for started, selected, statuses in selections
        for rid, status in zip(selected, statuses, strict=True)
        if status is not Status.ACTIVE or forgotten_at.get(rid, started) < started
    ]
    assert len(selections) > 1
    assert bad == [], f"{len(bad)} forgotten record(s) selected over {len(selections)} recalls: {bad[:5]}"


def test_precedents_racing_relations_and_forgets_never_selects_a_forgotten_episode(
    store: MemoryStore, tenant: str
) -> None:
    """A writer relates merchant after merchant to the gateway and forgets one episode of each
    merchant related before; readers ask for precedents throughout."""
    merchants = [f"merchant:m{i}" for i in range(ROUNDS)]
    store.add_many(
        MemoryRecord(
            id=f"ep-{i}-{j}",
            tenant=tenant,
            kind=Kind.EPISODIC,
            scope=scope,
            content=f"Capture timeouts on the gateway for {scope}, incident {j}.",
            event_time=SINCE,
            created_at=SINCE,
            outcome="verified-success",
        )
        for i, scope in enumerate(merchants)
        for j in range(2)
    )
    store.relate_scopes(tenant, merchants[0], "USES", "system:gw")
    relating_at = {merchants[0]: 0.0, "system:gw": 0.0}
    forgotten_at: dict[str, float] = {}
    calls: list[tuple[float, float, list[str], list[str], list[Status]]] = []
    done = threading.Event()

    def relate_and_forget() -> None:
        try:
            for i in range(1, ROUNDS):
                relating_at[merchants[i]] = time.perf_counter()
                store.relate_scopes(tenant, merchants[i], "USES", "system:gw")
                rid = f"ep-{i - 1}-{i % 2}"
                mode = ForgetMode.ERASE if i % 2 else ForgetMode.REVOKE
                store.forget(
                    ForgetRequest(tenant=tenant, target=rid, mode=mode, reason="asked", requested_by="alice")
                )
                forgotten_at[rid] = time.perf_counter()
        finally:
            done.set()

    def precedents_until_done() -> None:
        while not done.is_set():
            started = time.perf_counter()
            ctx = ReadContext(tenant=tenant, scopes=(merchants[0],), limit=4 * ROUNDS)
            selection = store.precedents(ctx, merchants[0], via=["USES"], hops=2, query="capture timeouts")
            records = selection.records
            calls.append(
                (
                    started,
                    time.perf_counter(),
                    selection.ids,
                    [r.scope for r in records],
                    [r.status for r in records],
                )
            )

    results = race(relate_and_forget, precedents_until_done, precedents_until_done)
    assert [r for r in results if isinstance(r, BaseException)] == []
    bad = [
        f"{rid} ({status.value})"
        for started, _, selected, _, statuses in calls
        for rid, status in zip(selected, statuses, strict=True)
        if status is not Status.ACTIVE or forgotten_at.get(rid, started) < started
    ]
    early = [
        f"{scope} before it was related"
        for _, ended, _, scopes, _ in calls
        for scope in scopes
        if relating_at[scope] >= ended
    ]
    assert len(calls) > 1
    assert bad == [], f"{len(bad)} forgotten episode(s) selected over {len(calls)} calls: {bad[:5]}"
    assert early == [], early[:5]
    final = store.precedents(
        ReadContext(tenant=tenant, scopes=(merchants[0],), limit=4 * ROUNDS), merchants[0], via=["USES"]
    )
    assert set(final.ids) == {f"ep-{i}-{j}" for i in range(ROUNDS) for j in range(2)} - set(forgotten_at)


def test_concurrent_identical_proposals_keep_every_source(
    store: MemoryStore, tenant: str, request: pytest.FixtureRequest
) -> None:
    rounds = ROUNDS // 2
    wrong: list[str] = []
    for n in range(rounds):
        text = f"Alice prefers email follow-ups, batch {n}."
        proposals = [claim(tenant, text, f"m-{n}-{i}") for i in range(6)]
        decisions = race(*(lambda p=p: store.propose(p, source_trust=Trust.TRUSTED) for p in proposals))
        acknowledged = {
            p.sources[0].id
            for p, d in zip(proposals, decisions, strict=True)
            if not isinstance(d, BaseException)
        }
        assert all(isinstance(d, GraphmemError) or not isinstance(d, BaseException) for d in decisions)
        same = [r for r in store.backend.all_records(tenant) if r.content == text]
        named = {d.record_id for d in decisions if isinstance(d, WriteDecision)}
        if len(same) != 1 or named != {same[0].id} or {s.id for s in same[0].sources} != acknowledged:
            kept = [len(r.sources) for r in same]
            wrong.append(
                f"round {n}: {len(same)} record(s) with {kept} source(s), {len(acknowledged)} acknowledged"
            )
    assert wrong == [], f"{len(wrong)} of {rounds} rounds lost or split sources: {wrong[:3]}"


def test_concurrent_supersessions_of_one_record_one_wins(
    store: MemoryStore, tenant: str, request: pytest.FixtureRequest
) -> None:
    rounds = ROUNDS
    wrong: list[str] = []
    for n in range(rounds):
        old = store.add(record(tenant, f"v{n}", f"Alice prefers email, version {n}."))
        new = [record(tenant, f"v{n}-{side}", f"Alice prefers {side}, version {n}.") for side in ("a", "b")]
        outcomes = race(*(lambda r=r, o=old.id: store.supersede(tenant, o, r, reason="changed") for r in new))
        won = [r for r, o in zip(new, outcomes, strict=True) if not isinstance(o, BaseException)]
        lost = [o for o in outcomes if isinstance(o, BaseException)]
        successors = [
            op.src
            for op in exported(store, tenant)
            if isinstance(op, AddEdge) and op.label == "SUPERSEDES" and op.dst == old.id
        ]
        loser_stored = [r.id for r in new if r not in won and store.get(tenant, r.id) is not None]
        if (
            len(won) != 1
            or len(lost) != 1
            or not isinstance(lost[0], GraphmemError)
            or lost[0].code != "already_superseded"
            or successors != [won[0].id]
            or loser_stored
        ):
            wrong.append(f"round {n}: {len(won)} succeeded, successors {successors}, refused with {lost}")
    assert wrong == [], f"{len(wrong)} of {rounds} rounds: {wrong[:3]}"


def test_opposite_scope_nestings_never_make_a_cycle(
    store: MemoryStore, tenant: str, request: pytest.FixtureRequest
) -> None:
    rounds = ROUNDS
    wrong: list[str] = []
    for n in range(rounds):
        a, b = f"workspace:a{n}", f"workspace:b{n}"
        outcomes = race(*(lambda c=c, p=p: store.scope_within(tenant, c, p) for c, p in ((a, b), (b, a))))
        refused = [o for o in outcomes if isinstance(o, BaseException)]
        if len(refused) < 1 or not all(isinstance(o, GraphmemError) for o in refused):
            wrong.append(f"round {n}: {2 - len(refused)} succeeded, refused with {refused}")
    cycles = within_cycles(exported(store, tenant))
    assert (wrong, cycles) == ([], []), f"{len(wrong)} of {rounds} rounds both nested: {wrong[:3]}"


@pytest.mark.parametrize("reader", ["export", "approvals", "trace", "audit"])
def test_reads_while_another_thread_writes_never_raise(
    store: MemoryStore, tenant: str, reader: str, request: pytest.FixtureRequest
) -> None:
    episodes = [
        MemoryRecord(
            id=f"ep{i}",
            tenant=tenant,
            kind=Kind.EPISODIC,
            scope="user:alice",
            content=f"Alice answered an email on day {i}.",
            event_time=SINCE,
            outcome="verified-success",
        )
        for i in range(5)
    ]
    # Enough records that a read walking them is often interrupted part-way.
    store.add_many([*episodes, *(record(tenant, f"f{i}", f"Alice filler note {i}.") for i in range(200))])
    chain = ["ep0"]
    reads: dict[str, Callable[[], object]] = {
        "export": lambda: list(store.export(tenant)),
        "approvals": lambda: store.approvals(tenant),
        # Every consolidation adds an edge into ep0 and ep1, whose traces walk their children.
        "trace": lambda: [store.trace(tenant, rid) for rid in ("ep0", "ep1", chain[-1])],
        "audit": lambda: store.audit(tenant),
    }
    done = threading.Event()
    calls: list[int] = []
    failures: list[BaseException] = []

    def write() -> None:
        try:
            for n in range(WRITES[backend_of(request)]):
                step = n % 5
                if step == 0:
                    d = store.propose(claim(tenant, f"Email rule {n}.", f"m{n}", scope="tenant:acme"))
                    if d.outcome is WriteOutcome.PENDING_APPROVAL and n % 10 == 0:
                        store.approve(tenant, d.proposal_id, approver="ops")
                elif step in (1, 3):
                    into = record(tenant, f"c{n}", f"Alice answers email ({n}).")
                    store.consolidate(tenant, ["ep0", "ep1", f"ep{2 + n % 3}"], into, rule="habit")
                    chain.append(into.id)
                elif step == 2:
                    successor = record(tenant, f"s{n}", f"Alice answers email quickly ({n}).")
                    store.supersede(tenant, chain[-1], successor, reason="refined")
                    chain.append(successor.id)
                else:
                    erase_source = ForgetRequest(
                        tenant=tenant,
                        target=f"m{n - 4}",
                        mode=ForgetMode.ERASE,
                        reason="asked",
                        requested_by="al",
                    )
                    store.forget(erase_source)
        finally:
            done.set()

    def read() -> None:
        while not done.is_set():
            calls.append(1)
            try:
                reads[reader]()
            except Exception as err:  # counted and asserted below
                failures.append(err)

    written, _, _ = race(write, read, read)
    assert not isinstance(written, BaseException), written
    assert calls, "the readers never ran while the writer wrote"
    assert failures == [], f"{len(failures)} of {len(calls)} {reader} calls raised: {failures[:3]!r}"


# -- the checks themselves --------------------------------------------------------------------


def test_each_invariant_check_reports_its_violation(tenant: str) -> None:
    """Every invariant ``check`` knows is reported when the state or ledger breaks it."""
    store = MemoryStore.embedded()
    ledger = Ledger(tenant)
    assert check(store, ledger) == []
    kept, erased = (
        record(tenant, "kept", "Alice prefers email."),
        record(tenant, "erased", "Alice's address."),
    )
    store.add_many([kept, record(tenant, "v1", "Alice prefers phone.")])
    # Written past the store, as a broken backend might leave them.
    store.backend.apply(
        [
            PutRecord(record=erased.model_copy(update={"status": Status.ERASED})),
            AddEdge(tenant=tenant, label="SUPERSEDES", src="v1", dst="kept", at=SINCE),
            AddEdge(tenant=tenant, label="SUPERSEDES", src="erased", dst="kept", at=SINCE),
            ScopeWithin(tenant=tenant, child="team:a", parent="team:b"),
            ScopeWithin(tenant=tenant, child="team:b", parent="team:a"),
        ]
    )
    ledger.crashed("export: RuntimeError: dictionary changed size during iteration")
    proposal = claim(tenant, "Alice prefers email.", "m-1")
    merged = WriteDecision(
        outcome=WriteOutcome.ACCEPTED,
        reason=WriteReason.DUPLICATE_MERGED,
        proposal_id=proposal.proposal_id,
        record_id="kept",
    )
    ledger.proposals.append((proposal, merged))
    report = ForgetReport(
        tenant=tenant,
        target="kept",
        target_type="record",
        mode=ForgetMode.ERASE,
        entries=(ForgetEntry(record_id="kept", action="erased", reason="target"),),
    )
    ledger.forgotten.append(Forgotten(1.0, report))
    ledger.recalls.append(Recalled(2.0, ("kept",), (Status.ACTIVE,)))
    ledger.recalls.append(Recalled(0.5, ("erased",), (Status.REVOKED,)))
    found = {v.invariant for v in check(store, ledger)}
    assert found == set(INVARIANTS), set(INVARIANTS) - found
