"""Verdicts held between reads are served only while they hold.

A store keeps the verdicts a read derived (``GateCache``) and serves them to later reads
while its backend's probe reports the same state: on a store file, the revisions of the
scopes reached; on Neo4j, the tenant's count of write transactions, recorded as done by
each writer once its commit returned. Two stores over one file or one server, each with a
backend object of its own, stand for two processes: what one writes, the other's next
read sees, however warm its cache; a read at another valid or knowledge time gets the
verdicts of that time. On Neo4j, a write counted but not recorded done (being applied, or
its writer stopped) keeps reads from keeping anything until the next write finishes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import neo4j
import pytest

from graphmem import (
    ForgetMode,
    ForgetRequest,
    Kind,
    MemoryRecord,
    MemoryStore,
    ReadContext,
    Source,
)
from graphmem.backends.neo4j import Neo4jBackend
from graphmem.backends.neo4j_rows import lock_names
from graphmem.model import GateProbe
from graphmem.testing.neo4j_server import Neo4jTarget
from tests.conftest import KNOWN, T0

H = timedelta(hours=1)


def _fact(
    tenant: str,
    rid: str,
    content: str,
    scope: str = "case:a",
    valid_from: datetime = T0 - 24 * H,
    valid_to: datetime | None = None,
    recorded: datetime = T0 - 48 * H,
) -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        created_at=recorded,
        tenant=tenant,
        kind=Kind.SEMANTIC,
        scope=scope,
        content=content,
        valid_from=valid_from,
        valid_to=valid_to,
        sources=(Source(id=f"doc-{rid}"),),
    )


def _ctx(tenant: str, scope: str = "case:a", now: datetime = T0, as_of: datetime = KNOWN) -> ReadContext:
    return ReadContext(tenant=tenant, scopes=(scope,), now=now, as_of=as_of, kinds=(Kind.SEMANTIC,))


def _revoke(tenant: str, rid: str) -> ForgetRequest:
    return ForgetRequest(tenant=tenant, target=rid, mode=ForgetMode.REVOKE, reason="r", requested_by="u")


def _count_rows(store: MemoryStore) -> list[int]:
    """Counts each time the store's backend reads gate rows (a cache miss)."""
    misses: list[int] = []
    plain = store.backend.gate_rows

    def counted(ctx: ReadContext, probe: GateProbe) -> Any:
        misses.append(1)
        return plain(ctx, probe)

    store.backend.gate_rows = counted  # type: ignore[method-assign]
    return misses


@pytest.fixture
def pair(reopenable: Callable[[], MemoryStore]) -> Iterator[tuple[MemoryStore, MemoryStore]]:
    """Two stores over one file or server, each on a backend object of its own."""
    a, b = reopenable(), reopenable()
    assert a._gate_cache is not b._gate_cache
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def test_recalls_reuse_verdicts_until_a_write_elsewhere_and_then_see_it(
    pair: tuple[MemoryStore, MemoryStore], tenant: str
) -> None:
    a, b = pair
    b.add_many([_fact(tenant, f"f{i}", f"the gateway note {i}") for i in range(5)])
    misses = _count_rows(a)
    assert sorted(a.recall(_ctx(tenant), "gateway").ids) == [f"f{i}" for i in range(5)]
    for _ in range(3):
        assert len(a.recall(_ctx(tenant), "gateway").ids) == 5
    assert len(misses) == 1  # derived once, then served from the cache

    b.add(_fact(tenant, "f9", "the gateway added elsewhere"))
    assert "f9" in a.recall(_ctx(tenant), "gateway").ids
    b.forget(_revoke(tenant, "f0"))
    assert "f0" not in a.recall(_ctx(tenant), "gateway").ids
    b.scope_within(tenant, "case:a", "domain:payments")
    b.add(_fact(tenant, "d1", "the gateway of the whole domain", scope="domain:payments"))
    assert "d1" in a.recall(_ctx(tenant), "gateway").ids
    assert len(misses) == 4
    assert len(a.recall(_ctx(tenant), "gateway").ids) == 6
    assert len(misses) == 4


