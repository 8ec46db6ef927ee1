"""Supersede, invalidate, consolidate, trace and precedents (SPEC §5) on every backend."""

from __future__ import annotations

from datetime import timedelta

import pytest

from graphmem import (
    ContractViolation,
    DropReason,
    Kind,
    LineageError,
    MemoryRecord,
    MemoryStore,
    NotFound,
    ReadContext,
    Source,
    Trust,
)
from tests.conftest import KNOWN, T0

DAY = timedelta(days=1)


def _episode(tenant: str, rid: str, text: str, day: int, outcome: str = "verified-success") -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        tenant=tenant,
        kind=Kind.EPISODIC,
        scope="user:alice",
        content=text,
        event_time=T0 + day * DAY,
        outcome=outcome,
        sources=(Source(id=f"msg-{rid}", type="message", trust=Trust.TRUSTED, quote=f"quote of {rid}"),),
    )


def _preference(tenant: str, rid: str, text: str, day: int) -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        tenant=tenant,
        kind=Kind.SEMANTIC,
        scope="user:alice",
        content=text,
        valid_from=T0 + day * DAY,
        derived_from=(),
        sources=(Source(id=f"rule-{rid}", type="human_approval", trust=Trust.TRUSTED),),
    )


def _ctx(tenant: str, day: float, kinds: tuple[Kind, ...] = (Kind.SEMANTIC,)) -> ReadContext:
    return ReadContext(as_of=KNOWN, tenant=tenant, scopes=("user:alice",), now=T0 + day * DAY, kinds=kinds)


@pytest.fixture
def preference(store: MemoryStore, tenant: str) -> MemoryRecord:
    """Three episodes consolidated into an email preference on day 3."""
    store.add_many(
        [
            _episode(tenant, "ep-1", "Alice asked us to follow up by email.", 1),
            _episode(tenant, "ep-2", "Alice again asked for follow-up by email.", 2),
            _episode(tenant, "ep-3", "Alice corrected SMS to email for follow-ups.", 3),
        ]
    )
    into = MemoryRecord(
        id="pref-email",
        tenant=tenant,
        kind=Kind.SEMANTIC,
        scope="user:alice",
        content="Alice prefers follow-up by email.",
        valid_from=T0 + 3 * DAY,
    )
    return store.consolidate(tenant, ["ep-1", "ep-2", "ep-3"], into, rule="three consistent requests")


def test_trace_names_the_episodes_and_their_messages(
    store: MemoryStore, tenant: str, preference: MemoryRecord
) -> None:
    lineage = store.trace(tenant, preference.id)
    derived = {e.dst for e in lineage.edges if e.src == preference.id and e.type == "DERIVED_FROM"}
    assert derived == {"ep-1", "ep-2", "ep-3"}
    cites = {(e.src, e.dst) for e in lineage.edges if e.type == "CITES"}
    assert cites == {("ep-1", "msg-ep-1"), ("ep-2", "msg-ep-2"), ("ep-3", "msg-ep-3")}
    assert lineage.node("msg-ep-1").type == "source"
    tree = lineage.render_tree()
    assert tree.splitlines()[0].startswith("pref-email (semantic)")
    assert "DERIVED_FROM → ep-3 (episodic)" in tree
    assert "CITES → msg-ep-2 (source)" in tree
    mermaid = lineage.to_mermaid()
    assert mermaid.startswith("flowchart TD")
    assert mermaid.count("-->|DERIVED_FROM|") == 3
    graph = lineage.to_networkx()
    assert set(graph.successors("pref-email")) == {"ep-1", "ep-2", "ep-3"}


def test_superseded_preference_replays_as_of_earlier_time(
    store: MemoryStore, tenant: str, preference: MemoryRecord
) -> None:
    phone = MemoryRecord(
        id="pref-phone",
        tenant=tenant,
        kind=Kind.SEMANTIC,
        scope="user:alice",
        content="Alice prefers follow-up by phone.",
        valid_from=T0 + 40 * DAY,
        sources=(Source(id="msg-switch", type="message", trust=Trust.TRUSTED),),
    )
    store.supersede(tenant, preference.id, phone, reason="Alice switched to phone")
    now = store.recall(_ctx(tenant, 45), "follow-up", explain=True)
    assert now.ids == ["pref-phone"]
    assert now.reason_for("pref-email") is DropReason.SUPERSEDED
    last_month = store.recall(_ctx(tenant, 15), "follow-up", explain=True)
    assert last_month.ids == ["pref-email"]
    assert last_month.reason_for("pref-phone") is DropReason.NOT_YET_VALID
    lineage = store.trace(tenant, "pref-email")
    assert any(
        e.type == "SUPERSEDES" and e.src == "pref-phone" and e.dst == "pref-email" for e in lineage.edges
    )
    actions = [e.action for e in store.audit(tenant, record_id="pref-email")]
    assert actions.index("superseded") < actions.index("recalled")


