"""Scope relations in knowledge time (SPEC §2, §5): ``precedents`` follows a RELATED edge
only from when the store recorded it, walks the relations and recalls in one read, and
its receipt verifies later with ``precedents_context``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from graphmem import ForgetMode, ForgetRequest, Kind, MemoryRecord, MemoryStore, ReadContext, VerifyResult
from graphmem.backends.base import RelateScopes
from graphmem.backends.sqlite_engine import DB_NAME, FORMAT
from tests.test_knowledge_time import Clock, day

ANCHOR = "merchant:m"
VIA = ["USES"]


def episode(tenant: str, rid: str, scope: str, recorded: float) -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        tenant=tenant,
        kind=Kind.EPISODIC,
        scope=scope,
        content=f"capture timeouts on the gateway ({rid})",
        created_at=day(recorded),
        event_time=day(0),
        outcome="verified-success",
    )


def at(tenant: str, now: float, as_of: float | None = None) -> ReadContext:
    return ReadContext(
        tenant=tenant, scopes=(ANCHOR,), now=day(now), as_of=None if as_of is None else day(as_of)
    )


def found(store: MemoryStore, ctx: ReadContext) -> set[str]:
    return set(store.precedents(ctx, ANCHOR, via=VIA, hops=2, query="capture timeouts").ids)


@pytest.fixture
def clock() -> Clock:
    return Clock(day(1))


@pytest.fixture
def timed(store: MemoryStore, clock: Clock) -> MemoryStore:
    """The shared backend under a store whose clock the test sets."""
    return MemoryStore(store.backend, clock=clock)


@pytest.fixture
def related(timed: MemoryStore, clock: Clock, tenant: str) -> MemoryStore:
    """Merchant m uses the gateway from day 1; merchant b is related to it on day 20. Both
    merchants' episodes were recorded on day 1."""
    timed.add_many([episode(tenant, "ep-m", ANCHOR, 1), episode(tenant, "ep-b", "merchant:b", 1)])
    timed.relate_scopes(tenant, ANCHOR, "USES", "system:gw")
    clock.at = day(20)
    timed.relate_scopes(tenant, "merchant:b", "USES", "system:gw")
    return timed


def test_a_relation_counts_from_when_it_was_recorded(related: MemoryStore, tenant: str) -> None:
    assert found(related, at(tenant, 10)) == {"ep-m"}  # on day 10 nobody knew b was related
    assert found(related, at(tenant, 10, as_of=19)) == {"ep-m"}
    assert found(related, at(tenant, 20)) == {"ep-m", "ep-b"}
    # What do we now know about day 10? now = day 10, as_of = day 20.
    assert found(related, at(tenant, 10, as_of=20)) == {"ep-m", "ep-b"}
    scoped = related.precedents_context(at(tenant, 10), ANCHOR, VIA)
    assert (scoped.scopes, scoped.kinds) == ((ANCHOR, "system:gw"), (Kind.EPISODIC,))
    assert related.precedents_context(at(tenant, 20), ANCHOR, VIA).scopes == (
        "merchant:b",
        ANCHOR,
        "system:gw",
    )


def test_relating_again_keeps_the_first_recorded_time(
    related: MemoryStore, clock: Clock, tenant: str
) -> None:
    clock.at = day(30)
    related.relate_scopes(tenant, ANCHOR, "USES", "system:gw")
    assert found(related, at(tenant, 10)) == {"ep-m"}
    assert recorded(related.export(tenant)) == {(ANCHOR, day(1)), ("merchant:b", day(20))}


def recorded(lines: Iterable[str]) -> set[tuple[str, datetime | None]]:
    """(a, recorded) of every exported relation."""
    ops = [json.loads(line) for line in lines]
    return {
        (op["a"], op["recorded"] and datetime.fromisoformat(op["recorded"]))
        for op in ops
        if op["op"] == "relate_scopes"
    }


