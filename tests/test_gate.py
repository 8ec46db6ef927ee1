"""The read gate (SPEC §3): every drop reason, its boundaries, scope semantics and ranking.

The property test at the end checks the store against a reference gate written
here, independently of ``graphmem.model.gate``.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from graphmem import (
    DropReason,
    Kind,
    MemoryRecord,
    MemoryStore,
    ReadContext,
    Sensitivity,
    Source,
    Status,
    Trust,
)
from graphmem.model.gate import Candidate, drop_reason, steady_until
from tests.conftest import KNOWN, T0

H = timedelta(hours=1)
SRC = (Source(id="src-1", type="document", trust=Trust.TRUSTED),)


def rec(tenant: str, kind: Kind, record_id: str, **overrides: Any) -> MemoryRecord:
    """A valid record of ``kind`` at T0 in ``workspace:w1`` (working: ``run:r1``)."""
    fields: dict[str, Any] = {
        "id": record_id,
        "tenant": tenant,
        "kind": kind,
        "scope": "run:r1" if kind is Kind.WORKING else "workspace:w1",
        "content": f"gateway retry note {record_id}",
        "created_at": T0 - 24 * H,
    }
    if kind is Kind.EPISODIC:
        fields.update(event_time=T0 - H, outcome="verified-success")
    elif kind is Kind.SEMANTIC:
        fields.update(valid_from=T0 - H, sources=SRC)
    elif kind is Kind.PROCEDURAL:
        fields.update(
            procedure_name="retry",
            procedure_version="1",
            preconditions=("gateway-access",),
            outcome="verified-success",
            sources=SRC,
        )
    fields.update(overrides)
    return MemoryRecord(**fields)


def ctx(tenant: str, **overrides: Any) -> ReadContext:
    fields: dict[str, Any] = {
        "tenant": tenant,
        "scopes": ("workspace:w1",),
        "now": T0,
        "as_of": KNOWN,
        "environment": ("gateway-access",),
    }
    fields.update(overrides)
    return ReadContext(**fields)


def assert_dropped(store: MemoryStore, context: ReadContext, record_id: str, reason: DropReason) -> None:
    selection = store.recall(context, "gateway", explain=True)
    assert record_id not in selection.ids
    assert selection.reason_for(record_id) is reason
    decision = store.explain(context, record_id, "gateway")
    assert decision.record_id == record_id
    assert not decision.selected
    assert decision.reason is reason


def assert_selected(store: MemoryStore, context: ReadContext, record_id: str) -> None:
    selection = store.recall(context, "gateway", explain=True)
    assert record_id in selection.ids
    assert selection.reason_for(record_id) is None
    decision = store.explain(context, record_id, "gateway")
    assert decision.selected
    assert decision.reason is None


# -- each drop reason through the store --------------------------------------------


@pytest.mark.parametrize("kind", list(Kind))
def test_each_kind_is_selected_when_eligible(store: MemoryStore, tenant: str, kind: Kind) -> None:
    store.add(rec(tenant, kind, "r"))
    assert_selected(store, ctx(tenant, run_id="r1"), "r")


def test_kind_not_requested(store: MemoryStore, tenant: str) -> None:
    store.add(rec(tenant, Kind.EPISODIC, "ep"))
    assert_dropped(
        store, ctx(tenant, kinds=(Kind.SEMANTIC, Kind.PROCEDURAL)), "ep", DropReason.KIND_NOT_REQUESTED
    )


def test_policy_mismatch(store: MemoryStore, tenant: str) -> None:
    store.add(rec(tenant, Kind.SEMANTIC, "old-policy", policy="2025-01"))
    assert_dropped(store, ctx(tenant), "old-policy", DropReason.POLICY_MISMATCH)
    assert_selected(store, ctx(tenant, policy="2025-01"), "old-policy")


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        (Status.PENDING_APPROVAL, DropReason.PENDING_APPROVAL),
        (Status.CONTESTED, DropReason.CONTESTED),
        (Status.REVOKED, DropReason.REVOKED),
        (Status.RELEASED, DropReason.RELEASED),
    ],
)
def test_status_reasons(store: MemoryStore, tenant: str, status: Status, reason: DropReason) -> None:
    store.add(rec(tenant, Kind.SEMANTIC, "r", status=status))
    assert_dropped(store, ctx(tenant), "r", reason)


def test_released_working_record(store: MemoryStore, tenant: str) -> None:
    store.add(rec(tenant, Kind.WORKING, "w", status=Status.RELEASED))
    assert_dropped(store, ctx(tenant, run_id="r1"), "w", DropReason.RELEASED)


def test_not_yet_valid_and_expired(store: MemoryStore, tenant: str) -> None:
    store.add(rec(tenant, Kind.SEMANTIC, "future", valid_from=T0 + H))
    store.add(rec(tenant, Kind.SEMANTIC, "past", valid_from=T0 - 2 * H, valid_to=T0 - H))
    assert_dropped(store, ctx(tenant), "future", DropReason.NOT_YET_VALID)
    assert_dropped(store, ctx(tenant), "past", DropReason.EXPIRED)


def test_scope_mismatch_for_another_runs_working_record(store: MemoryStore, tenant: str) -> None:
    store.add(rec(tenant, Kind.WORKING, "w2", scope="run:r2"))
    # run:r2 is named by the context, so w2 is a candidate, but a run scope matches only its own run.
    assert_dropped(
        store, ctx(tenant, scopes=("workspace:w1", "run:r2"), run_id="r1"), "w2", DropReason.SCOPE_MISMATCH
    )
    assert store.explain(ctx(tenant, run_id="r1"), "w2").reason is DropReason.SCOPE_MISMATCH
    assert_selected(store, ctx(tenant, run_id="r2"), "w2")


def test_sibling_workspace_is_no_candidate_but_explained_as_scope_mismatch(
    store: MemoryStore, tenant: str
) -> None:
    store.add(rec(tenant, Kind.SEMANTIC, "sib", scope="workspace:w2"))
    selection = store.recall(ctx(tenant), "gateway", explain=True)
    assert "sib" not in {d.record_id for d in selection.decisions}
    assert store.explain(ctx(tenant), "sib").reason is DropReason.SCOPE_MISMATCH


def test_insufficient_clearance(store: MemoryStore, tenant: str) -> None:
    store.add(rec(tenant, Kind.SEMANTIC, "secret", sensitivity=Sensitivity.CONFIDENTIAL))
    assert_dropped(
        store, ctx(tenant, clearance=Sensitivity.INTERNAL), "secret", DropReason.INSUFFICIENT_CLEARANCE
    )
    assert_selected(store, ctx(tenant, clearance=Sensitivity.CONFIDENTIAL), "secret")
    assert_selected(store, ctx(tenant, clearance=Sensitivity.RESTRICTED), "secret")


@pytest.mark.parametrize("outcome", ["failure", "unknown", "gateway-timeout", None])
def test_outcome_ineligible_procedure(store: MemoryStore, tenant: str, outcome: str | None) -> None:
    store.add(rec(tenant, Kind.PROCEDURAL, "proc", outcome=outcome))
    assert_dropped(store, ctx(tenant), "proc", DropReason.OUTCOME_INELIGIBLE)


def test_precondition_unmet(store: MemoryStore, tenant: str) -> None:
    store.add(rec(tenant, Kind.PROCEDURAL, "proc", preconditions=("gateway-access", "prod-deploy")))
    assert_dropped(store, ctx(tenant), "proc", DropReason.PRECONDITION_UNMET)
    assert_dropped(store, ctx(tenant, environment=()), "proc", DropReason.PRECONDITION_UNMET)
    assert_selected(store, ctx(tenant, environment=("prod-deploy", "gateway-access", "extra")), "proc")


def test_below_min_score(store: MemoryStore, tenant: str) -> None:
    store.add(rec(tenant, Kind.SEMANTIC, "hit", content="gateway retry policy"))
    store.add(rec(tenant, Kind.SEMANTIC, "miss", content="holiday calendar"))
    selection = store.recall(ctx(tenant, min_score=0.01), "gateway", explain=True)
    assert selection.ids == ["hit"]
    assert selection.reason_for("miss") is DropReason.BELOW_MIN_SCORE
    assert store.explain(ctx(tenant, min_score=0.01), "miss", "gateway").reason is DropReason.BELOW_MIN_SCORE


def test_selection_limit(store: MemoryStore, tenant: str) -> None:
    store.add_many([rec(tenant, Kind.SEMANTIC, f"r{i}", valid_from=T0 - (i + 1) * H) for i in range(4)])
    selection = store.recall(ctx(tenant, limit=2), "gateway", explain=True)
    assert selection.ids == ["r0", "r1"]  # equal scores: newer first
    assert selection.reason_for("r2") is DropReason.SELECTION_LIMIT
    assert selection.reason_for("r3") is DropReason.SELECTION_LIMIT
    assert store.explain(ctx(tenant, limit=2), "r3", "gateway").reason is DropReason.SELECTION_LIMIT


def test_without_explain_only_selected_decisions_are_returned(store: MemoryStore, tenant: str) -> None:
    store.add(rec(tenant, Kind.SEMANTIC, "ok"))
    store.add(rec(tenant, Kind.SEMANTIC, "bad", status=Status.REVOKED))
    selection = store.recall(ctx(tenant), "gateway")
    assert [d.record_id for d in selection.decisions] == ["ok"]
    assert all(d.selected for d in selection.decisions)


def test_superseded_and_invalidated_through_the_store(store: MemoryStore, tenant: str) -> None:
    store.add(rec(tenant, Kind.SEMANTIC, "old"))
    store.supersede(tenant, "old", rec(tenant, Kind.SEMANTIC, "new", valid_from=T0 + H), reason="newer docs")
    assert_selected(store, ctx(tenant), "old")
    assert_dropped(store, ctx(tenant, now=T0 + H), "old", DropReason.SUPERSEDED)
    store.add(rec(tenant, Kind.SEMANTIC, "claim"))
    store.invalidate(tenant, "claim", by="new", reason="contradicted", at=T0 + 2 * H)
    assert_selected(store, ctx(tenant, now=T0 + H), "claim")
    assert_dropped(store, ctx(tenant, now=T0 + 2 * H), "claim", DropReason.INVALIDATED)


# -- the pure gate: reasons the store API cannot produce ------------------------------


def cand(
    record: MemoryRecord, superseded_at: datetime | None = None, invalidated_at: datetime | None = None
) -> Candidate:
    return Candidate.of(record, superseded_at, invalidated_at)


def pure(
    record: MemoryRecord, context: ReadContext, *, in_scope: bool = True, **lineage: datetime | None
) -> DropReason | None:
    return drop_reason(cand(record, **lineage), context, in_scope)


def test_pure_gate_wrong_tenant_comes_after_kind_and_before_policy() -> None:
    foreign = rec("other", Kind.SEMANTIC, "r", policy="v9")
    assert pure(foreign, ctx("acme")) is DropReason.WRONG_TENANT
    assert pure(foreign, ctx("acme", kinds=(Kind.EPISODIC,))) is DropReason.KIND_NOT_REQUESTED
    assert pure(foreign, ctx("other")) is DropReason.POLICY_MISMATCH
    assert pure(foreign, ctx("other", policy="v9")) is None


@pytest.mark.parametrize(
    ("field", "reason"), [("superseded_at", "superseded"), ("invalidated_at", "invalidated")]
)
def test_pure_gate_lineage_takes_effect_at_its_time(field: str, reason: str) -> None:
    r = rec("acme", Kind.SEMANTIC, "r")

    def reason_if_effective_at(at: datetime) -> DropReason | None:
        c = cand(r, superseded_at=at) if field == "superseded_at" else cand(r, invalidated_at=at)
        return drop_reason(c, ctx("acme"), True)

    assert reason_if_effective_at(T0 - H) is DropReason(reason)
    assert reason_if_effective_at(T0) is DropReason(reason)  # at == now: already in effect
    assert reason_if_effective_at(T0 + timedelta(microseconds=1)) is None


def test_pure_gate_order_around_lineage() -> None:
    r = rec("acme", Kind.SEMANTIC, "r")
    assert pure(r, ctx("acme"), in_scope=False, superseded_at=T0, invalidated_at=T0) is DropReason.SUPERSEDED
    assert pure(r, ctx("acme"), in_scope=False, invalidated_at=T0) is DropReason.INVALIDATED
    assert pure(r, ctx("acme"), in_scope=False) is DropReason.SCOPE_MISMATCH
    expired = rec("acme", Kind.SEMANTIC, "e", valid_to=T0)
    assert pure(expired, ctx("acme"), superseded_at=T0) is DropReason.EXPIRED
    revoked = rec("acme", Kind.SEMANTIC, "x", status=Status.REVOKED, valid_to=T0)
    assert pure(revoked, ctx("acme")) is DropReason.REVOKED


# -- boundaries ----------------------------------------------------------------------


def test_validity_is_half_open(store: MemoryStore, tenant: str) -> None:
    store.add(rec(tenant, Kind.SEMANTIC, "win", valid_from=T0, valid_to=T0 + H))
    assert_dropped(store, ctx(tenant, now=T0 - timedelta(microseconds=1)), "win", DropReason.NOT_YET_VALID)
    assert_selected(store, ctx(tenant, now=T0), "win")
    assert_selected(store, ctx(tenant, now=T0 + H - timedelta(microseconds=1)), "win")
    assert_dropped(store, ctx(tenant, now=T0 + H), "win", DropReason.EXPIRED)


def test_earlier_expires_at_wins_over_valid_to(store: MemoryStore, tenant: str) -> None:
    store.add(rec(tenant, Kind.SEMANTIC, "r", valid_from=T0 - H, valid_to=T0 + 2 * H, expires_at=T0))
    assert_selected(store, ctx(tenant, now=T0 - timedelta(minutes=1)), "r")
    assert_dropped(store, ctx(tenant, now=T0), "r", DropReason.EXPIRED)
    assert_dropped(store, ctx(tenant, now=T0 + H), "r", DropReason.EXPIRED)


def test_episode_is_valid_from_its_event_time(store: MemoryStore, tenant: str) -> None:
    store.add(rec(tenant, Kind.EPISODIC, "ep", event_time=T0))
    assert_dropped(store, ctx(tenant, now=T0 - timedelta(seconds=1)), "ep", DropReason.NOT_YET_VALID)
    assert_selected(store, ctx(tenant, now=T0), "ep")


# -- scope semantics -------------------------------------------------------------------


def test_workspace_record_applies_inside_a_run_within_it(store: MemoryStore, tenant: str) -> None:
    store.add(rec(tenant, Kind.SEMANTIC, "ws"))
    run_ctx = ctx(tenant, scopes=(), run_id="r1")
    assert store.explain(run_ctx, "ws").reason is DropReason.SCOPE_MISMATCH
    store.scope_within(tenant, "run:r1", "workspace:w1")
    assert_selected(store, run_ctx, "ws")
    assert store.explain(ctx(tenant, scopes=(), run_id="r2"), "ws").reason is DropReason.SCOPE_MISMATCH


def test_scope_covers_transitively(store: MemoryStore, tenant: str) -> None:
    for child, parent in [
        ("run:r1", "case:c1"),
        ("case:c1", "workspace:w1"),
        ("workspace:w1", "tenant:acme"),
    ]:
        store.scope_within(tenant, child, parent)
    store.add_many(
        [
            rec(tenant, Kind.SEMANTIC, "top", scope="tenant:acme"),
            rec(tenant, Kind.SEMANTIC, "mid", scope="case:c1"),
            rec(tenant, Kind.WORKING, "mine", scope="run:r1"),
            rec(tenant, Kind.SEMANTIC, "other", scope="workspace:w2"),
        ]
    )
    selection = store.recall(ctx(tenant, scopes=(), run_id="r1"), "gateway", explain=True)
    assert set(selection.ids) == {"top", "mid", "mine"}
    # A broader context does not see records of the narrower scopes inside it.
    ws = ctx(tenant, scopes=("workspace:w1",))
    assert set(store.recall(ws, "gateway").ids) == {"top"}
    assert store.explain(ws, "mid").reason is DropReason.SCOPE_MISMATCH
    assert store.explain(ws, "mine").reason is DropReason.SCOPE_MISMATCH


def test_working_record_matches_only_its_run(store: MemoryStore, tenant: str) -> None:
    store.scope_within(tenant, "run:r1", "workspace:w1")
    store.scope_within(tenant, "run:r2", "workspace:w1")
    store.add(rec(tenant, Kind.WORKING, "w1", scope="run:r1"))
    assert_selected(store, ctx(tenant, run_id="r1"), "w1")
    assert "w1" not in store.recall(ctx(tenant, run_id="r2"), "gateway").ids
    assert store.explain(ctx(tenant, run_id="r2"), "w1").reason is DropReason.SCOPE_MISMATCH
    assert store.explain(ctx(tenant), "w1").reason is DropReason.SCOPE_MISMATCH


@pytest.mark.parametrize("outcome", ["failure", "unknown", "card-declined"])
def test_failed_episode_is_recalled_as_history(store: MemoryStore, tenant: str, outcome: str) -> None:
    store.add(rec(tenant, Kind.EPISODIC, "ep", outcome=outcome))
    assert_selected(store, ctx(tenant, kinds=(Kind.EPISODIC,)), "ep")
    assert_dropped(
        store, ctx(tenant, kinds=(Kind.SEMANTIC, Kind.PROCEDURAL)), "ep", DropReason.KIND_NOT_REQUESTED
    )


# -- ranking -------------------------------------------------------------------------


def test_only_survivors_are_ranked(store: MemoryStore, tenant: str) -> None:
    survivors = [
        rec(tenant, Kind.SEMANTIC, "a", content="retry after timeout"),
        rec(tenant, Kind.SEMANTIC, "b", content="gateway settings"),
    ]
    store.add_many(survivors)
    baseline = {
        d.record_id: d.score for d in store.recall(ctx(tenant), "retry gateway", explain=True).decisions
    }
    # Dropped records full of "retry" would change BM25's idf if they were ranked.
    store.add_many(
        [rec(tenant, Kind.SEMANTIC, f"x{i}", content="retry retry", status=Status.REVOKED) for i in range(5)]
    )
    after = store.recall(ctx(tenant), "retry gateway", explain=True)
    scored = {d.record_id: d.score for d in after.decisions if d.score is not None}
    assert scored == baseline
    assert all(after.reason_for(f"x{i}") is DropReason.REVOKED for i in range(5))


def test_record_matching_no_term_ranks_last_with_score_zero(store: MemoryStore, tenant: str) -> None:
    store.add_many(
        [
            rec(
                tenant,
                Kind.SEMANTIC,
                "none",
                content="holiday calendar",
                valid_from=T0 - timedelta(minutes=1),
            ),
            rec(tenant, Kind.SEMANTIC, "one", content="gateway settings", valid_from=T0 - 5 * H),
            rec(tenant, Kind.SEMANTIC, "two", content="gateway retry settings", valid_from=T0 - 6 * H),
        ]
    )
    selection = store.recall(ctx(tenant), "gateway retry", explain=True)
    assert selection.ids == ["two", "one", "none"]
    scores = {d.record_id: d.score or 0.0 for d in selection.decisions}
    assert all(d.score is not None for d in selection.decisions)
    assert scores["none"] == 0.0
    assert scores["two"] > scores["one"] > 0.0
    assert store.recall(ctx(tenant, min_score=1e-9), "gateway retry").ids == ["two", "one"]


@pytest.mark.parametrize(
    ("field", "kind"),
    [("valid_from", Kind.SEMANTIC), ("event_time", Kind.EPISODIC), ("created_at", Kind.WORKING)],
)
def test_ties_break_newer_first_then_by_id(store: MemoryStore, tenant: str, field: str, kind: Kind) -> None:
    store.add_many(
        [
            rec(tenant, kind, "b-old", content="same words", **{field: T0 - 3 * H}),
            rec(tenant, kind, "c-new", content="same words", **{field: T0 - H}),
            rec(tenant, kind, "a-new", content="same words", **{field: T0 - H}),
        ]
    )
    context = ctx(tenant, run_id="r1")
    assert store.recall(context, "same words").ids == ["a-new", "c-new", "b-old"]
    assert store.recall(context, "").ids == ["a-new", "c-new", "b-old"]


@pytest.mark.parametrize(("query_embedding", "winner"), [((1.0, 0.0), "east"), ((0.0, 1.0), "north")])
def test_closer_embedding_wins_among_equal_lexical_scores(
    store: MemoryStore, tenant: str, query_embedding: tuple[float, float], winner: str
) -> None:
    store.add_many(
        [
            rec(tenant, Kind.SEMANTIC, "east", content="gateway note", embedding=(0.9, 0.1)),
            rec(tenant, Kind.SEMANTIC, "north", content="gateway note", embedding=(0.1, 0.9)),
        ]
    )
    selection = store.recall(ctx(tenant), "gateway", query_embedding=query_embedding)
    assert selection.ids[0] == winner
    first, second = (d.score for d in selection.decisions)
    assert first is not None
    assert second is not None
    assert first > second


# -- property: the store agrees with a reference gate ------------------------------------

PARENTS = {
    "run:r1": "workspace:w1",
    "run:r2": "workspace:w2",
    "workspace:w1": "tenant:acme",
    "workspace:w2": "tenant:acme",
}
RECORD_SCOPES = ["tenant:acme", "workspace:w1", "workspace:w2", "run:r1", "run:r2", "domain:payments"]
CAPABILITIES = ["gateway-access", "db-write", "prod"]
ORDER = [
    "kind_not_requested",
    "wrong_tenant",
    "policy_mismatch",
    "status",
    "validity",
    "superseded",
    "invalidated",
    "scope_mismatch",
    "insufficient_clearance",
    "outcome_ineligible",
    "precondition_unmet",
]
CLEARANCE_LEVEL = {"public": 0, "internal": 1, "confidential": 2, "restricted": 3}


def covered_scopes(context: ReadContext) -> set[str]:
    """The context's scopes and every scope above them, following WITHIN upward."""
    out: set[str] = set()
    frontier = list(context.scopes) + ([f"run:{context.run_id}"] if context.run_id else [])
    while frontier:
        scope = frontier.pop()
        if scope not in out:
            out.add(scope)
            if scope in PARENTS:
                frontier.append(PARENTS[scope])
    return out