def test_invalidation_cascades_only_when_support_is_gone(
    store: MemoryStore, tenant: str, preference: MemoryRecord
) -> None:
    store.invalidate(tenant, "ep-1", by="msg-ep-2", reason="misheard", at=T0 + 10 * DAY)
    assert store.recall(_ctx(tenant, 11), "email").ids == ["pref-email"]  # still two supports
    store.invalidate(tenant, "ep-2", by="msg-ep-3", reason="duplicate", at=T0 + 12 * DAY)
    store.invalidate(tenant, "ep-3", by="msg-ep-1", reason="retracted", at=T0 + 14 * DAY)
    late = store.recall(_ctx(tenant, 15), "email", explain=True)
    assert late.ids == []
    assert late.reason_for("pref-email") is DropReason.INVALIDATED
    # As of day 13 the preference still had ep-3's support: replay shows it.
    assert store.recall(_ctx(tenant, 13), "email").ids == ["pref-email"]
    lineage = store.trace(tenant, "pref-email")
    cause = [e for e in lineage.edges if e.src == "pref-email" and e.type == "INVALIDATED_BY"]
    assert [(e.dst, e.at) for e in cause] == [("ep-3", T0 + 14 * DAY)]


def test_supersession_cascades_to_derived_records(
    store: MemoryStore, tenant: str, preference: MemoryRecord
) -> None:
    summary = MemoryRecord(
        id="summary",
        tenant=tenant,
        kind=Kind.SEMANTIC,
        scope="user:alice",
        content="Contact Alice by email only.",
        valid_from=T0 + 4 * DAY,
    )
    store.consolidate(tenant, ["pref-email"], summary, rule="restatement")
    phone = _preference(tenant, "pref-phone", "Alice prefers phone.", 40)
    store.supersede(tenant, "pref-email", phone, reason="switched")
    assert store.explain(_ctx(tenant, 41), "summary").reason is DropReason.INVALIDATED
    assert store.explain(_ctx(tenant, 39), "summary").reason is None


def test_procedure_promotion_needs_verified_episodes(store: MemoryStore, tenant: str) -> None:
    store.add_many(
        [
            _episode(tenant, "ok-1", "Restarted the worker and it recovered.", 1),
            _episode(tenant, "maybe", "Restarted the worker; result not checked.", 2, outcome="unknown"),
        ]
    )
    procedure = MemoryRecord(
        id="proc-restart",
        tenant=tenant,
        kind=Kind.PROCEDURAL,
        scope="user:alice",
        content="Restart the worker, then check it recovered.",
        procedure_name="restart-worker",
        procedure_version="1",
        preconditions=("shell",),
        sources=(Source(id="runbook"),),
    )
    with pytest.raises(LineageError) as err:
        store.consolidate(tenant, ["ok-1", "maybe"], procedure, rule="promote")
    assert err.value.code == "unverified_episode"
    assert "'maybe'" in str(err.value)
    assert store.get(tenant, "proc-restart") is None
    made = store.consolidate(tenant, ["ok-1"], procedure, rule="promote")
    assert made.derived_from == ("ok-1",)
    assert made.outcome == "verified-success"


