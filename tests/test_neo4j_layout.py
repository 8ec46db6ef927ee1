"""What the Neo4j backend stores on a memory node, against a real Neo4j 5.26.

* Every SPEC §2 property holds the record's value; ``json`` is the record's
  own, ``fingerprint`` its fingerprint sealed under the record's key; the record's APPLIES_TO edge holds the
  gate list ``g`` (what ``gate.cypher`` reads, following supersession,
  invalidation and updates) beside the tenant, scope, policy and id.
* Schema versions 2 to 4 migrate nodes written by version 1 (separate
  start/end/recency/sensitivity_rank properties) to the gate list on the edge.
* A store whose schema is older than the code is refused with a clear error
  instead of being read wrongly.
"""

from __future__ import annotations

import base64
import json
from array import array
from datetime import UTC, datetime, timedelta
from typing import Any

import neo4j
import pytest

from graphmem import (
    BackendUnavailable,
    ForgetMode,
    ForgetRequest,
    Kind,
    MemoryRecord,
    MemoryStore,
    Outcome,
    Sensitivity,
    Source,
    Status,
    Tombstone,
)
from graphmem.backends.cypher import cypher, statements
from graphmem.backends.neo4j import RECORD_ROW, Neo4jBackend, fingerprint_tokens, micros, record_of
from graphmem.backends.neo4j_cache import stored_tokens
from graphmem.backends.neo4j_crypt import seal, unseal
from graphmem.model.erasure import erase_record
from graphmem.testing.neo4j_server import Neo4jTarget

pytestmark = pytest.mark.neo4j

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NEVER = 2**63 - 1
ALWAYS = -(2**63 - 1)


def _store(driver: neo4j.Driver, target: Neo4jTarget) -> MemoryStore:
    return MemoryStore(Neo4jBackend(driver, uri=target.uri or ""))


def _node(driver: neo4j.Driver, tenant: str, record_id: str) -> dict[str, Any]:
    with driver.session() as session:
        row = session.run(
            "MATCH (m:Memory {tenant: $tenant, id: $id}) "
            "OPTIONAL MATCH (m)-[r:APPLIES_TO]->(:Scope) "
            "RETURN properties(m) AS p, labels(m) AS labels, collect(properties(r)) AS edges",
            tenant=tenant,
            id=record_id,
        ).single()
    assert row is not None
    return {**row["p"], "labels": sorted(row["labels"]), "edges": row["edges"]}


def _gate_list(driver: neo4j.Driver, tenant: str, record_id: str) -> list[int]:
    """The gate list on the record's one APPLIES_TO edge."""
    (edge,) = _node(driver, tenant, record_id)["edges"]
    return list(edge["g"])


def _opened(store: MemoryStore, tenant: str, record_id: str, stored: str) -> str | None:
    """A live fingerprint as stored, opened with the record's key."""
    return store.backend._crypt.fingerprints(tenant, [(record_id, stored, None)])[0]  # type: ignore[attr-defined, no-any-return]


def _procedure(tenant: str) -> MemoryRecord:
    return MemoryRecord(
        id="proc-1",
        tenant=tenant,
        kind=Kind.PROCEDURAL,
        scope="system:gateway",
        content="retry the capture with a fresh idempotency key",
        created_at=T0 - timedelta(days=3),
        event_time=T0 - timedelta(days=2, hours=12),
        valid_from=T0 - timedelta(days=2),
        valid_to=T0 + timedelta(days=30),
        expires_at=T0 + timedelta(days=20),
        outcome=Outcome.VERIFIED_SUCCESS,
        sources=(Source(id="runbook-7", type="document", quote="step 3"),),
        sensitivity=Sensitivity.CONFIDENTIAL,
        confidence=0.75,
        writer="ops-agent",
        procedure_name="capture-retry",
        procedure_version="2",
        preconditions=("gateway-v2", "idempotency"),
        tags=("payments", "retry"),
        embedding=(0.25, -0.5, 1.0),
        embedding_model="acme:ops-embedder-3",
    )