def reference_reason(r: MemoryRecord, c: ReadContext, invalidated_at: datetime | None) -> str | None:
    """SPEC §3 as a list of checks; the first failing one wins."""
    start = r.valid_from if r.valid_from is not None else r.event_time
    end = min((t for t in (r.valid_to, r.expires_at) if t is not None), default=None)
    own_runs = {f"run:{c.run_id}"} if c.run_id else {s for s in c.scopes if s.startswith("run:")}
    applies = r.scope in covered_scopes(c) and (not r.scope.startswith("run:") or r.scope in own_runs)
    failing = {
        "kind_not_requested": r.kind.value not in {k.value for k in c.kinds},
        "wrong_tenant": r.tenant != c.tenant,
        "policy_mismatch": r.policy != c.policy,
        "status": r.status.value != "active",
        "validity": (start is not None and c.now < start) or (end is not None and c.now >= end),
        "superseded": False,
        "invalidated": invalidated_at is not None and invalidated_at <= c.now,
        "scope_mismatch": not applies,
        "insufficient_clearance": CLEARANCE_LEVEL[r.sensitivity.value] > CLEARANCE_LEVEL[c.clearance.value],
        "outcome_ineligible": r.kind.value == "procedural" and r.outcome != "verified-success",
        "precondition_unmet": r.kind.value == "procedural"
        and not set(r.preconditions).issubset(c.environment),
    }
    for check in ORDER:
        if failing[check]:
            if check == "status":
                return r.status.value
            if check == "validity":
                return "not_yet_valid" if start is not None and c.now < start else "expired"
            return check
    return None


