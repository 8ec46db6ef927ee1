"""One transaction per operation (SPEC §9), on every backend: operations racing in threads
decide on what the other committed, never on what it is about to overwrite."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from typing import Any

import pytest

from graphmem import (
    ConflictError,
    ForgetMode,
    ForgetRequest,
    GraphmemError,
    Kind,
    LineageError,
    MemoryRecord,
    MemoryStore,
    ReadContext,
    Source,
    Status,
    TransactionConflict,
    Trust,
    WriteOutcome,
    WriteProposal,
    WriteReason,
)
from graphmem._core import ATTEMPTS, RECALL_ATTEMPTS
from tests.conftest import KNOWN, T0

DAY = timedelta(days=1)
ROUNDS = 8


def race(*calls: Callable[[], Any]) -> list[Any]:
    """Run ``calls`` at once, one thread each; each one's result or the exception it raised."""
    barrier = threading.Barrier(len(calls))
    outcomes: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        barrier.wait()
        try:
            outcomes[i] = calls[i]()
        except BaseException as err:  # reported to the test
            outcomes[i] = err

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a racing operation never returned"
    unexpected = [o for o in outcomes if isinstance(o, BaseException) and not isinstance(o, GraphmemError)]
    assert unexpected == []
    return outcomes


def fact(tenant: str, record_id: str, content: str = "the refund window is thirty days") -> MemoryRecord:
    return MemoryRecord(
        id=record_id,
        tenant=tenant,
        kind=Kind.SEMANTIC,
        scope="case:c1",
        content=content,
        created_at=T0,
        valid_from=T0,
        sources=(Source(id=f"src-{record_id}"),),
    )


def proposal(tenant: str, content: str, source: str, **fields: object) -> WriteProposal:
    return WriteProposal.model_validate(
        {
            "tenant": tenant,
            "kind": Kind.SEMANTIC,
            "scope": "user:alice",
            "content": content,
            "valid_from": T0,
            "sources": [Source(id=source, type="message", trust=Trust.TRUSTED)],
            "proposed_by": "agent-7",
            **fields,
        }
    )


def erase(tenant: str, target: str) -> ForgetRequest:
    return ForgetRequest(
        tenant=tenant, target=target, mode=ForgetMode.ERASE, reason="asked", requested_by="dpo"
    )


def test_two_concurrent_supersessions_of_one_record_leave_one_successor(
    store: MemoryStore, tenant: str
) -> None:
    for i in range(ROUNDS):
        store.add(fact(tenant, f"v{i}"))
        outcomes = race(
            partial(store.supersede, tenant, f"v{i}", fact(tenant, f"v{i}-a", "sixty days"), "a"),
            partial(store.supersede, tenant, f"v{i}", fact(tenant, f"v{i}-b", "ninety days"), "b"),
        )
        won = [o for o in outcomes if isinstance(o, MemoryRecord)]
        lost = [o for o in outcomes if isinstance(o, GraphmemError)]
        assert len(won) == 1, outcomes
        assert [(type(e), e.code) for e in lost] == [(LineageError, "already_superseded")]
        successors = [e.src for e in store.trace(tenant, f"v{i}").edges if e.type == "SUPERSEDES"]
        assert successors == [won[0].id]
        assert store.get(tenant, f"v{i}-{'b' if won[0].id.endswith('a') else 'a'}") is None


def test_concurrent_opposite_scope_nesting_never_makes_a_cycle(store: MemoryStore, tenant: str) -> None:
    for i in range(ROUNDS):
        a, b = f"team:a{i}", f"team:b{i}"
        outcomes = race(partial(store.scope_within, tenant, a, b), partial(store.scope_within, tenant, b, a))
        refused = [o for o in outcomes if isinstance(o, GraphmemError)]
        assert [(type(e), e.code) for e in refused] == [(LineageError, "scope_cycle")], outcomes
        assert (a in store.backend.scope_ancestors(tenant, [b])) != (
            b in store.backend.scope_ancestors(tenant, [a])
        )


