"""Receipts (SPEC §3): order-independent digests that ``verify`` recomputes and that catch mutation."""

from __future__ import annotations

import functools
import math
import random
import re
import struct
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem import (
    Kind,
    MemoryRecord,
    MemoryStore,
    ReadContext,
    Receipt,
    Sensitivity,
    Source,
    Status,
    Trust,
)
from graphmem.model.canonical import canonical_json, canonical_json_with, float_list_json, float_reprs, sha256
from graphmem.ranking import SELECTOR_VERSION
from tests.conftest import KNOWN, T0

H = timedelta(hours=1)
HEX64 = re.compile(r"[0-9a-f]{64}")
DIGESTS = ("context_digest", "candidates_digest", "selection_digest", "decisions_digest", "digest")
EDGES = [("run:r1", "workspace:w1"), ("workspace:w1", "tenant:acme"), ("run:r2", "workspace:w2")]
QUERY = "gateway retry timeout"
SRC = (Source(id="src-runbook", type="document", trust=Trust.TRUSTED),)


def records(tenant: str) -> list[MemoryRecord]:
    """A mix of selected, limited and dropped records, plus some that are no candidates at all."""

    base: dict[str, Any] = {"tenant": tenant, "created_at": T0 - 24 * H}

    def semantic(record_id: str, content: str, **kw: Any) -> MemoryRecord:
        fields: dict[str, Any] = {"valid_from": T0 - 2 * H, "sources": SRC, "scope": "workspace:w1", **base}
        fields.update(kw)
        return MemoryRecord(id=record_id, kind=Kind.SEMANTIC, content=content, **fields)

    return [
        semantic("hit-1", "the gateway rejects a retry within 30 seconds of a timeout"),
        semantic("hit-2", "retry the payment once", valid_from=T0 - 3 * H),
        semantic("org", "gateway timeouts are reported to the on-call", scope="tenant:acme"),
        semantic("miss", "the office is closed on public holidays"),
        semantic("tie-b", "gateway retry", valid_from=T0 - 5 * H),
        semantic("tie-a", "gateway retry", valid_from=T0 - 5 * H),
        semantic("near", "retry gateway", embedding=(1.0, 0.0), valid_from=T0 - 6 * H),
        semantic("far", "retry gateway", embedding=(0.0, 1.0), valid_from=T0 - 6 * H),
        semantic("revoked", "gateway retry timeout", status=Status.REVOKED),
        semantic("future", "gateway retry timeout", valid_from=T0 + H),
        semantic("secret", "gateway retry timeout key", sensitivity=Sensitivity.CONFIDENTIAL),
        semantic("other-ws", "gateway retry timeout", scope="workspace:w2"),
        MemoryRecord(
            id="ep-fail",
            **base,
            kind=Kind.EPISODIC,
            scope="workspace:w1",
            content="retried after a gateway timeout and it failed",
            event_time=T0 - H,
            outcome="failure",
        ),
        MemoryRecord(
            id="proc",
            **base,
            kind=Kind.PROCEDURAL,
            scope="workspace:w1",
            content="after a gateway timeout wait 60 seconds then retry with a new key",
            procedure_name="retry-payment",
            procedure_version="2",
            preconditions=("gateway-access",),
            outcome="verified-success",
            sources=SRC,
        ),
        MemoryRecord(
            id="proc-failed",
            **base,
            kind=Kind.PROCEDURAL,
            scope="workspace:w1",
            content="retry immediately after a gateway timeout",
            procedure_name="retry-payment",
            procedure_version="1",
            preconditions=("gateway-access",),
            outcome="failure",
            sources=SRC,
        ),
        MemoryRecord(id="w-mine", **base, kind=Kind.WORKING, scope="run:r1", content="retry count is 2"),
        MemoryRecord(id="w-other", **base, kind=Kind.WORKING, scope="run:r2", content="gateway retry"),
    ]


def context(tenant: str, **overrides: Any) -> ReadContext:
    fields: dict[str, Any] = {
        "tenant": tenant,
        "scopes": ("workspace:w1",),
        "run_id": "r1",
        "now": T0,
        "as_of": KNOWN,
        "environment": ("gateway-access",),
        "limit": 5,
    }
    fields.update(overrides)
    return ReadContext(**fields)


def fill(
    store: MemoryStore, tenant: str, order: list[int] | None = None, edges: list[Any] | None = None
) -> None:
    recs = records(tenant)
    for child, parent in edges if edges is not None else EDGES:
        store.scope_within(tenant, child, parent)
    for i in order if order is not None else range(len(recs)):
        store.add(recs[i])


def recall(store: MemoryStore, ctx: ReadContext, explain: bool = False) -> Receipt:
    return store.recall(ctx, QUERY, explain=explain, query_embedding=(1.0, 0.0)).receipt