SKIP_STATUS = (Status.ACTIVE, Status.ERASED)
hours = st.integers(min_value=-4, max_value=1).map(lambda h: T0 + h * H)
maybe_hours = st.none() | hours
nows = st.integers(min_value=-2, max_value=3).map(lambda h: T0 + h * H)


@st.composite
def gated_record(draw: st.DrawFn, index: int) -> MemoryRecord:
    kind = draw(st.sampled_from(list(Kind)))
    valid_from = draw(hours if kind is Kind.SEMANTIC else maybe_hours)
    valid_to = draw(st.none() | st.integers(1, 4).map(lambda n: (valid_from or T0 - 4 * H) + n * H))
    outcome = draw(st.sampled_from(["verified-success"] * 4 + ["failure", "unknown", "timeout", None]))
    preconditions = draw(st.lists(st.sampled_from(CAPABILITIES), unique=True, max_size=3))
    event_time = draw(hours if kind is Kind.EPISODIC else maybe_hours)
    start = valid_from or event_time
    # An expiry at or before the start is refused at write (empty_validity), so draw it after.
    expires_at = draw(st.none() | st.integers(1, 5).map(lambda n: (start or T0 - 4 * H) + n * H))
    return MemoryRecord(
        id=f"m{index:02d}",
        tenant="acme",
        kind=kind,
        scope=draw(st.sampled_from(["run:r1", "run:r2"] if kind is Kind.WORKING else RECORD_SCOPES)),
        content=f"record {index}",
        created_at=T0 - draw(st.integers(20, 23)) * H,
        event_time=event_time,
        valid_from=valid_from,
        valid_to=valid_to,
        expires_at=expires_at,
        outcome=(outcome or "unknown") if kind is Kind.EPISODIC else outcome,
        sources=SRC if kind in (Kind.SEMANTIC, Kind.PROCEDURAL) else (),
        status=draw(st.sampled_from([Status.ACTIVE] * 6 + [s for s in Status if s not in SKIP_STATUS])),
        policy=draw(st.sampled_from(["default"] * 4 + ["v2"])),
        sensitivity=draw(
            st.sampled_from([Sensitivity.PUBLIC, Sensitivity.INTERNAL, Sensitivity.CONFIDENTIAL])
        ),
        procedure_name="proc" if kind is Kind.PROCEDURAL else None,
        procedure_version="1" if kind is Kind.PROCEDURAL else None,
        preconditions=tuple(preconditions or ["prod"]) if kind is Kind.PROCEDURAL else tuple(preconditions),
    )


