"""A gate read torn by a committing write is read again, never used (Neo4j).

Neo4j reads at read committed: one gate statement may read a candidate's APPLIES_TO edge
(its gate list: status, fingerprint tokens, last change) on one side of a write's commit
and the record's node (fingerprint, kept versions) on the other. A replay as of a time
before the write then took today's fingerprint for the version it held (a receipt that
no longer verified, seen once in a CI run of the racing replay test). These tests put the
server in exactly the state such a read sees: the edge written and the node not yet, or
the other way round, for the first statements of a recall, then the write's whole state.

A write that changes a gate list also moves the edge's entry in the gate's index: a scan
that had passed the old entry meets the new one as well, and reads one candidate twice
(twice in a CI run: a receipt with a candidate more than the recall it replayed). The
server is put in that state too: a second edge of the record beside its own.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import neo4j
import pytest

from graphmem import (
    ForgetMode,
    ForgetRequest,
    Kind,
    MemoryStore,
    ReadContext,
    Source,
    TransactionConflict,
    Trust,
    WriteProposal,
)
from graphmem.backends.neo4j import Neo4jBackend
from graphmem.backends.neo4j_rows import done_name, lock_names
from graphmem.testing.neo4j_server import Neo4jTarget
from tests.conftest import T0, Clock

pytestmark = pytest.mark.neo4j

SCOPE = "case:c1"


def _proposal(tenant: str, source: str) -> WriteProposal:
    return WriteProposal(
        tenant=tenant,
        kind=Kind.SEMANTIC,
        scope=SCOPE,
        content="Capture timeouts at the gateway are retried once.",
        valid_from=T0,
        sources=(Source(id=source, type="message", trust=Trust.TRUSTED),),
        proposed_by="agent-7",
    )


def _run(driver: neo4j.Driver, query: str, **params: Any) -> None:
    """One statement that puts the server in a state, committed."""
    with driver.session() as session:
        session.run(query, params).consume()


def _node(driver: neo4j.Driver, tenant: str, rid: str) -> dict[str, Any]:
    with driver.session() as session:
        row = session.run(
            "MATCH (m:Memory {tenant: $tenant, id: $id}) RETURN properties(m) AS p", tenant=tenant, id=rid
        ).single()
    assert row is not None
    return dict(row["p"])


def _set_node(driver: neo4j.Driver, tenant: str, rid: str, props: dict[str, Any]) -> None:
    with driver.session() as session:
        session.run(
            "MATCH (m:Memory {tenant: $tenant, id: $id}) SET m = $props", tenant=tenant, id=rid, props=props
        ).consume()


def _edge(driver: neo4j.Driver, tenant: str, rid: str) -> list[int]:
    with driver.session() as session:
        row = session.run(
            "MATCH (:Memory {tenant: $tenant, id: $id})-[r:APPLIES_TO]->() RETURN r.g AS g",
            tenant=tenant,
            id=rid,
        ).single()
    assert row is not None
    return list(row["g"])


def _set_edge(driver: neo4j.Driver, tenant: str, rid: str, g: list[int]) -> None:
    with driver.session() as session:
        session.run(
            "MATCH (:Memory {tenant: $tenant, id: $id})-[r:APPLIES_TO]->() SET r.g = $g",
            tenant=tenant,
            id=rid,
            g=g,
        ).consume()


def _recorded_then_overwritten(
    driver: neo4j.Driver, target: Neo4jTarget, tenant: str
) -> tuple[MemoryStore, Neo4jBackend, str, ReadContext, Any, dict[str, Any], list[int]]:
    """A record recalled on day 10, then overwritten on day 11 by a proposal that merges a
    second source into it (same status: only the fingerprint tells the versions apart).
    Returns the store, its backend, the id, the day-10 context, the day-10 recall and the
    node and edge as they were before the overwrite."""
    clock = Clock(T0 + timedelta(days=1))
    store = MemoryStore(Neo4jBackend(driver, uri=target.uri or ""), clock=clock)
    backend = store.backend
    assert isinstance(backend, Neo4jBackend)
    rid = store.propose(_proposal(tenant, "msg-1"), source_trust=Trust.TRUSTED).record_id
    assert rid is not None
    clock.at = T0 + timedelta(days=10)
    then = ReadContext(tenant=tenant, scopes=(SCOPE,), now=clock.at)
    recalled = store.recall(then, "capture timeouts retried")
    assert list(recalled.ids) == [rid]
    before_node, before_edge = _node(driver, tenant, rid), _edge(driver, tenant, rid)
    clock.at = T0 + timedelta(days=11)
    merged = store.propose(_proposal(tenant, "msg-2"), source_trust=Trust.TRUSTED)
    assert merged.record_id == rid
    assert _edge(driver, tenant, rid) != before_edge
    backend._docs.clear()  # a client that holds nothing of the record yet
    store._gate_cache.clear()
    return store, backend, rid, then, recalled, before_node, before_edge


def _reads_until(backend: Neo4jBackend, count: int, then: Callable[[], None]) -> list[str]:
    """Record the backend's statements; after the ``count``-th, run ``then`` (the write
    committing)."""
    reads: list[str] = []
    plain = backend._read

    def read(name: str, **params: Any) -> list[neo4j.Record]:
        out = plain(name, **params)
        reads.append(name)
        if len(reads) == count:
            then()
        return out

    backend._read = read  # type: ignore[method-assign]
    return reads


@pytest.mark.parametrize(
    ("older", "torn_reads", "reads"),
    [
        # The gate statement reads the overwrite's edge but the node from before it (no kept
        # version yet): it would take the new live tokens, whose fingerprint the next
        # statement finds committed by then, and replay today's version.
        ("node", 2, ["gate_state", "gate", "gate"]),
        # The edge from before the overwrite, the node after it, for the gate and the
        # statements after it: the reported fingerprint is not the one its tokens are of.
        ("edge", 4, ["gate_state", "gate", "candidate_docs", "gate", "gate"]),
    ],
)
def test_a_replay_reads_the_gate_again_when_edge_and_node_are_read_apart(
    neo4j_driver: neo4j.Driver,
    neo4j_target: Neo4jTarget,
    tenant: str,
    older: str,
    torn_reads: int,
    reads: list[str],
) -> None:
    store, backend, rid, then, recalled, before_node, before_edge = _recorded_then_overwritten(
        neo4j_driver, neo4j_target, tenant
    )
    get, put = (_node, _set_node) if older == "node" else (_edge, _set_edge)
    after = get(neo4j_driver, tenant, rid)
    put(neo4j_driver, tenant, rid, before_node if older == "node" else before_edge)
    seen = _reads_until(backend, torn_reads, lambda: put(neo4j_driver, tenant, rid, after))
    again = store.recall(then, "capture timeouts retried")
    assert again.receipt == recalled.receipt
    assert again.records == recalled.records
    assert seen[: len(reads)] == reads  # the torn reads were not used
    assert store.verify(recalled.receipt, then)


def _second_edge(driver: neo4j.Driver, tenant: str, rid: str, g: list[int]) -> None:
    with driver.session() as session:
        session.run(
            "MATCH (m:Memory {tenant: $tenant, id: $id})-[r:APPLIES_TO]->(s:Scope) "
            "CREATE (m)-[twin:APPLIES_TO]->(s) SET twin = properties(r), twin.g = $g, twin.twin = true",
            tenant=tenant,
            id=rid,
            g=g,
        ).consume()


def _drop_second_edge(driver: neo4j.Driver, tenant: str, rid: str) -> None:
    query = "MATCH (:Memory {tenant: $tenant, id: $id})-[twin:APPLIES_TO {twin: true}]->() DELETE twin"
    _run(driver, query, tenant=tenant, id=rid)


@pytest.mark.parametrize("replay", [True, False], ids=["replay", "today"])
def test_a_candidate_read_twice_by_the_scan_reads_the_gate_again(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str, replay: bool
) -> None:
    # The index entry seen before the overwrite and again after it: one candidate, two rows.
    store, backend, rid, then, recalled, _, before_edge = _recorded_then_overwritten(
        neo4j_driver, neo4j_target, tenant
    )
    if not replay:
        then = then.model_copy(update={"now": T0 + timedelta(days=12)})
        recalled = store.recall(then, "capture timeouts retried")
        backend._docs.clear()
        store._gate_cache.clear()
    _second_edge(neo4j_driver, tenant, rid, before_edge)
    seen = _reads_until(backend, 2, lambda: _drop_second_edge(neo4j_driver, tenant, rid))
    try:
        again = store.recall(then, "capture timeouts retried")
    finally:
        _drop_second_edge(neo4j_driver, tenant, rid)
    assert seen[:3] == ["gate_state", "gate", "gate"]  # the read with the candidate twice was not used
    assert again.ids == [rid]
    assert again.receipt == recalled.receipt
    assert store.verify(recalled.receipt, then)


def test_a_kept_version_read_half_written_reads_the_gate_again(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    # The node's version lists read on either side of the overwrite that appended to them: its
    # times already hold the kept version, its tokens not yet (collect() drops the null token).
    store, backend, rid, then, recalled, _, _ = _recorded_then_overwritten(neo4j_driver, neo4j_target, tenant)
    whole = _node(neo4j_driver, tenant, rid)
    assert whole["v_tok1"]
    _set_node(neo4j_driver, tenant, rid, {k: v for k, v in whole.items() if k not in ("v_tok1", "v_tok2")})
    seen = _reads_until(backend, 2, lambda: _set_node(neo4j_driver, tenant, rid, whole))
    try:
        again = store.recall(then, "capture timeouts retried")
    finally:
        _set_node(neo4j_driver, tenant, rid, whole)
    assert seen[:3] == ["gate_state", "gate", "gate"]  # the read with a token missing was not used
    assert again.receipt == recalled.receipt
    assert again.records == recalled.records


def test_a_gate_torn_at_every_read_is_a_conflict_not_an_answer(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    store, _, rid, then, _, before_node, _ = _recorded_then_overwritten(neo4j_driver, neo4j_target, tenant)
    after_node = _node(neo4j_driver, tenant, rid)
    _set_node(neo4j_driver, tenant, rid, before_node)
    try:
        with pytest.raises(TransactionConflict, match="changed during each of"):
            store.recall(then, "capture timeouts retried")
    finally:
        _set_node(neo4j_driver, tenant, rid, after_node)
    assert store.recall(then, "capture timeouts retried").ids == [rid]


def _first_record_read_torn(
    backend: Neo4jBackend,
    driver: neo4j.Driver,
    tenant: str,
    rid: str,
    torn: dict[str, Any],
    whole: dict[str, Any],
) -> list[str]:
    """Record the backend's statements; the first read of the records a recall selected
    (recalled_records.cypher) finds the node ``torn``, every other read ``whole``."""
    plain = backend._auto
    reads: list[str] = []

    def auto(name: str, write: bool, params: dict[str, Any]) -> Any:
        reads.append(name)
        if name != "recalled_records" or reads.count(name) > 1:
            return plain(name, write, params)
        _set_node(driver, tenant, rid, torn)
        try:
            return plain(name, write, params)
        finally:
            _set_node(driver, tenant, rid, whole)

    backend._auto = auto  # type: ignore[method-assign]
    return reads


@pytest.mark.parametrize("newer", ["bodies", "times"])
def test_a_kept_version_read_torn_by_the_record_read_is_read_again(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str, newer: str
) -> None:
    # The statement that reads the records a replay selected reads the version times on one
    # side of a second overwrite and the version bodies on the other: the body paired with the
    # version the replay selected is another version's (or none), and today's record was
    # returned for it (about one replay in a hundred while writers raced).
    store, backend, rid, then, recalled, _, _ = _recorded_then_overwritten(neo4j_driver, neo4j_target, tenant)
    store.clock.at = T0 + timedelta(days=12)  # type: ignore[attr-defined]
    assert store.propose(_proposal(tenant, "msg-3"), source_trust=Trust.TRUSTED).record_id == rid
    whole = _node(neo4j_driver, tenant, rid)
    assert len(whole["v_until"]) == len(whole["v_body"]) == 2
    keep = "v_until" if newer == "bodies" else "v_body"
    torn = {**whole, keep: whole[keep][:1]}
    backend._docs.clear()
    store._gate_cache.clear()
    reads = _first_record_read_torn(backend, neo4j_driver, tenant, rid, torn, whole)
    again = store.recall(then, "capture timeouts retried")
    assert [len(r.sources) for r in again.records] == [1]
    assert again.records == recalled.records
    assert again.receipt == recalled.receipt
    assert reads.count("recalled_records") == 2  # the torn read was not used


def _counts(driver: neo4j.Driver, tenant: str, *, begun: int = 0, done: int = 0) -> tuple[int, int]:
    """The tenant's counts of writes begun and done, each moved by ``begun`` and ``done``."""
    with driver.session() as session:
        row = session.run(
            "MERGE (l:GraphmemSchema {name: $lock}) MERGE (d:GraphmemSchema {name: $done}) "
            "SET l.writes = coalesce(l.writes, 0) + $begun, d.writes = coalesce(d.writes, 0) + $moved "
            "RETURN l.writes AS begun, d.writes AS done",
            lock=lock_names([tenant])[0],
            done=done_name(tenant),
            begun=begun,
            moved=done,
        ).single()
    assert row is not None
    return row["begun"], row["done"]