def test_node_properties_are_the_records_fields(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    """Ids, times, codes and numbers in clear; text sealed under the record's data key or
    (what queries match on) keyed tokens; outcome, writer and procedure name and version
    only in the sealed JSON; ``json`` is the record as its tombstone would keep it."""
    store = _store(neo4j_driver, neo4j_target)
    record = store.add(_procedure(tenant))
    node = _node(neo4j_driver, tenant, record.id)
    crypt = store.backend._crypt  # type: ignore[attr-defined]
    key = crypt.keys.keys(tenant, "record", [record.id], create=False)[record.id]
    aad = f"graphmem/record/{tenant}/{record.id}".encode()
    shell = erase_record(
        record, Tombstone(at=T0, reason="-", requested_by="-"), gone_sources={"runbook-7"}
    ).model_dump_json(exclude={"status", "tombstone"})
    expected: dict[str, Any] = {
        "tenant": tenant,
        "id": record.id,
        "kind": "procedural",
        "scope": "system:gateway",
        "content": seal(key, aad + b"/content", record.content.encode()),
        "content_hash": crypt.token(tenant, record.content_hash),
        "status": "active",
        "policy": "default",
        "sensitivity": "confidential",
        "confidence": 0.75,
        "preconditions": crypt.tokens(tenant, ["gateway-v2", "idempotency"]),
        "tags": crypt.tokens(tenant, ["payments", "retry"]),
        "embedding": seal(key, aad + b"/embedding", array("d", [0.25, -0.5, 1.0]).tobytes()),
        "embedding_model": seal(key, aad + b"/embedding_model", b"acme:ops-embedder-3"),
        "created_at": micros(record.created_at),
        "event_time": micros(record.event_time),
        "valid_from": micros(record.valid_from),
        "valid_to": micros(record.valid_to),
        "expires_at": micros(record.expires_at),
        "fingerprint": "s1:"
        + base64.b64encode(seal(key, aad + b"/fingerprint", record.fingerprint().encode())).decode(),
        "json": shell,
        "sealed": seal(key, aad, record.model_dump_json(exclude={"status", "tombstone"}).encode()),
        "labels": ["Memory", "Procedural"],
    }
    assert unseal(key, aad, node["sealed"]).decode() == record.model_dump_json(
        exclude={"status", "tombstone"}
    )
    fingerprint = record.fingerprint()
    for text in (
        "retry the capture",
        "ops-agent",
        "capture-retry",
        "gateway-v2",
        "payments",
        "step 3",
        fingerprint,
        "ops-embedder",
    ):
        assert all(text not in str(v) for v in node.values()), text
    gate = {
        "tenant": tenant,
        "scope": "system:gateway",
        "policy": "default",
        "id": record.id,
        "g": [
            3,  # procedural
            0,  # active
            micros(record.valid_from),
            micros(record.expires_at),  # the earlier of valid_to and expires_at
            Sensitivity.CONFIDENTIAL.rank,
            1,  # verified success
            micros(record.valid_from),  # recency
            1,  # has an embedding
            *stored_tokens(expected["fingerprint"]),  # of the sealed fingerprint
            NEVER,  # superseded at
            NEVER,  # invalidated at
            micros(record.created_at),  # knowledge time: when the store recorded it
            ALWAYS,  # no SUPERSEDES / INVALIDATED_BY edge recorded yet
        ],
    }
    assert node == {**expected, "edges": [gate]}
    hidden = {"gate", "sources", "tombstone", "outcome", "writer", "procedure_name", "procedure_version"}
    assert {k for k in RECORD_ROW if k not in hidden} <= set(expected)


def test_gate_list_follows_supersession_invalidation_and_forgetting(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    store = _store(neo4j_driver, neo4j_target)
    old = MemoryRecord(
        id="claim-1",
        tenant=tenant,
        kind=Kind.SEMANTIC,
        scope="case:c1",
        content="the limit is 10",
        valid_from=T0,
        sources=(Source(id="s1"),),
    )
    store.add(old)
    new = old.model_copy(
        update={"id": "claim-2", "content": "the limit is 20", "valid_from": T0 + timedelta(days=1)}
    )
    store.supersede(tenant, "claim-1", new, "raised")
    assert _gate_list(neo4j_driver, tenant, "claim-1")[10] == micros(T0 + timedelta(days=1))
    store.invalidate(tenant, "claim-1", "s1", "source retracted", at=T0 + timedelta(days=2))
    gate = _gate_list(neo4j_driver, tenant, "claim-1")
    stored = _node(neo4j_driver, tenant, "claim-1")["fingerprint"]
    assert _opened(store, tenant, "claim-1", stored) == old.fingerprint()
    assert gate[8:12] == [
        *stored_tokens(stored),
        micros(T0 + timedelta(days=1)),
        micros(T0 + timedelta(days=2)),
    ]
    recorded = [e.recorded for e in store.trace(tenant, "claim-1").edges if e.type != "CITES"]
    assert gate[12:] == [micros(old.created_at), max(micros(r) or 0 for r in recorded)]
    store.forget(
        ForgetRequest(
            tenant=tenant, target="claim-1", mode=ForgetMode.ERASE, reason="gdpr", requested_by="dpo"
        )
    )
    erased = _node(neo4j_driver, tenant, "claim-1")
    erased_gate = _gate_list(neo4j_driver, tenant, "claim-1")
    assert erased["status"] == "erased"
    assert erased_gate[1] == list(Status).index(Status.ERASED)
    assert erased_gate[10:] == gate[10:], "an update keeps the edge times"
    assert erased_gate[8:10] == list(fingerprint_tokens(erased["fingerprint"]))
    assert erased["fingerprint"] == store.get(tenant, "claim-1").fingerprint()  # type: ignore[union-attr]
    assert erased_gate[7] == 0
    stored = store.get(tenant, "claim-1")
    assert stored is not None
    assert stored.tombstone is not None
    assert erased["tombstone"] == stored.tombstone.model_dump_json()
    assert not {"status", "tombstone"} & set(json.loads(erased["json"]))


def test_a_status_change_leaves_the_stored_json_as_it_was(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    """Revoking rewrites status, fingerprint and gate list only; reads put the status back."""
    store = _store(neo4j_driver, neo4j_target)
    record = store.add(_procedure(tenant))
    before = _node(neo4j_driver, tenant, record.id)
    store.forget(
        ForgetRequest(tenant=tenant, target=record.id, mode=ForgetMode.REVOKE, reason="r", requested_by="u")
    )
    after = _node(neo4j_driver, tenant, record.id)
    assert after["json"] == before["json"]
    assert (after["status"], _gate_list(neo4j_driver, tenant, record.id)[1]) == ("revoked", 3)
    revoked = store.get(tenant, record.id)
    assert revoked == record.model_copy(update={"status": "revoked"})
    assert revoked is not None
    assert after["fingerprint"] != before["fingerprint"]
    assert _opened(store, tenant, record.id, after["fingerprint"]) == revoked.fingerprint()
    assert _opened(store, tenant, record.id, before["fingerprint"]) == record.fingerprint()


def test_version_1_json_is_read_with_the_nodes_status() -> None:
    """Version 1 kept status and tombstone inside the JSON too; the node's properties win."""
    record = MemoryRecord(
        id="r1", tenant="acme", kind=Kind.EPISODIC, scope="case:c1", content="x", event_time=T0
    )
    tomb = Tombstone(at=T0, reason="gdpr", requested_by="dpo")
    assert record_of([record.model_dump_json(), "active", None]) == record
    assert record_of([record.model_dump_json(), "revoked", None]).status is Status.REVOKED
    erased = record_of([record.model_dump_json(), "erased", tomb.model_dump_json()])
    assert (erased.status, erased.tombstone) == (Status.ERASED, tomb)
    assert erased.fingerprint() == erased.model_copy().fingerprint()


def test_schema_v2_to_v4_migrate_nodes_written_by_v1(neo4j_driver: neo4j.Driver, tenant: str) -> None:
    """A version-1 node keeps start/end/recency/sensitivity_rank; version 2 folds them into g,
    version 3 adds the fingerprint's tokens before the edge times, version 4 moves the list to
    the APPLIES_TO edge with the status's code."""
    fingerprint = "f00dcafe0123456789abcdef" * 2 + "0" * 16
    at = micros(T0)
    assert at is not None
    with neo4j_driver.session() as session:
        session.run(
            "CREATE (:Memory {tenant: $tenant, id: 'v1', kind: 'episodic', status: 'contested', "
            "start: $at, recency: 1.0, sensitivity_rank: 2, outcome: 'failure', created_at: $created, "
            "event_time: $at, invalidated_at: $at, fingerprint: $fingerprint, policy: 'default'})"
            "-[:APPLIES_TO]->(:Scope {tenant: $tenant, key: 'case:v1', type: 'case'})",
            tenant=tenant,
            at=at,
            created=at - 5,
            fingerprint=fingerprint,
        ).consume()
        for statement in statements("schema_v2"):
            session.run(statement).consume()
        node = _node(neo4j_driver, tenant, "v1")
        assert node["g"] == [1, 1, at, NEVER, 2, 0, at, 0, NEVER, at]
        assert not {"start", "end", "recency", "sensitivity_rank"} & set(node)
        for statement in statements("schema_v3"):
            session.run(statement).consume()
        tokens = [int(fingerprint[:15], 16), int(fingerprint[15:30], 16)]
        assert _node(neo4j_driver, tenant, "v1")["g"] == [1, 1, at, NEVER, 2, 0, at, 0, *tokens, NEVER, at]
        for statement in statements("schema_v4"):
            session.run(statement).consume()
    node = _node(neo4j_driver, tenant, "v1")
    assert "g" not in node
    contested = list(Status).index(Status.CONTESTED)
    assert node["edges"] == [
        {
            "tenant": tenant,
            "scope": "case:v1",
            "policy": "default",
            "id": "v1",
            "g": [1, contested, at, NEVER, 2, 0, at, 0, *tokens, NEVER, at],
        }
    ]


def test_a_store_on_an_older_schema_is_refused(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = Neo4jBackend(neo4j_driver, uri=neo4j_target.uri or "")
    monkeypatch.setattr(backend, "schema_version", lambda: 1)
    store = MemoryStore(backend)
    with pytest.raises(BackendUnavailable) as err:
        store.add(_procedure(tenant))
    assert err.value.code == "schema_version"
    assert "graphmem schema apply" in str(err.value)


@pytest.mark.parametrize("name", ["all_records", "records_with_status", "with_tag", "audit_events"])
def test_per_tenant_listings_seek_an_index_instead_of_scanning_every_node(
    neo4j_driver: neo4j.Driver, name: str
) -> None:
    """With a million records, a label scan per proposal or approvals listing is seconds."""
    params = {"tenant": "t", "statuses": ["active"], "tag": "x", "record_id": None, "since": None}
    with neo4j_driver.session() as session:
        plan = session.run("EXPLAIN " + cypher(name), params).consume().plan
    assert plan is not None
    operators: list[str] = []

    def walk(node: dict[str, Any]) -> None:
        operators.append(node["operatorType"].split("@")[0])
        for child in node.get("children", []):
            walk(child)

    walk(plan)
    assert "NodeIndexSeek" in operators
    assert not {"NodeByLabelScan", "AllNodesScan"} & set(operators)


def test_versions_by_id_prefix_are_a_range_of_the_id_index(neo4j_driver: neo4j.Driver) -> None:
    """The LangGraph store finds an item's versions by id prefix: a seek of the (tenant, id)
    uniqueness index, never a walk over the tenant's records."""
    with neo4j_driver.session() as session:
        plan = session.run("EXPLAIN " + cypher("with_id_prefix"), {"tenant": "t", "prefix": "lg-ab-"})
        root = plan.consume().plan
    assert root is not None
    seeks: list[str] = []

    def walk(node: dict[str, Any]) -> None:
        if "Index" in node["operatorType"] or "Scan" in node["operatorType"]:
            seeks.append(f"{node['operatorType'].split('@')[0]} {node.get('args', {}).get('Details', '')}")
        for child in node.get("children", []):
            walk(child)

    walk(root)
    assert len(seeks) == 1
    assert seeks[0].startswith("NodeUniqueIndexSeek")
    assert "id STARTS WITH $prefix" in seeks[0]


def test_lineage_edges_reach_parents_written_in_a_later_chunk_of_the_same_batch(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    """A batch bigger than one statement's chunk: every DERIVED_FROM edge is written, also
    when the parent comes later in the batch than its child."""
    half = 3000

    def claim(i: int, **fields: Any) -> MemoryRecord:
        return MemoryRecord(
            id=f"c{i}",
            tenant=tenant,
            kind=Kind.SEMANTIC,
            scope=f"case:k{i % 7}",
            content=f"claim {i}",
            valid_from=T0,
            **fields,
        )

    children = [claim(i, derived_from=(f"c{i + half}",)) for i in range(half)]
    parents = [claim(i + half, sources=(Source(id=f"s{i % 11}"),)) for i in range(half)]
    _store(neo4j_driver, neo4j_target).add_many([*children, *parents])
    with neo4j_driver.session() as session:
        row = session.run(
            "MATCH (c:Memory {tenant: $tenant})-[:DERIVED_FROM]->(p:Memory) "
            "WITH c, p, 'c' + toString(toInteger(substring(c.id, 1)) + $half) AS expected "
            "RETURN count(*) AS n, sum(CASE WHEN p.id = expected THEN 1 ELSE 0 END) AS right",
            tenant=tenant,
            half=half,
        ).single()
    assert row is not None
    assert (row["n"], row["right"]) == (half, half)
