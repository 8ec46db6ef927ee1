"""A derived record needs parents that still support something, on every write path.

``add()`` follows ``consolidate()``'s rule: no forgotten parent, and enough support
left as of the store's clock; support that runs out later (a parent superseded or
invalidated at a future time) invalidates the new record from then on, as the
cascade would have had the record been there.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from graphmem import (
    ForgetMode,
    ForgetRequest,
    Kind,
    LineageError,
    MemoryRecord,
    MemoryStore,
    ReadContext,
    Source,
    Trust,
)
from graphmem.model import DropReason
from tests.conftest import KNOWN, T0

DAY = timedelta(days=1)
NOW = T0 + 10 * DAY


def _episode(tenant: str, rid: str, day: float, scope: str = "user:alice") -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        tenant=tenant,
        kind=Kind.EPISODIC,
        scope=scope,
        content=f"Alice asked for email follow-up ({rid}).",
        event_time=T0 + day * DAY,
        outcome="verified-success",
    )


def _claim(tenant: str, rid: str, parents: tuple[str, ...], sources: tuple[Source, ...] = ()) -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        tenant=tenant,
        kind=Kind.SEMANTIC,
        scope="user:alice",
        content=f"Alice prefers email follow-up ({rid}).",
        valid_from=T0 + 2 * DAY,
        derived_from=parents,
        sources=sources,
    )


def _ctx(tenant: str, day: float = 10) -> ReadContext:
    return ReadContext(
        as_of=KNOWN, tenant=tenant, scopes=("user:alice",), now=T0 + day * DAY, kinds=(Kind.SEMANTIC,)
    )


@pytest.fixture
def clocked(store: MemoryStore) -> MemoryStore:
    """The shared backend under a store whose clock reads day 10."""
    return MemoryStore(store.backend, clock=lambda: NOW)


def _erase(s: MemoryStore, tenant: str) -> None:
    s.forget(ForgetRequest(tenant=tenant, target="e1", mode=ForgetMode.ERASE, reason="r", requested_by="u"))


def _revoke(s: MemoryStore, tenant: str) -> None:
    s.forget(ForgetRequest(tenant=tenant, target="e1", mode=ForgetMode.REVOKE, reason="r", requested_by="u"))


def _supersede(s: MemoryStore, tenant: str) -> None:
    s.supersede(tenant, "e1", _episode(tenant, "e1-v2", 1), reason="corrected")


def _invalidate(s: MemoryStore, tenant: str) -> None:
    s.add(_episode(tenant, "x", 1))
    s.invalidate(tenant, "e1", by="x", reason="wrong", at=T0 + DAY)


FATES: dict[str, tuple[Callable[[MemoryStore, str], None], str]] = {
    "erased": (_erase, "forgotten_record"),
    "revoked": (_revoke, "forgotten_record"),
    "superseded": (_supersede, "insufficient_support"),
    "invalidated": (_invalidate, "insufficient_support"),
}


@pytest.mark.parametrize("fate", sorted(FATES))
def test_add_refuses_a_record_whose_only_parent_no_longer_supports_anything(
    clocked: MemoryStore, tenant: str, fate: str
) -> None:
    change, code = FATES[fate]
    clocked.add(_episode(tenant, "e1", 0))
    change(clocked, tenant)
    with pytest.raises(LineageError) as added:
        clocked.add(_claim(tenant, "c1", ("e1",)))
    with pytest.raises(LineageError) as consolidated:
        clocked.consolidate(tenant, ["e1"], _claim(tenant, "c2", ()), rule="r")
    assert added.value.code == consolidated.value.code == code
    assert clocked.get(tenant, "c1") is None
    assert clocked.get(tenant, "c2") is None
    assert clocked.recall(_ctx(tenant), "email").ids == []


def test_a_released_working_parent_supports_nothing(clocked: MemoryStore, tenant: str) -> None:
    working = MemoryRecord(
        id="w1", tenant=tenant, kind=Kind.WORKING, scope="run:r1", content="Alice said email, twice."
    )
    clocked.add(working)
    clocked.release_run(tenant, "r1")
    with pytest.raises(LineageError) as err:
        clocked.add(_claim(tenant, "c1", ("w1",)))
    assert err.value.code == "forgotten_record"


def test_a_parent_in_the_same_batch_supports_its_child(clocked: MemoryStore, tenant: str) -> None:
    clocked.add_many([_episode(tenant, "e1", 0), _claim(tenant, "c1", ("e1",))])
    assert clocked.recall(_ctx(tenant), "email").ids == ["c1"]


def test_remaining_support_is_enough(clocked: MemoryStore, tenant: str) -> None:
    """A lost parent does not matter while a live parent or an active source still supports."""
    clocked.add_many([_episode(tenant, "e1", 0), _episode(tenant, "e2", 0)])
    _supersede(clocked, tenant)
    clocked.add(_claim(tenant, "c1", ("e1", "e2")))
    cited = Source(id="note-1", type="document", trust=Trust.TRUSTED)
    clocked.add(_claim(tenant, "c2", ("e1",), sources=(cited,)))
    assert sorted(clocked.recall(_ctx(tenant), "email").ids) == ["c1", "c2"]


def test_support_that_ends_later_invalidates_from_then_on(clocked: MemoryStore, tenant: str) -> None:
    """Parent superseded from day 20: the new claim and its in-batch child hold until day 20."""
    clocked.add(_episode(tenant, "e1", 0))
    clocked.supersede(tenant, "e1", _episode(tenant, "e1-v2", 20), reason="will be corrected")
    grandchild = _claim(tenant, "c2", ("c1",)).model_copy(update={"content": "Email it is (c2)."})
    clocked.add_many([_claim(tenant, "c1", ("e1",)), grandchild])
    assert sorted(clocked.recall(_ctx(tenant, 15), "email").ids) == ["c1", "c2"]
    later = clocked.recall(_ctx(tenant, 25), "email", explain=True)
    assert later.ids == []
    assert later.reason_for("c1") is DropReason.INVALIDATED
    assert later.reason_for("c2") is DropReason.INVALIDATED
    edges = {(e.src, e.type, e.dst, e.at) for e in clocked.trace(tenant, "c2").edges}
    assert ("c1", "INVALIDATED_BY", "e1", T0 + 20 * DAY) in edges
    assert ("c2", "INVALIDATED_BY", "c1", T0 + 20 * DAY) in edges