@st.composite
def gated_records(draw: st.DrawFn) -> list[MemoryRecord]:
    n = draw(st.integers(min_value=1, max_value=12))
    return [draw(gated_record(i)) for i in range(n)]


@st.composite
def read_contexts(draw: st.DrawFn) -> ReadContext:
    run_id = draw(st.sampled_from([None, "r1", "r2"]))
    plain = ["tenant:acme", "workspace:w1", "workspace:w2", "domain:payments"]
    scopes = draw(st.lists(st.sampled_from(plain + (["run:r1", "run:r2"] if run_id else [])), max_size=3))
    if not scopes and run_id is None:
        scopes = [draw(st.sampled_from(plain))]
    return ReadContext(
        as_of=KNOWN,
        tenant="acme",
        policy=draw(st.sampled_from(["default"] * 4 + ["v2"])),
        scopes=tuple(scopes),
        now=draw(nows),
        run_id=run_id,
        kinds=tuple(
            draw(st.just(list(Kind)) | st.lists(st.sampled_from(list(Kind)), min_size=1, unique=True))
        ),
        environment=tuple(draw(st.lists(st.sampled_from(CAPABILITIES), unique=True))),
        clearance=draw(st.sampled_from(list(Sensitivity))),
        limit=draw(st.integers(min_value=1, max_value=3) | st.integers(min_value=1, max_value=12)),
        min_score=draw(st.sampled_from([0.0, 0.0, 0.5])),
    )


