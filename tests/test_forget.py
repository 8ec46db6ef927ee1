"""Forgetting (SPEC §5): release, revoke, erase; cascades; erase completeness; export/import."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from graphmem import (
    ContractViolation,
    DropReason,
    ForgetMode,
    ForgetRequest,
    Kind,
    MemoryRecord,
    MemoryStore,
    NotFound,
    ReadContext,
    Source,
    Status,
    Trust,
)
from tests.conftest import T0
from tests.erasure import places_holding

DAY = timedelta(days=1)


def _episode(
    tenant: str, rid: str, text: str, sources: tuple[Source, ...], scope: str = "user:alice"
) -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        tenant=tenant,
        kind=Kind.EPISODIC,
        scope=scope,
        content=text,
        event_time=T0 + DAY,
        outcome="verified-success",
        sources=sources,
        tags=(f"tag-{rid}",),
        embedding=(0.1, 0.2, 0.3),
    )


def _msg(sid: str, quote: str) -> Source:
    return Source(id=sid, type="message", trust=Trust.TRUSTED, quote=quote)


def _ctx(tenant: str, now_days: float = 30, **kw: object) -> ReadContext:
    return ReadContext.model_validate(
        {"tenant": tenant, "scopes": ["user:alice"], "now": T0 + now_days * DAY, **kw}
    )


def _claim(tenant: str, rid: str, parents: tuple[str, ...], text: str) -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        tenant=tenant,
        kind=Kind.SEMANTIC,
        scope="user:alice",
        content=text,
        valid_from=T0 + 2 * DAY,
        derived_from=parents,
    )


@pytest.fixture
def lineage(store: MemoryStore, tenant: str) -> MemoryStore:
    """ep-a cites m1; ep-b cites m1 and m2; claim derives from ep-a and ep-b; digest derives from claim."""
    store.add_many(
        [
            _episode(
                tenant,
                "ep-a",
                "Alice said her new address is 12 Elm Street.",
                (_msg("m1", "I moved to 12 Elm Street"),),
            ),
            _episode(
                tenant,
                "ep-b",
                "Alice confirmed the Elm Street address by phone.",
                (_msg("m1", "I moved to 12 Elm Street"), _msg("m2", "yes, Elm Street")),
            ),
            _claim(tenant, "claim", ("ep-a", "ep-b"), "Alice lives on Elm Street."),
            _claim(tenant, "digest", ("claim",), "Ship Alice's orders to Elm Street."),
        ]
    )
    return store


def test_revoke_record_cascades_only_without_support(lineage: MemoryStore, tenant: str) -> None:
    report = lineage.forget(
        ForgetRequest(
            tenant=tenant, target="ep-a", mode=ForgetMode.REVOKE, reason="wrong", requested_by="alice"
        )
    )
    assert report.touched == ["ep-a"]
    assert lineage.explain(_ctx(tenant), "claim").reason is None  # ep-b still supports it
    report = lineage.forget(
        ForgetRequest(
            tenant=tenant, target="ep-b", mode=ForgetMode.REVOKE, reason="wrong", requested_by="alice"
        )
    )
    assert {(e.record_id, e.action) for e in report.entries} == {
        ("ep-b", "revoked"),
        ("claim", "revoked"),
        ("digest", "revoked"),
    }
    assert dict((e.record_id, e.reason) for e in report.entries)["digest"] == "lost support: claim"
    # Forgetting holds for every `now`, historical replays included.
    for day in (3, 30, 300):
        assert lineage.explain(_ctx(tenant, day), "claim").reason is DropReason.REVOKED
    assert lineage.get(tenant, "claim").content == "Alice lives on Elm Street."  # kept for audit
    assert lineage.audit(tenant, record_id="digest")[-1].action == "forgotten"


def test_forget_source_erases_what_only_it_supports(lineage: MemoryStore, tenant: str) -> None:
    report = lineage.forget(
        ForgetRequest(tenant=tenant, target="m1", mode=ForgetMode.ERASE, reason="GDPR", requested_by="alice")
    )
    assert report.target_type == "source"
    actions = {e.record_id: e.action for e in report.entries}
    assert actions == {"ep-a": "erased", "ep-b": "kept"}
    ep_a = lineage.get(tenant, "ep-a")
    assert ep_a.status is Status.ERASED
    assert ep_a.content == ""
    assert ep_a.embedding is None
    assert ep_a.tombstone is not None
    assert ep_a.tombstone.requested_by == "alice"
    ep_b = lineage.get(tenant, "ep-b")
    assert [(s.id, s.status, s.quote) for s in ep_b.sources] == [
        ("m1", "erased", None),
        ("m2", "active", "yes, Elm Street"),
    ]
    assert lineage.explain(_ctx(tenant), "claim").reason is None
    trace = lineage.trace(tenant, "claim")
    assert trace.node("ep-a").status == "erased"
    assert places_holding(lineage, tenant, "I moved to 12 Elm Street") == []
    assert places_holding(lineage, tenant, "Alice said her new address") == []


def test_erase_scope_removes_everything_about_a_user(lineage: MemoryStore, tenant: str) -> None:
    lineage.add(
        _episode(tenant, "ep-bob", "Bob likes Elm trees.", (_msg("m9", "elm trees"),), scope="user:bob")
    )
    report = lineage.forget(
        ForgetRequest(
            tenant=tenant,
            target="user:alice",
            mode=ForgetMode.ERASE,
            reason="forget me",
            requested_by="alice",
        )
    )
    assert sorted(report.touched) == ["claim", "digest", "ep-a", "ep-b"]
    for text in ("Elm Street", "12 Elm", "tag-ep-a", "yes, Elm Street"):
        assert places_holding(lineage, tenant, text) == [], text
    assert lineage.get(tenant, "ep-bob").content == "Bob likes Elm trees."
    events = lineage.audit(tenant)
    assert events[-1].action == "forgotten"
    assert events[-1].details["mode"] == "erase"


def test_release_run_and_final_trace(store: MemoryStore, tenant: str) -> None:
    store.scope_within(tenant, "run:r1", "user:alice")
    store.add_many(
        [
            MemoryRecord(
                id=f"w{i}", tenant=tenant, kind=Kind.WORKING, scope="run:r1", content=f"step {i} of the task"
            )
            for i in range(3)
        ]
    )
    ctx = ReadContext(tenant=tenant, scopes=("user:alice",), run_id="r1", now=T0 + DAY, kinds=(Kind.WORKING,))
    assert len(store.recall(ctx, "task").ids) == 3
    final = _episode(tenant, "run-r1-final", "Task finished: steps 0-2 done.", ())
    report = store.release_run(tenant, "r1", requested_by="agent", final_episode=final)
    assert sorted(report.touched) == ["w0", "w1", "w2"]
    assert store.recall(ctx, "task").ids == []
    assert store.explain(ctx, "w0").reason is DropReason.RELEASED
    assert store.get(tenant, "run-r1-final") is not None
    with pytest.raises(ContractViolation):
        store.forget(
            ForgetRequest(
                tenant=tenant, target="run-r1-final", mode=ForgetMode.RELEASE, reason="x", requested_by="a"
            )
        )


def test_forget_errors(store: MemoryStore, tenant: str) -> None:
    with pytest.raises(NotFound):
        store.forget(
            ForgetRequest(
                tenant=tenant, target="nothing", mode=ForgetMode.REVOKE, reason="x", requested_by="a"
            )
        )
    with pytest.raises(ContractViolation) as err:
        ForgetRequest(tenant="", target="x", mode=ForgetMode.REVOKE, reason="x", requested_by="a")
    assert err.value.code == "missing_tenant"


def test_export_import_round_trips(lineage: MemoryStore, tenant: str) -> None:
    lineage.scope_within(tenant, "user:alice", "tenant:acme")
    lineage.relate_scopes(tenant, "user:alice", "USES", "system:crm")
    lineage.supersede(tenant, "digest", _claim(tenant, "digest-2", ("claim",), "Ship to Elm St."), reason="r")
    lineage.invalidate(tenant, "ep-a", by="m2", reason="typo", at=T0 + 5 * DAY)
    lineage.forget(
        ForgetRequest(tenant=tenant, target="m2", mode=ForgetMode.ERASE, reason="x", requested_by="a")
    )
    lines = list(lineage.export(tenant))
    copy = MemoryStore.embedded()
    assert copy.import_(lines) == len(lines)
    assert list(copy.export(tenant)) == lines
    assert copy.trace(tenant, "digest") == lineage.trace(tenant, "digest")
    ctx = _ctx(tenant, 10)
    assert copy.recall(ctx, "Elm", explain=True) == lineage.recall(ctx, "Elm", explain=True)
    with pytest.raises(Exception, match="duplicate_id"):
        copy.import_(lines)


@pytest.mark.parametrize("seed", range(6))
def test_randomised_erase_leaves_no_trace(store: MemoryStore, tenant: str, seed: int) -> None:
    """Random writes, lineage and forgets; every erased text is then findable nowhere."""
    rng = random.Random(seed)
    texts: dict[str, str] = {}
    ids: list[str] = []
    for i in range(12):
        rid = f"r{i}"
        text = f"secret-{seed}-{i}-{rng.getrandbits(40):x}"
        texts[rid] = text
        parents = tuple(rng.sample(ids, k=min(len(ids), rng.randint(0, 2))))
        if parents:
            record = _claim(tenant, rid, parents, f"claim {text}")
        else:
            record = _episode(tenant, rid, f"episode {text}", (_msg(f"s{i}", f"quote {text}"),))
        store.add(record)
        ids.append(rid)
    erased: set[str] = set()
    for _ in range(4):
        target = rng.choice(ids)
        mode = rng.choice([ForgetMode.ERASE, ForgetMode.REVOKE])
        report = store.forget(
            ForgetRequest(
                tenant=tenant, target=target, target_type="record", mode=mode, reason="r", requested_by="u"
            )
        )
        if mode is ForgetMode.ERASE:
            erased.update(e.record_id for e in report.entries if e.action == "erased")
    for rid in erased:
        assert places_holding(store, tenant, texts[rid]) == [], rid
    for rid in set(ids) - erased:
        record = store.get(tenant, rid)
        assert record is not None
        assert record.status is not Status.ERASED
        assert texts[rid] in record.content


@pytest.mark.neo4j
def test_export_from_embedded_imports_into_neo4j_exactly(tenant: str, neo4j_driver: object) -> None:
    from graphmem.backends.neo4j import Neo4jBackend

    source = MemoryStore.embedded()
    source.add_many(
        [
            _episode(tenant, "ep-a", "Alice said hello.", (_msg("m1", "hello"),)),
            _claim(tenant, "claim", ("ep-a",), "Alice greets people."),
        ]
    )
    source.scope_within(tenant, "user:alice", "tenant:acme")
    source.forget(
        ForgetRequest(tenant=tenant, target="m1", mode=ForgetMode.ERASE, reason="x", requested_by="a")
    )
    lines = list(source.export(tenant))
    target = MemoryStore(Neo4jBackend(neo4j_driver))  # type: ignore[arg-type]
    target.import_(lines)
    assert list(target.export(tenant)) == lines
    assert target.trace(tenant, "claim") == source.trace(tenant, "claim")


def test_forgetting_a_source_counts_parents_by_status(store: MemoryStore, tenant: str) -> None:
    """A claim citing a source and derived from a revoked episode has no support once the source goes."""
    store.add_many(
        [
            _episode(tenant, "e1", "episode one", ()),
            MemoryRecord(
                id="c1",
                tenant=tenant,
                kind=Kind.SEMANTIC,
                scope="user:alice",
                content="claim one",
                valid_from=T0 + 2 * DAY,
                derived_from=("e1",),
                sources=(Source(id="s1"),),
            ),
        ]
    )
    store.forget(
        ForgetRequest(tenant=tenant, target="e1", mode=ForgetMode.REVOKE, reason="r", requested_by="u")
    )
    # every backend lists a source's citing records by id alone, and the same ones as citing()
    assert store.backend.citing_ids(tenant, "s1") == ["c1"]
    assert [r.id for r in store.backend.citing(tenant, "s1")] == ["c1"]
    assert store.backend.citing_ids(tenant, "no-such-source") == []
    report = store.forget(
        ForgetRequest(tenant=tenant, target="s1", mode=ForgetMode.REVOKE, reason="r", requested_by="u")
    )
    assert [(e.record_id, e.action) for e in report.entries] == [("c1", "revoked")]
    assert store.explain(_ctx(tenant), "c1").reason is DropReason.REVOKED


def test_forget_after_supersession_invalidates_what_only_superseded_support_holds(
    store: MemoryStore, tenant: str
) -> None:
    store.add_many(
        [
            _claim(tenant, "a", (), "fact a").model_copy(update={"sources": (Source(id="sa"),)}),
            _claim(tenant, "b", (), "fact b").model_copy(update={"sources": (Source(id="sb"),)}),
            _claim(tenant, "c", ("a", "b"), "conclusion from a and b"),
        ]
    )
    newer = _claim(tenant, "a2", (), "fact a, corrected").model_copy(
        update={"sources": (Source(id="sa2"),), "valid_from": T0 + 20 * DAY}
    )
    store.supersede(tenant, "a", newer, reason="corrected")
    assert store.explain(_ctx(tenant, 30), "c").reason is None  # b still supports it
    store.forget(
        ForgetRequest(tenant=tenant, target="b", mode=ForgetMode.REVOKE, reason="r", requested_by="u")
    )
    # With b gone for every `now`, c rested on a alone, which held until day 20.
    assert store.explain(_ctx(tenant, 30), "c").reason is DropReason.INVALIDATED
    assert store.explain(_ctx(tenant, 10), "c").reason is None
    edges = [e for e in store.trace(tenant, "c").edges if e.type == "INVALIDATED_BY"]
    assert [(e.dst, e.at) for e in edges] == [("a", T0 + 20 * DAY)]


def _procedure(tenant: str, rid: str, mark: str, sources: tuple[Source, ...]) -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        tenant=tenant,
        kind=Kind.PROCEDURAL,
        scope="user:alice",
        content=f"content-{mark}",
        valid_from=T0,
        outcome="verified-success",
        writer=f"writer-{mark}",
        procedure_name=f"procname-{mark}",
        procedure_version=f"procver-{mark}",
        preconditions=(f"precond-{mark}",),
        tags=(f"tagmark-{mark}", f"subject:user:alice/subj-{mark}"),
        sources=sources,
    )


def _src(sid: str, mark: str) -> Source:
    return Source(
        id=sid,
        type="message",
        trust=Trust.TRUSTED,
        locator=f"mailto:loc-{mark}@example.com?subject=divorce",
        quote=f"quote-{mark}",
        digest=f"digest-{mark}",
    )


def _markers(mark: str) -> list[str]:
    """The texts an erase removes everywhere. The writer leaves the tombstone but stays the
    actor of the audit log's "added" event: actors are principals, kept for accountability."""
    fields = ("content", "procname", "procver", "precond", "tagmark", "subj", "loc", "quote")
    return [f"{f}-{mark}" for f in fields] + [f"digest-{mark}"]


