"""Taint: a record supported only by untrusted sources says so, and is not promoted unapproved.

Runs on every backend (the ``store`` fixture).
"""

from __future__ import annotations

from datetime import timedelta

from graphmem import Kind, MemoryRecord, MemoryStore, ReadContext, Source, Status, Trust, WriteProposal
from graphmem.model.write import WriteDecision, WriteOutcome, WriteReason
from graphmem.render import render_selection
from tests.conftest import KNOWN, T0

DAY = timedelta(days=1)


def _episode(tenant: str, rid: str, trust: Trust, scope: str = "run:r-1") -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        tenant=tenant,
        kind=Kind.EPISODIC,
        scope=scope,
        content=f"Restarting the worker fixed the stuck queue ({rid}).",
        event_time=T0 + DAY,
        outcome="verified-success",
        sources=(Source(id=f"src-{rid}", type="document", trust=trust),),
    )


def _claim(tenant: str, rid: str, scope: str) -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        tenant=tenant,
        kind=Kind.SEMANTIC,
        scope=scope,
        content="A stuck queue is fixed by restarting the worker.",
        valid_from=T0 + 2 * DAY,
    )


def _procedure(tenant: str, rid: str) -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        tenant=tenant,
        kind=Kind.PROCEDURAL,
        scope="run:r-1",
        content="Restart the worker, then check the queue drains.",
        procedure_name="restart-worker",
        procedure_version="1",
        preconditions=("shell",),
        valid_from=T0 + 2 * DAY,
    )


def test_untrusted_record_says_so_in_recall_render_and_trace(store: MemoryStore, tenant: str) -> None:
    decision = store.propose(
        WriteProposal(
            tenant=tenant,
            kind=Kind.SEMANTIC,
            scope="user:alice",
            content="Alice's team ships on Thursdays.",
            valid_from=T0,
            sources=(Source(id="doc-1", type="document", trust=Trust.UNTRUSTED),),
            proposed_by="agent",
        ),
        source_trust=Trust.UNTRUSTED,
    )
    assert decision.outcome is WriteOutcome.ACCEPTED
    store.add(
        MemoryRecord(
            id="trusted",
            tenant=tenant,
            kind=Kind.SEMANTIC,
            scope="user:alice",
            content="Alice's team ships on Thursdays, said Alice.",
            valid_from=T0,
            sources=(Source(id="msg-1", type="message", trust=Trust.TRUSTED),),
        )
    )
    ctx = ReadContext(
        tenant=tenant, scopes=("user:alice",), as_of=KNOWN, now=T0 + DAY, kinds=(Kind.SEMANTIC,)
    )
    selection = store.recall(ctx, "ships thursdays")
    taint = {r.id: r.tainted for r in selection.records}
    assert taint == {decision.record_id: True, "trusted": False}
    rendered = render_selection(selection, 4000).text
    assert rendered.count('support="untrusted-only"') == 1
    assert decision.record_id is not None
    lineage = store.trace(tenant, decision.record_id)
    assert lineage.node(decision.record_id).tainted
    assert "untrusted sources only" in lineage.render_tree()
    assert not store.trace(tenant, "trusted").node("trusted").tainted