@functools.cache
def baseline() -> tuple[Receipt, tuple[str, ...]]:
    with MemoryStore.embedded() as store:
        fill(store, "acme")
        selection = store.recall(context("acme"), QUERY, explain=True, query_embedding=(1.0, 0.0))
        return selection.receipt, tuple(selection.ids)


# -- shape ---------------------------------------------------------------------------


def test_receipt_digests_are_sha256_hex_and_carry_the_selector_version(
    store: MemoryStore, tenant: str
) -> None:
    fill(store, tenant)
    selection = store.recall(context(tenant), QUERY, explain=True)
    receipt = selection.receipt
    for name in DIGESTS:
        assert HEX64.fullmatch(getattr(receipt, name)), name
    assert len({getattr(receipt, name) for name in DIGESTS}) == len(DIGESTS)
    assert receipt.selector_version == SELECTOR_VERSION
    assert receipt.selector_version
    assert receipt.query == QUERY
    assert list(receipt.selected_ids) == selection.ids
    assert len(selection.ids) == 5


def test_explain_does_not_change_the_receipt(store: MemoryStore, tenant: str) -> None:
    fill(store, tenant)
    ctx = context(tenant)
    assert recall(store, ctx, explain=True) == recall(store, ctx, explain=False)
    assert recall(store, ctx) == recall(store, ctx)


def test_different_query_gives_different_receipt(store: MemoryStore, tenant: str) -> None:
    fill(store, tenant)
    ctx = context(tenant)
    a = store.recall(ctx, "gateway").receipt
    b = store.recall(ctx, "holidays").receipt
    assert a.context_digest != b.context_digest
    assert a.digest != b.digest
    assert a.candidates_digest == b.candidates_digest


# -- order independence ------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.permutations(range(len(records("acme")))), st.permutations(EDGES))
def test_insertion_order_does_not_change_the_receipt(order: list[int], edges: list[Any]) -> None:
    expected, expected_ids = baseline()
    with MemoryStore.embedded() as store:
        fill(store, "acme", order, edges)
        selection = store.recall(context("acme"), QUERY, explain=True, query_embedding=(1.0, 0.0))
        assert selection.receipt == expected
        assert tuple(selection.ids) == expected_ids
        assert store.verify(expected, context("acme"))


@settings(max_examples=15, deadline=None)
@given(st.permutations(records("acme")))
def test_one_batch_in_any_order_gives_the_same_receipt(batch: list[MemoryRecord]) -> None:
    expected, _ = baseline()
    with MemoryStore.embedded() as store:
        for child, parent in reversed(EDGES):
            store.scope_within("acme", child, parent)
        store.add_many(batch)
        assert recall(store, context("acme"), explain=True) == expected


def test_receipt_is_identical_on_every_backend(store: MemoryStore, tenant: str) -> None:
    fill(store, tenant)
    with MemoryStore.embedded() as reference:
        fill(reference, tenant, order=list(reversed(range(len(records(tenant))))))
        assert recall(store, context(tenant)) == recall(reference, context(tenant))


# -- verify ------------------------------------------------------------------------------


def test_verify_accepts_an_untouched_store(store: MemoryStore, tenant: str) -> None:
    fill(store, tenant)
    ctx = context(tenant)
    receipt = recall(store, ctx, explain=True)
    assert store.verify(receipt, ctx)
    assert store.verify(receipt, ctx)  # verifying does not change anything
    plain = store.recall(ctx, "").receipt
    assert store.verify(plain, ctx)


def test_verify_ignores_writes_that_are_not_candidates(store: MemoryStore, tenant: str) -> None:
    fill(store, tenant)
    ctx = context(tenant)
    receipt = recall(store, ctx)
    store.add(records(tenant)[0].model_copy(update={"id": "elsewhere", "scope": "workspace:w9"}))
    store.add(records(tenant)[-1].model_copy(update={"id": "r2-note"}))
    other = f"{tenant}-x"
    store.add(records(other)[0])
    assert store.verify(receipt, ctx)


def test_verify_detects_a_new_candidate_that_changes_no_selection(store: MemoryStore, tenant: str) -> None:
    fill(store, tenant)
    ctx = context(tenant)
    before = recall(store, ctx)
    # A dropped candidate: it changes neither the survivors' scores nor the selection.
    store.add(records(tenant)[0].model_copy(update={"id": "hit-1-revoked", "status": Status.REVOKED}))
    after = recall(store, ctx)
    assert after.selected_ids == before.selected_ids
    assert after.selection_digest == before.selection_digest
    assert after.candidates_digest != before.candidates_digest
    assert not store.verify(before, ctx)
    assert store.verify(after, ctx)


