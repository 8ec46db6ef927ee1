"""Receipts as audit proofs, randomised on every backend: later writes never break the
verification of an earlier receipt; tampering with the receipt or the data always does."""

from __future__ import annotations

import contextlib
import random
import uuid
from datetime import datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphmem import (
    ForgetMode,
    ForgetRequest,
    Kind,
    LineageError,
    MemoryRecord,
    MemoryStore,
    ReadContext,
    Receipt,
    Source,
    Trust,
    WriteProposal,
)
from graphmem.backends.base import PutRecord
from graphmem.model.canonical import canonical_json, sha256
from tests.conftest import T0
from tests.test_knowledge_time import Clock, delete_behind_the_store

DAY = timedelta(days=1)
SCOPES = ["case:c1", "case:c2"]
ALL_SCOPES = [*SCOPES, "domain:d"]
WORDS = ["capture", "retry", "gateway", "timeout", "refund", "charge"]
THEN = T0 + 10 * DAY


def _content(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))


def _record(rng: random.Random, tenant: str, rid: str, recorded: datetime) -> MemoryRecord:
    scope = rng.choice(ALL_SCOPES)
    if rng.random() < 0.5:
        return MemoryRecord(
            id=rid,
            tenant=tenant,
            kind=Kind.EPISODIC,
            scope=scope,
            content=_content(rng),
            created_at=recorded,
            event_time=T0 + rng.randint(-5, 25) * DAY,
            outcome=rng.choice(["verified-success", "failure"]),
        )
    return MemoryRecord(
        id=rid,
        tenant=tenant,
        kind=Kind.SEMANTIC,
        scope=scope,
        content=_content(rng),
        created_at=recorded,
        valid_from=T0 + rng.randint(-5, 25) * DAY,
        sources=(Source(id=f"src-{rid}"),),
    )


def _setup(
    store: MemoryStore, seed: int
) -> tuple[MemoryStore, Clock, str, ReadContext, Receipt, random.Random]:
    rng = random.Random(seed)
    tenant = f"t-{uuid.uuid4().hex[:12]}"
    clock = Clock(T0)
    timed = MemoryStore(store.backend, clock=clock)
    timed.add_many(
        [_record(rng, tenant, f"r{i}", T0 + rng.randint(0, 9) * DAY) for i in range(rng.randint(3, 9))]
    )
    clock.at = THEN
    ctx = ReadContext(
        tenant=tenant,
        scopes=tuple(rng.sample(SCOPES, rng.randint(1, 2))),
        now=THEN,
        limit=rng.randint(1, 5),
    )
    receipt = timed.recall(ctx, _content(rng), explain=rng.random() < 0.5).receipt
    return timed, clock, tenant, ctx, receipt, rng


def _later_writes(timed: MemoryStore, clock: Clock, tenant: str, rng: random.Random) -> None:
    for k in range(rng.randint(1, 8)):
        clock.at = THEN + (k + 1) * DAY
        ids = [r.id for r in timed.backend.all_records(tenant) if r.status.value == "active"]
        action = rng.choice(["add", "add", "supersede", "invalidate", "merge", "contest", "nest"])
        if action == "nest":
            # A scope nesting recorded later: the earlier recall did not reach through it.
            child, parent = rng.sample(ALL_SCOPES, 2)
            with contextlib.suppress(LineageError):
                timed.scope_within(tenant, child, parent)
            continue
        if action == "add" or not ids:
            timed.add(_record(rng, tenant, f"n{k}", clock.at))
            continue
        target = timed.get(tenant, rng.choice(ids))
        assert target is not None
        if action == "merge":
            # A duplicate proposal: the stored record gains a source (a new version of it).
            timed.propose(
                WriteProposal(
                    tenant=tenant,
                    kind=target.kind,
                    scope=target.scope,
                    content=target.content,
                    event_time=target.event_time,
                    valid_from=target.valid_from,
                    outcome=target.outcome,
                    sources=(Source(id=f"dup-{k}", trust=Trust.TRUSTED),),
                    proposed_by="agent",
                ),
                source_trust=Trust.TRUSTED,
            )
        elif action == "contest":
            timed.contest(tenant, target.id, by="agent", reason="disputed")
        elif action == "supersede":
            if any(
                e.type == "SUPERSEDES" and e.dst == target.id for e in timed.trace(tenant, target.id, 0).edges
            ):
                continue
            # Effective in the past or the future of the earlier recall: only its recorded time counts.
            effective = T0 + rng.randint(-5, 25) * DAY
            new = target.model_copy(
                update={"id": f"s{k}", "content": _content(rng), "created_at": clock.at},
            )
            new = new.model_copy(
                update={"valid_from": effective} if new.kind is Kind.SEMANTIC else {"event_time": effective}
            )
            timed.supersede(tenant, target.id, MemoryRecord.model_validate(new.model_dump()), reason="newer")
        else:
            other = rng.choice(ids)
            if other != target.id:
                timed.invalidate(
                    tenant, target.id, by=other, reason="wrong", at=T0 + rng.randint(-5, 25) * DAY
                )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32))