def recency_key(r: MemoryRecord) -> tuple[float, str]:
    newest: datetime = r.valid_from or r.event_time or r.created_at
    return (-newest.timestamp(), r.id)


Invalidations = list[tuple[int, datetime]]
invalidations = st.lists(st.tuples(st.integers(0, 11), nows), max_size=4)


def check_against_reference(
    store: MemoryStore,
    tenant: str,
    records: list[MemoryRecord],
    context: ReadContext,
    invalidated: Invalidations,
) -> None:
    records = [r.model_copy(update={"tenant": tenant}) for r in records]
    context = context.model_copy(update={"tenant": tenant})
    for child, parent in PARENTS.items():
        store.scope_within(tenant, child, parent)
    store.add_many(records)
    invalidated_at: dict[str, datetime] = {}
    for index, at in invalidated:
        if index < len(records) and len(records) > 1:
            target, by = records[index].id, records[index - 1].id
            store.invalidate(tenant, target, by=by, reason="contradicted", at=at)
            invalidated_at[target] = min(at, invalidated_at.get(target, at))
    selection = store.recall(context, "", explain=True)
    decided = {d.record_id: d for d in selection.decisions}

    covered = covered_scopes(context)
    assert set(decided) == {r.id for r in records if r.scope in covered}

    expected = {r.id: reference_reason(r, context, invalidated_at.get(r.id)) for r in records}
    survivors = sorted((r for r in records if expected[r.id] is None), key=recency_key)
    if context.min_score > 0:
        final: dict[str, str | None] = {r.id: "below_min_score" for r in survivors}
        chosen: list[str] = []
    else:
        chosen = [r.id for r in survivors[: context.limit]]
        final = {r.id: (None if r.id in chosen else "selection_limit") for r in survivors}
    expected.update(final)

    for record_id, decision in decided.items():
        event(f"candidate reason: {expected[record_id]}")
        got = None if decision.reason is None else decision.reason.value
        assert got == expected[record_id], record_id
        assert decision.selected is (expected[record_id] is None)
    assert selection.ids == chosen
    assert [r.id for r in selection.records] == chosen
    for r in records:
        got_reason = store.explain(context, r.id).reason
        event(f"explained reason: {expected[r.id]}")
        assert (None if got_reason is None else got_reason.value) == expected[r.id], r.id


