"""Knowledge time (SPEC §2, §3): ``now`` replays what was true, ``as_of`` what the store knew.

A replay sees nothing recorded after its ``as_of`` (records by ``created_at``,
supersessions and invalidations by the time the store recorded them), so a receipt
keeps verifying after later writes; forgetting holds at every time.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import neo4j
import pytest

from graphmem import (
    DropReason,
    ForgetMode,
    ForgetRequest,
    GraphmemError,
    Kind,
    MemoryRecord,
    MemoryStore,
    ReadContext,
    Source,
    Trust,
    VerifyResult,
    WriteProposal,
    WriteReason,
)
from graphmem.backends.embedded import EmbeddedBackend
from graphmem.backends.sqlite_engine import DB_NAME, FORMAT
from tests.conftest import T0, Clock
from tests.erasure import forget_alternately, places_holding

DAY = timedelta(days=1)
SCOPE = "system:gateway"


def day(n: float) -> datetime:
    return T0 + n * DAY


def episode(tenant: str, rid: str, recorded: float, content: str = "capture timeout retried") -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        tenant=tenant,
        kind=Kind.EPISODIC,
        scope=SCOPE,
        content=f"{content} ({rid})",
        created_at=day(recorded),
        event_time=day(0),
        outcome="verified-success",
    )


def claim(tenant: str, rid: str, recorded: float, valid_from: float = 0) -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        tenant=tenant,
        kind=Kind.SEMANTIC,
        scope=SCOPE,
        content=f"capture timeouts are retried once ({rid})",
        created_at=day(recorded),
        valid_from=day(valid_from),
        sources=(Source(id=f"src-{rid}"),),
    )


def ctx(tenant: str, now: float, as_of: float | None = None) -> ReadContext:
    return ReadContext(
        tenant=tenant, scopes=(SCOPE,), now=day(now), as_of=None if as_of is None else day(as_of)
    )


def reason(store: MemoryStore, context: ReadContext, rid: str) -> DropReason | None:
    return store.explain(context, rid).reason


@pytest.fixture
def clock() -> Clock:
    return Clock(day(1))


@pytest.fixture
def timed(store: MemoryStore, clock: Clock) -> MemoryStore:
    """The shared backend under a store whose clock the test sets."""
    return MemoryStore(store.backend, clock=clock)


def test_a_replay_does_not_see_a_record_recorded_later(timed: MemoryStore, tenant: str) -> None:
    # The case: a record recorded on day 30 (about day 0), replayed at day 10.
    timed.add(episode(tenant, "late", recorded=30))
    assert reason(timed, ctx(tenant, 10), "late") is DropReason.NOT_YET_VALID
    assert reason(timed, ctx(tenant, 30), "late") is None
    # What do we now know was true on day 10? now = day 10, as_of = the present.
    assert reason(timed, ctx(tenant, 10, as_of=31), "late") is None


def test_a_supersession_counts_from_when_it_was_recorded(
    timed: MemoryStore, clock: Clock, tenant: str
) -> None:
    timed.add(claim(tenant, "v1", recorded=1))
    clock.at = day(20)
    timed.supersede(tenant, "v1", claim(tenant, "v2", recorded=20, valid_from=5), reason="corrected")
    assert reason(timed, ctx(tenant, 10), "v1") is None  # on day 10 nobody knew yet
    assert reason(timed, ctx(tenant, 10, as_of=20), "v1") is DropReason.SUPERSEDED
    assert reason(timed, ctx(tenant, 10, as_of=20), "v2") is None
    assert reason(timed, ctx(tenant, 4, as_of=20), "v1") is None  # before it took effect
    edges = [e for e in timed.trace(tenant, "v1").edges if e.type == "SUPERSEDES"]
    assert [(e.at, e.recorded) for e in edges] == [(day(5), day(20))]


def test_an_invalidation_counts_from_when_it_was_recorded(
    timed: MemoryStore, clock: Clock, tenant: str
) -> None:
    timed.add(claim(tenant, "c", recorded=1))
    clock.at = day(20)
    timed.invalidate(tenant, "c", by="src-c", reason="retracted", at=day(3))
    assert reason(timed, ctx(tenant, 10), "c") is None
    assert reason(timed, ctx(tenant, 10, as_of=19), "c") is None
    assert reason(timed, ctx(tenant, 10, as_of=20), "c") is DropReason.INVALIDATED
    assert reason(timed, ctx(tenant, 2, as_of=20), "c") is None


def test_forgetting_holds_at_every_time(timed: MemoryStore, clock: Clock, tenant: str) -> None:
    timed.add(episode(tenant, "e", recorded=1))
    clock.at = day(20)
    timed.forget(
        ForgetRequest(tenant=tenant, target="e", mode=ForgetMode.REVOKE, reason="r", requested_by="u")
    )
    assert reason(timed, ctx(tenant, 10), "e") is DropReason.REVOKED


def test_a_receipt_verifies_after_later_writes(timed: MemoryStore, clock: Clock, tenant: str) -> None:
    timed.add_many([episode(tenant, "e1", 1), episode(tenant, "e2", 2), claim(tenant, "c1", 1)])
    clock.at = day(10)
    then = ctx(tenant, 10)
    receipt = timed.recall(then, "capture timeout").receipt
    assert (receipt.now, receipt.as_of) == (day(10), day(10))
    clock.at = day(20)
    timed.add(episode(tenant, "e3", 20))  # a later episode
    timed.add(claim(tenant, "c-future", 20, valid_from=5))  # valid from before the recall, recorded after
    timed.supersede(tenant, "c1", claim(tenant, "c2", 20, valid_from=4), reason="corrected")
    timed.invalidate(tenant, "e2", by="e3", reason="wrong", at=day(3))
    assert timed.recall(ctx(tenant, 10, as_of=20), "capture timeout").receipt != receipt
    result = timed.verify(receipt, then)
    assert result == VerifyResult(status="verified")
    assert result


def test_a_forget_since_is_changed_since_not_a_mismatch(
    timed: MemoryStore, clock: Clock, tenant: str
) -> None:
    timed.add_many([episode(tenant, "e1", 1), episode(tenant, "e2", 2)])
    then = ctx(tenant, 10)
    receipt = timed.recall(then, "capture timeout").receipt
    clock.at = day(20)
    timed.forget(
        ForgetRequest(tenant=tenant, target="e1", mode=ForgetMode.ERASE, reason="gdpr", requested_by="u")
    )
    result = timed.verify(receipt, then)
    assert (result.status, result.forgotten, bool(result)) == ("changed_since", ("e1",), False)


#: Rounds of the racing replay test: 1 in the suite; a stress run sets more (e.g. 450, a few
#: minutes on Neo4j), each round in a tenant of its own.
RACING_ROUNDS = int(os.environ.get("GRAPHMEM_RACING_ROUNDS", "1"))


def test_replays_racing_overwrites_always_return_what_the_store_held_then(
    timed: MemoryStore, clock: Clock, tenant: str
) -> None:
    # Two threads overwrite the selected records (merged sources, contests) while two replay
    # the recall of day 10: every replay returns exactly the records and receipt of then.
    for n in range(RACING_ROUNDS):
        clock.at = day(1)
        _racing_round(timed, clock, tenant if n == 0 else f"{tenant}-{n}")


def _racing_round(timed: MemoryStore, clock: Clock, tenant: str) -> None:
    made = [
        timed.propose(
            proposal(tenant, f"Capture timeouts at gateway {k} are retried once.", f"msg-{k}"),
            source_trust=Trust.TRUSTED,
        )
        for k in range(4)
    ]
    ids = [m.record_id for m in made]
    clock.at = day(10)
    then = ctx(tenant, 10)
    recalled = timed.recall(then, "capture timeouts retried")
    assert sorted(recalled.ids) == sorted(ids)
    clock.at = day(11)
    errors: list[BaseException] = []
    done = threading.Event()

    def overwrite(k: int) -> None:
        try:
            for n in range(6):
                rid = ids[(k + n) % len(ids)]
                if n % 3 == 2:
                    timed.contest(tenant, rid, by="agent", reason="disputed")
                else:
                    content = f"Capture timeouts at gateway {ids.index(rid)} are retried once."
                    timed.propose(proposal(tenant, content, f"dup-{k}-{n}"), source_trust=Trust.TRUSTED)
        except BaseException as err:
            errors.append(err)

    def replay() -> None:
        try:
            while not done.is_set():
                again = timed.recall(then, "capture timeouts retried")
                assert again.records == recalled.records
                assert again.receipt == recalled.receipt
        except BaseException as err:
            errors.append(err)
            done.set()

    writers = [threading.Thread(target=overwrite, args=(k,)) for k in range(2)]
    readers = [threading.Thread(target=replay) for _ in range(2)]
    for t in [*writers, *readers]:
        t.start()
    for t in writers:
        t.join(timeout=120)
    done.set()
    for t in readers:
        t.join(timeout=120)
    assert errors == []
    assert all(not t.is_alive() for t in [*writers, *readers])
    assert timed.recall(then, "capture timeouts retried").records == recalled.records
    assert timed.verify(recalled.receipt, then)


def test_verifying_a_receipt_while_its_records_are_forgotten_never_reports_a_mismatch(
    timed: MemoryStore, clock: Clock, tenant: str
) -> None:
    # One thread revokes and erases the selected records one by one while two verify the
    # receipt: each verify answers (a record forgotten since is changed_since, never a
    # mismatch or an error), whichever side of each forget it reads.
    ids = [f"e{k}" for k in range(8)]
    timed.add_many([episode(tenant, rid, 1) for rid in ids])
    then = ctx(tenant, 10)
    receipt = timed.recall(then, "capture timeout").receipt
    assert sorted(receipt.selected_ids) == ids
    clock.at = day(20)
    errors: list[BaseException] = []
    statuses: set[str] = set()
    done = threading.Event()

    def forget() -> None:
        try:
            forget_alternately(timed, tenant, ids)
        except BaseException as err:
            errors.append(err)
        finally:
            done.set()

    def verify() -> None:
        try:
            while not done.is_set():
                statuses.add(timed.verify(receipt, then).status)
        except BaseException as err:
            errors.append(err)
            done.set()

    threads = [threading.Thread(target=forget), *(threading.Thread(target=verify) for _ in range(2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    assert all(not t.is_alive() for t in threads)
    assert statuses <= {"verified", "changed_since"}
    final = timed.verify(receipt, then)
    assert (final.status, sorted(final.forgotten)) == ("changed_since", ids)


def test_forgetting_one_of_two_sources_of_a_selected_record_leaves_the_receipt_verified(
    timed: MemoryStore, clock: Clock, tenant: str
) -> None:
    # The record stays supported by the other source; the revoke marks the forgotten one on
    # it, and keeps the version it replaces.
    record = claim(tenant, "c1", 1).model_copy(update={"sources": (Source(id="s-a"), Source(id="s-b"))})
    timed.add(record)
    then = ctx(tenant, 10)
    recalled = timed.recall(then, "capture timeouts")
    assert recalled.ids == ["c1"]
    clock.at = day(20)
    report = timed.forget(
        ForgetRequest(tenant=tenant, target="s-a", mode=ForgetMode.REVOKE, reason="wrong", requested_by="u")
    )
    assert [(e.record_id, e.action) for e in report.entries] == [("c1", "kept")]
    assert timed.verify(recalled.receipt, then) == VerifyResult(status="verified")
    assert timed.recall(then, "capture timeouts").records == recalled.records
    # An erase of the other keeps no version (it would hold the erased locator): a forget
    # changed the record, and the verify says so.
    clock.at = day(21)
    timed.forget(
        ForgetRequest(tenant=tenant, target="s-b", mode=ForgetMode.ERASE, reason="gdpr", requested_by="u")
    )
    result = timed.verify(recalled.receipt, then)
    assert (result.status, result.forgotten) == ("changed_since", ("c1",))


def test_tampering_is_a_mismatch_that_says_what_differs(timed: MemoryStore, tenant: str) -> None:
    timed.add_many([episode(tenant, "e1", 1), episode(tenant, "e2", 2, "capture timeout capture timeout")])
    then = ctx(tenant, 10)
    receipt = timed.recall(then, "capture timeout").receipt
    assert len(receipt.selected_ids) == 2
    swapped = receipt.model_copy(update={"selected_ids": receipt.selected_ids[::-1]})
    result = timed.verify(swapped, then)
    assert result.status == "mismatch"
    assert not result
    assert any(d.startswith("order") for d in result.differences)
    other = timed.verify(receipt, ctx(tenant, 11))
    assert other.status == "mismatch"
    assert any(d.startswith("context") for d in other.differences)
    delete_behind_the_store(timed, tenant, "e1")
    gone = timed.verify(receipt, then)
    assert gone.status == "mismatch"
    assert "candidate gone without a forget: e1" in gone.differences


def delete_behind_the_store(store: MemoryStore, tenant: str, rid: str) -> None:
    """Remove a record without the store knowing: tampering with the data itself."""
    backend = store.backend
    if isinstance(backend, EmbeddedBackend):
        with backend.engine.transaction(write=True) as conn:
            conn.execute("DELETE FROM records WHERE tenant = ? AND id = ?", (tenant, rid))
        store._gate_cache.purge({tenant})
        return
    driver: neo4j.Driver = backend.driver  # type: ignore[attr-defined]
    with driver.session() as session:
        session.run("MATCH (m:Memory {tenant: $t, id: $id}) DETACH DELETE m", t=tenant, id=rid).consume()
    store._gate_cache.purge({tenant})


def _node_lists(driver: neo4j.Driver, tenant: str) -> list[tuple[str, Any]]:
    with driver.session() as session:
        row = session.run(
            "MATCH (m:Memory {tenant: $t}) RETURN m.v_body AS body, size(m.v_until) AS until", t=tenant
        ).single()
    assert row is not None
    return [("v_body", row["body"]), ("v_until", row["until"])]


@pytest.mark.neo4j
def test_a_neo4j_version_kept_without_a_body_replays_todays_record(
    neo4j_driver: neo4j.Driver, tenant: str
) -> None:
    from graphmem.backends.neo4j import Neo4jBackend

    clock = Clock(day(1))
    store = MemoryStore(Neo4jBackend(neo4j_driver), clock=clock)
    first = store.propose(
        proposal(tenant, "Capture timeouts are retried once.", "msg-1"), source_trust=Trust.TRUSTED
    )
    clock.at = day(12)
    store.propose(proposal(tenant, "Capture timeouts are retried once.", "msg-2"), source_trust=Trust.TRUSTED)
    assert [len(r.sources) for r in store.recall(ctx(tenant, 10), "capture").records] == [1]
    # Versions kept before they had bodies: the node has v_until but no v_body, in a store
    # of schema 5, which recall refuses until the schema step pads the bodies.
    with neo4j_driver.session() as session:
        session.run("MATCH (m:Memory {tenant: $t}) REMOVE m.v_body", t=tenant).consume()
        session.run("MATCH (v:GraphmemSchema {name: 'graphmem'}) SET v.version = 5").consume()
    old = MemoryStore(Neo4jBackend(neo4j_driver), clock=clock)
    try:
        with pytest.raises(GraphmemError) as refused:
            old.recall(ctx(tenant, 10), "capture")
        assert refused.value.code == "schema_version"
    finally:
        assert old.setup() == 6
    assert _node_lists(neo4j_driver, tenant) == [("v_body", [""]), ("v_until", 1)]
    store.backend._docs.clear()  # type: ignore[attr-defined]
    store._gate_cache.purge({tenant})
    assert [len(r.sources) for r in store.recall(ctx(tenant, 10), "capture").records] == [2]
    clock.at = day(20)
    store.propose(proposal(tenant, "Capture timeouts are retried once.", "msg-3"), source_trust=Trust.TRUSTED)
    # The body list is shorter than the time list: bodies align with the newest versions.
    assert [len(r.sources) for r in store.recall(ctx(tenant, 10), "capture").records] == [3]
    assert [len(r.sources) for r in store.recall(ctx(tenant, 15), "capture").records] == [2]
    assert [len(r.sources) for r in store.recall(ctx(tenant, 25), "capture").records] == [3]
    assert store.recall(ctx(tenant, 10), "capture").ids == [first.record_id]


def test_a_format_2_store_is_migrated_in_place(tmp_path: Path, tenant: str) -> None:
    path = tmp_path / "v2"
    clock = Clock(day(20))
    with MemoryStore.embedded(path, clock=clock) as store:
        store.add_many([claim(tenant, "c1", 1), episode(tenant, "e1", 15)])
        store.supersede(tenant, "c1", claim(tenant, "c2", 20, valid_from=5), reason="corrected")
    # Format 2 had no knowledge-time columns.
    conn = sqlite3.connect(path / DB_NAME)
    for table, column in (
        ("records", "known_from"),
        ("records", "changed_at"),
        ("lineage", "recorded"),
        ("within", "recorded"),
        ("related", "recorded"),
    ):
        conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    conn.execute("DROP TABLE versions")
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    with MemoryStore.embedded(path, clock=clock) as store:
        assert store.backend.check() == []  # type: ignore[attr-defined]
        # Records are known from their created_at; edges of a format 2 store at every time.
        assert reason(store, ctx(tenant, 10), "e1") is DropReason.NOT_YET_VALID
        assert reason(store, ctx(tenant, 10), "c1") is DropReason.SUPERSEDED
        assert reason(store, ctx(tenant, 10), "c2") is DropReason.NOT_YET_VALID
        assert reason(store, ctx(tenant, 10, as_of=20), "c2") is None
    conn = sqlite3.connect(path / DB_NAME)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == FORMAT == 4
    conn.close()


def test_a_format_3_store_is_migrated_in_place_and_its_bodiless_versions_replay_todays_record(
    tmp_path: Path, tenant: str
) -> None:
    path = tmp_path / "v3"
    clock = Clock(day(1))
    with MemoryStore.embedded(path, clock=clock) as store:
        first = store.propose(
            proposal(tenant, "Capture timeouts are retried once.", "msg-1"), source_trust=Trust.TRUSTED
        )
        clock.at = day(12)
        store.propose(
            proposal(tenant, "Capture timeouts are retried once.", "msg-2"), source_trust=Trust.TRUSTED
        )
    # Format 3 kept versions without their bodies.
    conn = sqlite3.connect(path / DB_NAME)
    conn.execute("ALTER TABLE versions DROP COLUMN body")
    conn.execute("ALTER TABLE related DROP COLUMN recorded")
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()
    with MemoryStore.embedded(path, clock=clock) as store:
        assert store.backend.check() == []  # type: ignore[attr-defined]
        replay = store.recall(ctx(tenant, 10), "capture")
        assert replay.ids == [first.record_id]
        assert [len(r.sources) for r in replay.records] == [2]  # today's record: no body was kept
        clock.at = day(20)
        store.propose(
            proposal(tenant, "Capture timeouts are retried once.", "msg-3"), source_trust=Trust.TRUSTED
        )
        # Versions kept from now on have their body.
        assert [len(r.sources) for r in store.recall(ctx(tenant, 15), "capture").records] == [2]
        assert [len(r.sources) for r in store.recall(ctx(tenant, 25), "capture").records] == [3]
    conn = sqlite3.connect(path / DB_NAME)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == FORMAT == 4
    assert conn.execute("SELECT count(*) FROM versions WHERE body IS NOT NULL").fetchone()[0] == 1
    conn.close()


# -- overwrites: approvals, contests and their resolution, merged sources -----------------


def proposal(tenant: str, content: str, source: str, **fields: object) -> WriteProposal:
    base: dict[str, object] = {
        "tenant": tenant,
        "kind": Kind.SEMANTIC,
        "scope": SCOPE,
        "content": content,
        "valid_from": T0,
        "sources": (Source(id=source, type="message", trust=Trust.TRUSTED),),
        "proposed_by": "agent-7",
    }
    base.update(fields)
    return WriteProposal.model_validate(base)


def test_merged_sources_leave_an_earlier_receipt_verified(
    timed: MemoryStore, clock: Clock, tenant: str
) -> None:
    first = timed.propose(
        proposal(tenant, "Capture timeouts are retried once.", "msg-1"), source_trust=Trust.TRUSTED
    )
    assert first.record_id is not None
    clock.at = day(10)
    then = ctx(tenant, 10)
    receipt = timed.recall(then, "capture").receipt
    clock.at = day(20)
    again = timed.propose(
        proposal(tenant, "Capture timeouts are retried once.", "msg-2"), source_trust=Trust.TRUSTED
    )
    assert (again.reason, again.record_id) == (WriteReason.DUPLICATE_MERGED, first.record_id)
    assert timed.verify(receipt, then)
    now = timed.recall(ctx(tenant, 10, as_of=20), "capture").receipt
    assert now.candidates_digest != receipt.candidates_digest  # as of day 20: the merged version


def test_an_approval_counts_from_when_it_was_recorded(timed: MemoryStore, clock: Clock, tenant: str) -> None:
    broad = timed.propose(proposal(tenant, "All captures are retried once.", "msg-1", scope="tenant:acme"))
    assert broad.record_id is not None
    wide = ReadContext(tenant=tenant, scopes=("tenant:acme",), now=day(10))
    receipt = timed.recall(wide, "captures").receipt
    clock.at = day(20)
    timed.approve(tenant, broad.proposal_id, approver="ops-lead")
    assert timed.explain(wide, broad.record_id).reason is DropReason.PENDING_APPROVAL
    assert timed.explain(wide.model_copy(update={"as_of": day(20)}), broad.record_id).reason is None
    assert timed.verify(receipt, wide)


def test_a_contest_and_its_resolution_count_from_when_they_were_recorded(
    timed: MemoryStore, clock: Clock, tenant: str
) -> None:
    email = timed.propose(
        proposal(tenant, "Alice prefers email.", "msg-1", subject="user:alice/channel"),
        source_trust=Trust.TRUSTED,
    )
    assert email.record_id is not None
    clock.at = day(10)
    then = ctx(tenant, 10)
    receipt = timed.recall(then, "prefers").receipt
    assert receipt.selected_ids == (email.record_id,)
    clock.at = day(12)
    phone = timed.propose(
        proposal(tenant, "Alice prefers phone calls.", "msg-2", subject="user:alice/channel"),
        source_trust=Trust.TRUSTED,
    )
    assert phone.record_id is not None
    clock.at = day(20)
    timed.resolve(tenant, email.record_id, winner_id=phone.record_id, reason="Alice confirmed phone")
    assert reason(timed, ctx(tenant, 15, as_of=15), email.record_id) is DropReason.CONTESTED
    assert reason(timed, ctx(tenant, 25, as_of=25), email.record_id) is DropReason.SUPERSEDED
    assert reason(timed, ctx(tenant, 25, as_of=25), phone.record_id) is None
    assert timed.verify(receipt, then)
    timed.forget(
        ForgetRequest(
            tenant=tenant, target=email.record_id, mode=ForgetMode.ERASE, reason="gdpr", requested_by="u"
        )
    )
    assert reason(timed, ctx(tenant, 15, as_of=15), email.record_id) is DropReason.ERASED
    assert timed.verify(receipt, then).forgotten == (email.record_id,)


def test_a_replay_returns_each_record_as_the_store_held_it_then(
    timed: MemoryStore, clock: Clock, tenant: str
) -> None:
    # Overwritten three times after the recall: merged sources, a contest, its resolution.
    first = timed.propose(
        proposal(tenant, "Alice prefers email on weekdays.", "msg-1", subject="user:alice/channel"),
        source_trust=Trust.TRUSTED,
    )
    assert first.record_id is not None
    clock.at = day(10)
    then = ctx(tenant, 10)
    recalled = timed.recall(then, "prefers email")
    assert recalled.ids == [first.record_id]
    clock.at = day(12)
    timed.propose(
        proposal(tenant, "Alice prefers email on weekdays.", "msg-2", subject="user:alice/channel"),
        source_trust=Trust.TRUSTED,
    )
    merged = timed.recall(ctx(tenant, 13), "prefers email")
    assert [len(r.sources) for r in merged.records] == [2]
    clock.at = day(14)
    phone = timed.propose(
        proposal(tenant, "Alice prefers phone calls.", "msg-3", subject="user:alice/channel"),
        source_trust=Trust.TRUSTED,
    )
    assert phone.record_id is not None
    clock.at = day(20)
    timed.resolve(tenant, first.record_id, winner_id=phone.record_id, reason="Alice confirmed phone")

    replay = timed.recall(then, "prefers email")
    assert replay.records == recalled.records  # status active, one source: as it was on day 10
    assert replay.receipt == recalled.receipt
    assert timed.recall(ctx(tenant, 13), "prefers email").records == merged.records
    today = timed.backend.get(tenant, first.record_id)
    assert today is not None
    assert len(today.sources) == 2
    assert today != replay.records[0]
    assert reason(timed, ctx(tenant, 25), first.record_id) is DropReason.SUPERSEDED

    # An erase takes every kept version with it: nothing of the text is left anywhere.
    timed.forget(
        ForgetRequest(
            tenant=tenant, target=first.record_id, mode=ForgetMode.ERASE, reason="gdpr", requested_by="u"
        )
    )
    assert timed.recall(then, "prefers email").records == ()
    assert places_holding(timed, tenant, "email on weekdays") == []


def test_a_scope_nesting_counts_from_when_it_was_recorded(
    timed: MemoryStore, clock: Clock, tenant: str
) -> None:
    timed.add(episode(tenant, "e1", 1).model_copy(update={"scope": "domain:payments"}))
    timed.add(episode(tenant, "e2", 1))
    clock.at = day(10)
    then = ctx(tenant, 10)
    receipt = timed.recall(then, "capture").receipt
    assert receipt.selected_ids == ("e2",)
    clock.at = day(20)
    timed.scope_within(tenant, SCOPE, "domain:payments")  # the gateway's records now see the domain's
    assert reason(timed, ctx(tenant, 10), "e1") is DropReason.SCOPE_MISMATCH
    assert set(timed.recall(ctx(tenant, 10, as_of=20), "capture").ids) == {"e1", "e2"}
    assert timed.verify(receipt, then)