def test_claim_from_untrusted_episodes_is_tainted_and_widening_it_waits(
    store: MemoryStore, tenant: str
) -> None:
    store.add_many([_episode(tenant, "e1", Trust.UNTRUSTED), _episode(tenant, "e2", Trust.UNTRUSTED)])
    same_scope = store.consolidate(tenant, ["e1", "e2"], _claim(tenant, "c-run", "run:r-1"), rule="r")
    assert same_scope.status is Status.ACTIVE
    assert same_scope.tainted
    assert same_scope.untrusted_lineage
    stored = store.get(tenant, "c-run")
    assert stored is not None
    assert stored.tainted
    assert store.trace(tenant, "c-run").node("c-run").tainted

    for scope in ("user:alice", "tenant:acme"):
        held = store.consolidate(tenant, ["e1", "e2"], _claim(tenant, f"c-{scope[:4]}", scope), rule="r")
        assert held.status is Status.PENDING_APPROVAL
        assert held.proposal_id is not None
    pending = {r.id for r in store.approvals(tenant)}
    assert pending == {"c-user", "c-tena"}
    assert store.pending_reasons(tenant) == {
        "c-user": "needs_approval_untrusted",
        "c-tena": "needs_approval_untrusted",
    }
    ctx = ReadContext(
        tenant=tenant, scopes=("user:alice",), as_of=KNOWN, now=T0 + 3 * DAY, kinds=(Kind.SEMANTIC,)
    )
    assert "c-user" not in [r.id for r in store.recall(ctx, "queue worker").records]

    proposal_id = store.get(tenant, "c-user").proposal_id  # type: ignore[union-attr]
    assert proposal_id is not None
    approved = store.approve(tenant, proposal_id, "ops-lead")
    assert approved.status is Status.ACTIVE
    assert not approved.tainted
    assert "c-user" in [r.id for r in store.recall(ctx, "queue worker").records]


def test_procedure_from_untrusted_episodes_waits_for_approval(store: MemoryStore, tenant: str) -> None:
    store.add(_episode(tenant, "e1", Trust.UNTRUSTED))
    held = store.consolidate(tenant, ["e1"], _procedure(tenant, "p1"), rule="promote")
    assert held.status is Status.PENDING_APPROVAL
    assert [r.id for r in store.approvals(tenant)] == ["p1"]
    events = [e for e in store.audit(tenant, record_id="p1") if e.action == "pending_approval"]
    assert [e.reason for e in events] == ["needs_approval_untrusted"]


def test_trusted_support_lifts_the_taint(store: MemoryStore, tenant: str) -> None:
    store.add_many([_episode(tenant, "e1", Trust.UNTRUSTED), _episode(tenant, "e2", Trust.TRUSTED)])
    claim = store.consolidate(tenant, ["e1", "e2"], _claim(tenant, "c1", "user:alice"), rule="r")
    assert claim.status is Status.ACTIVE
    assert not claim.tainted
    procedure = store.consolidate(tenant, ["e2"], _procedure(tenant, "p1"), rule="promote")
    assert procedure.status is Status.ACTIVE
    assert not procedure.tainted
    # Derived from a tainted claim, still tainted.
    again = store.consolidate(tenant, ["e1"], _claim(tenant, "c2", "run:r-1"), rule="r")
    derived = store.consolidate(tenant, ["c2"], _claim(tenant, "c3", "run:r-1"), rule="restated")
    assert again.tainted
    assert derived.tainted


def test_records_without_the_flag_keep_their_fingerprint() -> None:
    record = _claim("t", "c", "user:alice")
    assert "untrusted_lineage" not in record.model_dump_json()
    flagged = record.model_copy(update={"untrusted_lineage": True})
    assert MemoryRecord.model_validate_json(flagged.model_dump_json()).untrusted_lineage
    assert not record.tainted  # no sources, no lineage: nothing says it is untrusted


def test_a_proposal_derived_only_from_tainted_records_is_tainted_and_widening_waits(
    store: MemoryStore, tenant: str
) -> None:
    store.add(_episode(tenant, "e1", Trust.UNTRUSTED))

    def propose(scope: str) -> WriteDecision:
        return store.propose(
            WriteProposal(
                tenant=tenant,
                kind=Kind.SEMANTIC,
                scope=scope,
                content=f"A stuck queue is fixed by restarting the worker ({scope}).",
                valid_from=T0 + 2 * DAY,
                derived_from=("e1",),
                proposed_by="agent",
            )
        )

    same = propose("run:r-1")
    assert same.outcome is WriteOutcome.ACCEPTED
    assert same.record_id is not None
    kept = store.get(tenant, same.record_id)
    assert kept is not None
    assert kept.tainted
    widened = propose("user:alice")
    assert (widened.outcome, widened.reason) == (
        WriteOutcome.PENDING_APPROVAL,
        WriteReason.NEEDS_APPROVAL_UNTRUSTED,
    )
    assert widened.record_id is not None
    assert store.pending_reasons(tenant) == {widened.record_id: "needs_approval_untrusted"}