def test_held_verdicts_follow_valid_time_and_knowledge_time(
    reopenable: Callable[[], MemoryStore], tenant: str
) -> None:
    """No write between the reads: the verdicts change with the read's own times alone."""
    with reopenable() as writer:
        writer.add(_fact(tenant, "old", "the gateway timeout is 30 s", valid_to=T0 + H, recorded=T0))
        writer.add(_fact(tenant, "soon", "the gateway retries twice", valid_from=T0 + 2 * H, recorded=T0))
        writer.add(_fact(tenant, "late", "the gateway logs to disk", recorded=T0 + 10 * H))
    with reopenable() as reader:
        misses = _count_rows(reader)

        def ids(now: datetime, as_of: datetime = KNOWN) -> list[str]:
            return sorted(reader.recall(_ctx(tenant, now=now, as_of=as_of), "gateway").ids)

        assert ids(T0) == ["late", "old"]
        assert ids(T0 + 30 * timedelta(minutes=1)) == ["late", "old"]
        assert ids(T0 + H) == ["late"]  # valid until T0 + 1 h, half-open
        assert ids(T0 + 3 * H) == ["late", "soon"]
        assert ids(T0 + 3 * H, as_of=T0 + 5 * H) == ["soon"]  # "late" was recorded at T0 + 10 h
        assert ids(T0 + 3 * H, as_of=T0 + 10 * H) == ["late", "soon"]
        assert ids(T0 + 3 * H, as_of=T0) == ["soon"]
        assert ids(T0) == ["late", "old"]
        assert len(misses) < 8  # the second read at T0 and at T0 + 30 min were served


def test_a_read_after_a_write_returned_sees_it_whatever_other_threads_hold(
    pair: tuple[MemoryStore, MemoryStore], tenant: str
) -> None:
    """A writer adds facts one by one and revokes every third one while reader threads of
    another store recall in a loop: a recall that began after a write returned sees it (an
    added fact is there unless its revoke has begun; a revoked one is gone)."""
    a, b = pair
    b.add(_fact(tenant, "base", "the gateway base note"))
    written: list[str] = []
    revoking: list[str] = []  # revokes begun
    revoked: list[str] = []  # revokes returned
    stop = threading.Event()
    failures: list[str] = []

    def writer() -> None:
        try:
            for i in range(30):
                b.add(_fact(tenant, f"w{i}", f"the gateway note {i}"))
                written.append(f"w{i}")
                if i % 3 == 2:
                    revoking.append(f"w{i - 1}")
                    b.forget(_revoke(tenant, f"w{i - 1}"))
                    revoked.append(f"w{i - 1}")
        finally:
            stop.set()

    def reader() -> None:
        while not stop.is_set():
            known, gone = set(written), set(revoked)
            ctx = _ctx(tenant).model_copy(update={"limit": 100})
            got = set(a.recall(ctx, "gateway").ids)
            missing = known - got - set(revoking)  # a revoke may have begun meanwhile
            back = got & gone
            if missing or back:
                failures.append(f"missing {sorted(missing)}, revoked yet returned {sorted(back)}")

    threads = [threading.Thread(target=reader) for _ in range(3)] + [threading.Thread(target=writer)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not failures, failures[:5]
    final = set(a.recall(_ctx(tenant).model_copy(update={"limit": 100}), "gateway").ids)
    assert final == {"base", *written} - set(revoked)


@pytest.mark.neo4j
def test_neo4j_keeps_nothing_while_a_counted_write_is_not_recorded_done(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    """A write transaction counted by its tenant's lock whose writer never recorded it done
    (as if it stopped between its commit and that step): readers derive every read afresh
    until the next write of the tenant finishes."""
    uri = neo4j_target.uri or ""
    with (
        MemoryStore(Neo4jBackend(neo4j_driver, uri=uri)) as a,
        MemoryStore(Neo4jBackend(neo4j_driver, uri=uri)) as b,
    ):
        b.add_many([_fact(tenant, f"f{i}", f"the gateway note {i}") for i in range(3)])
        misses = _count_rows(a)
        a.recall(_ctx(tenant), "gateway")
        a.recall(_ctx(tenant), "gateway")
        assert len(misses) == 1
        with neo4j_driver.session() as session:
            session.run(
                "MATCH (l:GraphmemSchema {name: $name}) SET l.writes = l.writes + 1",
                name=lock_names([tenant])[0],
            )
        probe = a.backend.gate_probe(_ctx(tenant))
        assert not probe.state.settled  # type: ignore[attr-defined]
        for _ in range(3):
            assert len(a.recall(_ctx(tenant), "gateway").ids) == 3
        assert len(misses) == 4
        b.add(_fact(tenant, "f9", "the gateway after the stop"))
        assert len(a.recall(_ctx(tenant), "gateway").ids) == 4
        assert len(a.recall(_ctx(tenant), "gateway").ids) == 4
        assert len(misses) == 5