def test_verify_detects_a_change_of_selection(store: MemoryStore, tenant: str) -> None:
    fill(store, tenant)
    ctx = context(tenant)
    before = recall(store, ctx)
    best = records(tenant)[0].model_copy(
        update={
            "id": "best",
            "content": "gateway retry timeout: gateway retry timeout",
            "valid_from": T0,
            "embedding": (1.0, 0.0),
        }
    )
    store.add(best)
    after = recall(store, ctx)
    assert after.selected_ids[0] == "best"
    assert after.selection_digest != before.selection_digest
    assert not store.verify(before, ctx)


def test_verify_detects_an_invalidation_in_effect(store: MemoryStore, tenant: str) -> None:
    fill(store, tenant)
    ctx = context(tenant)
    before = recall(store, ctx)
    assert "hit-1" in before.selected_ids
    store.invalidate(tenant, "hit-1", by="src-runbook", reason="runbook revised", at=T0 + H)
    assert store.verify(before, ctx)  # not yet in effect as of ctx.now
    store.invalidate(tenant, "hit-2", by="src-runbook", reason="runbook revised", at=T0)
    assert not store.verify(before, ctx)


def test_verify_rejects_swapped_selected_ids(store: MemoryStore, tenant: str) -> None:
    fill(store, tenant)
    ctx = context(tenant)
    receipt = recall(store, ctx)
    ids = list(receipt.selected_ids)
    assert len(ids) >= 2
    ids[0], ids[1] = ids[1], ids[0]
    swapped = receipt.model_copy(update={"selected_ids": tuple(ids)})
    assert not store.verify(swapped, ctx)
    # Even with every digest recomputed to match, the store's own recall disagrees.
    parts = swapped.model_dump(mode="json")
    parts["selection_digest"] = sha256(canonical_json(ids))
    del parts["digest"]
    forged = Receipt(**parts, digest=sha256(canonical_json(parts)))
    assert not store.verify(forged, ctx)


@pytest.mark.parametrize("name", [*DIGESTS, "selector_version", "query"])
def test_verify_rejects_any_tampered_field(store: MemoryStore, tenant: str, name: str) -> None:
    fill(store, tenant)
    ctx = context(tenant)
    receipt = recall(store, ctx)
    value = "0" * 64 if name in DIGESTS else "something else"
    assert not store.verify(receipt.model_copy(update={name: value}), ctx)


@pytest.mark.parametrize(
    "change",
    [
        {"now": T0 + timedelta(microseconds=1)},
        {"now": T0 + 2 * H},
        {"limit": 6},
        {"scopes": ("workspace:w1", "workspace:w2")},
        {"scopes": ("workspace:w2",)},
        {"run_id": "r2"},
        {"kinds": (Kind.SEMANTIC,)},
        {"clearance": Sensitivity.CONFIDENTIAL},
        {"environment": ()},
        {"min_score": 0.1},
        {"policy": "v2"},
    ],
    ids=lambda change: "-".join(change),
)
def test_verify_rejects_a_different_context(store: MemoryStore, tenant: str, change: dict[str, Any]) -> None:
    fill(store, tenant)
    receipt = recall(store, context(tenant))
    assert not store.verify(receipt, context(tenant, **change))
    assert store.verify(receipt, context(tenant))


# -- the audit trail of recalls ---------------------------------------------------------


def test_each_recall_appends_one_audit_event_naming_its_receipt(store: MemoryStore, tenant: str) -> None:
    fill(store, tenant)
    before = len(store.audit(tenant))
    first = store.recall(context(tenant), QUERY, actor="agent-1")
    second = store.recall(context(tenant, limit=1), "holidays", actor="agent-2")
    empty = store.recall(context(tenant, scopes=("workspace:nowhere",), run_id=None), QUERY)
    events = store.audit(tenant)[before:]
    assert [e.action for e in events] == ["recalled"] * 3
    for event, selection, actor in zip(
        events, (first, second, empty), ("agent-1", "agent-2", None), strict=True
    ):
        assert event.actor == actor
        assert event.record_ids == selection.receipt.selected_ids
        assert event.details == {
            "receipt": selection.receipt.digest,
            "context": selection.receipt.context_digest,
        }
        # The records returned are the selected ones, in rank order.
        assert [r.id for r in selection.records] == list(selection.receipt.selected_ids)
    assert first.ids
    assert not empty.ids


def test_verify_and_explain_append_no_audit_event(store: MemoryStore, tenant: str) -> None:
    fill(store, tenant)
    selection = store.recall(context(tenant), QUERY)
    before = len(store.audit(tenant))
    assert store.verify(selection.receipt, context(tenant))
    store.explain(context(tenant), "hit-1", QUERY)
    assert len(store.audit(tenant)) == before


def test_recall_without_auditing_appends_nothing(tenant: str) -> None:
    with MemoryStore.embedded(audit_recalls=False) as store:
        fill(store, tenant)
        before = len(store.audit(tenant))
        assert store.recall(context(tenant), QUERY).ids
        assert len(store.audit(tenant)) == before


