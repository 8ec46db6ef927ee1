"""Kind contracts and write invariants, through ``store.add`` / ``store.add_many`` on every backend.

Every rejected write must raise its exact error code and leave the store as it
was: no record, no audit event.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from graphmem import (
    ConflictError,
    ContractViolation,
    GraphmemError,
    Kind,
    LineageError,
    MemoryRecord,
    MemoryStore,
    ReadContext,
    Source,
    Status,
    Trust,
)
from tests.conftest import KNOWN, T0

VALID: dict[Kind, dict[str, Any]] = {
    Kind.WORKING: {"scope": "run:r1", "content": "draft the refund reply for case 42"},
    Kind.EPISODIC: {
        "scope": "case:c42",
        "content": "retried the payment after a gateway timeout; it failed again",
        "event_time": T0,
        "outcome": "failure",
    },
    Kind.SEMANTIC: {
        "scope": "workspace:w1",
        "content": "the gateway rejects retries within 30 seconds",
        "valid_from": T0,
        "sources": (Source(id="src-doc", type="document", trust=Trust.TRUSTED),),
    },
    Kind.PROCEDURAL: {
        "scope": "domain:payments",
        "content": "wait 60 seconds, then retry once with a new idempotency key",
        "procedure_name": "retry-payment",
        "procedure_version": "1.0",
        "preconditions": ("gateway-access",),
        "outcome": "verified-success",
        "sources": (Source(id="src-test", type="test", trust=Trust.TRUSTED),),
    },
}


def make(tenant: str, kind: Kind, record_id: str, **overrides: Any) -> MemoryRecord:
    fields: dict[str, Any] = {"id": record_id, "tenant": tenant, "kind": kind, "created_at": T0}
    fields.update(VALID[kind])
    fields.update(overrides)
    return MemoryRecord(**fields)


def good_batch(tenant: str) -> list[MemoryRecord]:
    return [make(tenant, kind, f"good-{kind.value}") for kind in Kind]


def assert_nothing_written(store: MemoryStore, tenant: str, ids: list[str], audit_before: int) -> None:
    for record_id in ids:
        assert store.get(tenant, record_id) is None, record_id
    assert len(store.audit(tenant)) == audit_before


# -- valid records of each kind are accepted -----------------------------------


@pytest.mark.parametrize("kind", list(Kind))
def test_valid_record_of_each_kind_is_accepted(store: MemoryStore, tenant: str, kind: Kind) -> None:
    r = make(tenant, kind, "r1")
    assert store.add(r) == r
    assert store.get(tenant, "r1") == r
    events = store.audit(tenant)
    assert len(events) == 1
    assert events[0].record_ids == ("r1",)
    assert store.audit(tenant, record_id="r1") == events


def test_add_many_writes_all_records_and_one_audit_event(store: MemoryStore, tenant: str) -> None:
    batch = good_batch(tenant)
    assert store.add_many(batch) == batch
    for r in batch:
        assert store.get(tenant, r.id) == r
    events = store.audit(tenant)
    assert len(events) == 1
    assert set(events[0].record_ids) == {r.id for r in batch}


def test_get_many_returns_the_stored_records_in_the_asked_order_however_many(
    store: MemoryStore, tenant: str
) -> None:
    """A read by ids of more records than one fetch takes (the embedded store fetches 500 a
    statement): every stored one, in the asked order, repeats kept, unknown ids left out."""
    batch = [make(tenant, Kind.SEMANTIC, f"many-{i:04d}", content=f"fact {i}") for i in range(1201)]
    store.add_many(batch)
    asked = [r.id for r in reversed(batch)] + ["many-0007", "not-stored"]
    got = store.backend.get_many(tenant, asked)
    assert [r.id for r in got] == [r.id for r in reversed(batch)] + ["many-0007"]
    assert got == [*reversed(batch), batch[7]]


@pytest.mark.parametrize("outcome", ["unknown", "failure", "verified-success", "card-declined"])
def test_episode_outcome_may_be_unknown_failed_or_a_label(
    store: MemoryStore, tenant: str, outcome: str
) -> None:
    store.add(make(tenant, Kind.EPISODIC, "ep", outcome=outcome))
    stored = store.get(tenant, "ep")
    assert stored is not None
    assert stored.outcome == outcome


def test_derived_from_is_enough_provenance(store: MemoryStore, tenant: str) -> None:
    store.add(make(tenant, Kind.EPISODIC, "ep", outcome="verified-success"))
    store.add(make(tenant, Kind.SEMANTIC, "claim", sources=(), derived_from=("ep",)))
    store.add(make(tenant, Kind.PROCEDURAL, "proc", sources=(), derived_from=("ep",)))
    assert store.get(tenant, "claim") is not None
    assert store.get(tenant, "proc") is not None


def test_parent_earlier_in_the_same_batch_is_accepted(store: MemoryStore, tenant: str) -> None:
    parent = make(tenant, Kind.EPISODIC, "ep")
    child = make(tenant, Kind.SEMANTIC, "claim", sources=(), derived_from=("ep",))
    store.add_many([parent, child])
    assert store.get(tenant, "claim") == child


@pytest.mark.parametrize("status", [s for s in Status if s is not Status.ERASED])
def test_any_status_but_erased_may_be_written(store: MemoryStore, tenant: str, status: Status) -> None:
    store.add(make(tenant, Kind.SEMANTIC, "r", status=status))
    stored = store.get(tenant, "r")
    assert stored is not None
    assert stored.status is status


# -- contract violations: exact code, nothing written -----------------------------

VIOLATIONS: list[tuple[Kind, dict[str, Any], str]] = [
    (Kind.WORKING, {"scope": "workspace:w1"}, "working_needs_run_scope"),
    (Kind.WORKING, {"scope": "case:c42"}, "working_needs_run_scope"),
    (Kind.EPISODIC, {"event_time": None}, "episodic_needs_event_time"),
    (Kind.EPISODIC, {"outcome": None}, "episodic_needs_outcome"),
    (Kind.SEMANTIC, {"sources": ()}, "semantic_needs_provenance"),
    (Kind.SEMANTIC, {"valid_from": None}, "semantic_needs_valid_from"),
    (Kind.PROCEDURAL, {"procedure_name": None}, "procedure_needs_name_version"),
    (Kind.PROCEDURAL, {"procedure_version": None}, "procedure_needs_name_version"),
    (Kind.PROCEDURAL, {"procedure_name": ""}, "procedure_needs_name_version"),
    (Kind.PROCEDURAL, {"preconditions": ()}, "procedure_needs_preconditions"),
    (Kind.PROCEDURAL, {"preconditions": ("gateway-access", "  ")}, "procedure_needs_preconditions"),
    (Kind.PROCEDURAL, {"sources": ()}, "procedure_needs_evidence"),
    (Kind.WORKING, {"content": ""}, "empty_content"),
    (Kind.EPISODIC, {"content": " \n\t "}, "empty_content"),
    (Kind.SEMANTIC, {"content": ""}, "empty_content"),
    (Kind.PROCEDURAL, {"content": "   "}, "empty_content"),
    (Kind.SEMANTIC, {"status": Status.ERASED}, "erased_on_write"),
    (Kind.SEMANTIC, {"valid_to": T0}, "empty_validity"),
    (Kind.SEMANTIC, {"valid_to": T0 - timedelta(days=1)}, "empty_validity"),
    (Kind.SEMANTIC, {"expires_at": T0}, "empty_validity"),
    (Kind.EPISODIC, {"expires_at": T0 - timedelta(days=400)}, "empty_validity"),
    (Kind.EPISODIC, {"embedding": ()}, "empty_embedding"),
]
VIOLATION_IDS = [f"{kind.value}-{code}-{i}" for i, (kind, _, code) in enumerate(VIOLATIONS)]


@pytest.mark.parametrize(("kind", "overrides", "code"), VIOLATIONS, ids=VIOLATION_IDS)
def test_add_rejects_contract_violation(
    store: MemoryStore, tenant: str, kind: Kind, overrides: dict[str, Any], code: str
) -> None:
    bad = make(tenant, kind, "bad", **overrides)
    with pytest.raises(ContractViolation) as info:
        store.add(bad)
    assert info.value.code == code
    assert info.value.message
    assert_nothing_written(store, tenant, ["bad"], 0)


@pytest.mark.parametrize(("kind", "overrides", "code"), VIOLATIONS, ids=VIOLATION_IDS)
@pytest.mark.parametrize("position", [0, 2, 4])
def test_add_many_with_one_violation_writes_nothing(
    store: MemoryStore, tenant: str, kind: Kind, overrides: dict[str, Any], code: str, position: int
) -> None:
    store.add(make(tenant, Kind.EPISODIC, "existing"))
    before = len(store.audit(tenant))
    batch = good_batch(tenant)
    batch.insert(position, make(tenant, kind, "bad", **overrides))
    with pytest.raises(ContractViolation) as info:
        store.add_many(batch)
    assert info.value.code == code
    assert_nothing_written(store, tenant, [r.id for r in batch], before)
    assert store.get(tenant, "existing") is not None


# Field values that fail validation; model_copy(update=...) and model_construct skip it.
UNCHECKED = [
    ({"scope": "no scope key"}, "invalid_scope"),
    ({"tenant": "no tenant!"}, "invalid_tenant"),
    ({"content": "x" * 100_001}, "invalid_memoryrecord"),
]


@pytest.mark.parametrize(("update", "code"), UNCHECKED, ids=[c for _, c in UNCHECKED])
@pytest.mark.parametrize("how", ["model_copy", "model_construct"])
def test_records_that_skipped_validation_are_validated_on_write(
    store: MemoryStore, tenant: str, update: dict[str, Any], code: str, how: str
) -> None:
    good = make(tenant, Kind.SEMANTIC, "unchecked")
    if how == "model_copy":
        bad = good.model_copy(update=update)
    else:
        bad = MemoryRecord.model_construct(**{**dict(good), **update})
    with pytest.raises(ContractViolation) as info:
        store.add_many([*good_batch(tenant), bad])
    assert info.value.code == code
    assert_nothing_written(store, tenant, ["unchecked", *(r.id for r in good_batch(tenant))], 0)


def test_add_rejects_what_is_not_a_record(store: MemoryStore, tenant: str) -> None:
    with pytest.raises(ContractViolation) as info:
        store.add_many([make(tenant, Kind.WORKING, "ok"), {"id": "x"}])  # type: ignore[list-item]
    assert info.value.code == "not_a_record"
    assert_nothing_written(store, tenant, ["ok"], 0)


# -- ids and lineage ---------------------------------------------------------------


def test_duplicate_id_is_a_conflict_and_keeps_the_original(store: MemoryStore, tenant: str) -> None:
    first = make(tenant, Kind.SEMANTIC, "dup")
    store.add(first)
    before = len(store.audit(tenant))
    with pytest.raises(ConflictError) as info:
        store.add(make(tenant, Kind.SEMANTIC, "dup", content="a different claim"))
    assert info.value.code == "duplicate_id"
    assert store.get(tenant, "dup") == first
    assert len(store.audit(tenant)) == before


def test_duplicate_id_of_stored_record_in_batch_writes_nothing(store: MemoryStore, tenant: str) -> None:
    store.add(make(tenant, Kind.SEMANTIC, "dup"))
    before = len(store.audit(tenant))
    batch = [*good_batch(tenant), make(tenant, Kind.EPISODIC, "dup")]
    with pytest.raises(ConflictError) as info:
        store.add_many(batch)
    assert info.value.code == "duplicate_id"
    assert_nothing_written(store, tenant, [r.id for r in batch[:-1]], before)
    stored = store.get(tenant, "dup")
    assert stored is not None
    assert stored.kind is Kind.SEMANTIC


def test_duplicate_id_within_one_batch_writes_nothing(store: MemoryStore, tenant: str) -> None:
    batch = [*good_batch(tenant), make(tenant, Kind.WORKING, "twice"), make(tenant, Kind.EPISODIC, "twice")]
    with pytest.raises(ConflictError) as info:
        store.add_many(batch)
    assert info.value.code == "duplicate_id"
    assert_nothing_written(store, tenant, [r.id for r in batch], 0)


def test_same_id_in_another_tenant_is_allowed(store: MemoryStore, tenant: str) -> None:
    other = f"{tenant}-other"
    store.add(make(tenant, Kind.SEMANTIC, "shared"))
    store.add(make(other, Kind.SEMANTIC, "shared", content="another tenant's claim"))
    a, b = store.get(tenant, "shared"), store.get(other, "shared")
    assert a is not None
    assert b is not None
    assert a.content != b.content


def test_unknown_parent_is_a_lineage_error(store: MemoryStore, tenant: str) -> None:
    batch = [*good_batch(tenant), make(tenant, Kind.SEMANTIC, "claim", derived_from=("no-such-episode",))]
    with pytest.raises(LineageError) as info:
        store.add_many(batch)
    assert info.value.code == "unknown_parent"
    assert_nothing_written(store, tenant, [r.id for r in batch], 0)


def test_parent_in_another_tenant_is_unknown(store: MemoryStore, tenant: str) -> None:
    other = f"{tenant}-other"
    store.add(make(other, Kind.EPISODIC, "ep"))
    with pytest.raises(LineageError) as info:
        store.add(make(tenant, Kind.SEMANTIC, "claim", derived_from=("ep",)))
    assert info.value.code == "unknown_parent"
    assert_nothing_written(store, tenant, ["claim"], 0)


def test_self_derivation_is_a_lineage_error(store: MemoryStore, tenant: str) -> None:
    with pytest.raises(LineageError) as info:
        store.add(make(tenant, Kind.SEMANTIC, "loop", derived_from=("loop",)))
    assert info.value.code == "lineage_cycle"
    assert_nothing_written(store, tenant, ["loop"], 0)


def test_parent_later_in_the_same_batch_is_accepted(store: MemoryStore, tenant: str) -> None:
    parent = make(tenant, Kind.EPISODIC, "ep")
    child = make(tenant, Kind.SEMANTIC, "claim", sources=(), derived_from=("ep",))
    store.add_many([child, parent])
    assert store.get(tenant, "ep") == parent
    assert store.get(tenant, "claim") == child


def test_derived_from_cycle_within_a_batch_is_rejected(store: MemoryStore, tenant: str) -> None:
    a = make(tenant, Kind.SEMANTIC, "a", sources=(), derived_from=("b",))
    b = make(tenant, Kind.SEMANTIC, "b", sources=(), derived_from=("a",))
    with pytest.raises(LineageError):
        store.add_many([a, b])
    assert_nothing_written(store, tenant, ["a", "b"], 0)


@pytest.mark.parametrize("outcome", ["failure", "unknown"])
def test_procedure_derived_from_unsuccessful_episode_is_rejected(
    store: MemoryStore, tenant: str, outcome: str
) -> None:
    store.add(make(tenant, Kind.EPISODIC, "ep", outcome=outcome))
    before = len(store.audit(tenant))
    with pytest.raises(GraphmemError):
        store.add(make(tenant, Kind.PROCEDURAL, "proc", sources=(), derived_from=("ep",)))
    assert_nothing_written(store, tenant, ["proc"], before)


# -- scopes ------------------------------------------------------------------------


def _sees(store: MemoryStore, tenant: str, scope: str, record_id: str) -> bool:
    ctx = ReadContext(as_of=KNOWN, tenant=tenant, scopes=(scope,), now=T0)
    return record_id in store.recall(ctx, "").ids


@pytest.mark.parametrize(
    ("edges", "closing"),
    [
        ([], ("workspace:w1", "workspace:w1")),
        ([("workspace:w1", "tenant:acme")], ("tenant:acme", "workspace:w1")),
        (
            [("case:c1", "workspace:w1"), ("workspace:w1", "tenant:acme")],
            ("tenant:acme", "case:c1"),
        ),
    ],
    ids=["self", "two", "three"],
)
def test_scope_within_cycle_is_a_lineage_error(
    store: MemoryStore, tenant: str, edges: list[tuple[str, str]], closing: tuple[str, str]
) -> None:
    child, parent = closing
    for below, above in edges:
        store.scope_within(tenant, below, above)
    store.add(make(tenant, Kind.SEMANTIC, "at-parent", scope=parent))
    with pytest.raises(LineageError) as info:
        store.scope_within(tenant, child, parent)
    assert info.value.code == "scope_cycle"
    if child != parent:
        # The rejected edge was not written: the parent's record does not apply inside the child.
        assert not _sees(store, tenant, child, "at-parent")


def test_scope_within_makes_parent_records_apply_inside_child(store: MemoryStore, tenant: str) -> None:
    store.add(make(tenant, Kind.SEMANTIC, "ws-claim", scope="workspace:w1"))
    assert not _sees(store, tenant, "case:c1", "ws-claim")
    store.scope_within(tenant, "case:c1", "workspace:w1")
    store.scope_within(tenant, "case:c1", "workspace:w1")  # idempotent
    assert _sees(store, tenant, "case:c1", "ws-claim")


@pytest.mark.parametrize(("child", "parent"), [("workspace", "tenant:acme"), ("case:c1", "Tenant:acme")])
def test_scope_within_rejects_invalid_scopes(
    store: MemoryStore, tenant: str, child: str, parent: str
) -> None:
    with pytest.raises(ContractViolation) as info:
        store.scope_within(tenant, child, parent)
    assert info.value.code == "invalid_scope"


@pytest.mark.parametrize("rel_type", ["uses", "Uses", "USES-GW", "", "1USES", "X" * 33])
def test_relate_scopes_rejects_invalid_relation_type(store: MemoryStore, tenant: str, rel_type: str) -> None:
    with pytest.raises(ContractViolation) as info:
        store.relate_scopes(tenant, "merchant:m1", rel_type, "system:gw-2")
    assert info.value.code == "invalid_relation_type"


def test_relate_scopes_accepts_upper_case_types(store: MemoryStore, tenant: str) -> None:
    store.relate_scopes(tenant, "merchant:m1", "USES", "system:gw-2")
    store.relate_scopes(tenant, "release:v2", "SUCCEEDS", "release:v1")


# -- tenants -----------------------------------------------------------------------


def test_missing_tenant_on_reads_is_a_contract_violation(store: MemoryStore) -> None:
    for call in (
        lambda: store.get("", "r1"),
        lambda: store.audit(""),
        lambda: store.audit("", record_id="r1"),
        lambda: store.scope_within("", "case:c1", "workspace:w1"),
        lambda: store.relate_scopes("", "merchant:m1", "USES", "system:gw-2"),
    ):
        with pytest.raises(ContractViolation) as info:
            call()
        assert info.value.code == "missing_tenant"


def test_none_tenant_on_reads_is_missing_tenant(store: MemoryStore) -> None:
    for call in (lambda: store.get(None, "r1"), lambda: store.audit(None)):  # type: ignore[arg-type]
        with pytest.raises(ContractViolation) as info:
            call()
        assert info.value.code == "missing_tenant"


def test_invalid_tenant_on_reads_is_a_contract_violation(store: MemoryStore) -> None:
    with pytest.raises(ContractViolation) as info:
        store.get("acme corp", "r1")
    assert info.value.code == "invalid_tenant"


def test_every_write_error_is_a_graphmem_error(store: MemoryStore, tenant: str) -> None:
    store.add(make(tenant, Kind.SEMANTIC, "dup"))
    for bad in (
        make(tenant, Kind.WORKING, "w", scope="workspace:w1"),
        make(tenant, Kind.SEMANTIC, "dup"),
        make(tenant, Kind.SEMANTIC, "orphan", derived_from=("missing",)),
    ):
        with pytest.raises(GraphmemError) as info:
            store.add(bad)
        assert info.value.code