def test_concurrent_identical_proposals_keep_every_acknowledged_source(
    store: MemoryStore, tenant: str
) -> None:
    threads = 6
    for i in range(ROUNDS // 2):
        content = f"Alice prefers email follow-ups (round {i})."
        decisions = race(
            *(
                partial(store.propose, proposal(tenant, content, f"msg-{i}-{k}"), source_trust=Trust.TRUSTED)
                for k in range(threads)
            )
        )
        assert all(d.outcome is WriteOutcome.ACCEPTED for d in decisions), decisions
        (record_id,) = {d.record_id for d in decisions}
        assert sorted(d.reason.value for d in decisions).count(WriteReason.ACCEPTED.value) == 1
        record = store.get(tenant, record_id)
        assert record is not None
        assert {s.id for s in record.sources} == {f"msg-{i}-{k}" for k in range(threads)}


def _erased(store: MemoryStore, tenant: str, record_id: str) -> None:
    record = store.get(tenant, record_id)
    assert record is not None
    assert (record.status, record.content, record.tombstone is not None) == (Status.ERASED, "", True)
    assert all(s.quote is None for s in record.sources)


def test_an_erase_racing_a_merging_proposal_is_never_undone(store: MemoryStore, tenant: str) -> None:
    for i in range(ROUNDS):
        content = f"Alice lives in Lisbon (round {i})."
        first = store.propose(proposal(tenant, content, f"a-{i}"), source_trust=Trust.TRUSTED)
        assert first.record_id is not None
        outcomes = race(
            partial(store.forget, erase(tenant, first.record_id)),
            partial(store.propose, proposal(tenant, content, f"b-{i}"), source_trust=Trust.TRUSTED),
        )
        assert not any(isinstance(o, GraphmemError) for o in outcomes), outcomes
        _erased(store, tenant, first.record_id)
        merged = outcomes[1]
        if merged.record_id != first.record_id:  # proposed after the erase: a new memory
            assert merged.reason is WriteReason.ACCEPTED


def test_an_erase_racing_an_approval_or_a_contest_is_never_undone(store: MemoryStore, tenant: str) -> None:
    for i in range(ROUNDS):
        pending = store.propose(
            proposal(tenant, f"Everyone gets email (round {i}).", f"p-{i}", scope="tenant:acme")
        )
        assert pending.record_id is not None
        active = store.propose(
            proposal(tenant, f"Alice is in Porto (round {i}).", f"c-{i}"), source_trust=Trust.TRUSTED
        )
        assert active.record_id is not None
        outcomes = race(
            partial(store.forget, erase(tenant, pending.record_id)),
            partial(store.approve, tenant, pending.proposal_id, approver="ops-lead"),
            partial(store.forget, erase(tenant, active.record_id)),
            partial(store.contest, tenant, active.record_id, by="agent", reason="disputed"),
        )
        for refused in (o for o in outcomes if isinstance(o, GraphmemError)):
            assert isinstance(refused, ConflictError), outcomes
            assert refused.code in {"not_pending", "not_active"}
        _erased(store, tenant, pending.record_id)
        _erased(store, tenant, active.record_id)


def test_recall_racing_forget_never_selects_a_forgotten_record(store: MemoryStore, tenant: str) -> None:
    count = 60
    store.add_many([fact(tenant, f"f{i:02}", f"refund rule number {i}") for i in range(count)])
    ctx = ReadContext(as_of=KNOWN, tenant=tenant, scopes=("case:c1",), now=T0 + DAY, limit=count)
    forgotten: list[str] = []  # appended once each forget returned
    done = threading.Event()
    violations: list[str] = []

    def forget_all() -> None:
        try:
            for i in range(count):
                mode = ForgetMode.ERASE if i % 2 else ForgetMode.REVOKE
                store.forget(
                    ForgetRequest(tenant=tenant, target=f"f{i:02}", mode=mode, reason="r", requested_by="u")
                )
                forgotten.append(f"f{i:02}")
        finally:
            done.set()

    def recall_until_done() -> int:
        recalls = 0
        while not done.is_set() or recalls == 0:
            before = set(forgotten)
            selection = store.recall(ctx, "refund rule")
            recalls += 1
            for record in selection.records:
                if record.status is not Status.ACTIVE or not record.content:
                    violations.append(f"{record.id} returned {record.status.value}")
            if before & set(selection.ids):
                violations.append(
                    f"selected after its forget returned: {sorted(before & set(selection.ids))}"
                )
            if [r.id for r in selection.records] != list(selection.ids):
                violations.append("records differ from the receipt's selection")
        return recalls

    outcomes = race(forget_all, recall_until_done, recall_until_done)
    assert outcomes[0] is None  # every forget returned, none refused
    assert violations == []
    assert outcomes[1] > 0
    assert store.recall(ctx, "refund rule").ids == []


def test_an_operation_that_lost_a_race_runs_again(
    store: MemoryStore, tenant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backend that reports ``TransactionConflict`` (a deadlock) gets the whole operation again,
    in a new transaction, up to ``ATTEMPTS`` times; then the conflict reaches the caller."""
    real_apply = store.backend.apply
    failures = [2]

    def apply(ops: Any) -> None:
        if failures[0]:
            failures[0] -= 1
            raise TransactionConflict("deadlock")
        real_apply(ops)

    monkeypatch.setattr(store.backend, "apply", apply)
    store.add(fact(tenant, "r1"))
    assert store.get(tenant, "r1") == fact(tenant, "r1")
    assert [e.action for e in store.audit(tenant)] == ["added"]
    failures[0] = ATTEMPTS
    with pytest.raises(TransactionConflict):
        store.add(fact(tenant, "r2"))
    assert failures[0] == 0
    assert store.get(tenant, "r2") is None


def test_a_recall_whose_selection_went_stale_gates_again(
    store: MemoryStore, tenant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backend that finds records the gate selected forgotten or changed before it read them
    (``TransactionConflict``) gets the whole recall again, gate included, up to
    ``RECALL_ATTEMPTS`` times — more than a write's ``ATTEMPTS``, since a recall writes nothing and
    a tenant forgotten record after record can make several selections in a row stale; then the
    conflict reaches the caller."""
    store.add(fact(tenant, "r1"))
    ctx = ReadContext(as_of=KNOWN, tenant=tenant, scopes=("case:c1",), now=T0 + DAY)
    real_recalled = store.backend.recalled
    stale = [RECALL_ATTEMPTS - 1]

    def recalled(*args: Any, **kwargs: Any) -> Any:
        if stale[0]:
            stale[0] -= 1
            raise TransactionConflict("a selected record was forgotten before it was read")
        return real_recalled(*args, **kwargs)

    monkeypatch.setattr(store.backend, "recalled", recalled)
    assert RECALL_ATTEMPTS > ATTEMPTS
    assert store.recall(ctx, "refund window").ids == ["r1"]
    assert stale[0] == 0
    stale[0] = RECALL_ATTEMPTS
    with pytest.raises(TransactionConflict):
        store.recall(ctx, "refund window")
    assert stale[0] == 0


def test_a_proposal_is_judged_before_its_write_transaction_so_other_writes_go_on(
    store: MemoryStore, tenant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate (rules, detector) needs only the proposal: it runs before ``propose`` opens its
    write transaction. On the embedded store that transaction holds the database's write lock,
    so a write judged inside it made every other writer wait for the gate."""
    from graphmem.policy import decide as real

    judging, release = threading.Event(), threading.Event()
    slow = "Alice's invoices go to the Lisbon office (judged slowly)."

    def decide(candidate: WriteProposal, *args: Any, **kwargs: Any) -> Any:
        if candidate.content == slow:
            judging.set()
            assert release.wait(30), "the test never released the judgement"
        return real(candidate, *args, **kwargs)

    monkeypatch.setattr("graphmem.write_ops.decide", decide)
    first: list[Any] = []
    slow_one = threading.Thread(
        target=lambda: first.append(
            store.propose(proposal(tenant, slow, "msg-slow"), source_trust=Trust.TRUSTED)
        ),
        daemon=True,
    )
    slow_one.start()
    try:
        assert judging.wait(30)
        others: list[Any] = []
        other = threading.Thread(
            target=lambda: others.append(
                store.propose(
                    proposal(tenant, "Alice prefers calls after 5pm.", "msg-other"),
                    source_trust=Trust.TRUSTED,
                )
            ),
            daemon=True,
        )
        other.start()
        # The other proposal is written while the first one is still being judged.
        other.join(timeout=4)
        assert not other.is_alive(), "a write waited for another proposal's gate"
        assert [d.outcome for d in others] == [WriteOutcome.ACCEPTED]
        assert not first
    finally:
        release.set()
        slow_one.join(timeout=30)
    assert [d.outcome for d in first] == [WriteOutcome.ACCEPTED]
    for decision in (*first, *others):
        record = store.get(tenant, decision.record_id)
        assert record is not None
        assert record.status is Status.ACTIVE
    # Each record is dated inside its own write: the one judged first and written last is the newer.
    judged_first, written_first = (
        store.get(tenant, first[0].record_id),
        store.get(tenant, others[0].record_id),
    )
    assert judged_first is not None
    assert written_first is not None
    assert judged_first.created_at >= written_first.created_at