def test_recall_audit_events_outlive_a_clean_close_and_sync_ones_are_written_before_recall_returns(
    reopenable: Callable[[], MemoryStore], tenant: str
) -> None:
    """Default: queued off the read path, appended in a batch, none lost on a clean close.
    ``audit_recalls="sync"``: another client sees the event as soon as recall returned."""
    with reopenable() as store:
        fill(store, tenant)
        digests = [store.recall(context(tenant), QUERY).receipt.digest for _ in range(5)]
    with reopenable() as store:
        assert [e.details["receipt"] for e in store.audit(tenant) if e.action == "recalled"] == digests
    with reopenable() as store, reopenable() as other:
        sync = MemoryStore(store.backend, audit_recalls="sync")
        digest = sync.recall(context(tenant), QUERY).receipt.digest
        seen = [
            e.details["receipt"] for e in other.backend.audit(tenant, None, None) if e.action == "recalled"
        ]
        assert seen == [*digests, digest]
        silent = MemoryStore(store.backend, audit_recalls=False)
        assert silent.recall(context(tenant), QUERY).ids == sync.recall(context(tenant), QUERY).ids
        assert len([e for e in store.audit(tenant) if e.action == "recalled"]) == 7


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@given(st.dictionaries(st.text(max_size=8), _JSON_VALUES, max_size=8), st.data())
@settings(max_examples=200, deadline=None)
def test_canonical_json_with_values_written_already_is_canonical_json(
    value: dict[str, Any], data: Any
) -> None:
    """Splicing the canonical JSON of some values (written once for two digests) changes no byte."""
    keys = data.draw(st.sets(st.sampled_from(sorted(value))) if value else st.just(set()))
    written = {key: canonical_json(value[key]) for key in keys}
    assert canonical_json_with(value, written) == canonical_json(value)


_FINITE = st.floats(allow_nan=False, allow_infinity=False)
# Floats about where repr's notation changes (10^-4 and 10^16), and as scores and embeddings are.
_EDGES = st.sampled_from([0.0, -0.0, 1e-4, 9.999999999999999e-05, 1e-05, 1e16, 9999999999999998.0, 5e-324])
_SCORES = st.floats(0.0, 1.0).map(lambda s: round(s, 9))


@given(values=st.lists(st.one_of(_FINITE, _EDGES, _SCORES, st.floats(-1e-3, 1e-3)), max_size=60))
@settings(max_examples=400, deadline=None)
def test_floats_are_written_as_repr_and_json_write_them(values: list[float]) -> None:
    """The fast float writers (orjson, and repr where its notation differs) write every finite
    float byte for byte as ``repr`` and canonical JSON do."""
    written, starts, lengths = float_reprs(values)
    text = written.tobytes()
    assert [
        text[a : a + n].decode("ascii") for a, n in zip(starts.tolist(), lengths.tolist(), strict=True)
    ] == [repr(v) for v in values]
    assert float_list_json(values) == canonical_json(values)


def test_floats_are_written_as_repr_over_every_bit_pattern() -> None:
    """200,000 floats from random bit patterns (every exponent) and 100,000 like embeddings."""
    rng = random.Random(11)
    values = [rng.gauss(0.0, 0.05) for _ in range(100_000)]
    while len(values) < 300_000:
        value = struct.unpack("<d", rng.randbytes(8))[0]
        if math.isfinite(value):
            values.append(value)
    written, starts, lengths = float_reprs(values)
    text = written.tobytes()
    wrong = [
        v
        for v, a, n in zip(values, starts.tolist(), lengths.tolist(), strict=True)
        if text[a : a + n] != repr(v).encode()
    ]
    assert wrong == []
    assert float_list_json(values[:5000]) == canonical_json(values[:5000])


def test_a_hybrid_receipt_digests_its_query_embedding_as_canonical_json(
    store: MemoryStore, tenant: str
) -> None:
    """The receipt's digests, with the query embedding's JSON written once, are those of the
    whole canonical JSON, so ``verify`` (which writes it for each digest) agrees."""
    store.add(
        MemoryRecord(
            tenant=tenant,
            kind=Kind.WORKING,
            scope="run:r1",
            content="refund policy",
            embedding=(0.1, 0.2, 0.3),
        )
    )
    ctx = ReadContext(tenant=tenant, scopes=("run:r1",), now=T0, as_of=KNOWN)
    embedding = (0.1, -0.25, 1 / 3)
    selection = store.recall(ctx, "refund", query_embedding=embedding)
    assert selection.ids
    receipt = selection.receipt
    parts = receipt.model_dump(mode="json")
    del parts["digest"]
    if parts["embedding_model"] is None:
        del parts["embedding_model"]
    assert receipt.digest == sha256(canonical_json(parts))
    assert store.verify(receipt, ctx)
