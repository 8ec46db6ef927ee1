"""``import_`` is no way around the rules, on every backend.

The lines are exports (or hand-made export lines) loaded into the shared ``store``:
the same contracts, secret and sensitivity checks as ``add``/``propose``; no stored
record overwritten unless the caller asks; no dangling or cross-tenant edge; no new
cycle or second successor; all or nothing; and an export still imports exactly.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from graphmem import (
    ConflictError,
    ContractViolation,
    ForgetMode,
    ForgetRequest,
    GraphmemError,
    Kind,
    LineageError,
    MemoryRecord,
    MemoryStore,
    Sensitivity,
    Source,
    Status,
    Trust,
    WritePolicy,
)
from graphmem.backends.base import AddEdge, PutRecord, ScopeWithin, UpdateRecord
from tests.conftest import T0

DAY = timedelta(days=1)
API_KEY = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"


def _episode(tenant: str, rid: str, **fields: Any) -> MemoryRecord:
    base: dict[str, Any] = {
        "id": rid,
        "tenant": tenant,
        "kind": Kind.EPISODIC,
        "scope": "user:alice",
        "content": f"Alice asked for email follow-up ({rid}).",
        "event_time": T0,
        "outcome": "verified-success",
        "sources": (Source(id=f"msg-{rid}", trust=Trust.TRUSTED, quote="email please"),),
    }
    return MemoryRecord.model_construct(**{**base, **fields})


def _claim(tenant: str, rid: str, parents: tuple[str, ...], **fields: Any) -> MemoryRecord:
    base: dict[str, Any] = {
        "id": rid,
        "tenant": tenant,
        "kind": Kind.SEMANTIC,
        "scope": "user:alice",
        "content": f"Alice prefers email ({rid}).",
        "valid_from": T0 + DAY,
        "derived_from": parents,
        "sources": (Source(id=f"msg-{rid}", trust=Trust.TRUSTED),),
    }
    return MemoryRecord.model_construct(**{**base, **fields})


def _put(record: MemoryRecord) -> str:
    data = PutRecord(record=record).model_dump(mode="json")
    if record.embedding is not None:
        # JSON mode writes a non-finite float as null; the line should carry what was given.
        data["record"]["embedding"] = list(record.embedding)
    return json.dumps(data)


def _line(op: AddEdge | ScopeWithin | UpdateRecord) -> str:
    return json.dumps(op.model_dump(mode="json"))


def _nothing_written(store: MemoryStore, tenant: str) -> None:
    assert list(store.export(tenant)) == []


def _source_store(tenant: str) -> MemoryStore:
    """An embedded store with every kind of line an export holds: lineage, scopes, tombstones."""
    source = MemoryStore.embedded(clock=lambda: T0 + 10 * DAY)
    source.add_many(
        [
            MemoryRecord.model_validate(_episode(tenant, "ep-a").model_dump()),
            MemoryRecord.model_validate(_episode(tenant, "ep-b").model_dump()),
            MemoryRecord.model_validate(_claim(tenant, "claim", ("ep-a", "ep-b")).model_dump()),
        ]
    )
    source.scope_within(tenant, "user:alice", "tenant:acme")
    source.relate_scopes(tenant, "user:alice", "USES", "system:crm")
    replacement = MemoryRecord.model_validate(_claim(tenant, "claim-2", ("ep-b",)).model_dump())
    source.supersede(tenant, "claim", replacement, reason="restated")
    source.invalidate(tenant, "ep-b", by="msg-ep-a", reason="retracted", at=T0 + 5 * DAY)
    source.forget(
        ForgetRequest(
            tenant=tenant, target="ep-a", mode=ForgetMode.ERASE, reason="asked", requested_by="alice"
        )
    )
    return source


def test_an_export_imports_exactly_and_restores_idempotently(store: MemoryStore, tenant: str) -> None:
    source = _source_store(tenant)
    lines = list(source.export(tenant))
    assert any('"status":"erased"' in line.replace(" ", "") for line in lines)
    assert store.import_(lines) == len(lines)
    assert list(store.export(tenant)) == lines
    assert store.trace(tenant, "claim-2") == source.trace(tenant, "claim-2")
    with pytest.raises(ConflictError) as err:
        store.import_(lines)
    assert err.value.code == "duplicate_id"
    # Restoring the export over the store it came from changes nothing and repeats no audit event.
    assert store.import_(lines, replace=True) == len(lines)
    assert list(store.export(tenant)) == lines


BREACHES = {
    "restricted": (lambda t: _episode(t, "r1", sensitivity=Sensitivity.RESTRICTED), "restricted_sensitivity"),
    "secret_in_content": (lambda t: _episode(t, "r1", content=f"api_key = {API_KEY}"), "secret_detected"),
    "secret_in_quote": (
        lambda t: _episode(t, "r1", sources=(Source(id="m", quote=f"password: {API_KEY}"),)),
        "secret_detected",
    ),
    "episode_without_event_time": (lambda t: _episode(t, "r1", event_time=None), "episodic_needs_event_time"),
    "claim_without_provenance": (lambda t: _claim(t, "r1", (), sources=()), "semantic_needs_provenance"),
    "empty_content": (lambda t: _episode(t, "r1", content="  "), "empty_content"),
    "erased_with_content": (lambda t: _episode(t, "r1", status=Status.ERASED), "bad_tombstone"),
    "infinite_embedding": (lambda t: _episode(t, "r1", embedding=(float("inf"),)), "embedding_not_finite"),
}


@pytest.mark.parametrize("breach", sorted(BREACHES))
def test_records_meet_the_write_rules(store: MemoryStore, tenant: str, breach: str) -> None:
    make, code = BREACHES[breach]
    good = _put(_episode(tenant, "ok"))
    with pytest.raises(GraphmemError) as err:
        store.import_([good, _put(make(tenant))])
    assert err.value.code == code
    assert API_KEY not in str(err.value)
    _nothing_written(store, tenant)


def test_a_procedure_needs_verified_episodes(store: MemoryStore, tenant: str) -> None:
    failed = _episode(tenant, "ep-fail", outcome="failure")
    procedure = _claim(
        tenant,
        "proc",
        ("ep-fail",),
        kind=Kind.PROCEDURAL,
        procedure_name="retry",
        procedure_version="1",
        preconditions=("gateway",),
        outcome="verified-success",
    )
    with pytest.raises(LineageError) as err:
        store.import_([_put(failed), _put(procedure)])
    assert err.value.code == "unverified_episode"
    _nothing_written(store, tenant)


def test_secrets_are_redacted_under_a_redacting_policy(store: MemoryStore, tenant: str) -> None:
    redacting = MemoryStore(store.backend, write_policy=WritePolicy(secrets="redact"))
    redacting.import_([_put(_episode(tenant, "r1", content=f"Deploy with api_key = {API_KEY} today."))])
    stored = store.get(tenant, "r1")
    assert stored is not None
    assert API_KEY not in stored.content
    assert "[REDACTED:" in stored.content


def test_stored_records_are_overwritten_only_on_request(store: MemoryStore, tenant: str) -> None:
    original = MemoryRecord.model_validate(_episode(tenant, "r1").model_dump())
    store.add(original)
    changed = original.model_copy(update={"content": "Alice asked for a phone call."})
    for line in (_put(changed), _line(UpdateRecord(record=changed))):
        with pytest.raises(ConflictError) as err:
            store.import_([line])
        assert err.value.code == "duplicate_id"
        assert store.get(tenant, "r1") == original
    store.import_([_line(UpdateRecord(record=changed))], replace=True)
    stored = store.get(tenant, "r1")
    assert stored is not None
    assert stored.content == "Alice asked for a phone call."


def test_replacement_keeps_erasures_and_lineage(store: MemoryStore, tenant: str) -> None:
    store.add_many(
        [
            MemoryRecord.model_validate(_episode(tenant, "e1").model_dump()),
            MemoryRecord.model_validate(_episode(tenant, "e2").model_dump()),
            MemoryRecord.model_validate(_claim(tenant, "c1", ("e1",)).model_dump()),
        ]
    )
    store.forget(
        ForgetRequest(
            tenant=tenant, target="e2", mode=ForgetMode.ERASE, reason="r", requested_by="u", cascade=False
        )
    )
    with pytest.raises(ConflictError) as err:
        store.import_([_put(_episode(tenant, "e2"))], replace=True)
    assert err.value.code == "erased_record"
    stored = store.get(tenant, "e2")
    assert stored is not None
    assert stored.status is Status.ERASED
    assert stored.content == ""
    with pytest.raises(LineageError) as lineage:
        store.import_([_put(_claim(tenant, "c1", ("e1", "e2")))], replace=True)
    assert lineage.value.code == "lineage_changed"


def test_every_edge_has_both_ends(store: MemoryStore, tenant: str) -> None:
    stored = MemoryRecord.model_validate(_episode(tenant, "stored").model_dump())
    store.add(stored)
    edge = {"tenant": tenant, "at": T0 + DAY}
    dangling = {
        "derived_from": [_put(_claim(tenant, "c1", ("ghost",)))],
        "supersedes_dst": [
            _put(_episode(tenant, "e1")),
            _line(AddEdge(label="SUPERSEDES", src="e1", dst="ghost", **edge)),
        ],
        "supersedes_src": [_line(AddEdge(label="SUPERSEDES", src="ghost", dst="stored", **edge))],
        "invalidated_by": [_line(AddEdge(label="INVALIDATED_BY", src="stored", dst="ghost", **edge))],
        "invalidated_by_source": [
            _line(AddEdge(label="INVALIDATED_BY", src="stored", dst="src-ghost", dst_is_source=True, **edge))
        ],
    }
    for name, lines in dangling.items():
        with pytest.raises(LineageError) as err:
            store.import_(lines)
        assert err.value.code == "dangling_edge", name
    other = f"{tenant}-other"
    with pytest.raises(LineageError) as err:
        store.import_([_put(_episode(other, "theirs")), _put(_claim(tenant, "c1", ("theirs",)))])
    assert err.value.code == "cross_tenant"
    assert store.get(other, "theirs") is None
    assert [r.id for r in store.backend.all_records(tenant)] == ["stored"]
    # An edge to a stored record, or to a source the import cites, is no dangling edge.
    store.import_(
        [
            _put(_claim(tenant, "c1", ("stored",))),
            _line(AddEdge(label="INVALIDATED_BY", src="stored", dst="msg-c1", dst_is_source=True, **edge)),
        ]
    )
    assert [e.type for e in store.trace(tenant, "c1").edges].count("DERIVED_FROM") == 1


def test_no_cycle_and_one_successor(store: MemoryStore, tenant: str) -> None:
    store.add_many([MemoryRecord.model_validate(_episode(tenant, i).model_dump()) for i in ("v1", "v2")])
    store.supersede(
        tenant, "v1", MemoryRecord.model_validate(_episode(tenant, "v1b").model_dump()), reason="r"
    )
    store.scope_within(tenant, "user:alice", "tenant:acme")
    edge = {"tenant": tenant, "at": T0 + DAY}
    cases = {
        "lineage_cycle": [_put(_claim(tenant, "a", ("b",))), _put(_claim(tenant, "b", ("a",)))],
        "already_superseded": [_line(AddEdge(label="SUPERSEDES", src="v2", dst="v1", **edge))],
        "self_supersession": [_line(AddEdge(label="SUPERSEDES", src="v2", dst="v2", **edge))],
        "scope_cycle": [_line(ScopeWithin(tenant=tenant, child="tenant:acme", parent="user:alice"))],
    }
    before = list(store.export(tenant))
    for code, lines in cases.items():
        with pytest.raises(LineageError) as err:
            store.import_(lines)
        assert err.value.code == code
    assert list(store.export(tenant)) == before


def test_malformed_lines_are_refused(store: MemoryStore, tenant: str) -> None:
    bad_scope = json.dumps(
        {"op": "scope_within", "tenant": tenant, "child": "alice", "parent": "tenant:acme"}
    )
    for lines, code in (
        (["{not json"], "bad_import"),
        ([json.dumps({"op": "drop_everything"})], "bad_import"),
        ([bad_scope], "invalid_scope"),
        (
            [json.dumps({"op": "scope_within", "tenant": "", "child": "user:a", "parent": "user:b"})],
            "missing_tenant",
        ),
    ):
        with pytest.raises(ContractViolation) as err:
            store.import_(lines)
        assert err.value.code == code
    _nothing_written(store, tenant)