def test_a_precedents_receipt_verifies_after_later_relations(
    timed: MemoryStore, clock: Clock, tenant: str
) -> None:
    timed.add_many([episode(tenant, "ep-m", ANCHOR, 1), episode(tenant, "ep-b", "merchant:b", 1)])
    timed.relate_scopes(tenant, ANCHOR, "USES", "system:gw")
    clock.at = day(10)
    then = at(tenant, 10)
    receipt = timed.precedents(then, ANCHOR, via=VIA, query="capture timeouts").receipt
    assert receipt.selected_ids == ("ep-m",)
    clock.at = day(20)
    timed.relate_scopes(tenant, "merchant:b", "USES", "system:gw")
    timed.relate_scopes(tenant, ANCHOR, "USES", "system:gw-2")
    timed.add(episode(tenant, "ep-gw2", "system:gw-2", 1))
    assert found(timed, at(tenant, 10, as_of=20)) == {"ep-m", "ep-b", "ep-gw2"}
    # The receipt was made for the context precedents read with, rebuilt from the caller's.
    scoped = timed.precedents_context(then, ANCHOR, VIA)
    assert timed.verify(receipt, scoped) == VerifyResult(status="verified")
    mine = timed.verify(receipt, then)
    assert mine.status == "mismatch"
    assert any(d.startswith("context") for d in mine.differences)
    timed.forget(
        ForgetRequest(tenant=tenant, target="ep-m", mode=ForgetMode.ERASE, reason="gdpr", requested_by="u")
    )
    later = timed.verify(receipt, timed.precedents_context(then, ANCHOR, VIA))
    assert (later.status, later.forgotten) == ("changed_since", ("ep-m",))


def test_precedents_walks_and_recalls_in_one_read(
    related: MemoryStore, tenant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = related.backend
    reading = backend.reading
    depth, blocks = 0, 0
    seen: list[tuple[str, int | None]] = []

    @contextmanager
    def counted() -> Iterator[object]:
        nonlocal depth, blocks
        blocks += depth == 0
        depth += 1
        try:
            with reading() as inner:
                yield inner
        finally:
            depth -= 1

    def spy(name: str) -> Any:
        original = getattr(backend, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            seen.append((name, blocks if depth else None))
            return original(*args, **kwargs)

        return call

    monkeypatch.setattr(backend, "reading", counted)
    for name in ("related_scopes", "gate_probe"):
        monkeypatch.setattr(backend, name, spy(name))
    assert found(related, at(tenant, 20)) == {"ep-m", "ep-b"}
    assert seen == [("related_scopes", 1), ("gate_probe", 1)]
    events = [e for e in related.audit(tenant) if e.action == "recalled"]
    assert [set(e.record_ids) for e in events] == [{"ep-m", "ep-b"}]


def test_an_export_keeps_when_relations_were_recorded(related: MemoryStore, tenant: str) -> None:
    copy = f"{tenant}-copy"
    lines = [line.replace(json.dumps(tenant), json.dumps(copy)) for line in related.export(tenant)]
    assert recorded(lines) == {(ANCHOR, day(1)), ("merchant:b", day(20))}
    for target in (related, MemoryStore.embedded()):  # this backend, and across backends
        target.import_(lines)
        assert found(target, at(copy, 10)) == {"ep-m"}
        assert found(target, at(copy, 20)) == {"ep-m", "ep-b"}
        assert recorded(target.export(copy)) == recorded(lines)


def test_a_relation_without_a_recorded_time_is_known_at_every_time(related: MemoryStore, tenant: str) -> None:
    """As written before relations had one, or imported from such a store."""
    related.backend.apply([RelateScopes(tenant=tenant, a="merchant:c", rel_type="USES", b="system:gw")])
    related.add(episode(tenant, "ep-c", "merchant:c", 1))
    assert found(related, at(tenant, 10)) == {"ep-m", "ep-c"}


def test_a_format_3_store_is_migrated_in_place(tmp_path: Path, tenant: str) -> None:
    path = tmp_path / "v3"
    clock = Clock(day(1))
    with MemoryStore.embedded(path, clock=clock) as store:
        store.add_many([episode(tenant, "ep-m", ANCHOR, 1), episode(tenant, "ep-b", "merchant:b", 1)])
        store.relate_scopes(tenant, ANCHOR, "USES", "system:gw")
        clock.at = day(20)
        store.relate_scopes(tenant, "merchant:b", "USES", "system:gw")
    conn = sqlite3.connect(path / DB_NAME)
    conn.execute("ALTER TABLE related DROP COLUMN recorded")  # format 3 had no relation times
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()
    with MemoryStore.embedded(path, clock=clock) as store:
        assert store.backend.check() == []  # type: ignore[attr-defined]
        # Relations of a format 3 store are known at every time; new ones count from their record.
        assert found(store, at(tenant, 10)) == {"ep-m", "ep-b"}
        clock.at = day(30)
        store.add(episode(tenant, "ep-c", "merchant:c", 1))
        store.relate_scopes(tenant, "merchant:c", "USES", "system:gw")
        assert found(store, at(tenant, 10)) == {"ep-m", "ep-b"}
        assert found(store, at(tenant, 30)) == {"ep-m", "ep-b", "ep-c"}
    conn = sqlite3.connect(path / DB_NAME)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == FORMAT == 4
    conn.close()