def test_later_writes_never_break_an_earlier_receipt(store: MemoryStore, seed: int) -> None:
    timed, clock, tenant, ctx, receipt, rng = _setup(store, seed)
    _later_writes(timed, clock, tenant, rng)
    result = timed.verify(receipt, ctx)
    assert result.status == "verified", result


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32))
def test_a_forget_since_is_reported_not_hidden(store: MemoryStore, seed: int) -> None:
    timed, clock, tenant, ctx, receipt, rng = _setup(store, seed)
    _later_writes(timed, clock, tenant, rng)
    if not receipt.selected_ids:
        return
    target = rng.choice(receipt.selected_ids)
    mode = rng.choice([ForgetMode.REVOKE, ForgetMode.ERASE])
    timed.forget(ForgetRequest(tenant=tenant, target=target, mode=mode, reason="asked", requested_by="u"))
    result = timed.verify(receipt, ctx)
    assert result.status == "changed_since", result
    assert target in result.forgotten
    assert not result
    # A revoke keeps the version it replaces, so every candidate was still compared; an erase
    # took the forgotten record's fingerprint, and the verify says what it could not check.
    assert any(u.startswith("order and decisions") for u in result.unchecked)
    assert any(u.startswith("candidates") for u in result.unchecked) == (mode is ForgetMode.ERASE)


def _tamper_behind_the_store(timed: MemoryStore, tenant: str, rid: str) -> None:
    """Overwrite a record through the backend alone: no kept version, no audit event — a
    change the store never made, as someone with write access to its data could."""
    record = timed.backend.get(tenant, rid)
    assert record is not None
    changed = record.model_copy(update={"content": record.content + " (edited)"})
    timed.backend.apply([PutRecord(record=changed, replace=True)])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32))
def test_tampering_beside_a_revoke_is_still_a_mismatch(store: MemoryStore, seed: int) -> None:
    timed, clock, tenant, ctx, receipt, rng = _setup(store, seed)
    _later_writes(timed, clock, tenant, rng)
    if not receipt.selected_ids:
        return
    forgotten = rng.choice(receipt.selected_ids)
    # Candidates as they were then (no version kept since: a change to today's body of one
    # that has one is no change to what the store knew then).
    others = [
        d.record_id
        for d in timed.recall(ctx, receipt.query, explain=True).decisions
        if d.record_id != forgotten
        and not timed.backend.kept_fingerprints(tenant, [d.record_id], ctx.known_at)
    ]
    if not others:
        return
    clock.at += DAY
    timed.forget(
        ForgetRequest(
            tenant=tenant, target=forgotten, mode=ForgetMode.REVOKE, reason="asked", requested_by="u"
        )
    )
    assert timed.verify(receipt, ctx).status == "changed_since"
    _tamper_behind_the_store(timed, tenant, rng.choice(others))
    result = timed.verify(receipt, ctx)
    assert result.status == "mismatch", result
    assert any(d.startswith("candidates") for d in result.differences)


def _forged(receipt: Receipt, **changes: object) -> Receipt:
    """``receipt`` with ``changes`` and every digest over them recomputed: a careful forgery."""
    parts = receipt.model_dump(mode="json")
    parts.update({k: v for k, v in changes.items()})
    parts["selection_digest"] = sha256(canonical_json(list(parts["selected_ids"])))
    del parts["digest"]
    return Receipt(**parts, digest=sha256(canonical_json(parts)))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), how=st.integers(0, 6))
def test_tampering_always_breaks_verification(store: MemoryStore, seed: int, how: int) -> None:
    timed, clock, tenant, ctx, receipt, rng = _setup(store, seed)
    _later_writes(timed, clock, tenant, rng)
    selected = list(receipt.selected_ids)

    def flip(digest: str) -> str:
        return ("0" if digest[0] != "0" else "1") + digest[1:]

    if how == 0 and len(selected) >= 2:
        selected[0], selected[1] = selected[1], selected[0]
        tampered = _forged(receipt, selected_ids=selected)
    elif how == 1:
        tampered = receipt.model_copy(update={"candidates_digest": flip(receipt.candidates_digest)})
    elif how == 2:
        tampered = _forged(receipt, candidates_digest=flip(receipt.candidates_digest))
    elif how == 3:
        tampered = _forged(receipt, selected_ids=[*selected[:-1], "r-forged"] if selected else ["r-forged"])
    elif how == 4:
        tampered = _forged(receipt, as_of=(THEN + DAY).isoformat())
    elif how == 5 and selected:
        delete_behind_the_store(timed, tenant, rng.choice(selected))
        tampered = receipt
    else:
        tampered = _forged(receipt, decisions_digest=flip(receipt.decisions_digest))
    result = timed.verify(tampered, ctx)
    assert result.status == "mismatch", (how, result)
    assert result.differences
    assert not result