def test_a_tombstone_keeps_no_field_that_carries_text(store: MemoryStore, tenant: str) -> None:
    mark = f"M{tenant[-8:]}"
    store.add(_procedure(tenant, "p1", mark, (_src("s1", mark),)))
    store.forget(
        ForgetRequest(tenant=tenant, target="p1", mode=ForgetMode.ERASE, reason="GDPR", requested_by="dpo")
    )
    for text in _markers(mark):
        assert places_holding(store, tenant, text) == [], text
    stone = store.get(tenant, "p1")
    assert stone is not None
    assert stone.status is Status.ERASED
    assert f"writer-{mark}" not in stone.model_dump_json()
    assert (stone.kind, stone.scope, stone.valid_from) == (Kind.PROCEDURAL, "user:alice", T0)
    assert [(s.id, s.status, s.locator, s.digest) for s in stone.sources] == [("s1", "active", None, None)]


def test_a_shared_source_keeps_its_locator_until_its_last_citer_is_erased(
    store: MemoryStore, tenant: str
) -> None:
    mark = f"S{tenant[-8:]}"
    shared = _src("s1", mark)
    store.add_many(
        [
            _episode(tenant, "a", "first episode", (shared,)),
            _episode(tenant, "b", "second episode", (shared,)),
        ]
    )
    erase = {"mode": ForgetMode.ERASE, "reason": "r", "requested_by": "u", "target_type": "record"}
    store.forget(ForgetRequest(tenant=tenant, target="a", **erase))  # type: ignore[arg-type]
    b = store.get(tenant, "b")
    assert b is not None
    assert b.sources[0].locator == shared.locator
    assert store.get(tenant, "a").sources[0].quote is None  # type: ignore[union-attr]
    store.forget(ForgetRequest(tenant=tenant, target="b", **erase))  # type: ignore[arg-type]
    for text in (f"loc-{mark}", f"digest-{mark}", f"quote-{mark}"):
        assert places_holding(store, tenant, text) == [], text