def _two_records(
    driver: neo4j.Driver, target: Neo4jTarget, tenant: str
) -> tuple[MemoryStore, Neo4jBackend, ReadContext, Any]:
    store = MemoryStore(Neo4jBackend(driver, uri=target.uri or ""), clock=Clock(T0 + timedelta(days=1)))
    for source in ("msg-1", "msg-2"):
        made = _proposal(tenant, source).model_copy(
            update={"content": f"Capture timeouts at gateway {source} are retried once."}
        )
        store.propose(made, source_trust=Trust.TRUSTED)
    backend = store.backend
    assert isinstance(backend, Neo4jBackend)
    ctx = ReadContext(tenant=tenant, scopes=(SCOPE,), now=T0 + timedelta(days=2))
    recalled = store.recall(ctx, "capture timeouts retried")
    assert len(recalled.ids) == 2
    store._gate_cache.clear()
    return store, backend, ctx, recalled


def test_a_scan_that_missed_a_candidate_while_a_write_was_applied_reads_the_gate_again(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    # A write's index update is a removal and an insertion; a scan between the two meets
    # neither entry. No check of the rows read can see the candidate missing, but the
    # write was counted begun and not yet done while the scan ran.
    store, backend, ctx, recalled = _two_records(neo4j_driver, neo4j_target, tenant)
    missing = recalled.ids[0]
    g = _edge(neo4j_driver, tenant, missing)
    _run(
        neo4j_driver,
        "MATCH (:Memory {tenant: $tenant, id: $id})-[r:APPLIES_TO]->() REMOVE r.g",
        tenant=tenant,
        id=missing,
    )
    _counts(neo4j_driver, tenant, begun=1)

    def applied() -> None:
        _set_edge(neo4j_driver, tenant, missing, g)
        _counts(neo4j_driver, tenant, done=1)

    seen = _reads_until(backend, 2, applied)
    try:
        again = store.recall(ctx, "capture timeouts retried")
    finally:
        _set_edge(neo4j_driver, tenant, missing, g)
    assert again.ids == recalled.ids
    assert again.receipt == recalled.receipt
    assert seen[:3] == ["gate_state", "gate", "gate"]  # the read that missed it was not used


def test_a_read_while_a_write_is_unfinished_is_taken_when_the_next_read_agrees(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    # A writer that stopped between its commit and recording it done leaves the counts
    # unequal until the next write finishes: recall reads the gate twice, and answers.
    store, backend, ctx, recalled = _two_records(neo4j_driver, neo4j_target, tenant)
    begun, done = _counts(neo4j_driver, tenant, begun=1)
    assert begun == done + 1
    seen = _reads_until(backend, 0, lambda: None)
    try:
        again = store.recall(ctx, "capture timeouts retried")
        assert again.receipt == recalled.receipt
        assert seen[:3] == ["gate_state", "gate", "gate"]
        assert seen.count("gate") == 2
    finally:
        _counts(neo4j_driver, tenant, done=1)


def test_kept_versions_read_torn_by_an_erase_are_read_again_by_verify(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    # verify reads the kept versions of the records forgotten since a receipt. An erase
    # committing between its reads of a record's version times and fingerprints left the
    # times and no fingerprints: a bare TypeError, not an answer.
    store, backend, rid, then, recalled, _, _ = _recorded_then_overwritten(neo4j_driver, neo4j_target, tenant)
    store.clock.at = T0 + timedelta(days=12)  # type: ignore[attr-defined]
    store.forget(
        ForgetRequest(tenant=tenant, target=rid, mode=ForgetMode.REVOKE, reason="r", requested_by="u")
    )
    expected = store.verify(recalled.receipt, then)
    whole = _node(neo4j_driver, tenant, rid)
    assert len(whole["v_until"]) == len(whole["v_fp"]) == 2
    _set_node(neo4j_driver, tenant, rid, {k: v for k, v in whole.items() if k != "v_fp"})
    seen = _reads_until(backend, 0, lambda: None)
    plain = backend._read

    def read(name: str, **params: Any) -> list[neo4j.Record]:
        out = plain(name, **params)
        if name == "kept_versions" and seen.count(name) == 1:
            _set_node(neo4j_driver, tenant, rid, whole)
        return out

    backend._read = read  # type: ignore[method-assign]
    try:
        again = store.verify(recalled.receipt, then)
    finally:
        _set_node(neo4j_driver, tenant, rid, whole)
    assert again == expected
    assert seen.count("kept_versions") == 2


def test_a_record_whose_body_and_fingerprint_were_read_apart_is_read_again(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    # Today's recall reads the selected record's fingerprint after an overwrite committed and
    # its body before: the fingerprint is the one the gate passed, the body is not of it, and
    # the record before the overwrite was returned.
    store, backend, rid, then, _, before, _ = _recorded_then_overwritten(neo4j_driver, neo4j_target, tenant)
    today = then.model_copy(update={"now": T0 + timedelta(days=12)})
    expected = store.recall(today, "capture timeouts retried")
    assert [len(r.sources) for r in expected.records] == [2]
    backend._docs.clear()
    store._gate_cache.clear()
    whole = _node(neo4j_driver, tenant, rid)
    torn = {**whole, "sealed": before["sealed"], "json": before["json"]}
    reads = _first_record_read_torn(backend, neo4j_driver, tenant, rid, torn, whole)
    again = store.recall(today, "capture timeouts retried")
    assert [len(r.sources) for r in again.records] == [2]
    assert again.records == expected.records
    assert reads.count("recalled_records") == 2  # the torn read was not used