@settings(max_examples=300, deadline=None)
@given(gated_records(), read_contexts(), invalidations)
def test_store_reason_equals_reference_gate(
    records: list[MemoryRecord], context: ReadContext, invalidated: Invalidations
) -> None:
    with MemoryStore.embedded() as store:
        check_against_reference(store, "acme", records, context, invalidated)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=gated_records(), context=read_contexts(), invalidated=invalidations)
def test_every_backend_agrees_with_reference_gate(
    store: MemoryStore,
    tenant: str,
    records: list[MemoryRecord],
    context: ReadContext,
    invalidated: Invalidations,
) -> None:
    # The store is shared by the examples; a fresh tenant keeps each example apart.
    check_against_reference(store, f"{tenant}-{uuid.uuid4().hex[:8]}", records, context, invalidated)


# -- a verdict holds until the candidate's next time -------------------------------

_MINUTE = timedelta(minutes=1)
_times = st.integers(0, 12).map(lambda m: T0 + m * _MINUTE)
_maybe_times = st.none() | st.none() | _times
_STATUSES = list(Status)


@st.composite
def _candidates(draw: st.DrawFn) -> Candidate:
    changes = draw(
        st.none() | st.lists(st.tuples(st.booleans(), _times, _maybe_times), max_size=3).map(tuple)
    )
    versions = draw(st.lists(st.tuples(_times, st.sampled_from(_STATUSES), st.just("f0")), max_size=3))
    recorded = [c[2] for c in changes or () if c[2] is not None] + [v[0] for v in versions]
    # As ``Candidate.of`` sets it (the latest recorded change), or any time.
    changed_at = draw(st.just(max(recorded, default=None)) | _maybe_times)
    return Candidate(
        record=None,
        superseded_at=draw(_maybe_times),
        invalidated_at=draw(_maybe_times),
        fingerprint="f1",
        start=draw(_maybe_times),
        end=draw(_maybe_times),
        recency=0.0,
        sensitivity_rank=0,
        id="r1",
        kind=Kind.SEMANTIC,
        tenant="t1",
        policy="default",
        status=draw(st.just(Status.ACTIVE) | st.sampled_from(_STATUSES)),
        succeeded=True,
        preconditions=frozenset(),
        known_from=draw(_maybe_times),
        changed_at=changed_at,
        changes=changes,
        versions=tuple(sorted(versions)),
    )