def test_erasing_a_source_clears_its_locator_from_the_records_it_no_longer_supports(
    store: MemoryStore, tenant: str
) -> None:
    mark = f"X{tenant[-8:]}"
    store.add_many(
        [
            _episode(tenant, "a", "only cites s1", (_src("s1", mark),)),
            _episode(tenant, "b", "cites both", (_src("s1", mark), _msg("s2", "other evidence"))),
        ]
    )
    report = store.forget(
        ForgetRequest(tenant=tenant, target="s1", mode=ForgetMode.ERASE, reason="r", requested_by="u")
    )
    assert {e.record_id: e.action for e in report.entries} == {"a": "erased", "b": "kept"}
    for text in (f"loc-{mark}", f"digest-{mark}", f"quote-{mark}"):
        assert places_holding(store, tenant, text) == [], text
    b = store.get(tenant, "b")
    assert b is not None
    assert [(s.id, s.status, s.locator) for s in b.sources] == [
        ("s1", "erased", None),
        ("s2", "active", None),
    ]


def test_revoke_keeps_the_text_for_audit_and_an_erase_then_removes_it(
    store: MemoryStore, tenant: str
) -> None:
    mark = f"R{tenant[-8:]}"
    store.add(_procedure(tenant, "p1", mark, (_src("s1", mark),)))
    revoke = ForgetRequest(tenant=tenant, target="p1", mode=ForgetMode.REVOKE, reason="r", requested_by="u")
    store.forget(revoke)
    revoked = store.get(tenant, "p1")
    assert revoked is not None
    assert revoked.status is Status.REVOKED
    assert revoked.content == f"content-{mark}"
    assert revoked.sources[0].quote == f"quote-{mark}"
    report = store.forget(revoke.model_copy(update={"mode": ForgetMode.ERASE}))
    assert [(e.record_id, e.action) for e in report.entries] == [("p1", "erased")]
    for text in _markers(mark):
        assert places_holding(store, tenant, text) == [], text