def test_consolidation_minimum_support(store: MemoryStore, tenant: str) -> None:
    store.add(_episode(tenant, "only", "One observation.", 1))
    claim = _preference(tenant, "claim", "A general truth.", 2)
    with pytest.raises(LineageError) as err:
        store.consolidate(tenant, ["only"], claim, rule="r", min_support=2)
    assert err.value.code == "insufficient_support"
    with pytest.raises(NotFound):
        store.consolidate(tenant, ["only", "ghost"], claim, rule="r")
    with pytest.raises(ContractViolation):
        store.consolidate(tenant, ["only"], _episode(tenant, "e2", "x", 3), rule="r")


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"id": "p"}, "self_supersession"),
        ({"tenant": "other-tenant"}, "cross_tenant"),
        ({"kind": Kind.EPISODIC, "event_time": T0, "outcome": "unknown"}, "replacement_mismatch"),
        ({"scope": "user:bob"}, "replacement_mismatch"),
    ],
)
def test_supersede_invariants_write_nothing(
    store: MemoryStore, tenant: str, change: dict[str, object], code: str
) -> None:
    store.add(_preference(tenant, "p", "Original.", 1))
    replacement = MemoryRecord.model_validate(
        {**_preference(tenant, "p2", "Replacement.", 2).model_dump(), **change}
    )
    with pytest.raises(LineageError) as err:
        store.supersede(tenant, "p", replacement, reason="x")
    assert err.value.code == code
    assert store.get(tenant, "p2") is None
    assert store.explain(_ctx(tenant, 3), "p").reason is None
    with pytest.raises(NotFound):
        store.supersede(tenant, "missing", _preference(tenant, "p3", "x", 2), reason="x")
    with pytest.raises(LineageError):
        store.invalidate(tenant, "p", by="p", reason="x")
    with pytest.raises(NotFound):
        store.invalidate(tenant, "p", by="nothing-by-that-name", reason="x")


def test_a_superseded_record_is_not_superseded_twice(store: MemoryStore, tenant: str) -> None:
    """Versions form one line: replacing a replaced record would leave two current versions."""
    store.add(_preference(tenant, "p", "Email.", 1))
    store.supersede(tenant, "p", _preference(tenant, "p2", "SMS.", 2), reason="changed")
    with pytest.raises(LineageError) as err:
        store.supersede(tenant, "p", _preference(tenant, "p3", "Phone.", 3), reason="changed again")
    assert err.value.code == "already_superseded"
    assert "'p2'" in err.value.message
    assert store.get(tenant, "p3") is None
    store.supersede(tenant, "p2", _preference(tenant, "p3", "Phone.", 3), reason="changed again")
    assert store.recall(_ctx(tenant, 4), "").ids == ["p3"]


def test_precedents_follow_related_scopes(store: MemoryStore, tenant: str) -> None:
    for merchant, gateway in [("m", "gw-2"), ("b", "gw-2"), ("c", "gw-1"), ("d", "gw-9")]:
        store.relate_scopes(tenant, f"merchant:{merchant}", "USES", f"system:{gateway}")
    store.relate_scopes(tenant, "system:gw-2", "SUCCEEDS", "system:gw-1")
    episodes = [
        ("inc-m", "merchant:m", "Capture timeouts on gateway-v2 for merchant M."),
        ("inc-b", "merchant:b", "Capture timeouts on gateway-v2 for merchant B; fixed by readback."),
        ("inc-c", "merchant:c", "Capture timeouts on gateway-v1 for merchant C."),
        ("inc-d", "merchant:d", "Capture timeouts on gateway-v9 for merchant D."),
    ]
    for rid, scope, text in episodes:
        store.add(
            MemoryRecord(
                id=rid,
                tenant=tenant,
                kind=Kind.EPISODIC,
                scope=scope,
                content=text,
                event_time=T0,
                outcome="unknown",
            )
        )
    other = f"{tenant}-x"
    store.relate_scopes(other, "merchant:m", "USES", "system:gw-2")
    store.relate_scopes(other, "merchant:z", "USES", "system:gw-2")
    store.add(
        MemoryRecord(
            id="inc-z",
            tenant=other,
            kind=Kind.EPISODIC,
            scope="merchant:z",
            content="timeouts",
            event_time=T0,
            outcome="unknown",
        )
    )
    ctx = ReadContext(as_of=KNOWN, tenant=tenant, scopes=("merchant:m",), now=T0 + DAY)
    found = store.precedents(ctx, "merchant:m", via=["USES", "SUCCEEDS"], hops=3, query="capture timeouts")
    assert set(found.ids) == {"inc-m", "inc-b", "inc-c"}
    near = store.precedents(ctx, "merchant:m", via=["USES"], hops=2, query="capture timeouts")
    assert set(near.ids) == {"inc-m", "inc-b"}
    with pytest.raises(ContractViolation):
        store.precedents(ctx, "merchant:m", via=["uses; DROP"], hops=2)


def test_all_records_come_back_in_id_order_on_every_backend(store: MemoryStore, tenant: str) -> None:
    store.add_many([_episode(tenant, rid, f"episode {rid}", 1) for rid in ("ep-c", "ep-a", "ep-b")])
    store.add(_episode(f"{tenant}-other", "ep-0", "another tenant's episode", 1))
    assert [r.id for r in store.backend.all_records(tenant)] == ["ep-a", "ep-b", "ep-c"]