@settings(max_examples=1000, suppress_health_check=[HealthCheck.too_slow])
@given(_candidates(), st.integers(0, 14 * 60), st.integers(0, 14 * 60), st.booleans(), st.booleans())
def test_a_verdict_holds_until_the_candidate_s_next_time(
    candidate: Candidate, now0: int, as0: int, now_last: bool, as_last: bool
) -> None:
    """``drop_reason`` is the same for every ``now`` and knowledge time that each stayed in
    ``[where it was checked, steady_until(candidate, there))``: checked at seconds around
    the candidate's minutes (on, before and after each of its times), again at the last
    microsecond of each interval (or a day later when it has no end)."""
    first_now = T0 - _MINUTE + now0 * _MINUTE / 60
    first_as = T0 - _MINUTE + as0 * _MINUTE / 60
    base = ReadContext(tenant="t1", scopes=("workspace:w1",), now=first_now, as_of=first_as)
    verdict = drop_reason(candidate, base, in_scope=True)

    def last(first: datetime) -> datetime:
        until = steady_until(candidate, first)
        return first + 24 * H if until is None else until - timedelta(microseconds=1)

    now = last(first_now) if now_last else first_now
    as_of = last(first_as) if as_last else first_as
    later = base.model_copy(update={"now": now, "as_of": as_of})
    assert drop_reason(candidate, later, in_scope=True) is verdict
