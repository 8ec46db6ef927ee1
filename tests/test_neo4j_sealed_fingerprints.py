"""Fingerprints on the Neo4j server are sealed (issue 16): no confirmation oracle.

A record's fingerprint is the SHA-256 of its canonical JSON: left in clear, it would let
anyone who guesses an erased text confirm the guess from the server's files. So the live
fingerprint and every kept version's are stored sealed under the record's data key
(``s1:`` + base64, associated data naming the record and the version), and the gate's
tokens are of the sealed string. The client opens a fingerprint once per record state and
holds it beside the text; recall re-checks the stored form in Cypher. A store written
before this is refused for erase (``plaintext_store``) until ``graphmem migrate --encrypt``
sealed it.
"""

from __future__ import annotations

import base64
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import neo4j
import pytest

from graphmem import (
    ContractViolation,
    DropReason,
    ForgetMode,
    ForgetRequest,
    Kind,
    MemoryRecord,
    MemoryStore,
    ReadContext,
    Source,
    Status,
    TransactionConflict,
    Trust,
    WriteProposal,
)
from graphmem.backends.base import PutRecord
from graphmem.backends.neo4j import Neo4jBackend, fingerprint_tokens
from graphmem.backends.neo4j_cache import stored_tokens
from graphmem.backends.neo4j_crypt import seal
from graphmem.gated import Verdicts, ViewGate
from graphmem.receipts import candidates_digest
from graphmem.testing.neo4j_server import Neo4jTarget

pytestmark = pytest.mark.neo4j

T0 = datetime(2026, 1, 1, tzinfo=UTC)
KNOWN = datetime(2100, 1, 1, tzinfo=UTC)


def _store(driver: neo4j.Driver, target: Neo4jTarget) -> MemoryStore:
    return MemoryStore(Neo4jBackend(driver, uri=target.uri or ""))


def _fact(tenant: str, record_id: str, content: str, at: datetime = T0) -> MemoryRecord:
    return MemoryRecord(
        id=record_id,
        tenant=tenant,
        kind=Kind.SEMANTIC,
        scope="case:c1",
        content=content,
        created_at=at,
        valid_from=T0,
        sources=(Source(id=f"src-{record_id}"),),
    )


def _ctx(tenant: str, limit: int = 10) -> ReadContext:
    return ReadContext(
        as_of=KNOWN, tenant=tenant, scopes=("case:c1",), now=T0 + timedelta(days=1), limit=limit
    )


def _nodes(driver: neo4j.Driver, tenant: str) -> dict[str, dict[str, Any]]:
    """Each record node's properties, with its APPLIES_TO edge's gate list as ``g``."""
    with driver.session() as session:
        rows = session.run(
            "MATCH (m:Memory {tenant: $tenant})-[r:APPLIES_TO]->() RETURN properties(m) AS p, r.g AS g",
            tenant=tenant,
        )
        return {row["p"]["id"]: {**row["p"], "g": row["g"]} for row in rows}


def _revoke(store: MemoryStore, tenant: str, record_id: str) -> None:
    store.forget(
        ForgetRequest(tenant=tenant, target=record_id, mode=ForgetMode.REVOKE, reason="r", requested_by="u")
    )


def _erase(tenant: str, record_id: str) -> ForgetRequest:
    return ForgetRequest(
        tenant=tenant, target=record_id, mode=ForgetMode.ERASE, reason="GDPR", requested_by="dpo"
    )


def test_live_and_kept_fingerprints_are_sealed_and_the_tokens_are_of_the_sealed_form(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    store = _store(neo4j_driver, neo4j_target)
    backend = store.backend
    assert isinstance(backend, Neo4jBackend)
    active = store.add(_fact(tenant, "f1", "the refund window is thirty days"))
    _revoke(store, tenant, "f1")  # keeps the active version
    revoked = store.get(tenant, "f1")
    assert revoked is not None
    node = _nodes(neo4j_driver, tenant)["f1"]
    key = backend.keys.keys(tenant, "record", ["f1"], create=False)["f1"]
    aad = f"graphmem/record/{tenant}/f1".encode()
    assert (
        node["fingerprint"]
        == "s1:" + base64.b64encode(seal(key, aad + b"/fingerprint", revoked.fingerprint().encode())).decode()
    )
    (until,) = node["v_until"]
    assert node["v_fp"] == [
        "s1:"
        + base64.b64encode(
            seal(key, aad + f"/v/{until}/fingerprint".encode(), active.fingerprint().encode())
        ).decode()
    ]
    # No fingerprint in clear, nor its tokens (which would confirm its first 120 bits).
    for fingerprint in (active.fingerprint(), revoked.fingerprint()):
        assert all(fingerprint not in str(v) for v in node.values())
        assert not set(fingerprint_tokens(fingerprint)) & {*node["g"], *node["v_tok1"], *node["v_tok2"]}
    assert node["g"][8:10] == list(stored_tokens(node["fingerprint"]))
    assert [node["v_tok1"][0], node["v_tok2"][0]] == list(stored_tokens(node["v_fp"][0]))
    # Bound to its record and place: moved to another record, or to a version, it opens to nothing.
    crypt = backend._crypt
    assert crypt.fingerprints(tenant, [("f1", node["fingerprint"], None)]) == [revoked.fingerprint()]
    assert crypt.fingerprints(tenant, [("f1", node["v_fp"][0], until)]) == [active.fingerprint()]
    assert crypt.fingerprints(tenant, [("f1", node["fingerprint"], until)]) == [None]
    store.add(_fact(tenant, "f2", "refunds go back to the card"))
    assert crypt.fingerprints(tenant, [("f2", node["fingerprint"], None)]) == [None]
    # Receipts, verify and replays see the same fingerprints as before sealing.
    ctx = ReadContext(as_of=KNOWN, tenant=tenant, scopes=("case:c1",), now=T0 + timedelta(days=1))
    second = store.get(tenant, "f2")
    assert second is not None
    expected = candidates_digest([("f1", revoked.fingerprint()), ("f2", second.fingerprint())])
    rows = backend.gate_rows(ctx, backend.gate_probe(ctx))
    assert ViewGate(Verdicts.of_columns(rows)).candidates_digest() == expected
    stored = _nodes(neo4j_driver, tenant)["f2"]["fingerprint"]
    assert ViewGate(Verdicts.of_columns(rows)).seen(["f1", "f2"]) == {"f2": (second.fingerprint(), stored)}
    assert backend.gate_one(ctx, "f1") == (revoked.fingerprint(), DropReason.REVOKED)
    assert backend.kept_fingerprints(tenant, ["f1"], T0) == {"f1": active.fingerprint()}
    selection = store.recall(ctx, "refund")
    assert selection.receipt.candidates_digest == expected
    assert store.verify(selection.receipt, ctx).status == "verified"
    # A replay as of before an overwrite (merged sources) gates and returns the kept version.
    merged = store.propose(
        WriteProposal(
            tenant=tenant,
            kind=Kind.SEMANTIC,
            scope="case:c1",
            content="refunds go back to the card",
            valid_from=T0,
            sources=(Source(id="src-extra", type="message", trust=Trust.TRUSTED),),
            proposed_by="agent-7",
        ),
        source_trust=Trust.TRUSTED,
    )
    assert merged.record_id == "f2"
    assert len(_nodes(neo4j_driver, tenant)["f2"]["v_fp"]) == 1
    then = ctx.model_copy(update={"as_of": T0 + timedelta(microseconds=1)})
    replay = _store(neo4j_driver, neo4j_target).recall(then, "refunds card")
    assert replay.records == (second,)
    assert replay.receipt.candidates_digest == expected
    assert store.verify(replay.receipt, then).status == "verified"


def test_a_repeated_recall_opens_each_fingerprint_once_and_reuses_the_held_docs(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    store = _store(neo4j_driver, neo4j_target)
    backend = store.backend
    assert isinstance(backend, Neo4jBackend)
    fruits = ("apples", "bananas", "cherries", "dates", "figs", "grapes")
    store.add_many([_fact(tenant, f"f{i}", f"refund rule about {fruit}") for i, fruit in enumerate(fruits)])
    _revoke(store, tenant, "f5")  # a dropped candidate: its fingerprint is held too
    opened: list[int] = []
    reads: list[str] = []
    plain_open, plain_read = backend._crypt.fingerprints, backend._read

    def fingerprints(tenant: str, stored: Any, keys: Any = None) -> list[str | None]:
        opened.append(len(stored))
        return plain_open(tenant, stored, keys)

    def read(name: str, **params: Any) -> list[neo4j.Record]:
        reads.append(name)
        return plain_read(name, **params)

    backend._crypt.fingerprints = fingerprints  # type: ignore[method-assign]
    backend._read = read  # type: ignore[method-assign]
    first = store.recall(_ctx(tenant), "refund rule")
    assert (reads, opened) == (["gate_state", "gate", "candidate_docs"], [6])
    second = store.recall(_ctx(tenant), "refund rule")
    assert (reads, opened) == (["gate_state", "gate", "candidate_docs", "gate_state"], [6])
    assert second == first
    # Another query over the same candidates: the held verdicts, nothing to open or fetch.
    third = store.recall(_ctx(tenant, limit=2), "rule about dates")
    assert (reads[4:], opened) == (["gate_state"], [6])
    assert third.ids[0] == "f3"
    fresh = _store(neo4j_driver, neo4j_target)
    assert fresh.recall(_ctx(tenant), "refund rule") == first
    # A record changed by another client: its tokens change, so only it is fetched and opened.
    other = Neo4jBackend(backend.driver, uri=backend.uri, keys=backend.keys)
    other.apply([PutRecord(record=_fact(tenant, "f2", "refund rule changed"), replace=True)])
    changed = store.recall(_ctx(tenant), "refund rule changed")
    assert (reads[5:], opened) == (["gate_state", "gate", "candidate_docs"], [6, 1])
    assert changed.ids[0] == "f2"
    assert changed.records[0].content == "refund rule changed"
    assert changed == fresh.recall(_ctx(tenant), "refund rule changed")


def test_recall_rechecks_the_stored_fingerprint_it_gated(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    """An overwrite between the gate and the read moves the live fingerprint into the kept
    versions, sealed for its place there: the stored form the gate saw matches neither."""
    store = _store(neo4j_driver, neo4j_target)
    backend = store.backend
    assert isinstance(backend, Neo4jBackend)
    store.add_many([_fact(tenant, "f1", "the office closes at six"), _fact(tenant, "f2", "lunch at noon")])
    rows = backend.gate_rows(_ctx(tenant), backend.gate_probe(_ctx(tenant)))
    seen = ViewGate(Verdicts.of_columns(rows)).seen(["f1", "f2"])
    assert set(seen) == {"f1", "f2"}
    assert all(state is not None and state.startswith("s1:") for _, state in seen.values())
    assert [r.id for r in backend.recalled(tenant, ["f1", "f2"], None, seen=seen)] == ["f1", "f2"]
    backend._docs.clear()
    _revoke(_store(neo4j_driver, neo4j_target), tenant, "f2")  # another client
    with pytest.raises(TransactionConflict):
        backend.recalled(tenant, ["f2"], None, as_of=KNOWN, seen=seen)
    assert [r.id for r in backend.recalled(tenant, ["f1"], None, as_of=KNOWN, seen=seen)] == ["f1"]


def test_recalls_racing_overwrites_and_erases_never_select_a_stale_fingerprint(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    """Readers recall while another client overwrites and erases: every returned record is
    active and has exactly the fingerprint its gate passed."""
    reader = _store(neo4j_driver, neo4j_target)
    backend = reader.backend
    assert isinstance(backend, Neo4jBackend)
    ids = [f"f{i}" for i in range(8)]
    reader.add_many([_fact(tenant, rid, f"refund rule {rid} version 0") for rid in ids])
    writer = MemoryStore(Neo4jBackend(backend.driver, uri=backend.uri, keys=backend.keys))
    stop = threading.Event()
    failures: list[str] = []
    checked = [0]
    gated = threading.local()  # each reader's last gate: record id -> the fingerprint it passed
    recalled = backend.recalled

    def recalled_seen(*args: Any, seen: dict[str, tuple[str, str | None]], **kwargs: Any) -> Any:
        gated.fingerprints = {rid: fingerprint for rid, (fingerprint, _) in seen.items()}
        return recalled(*args, seen=seen, **kwargs)

    backend.recalled = recalled_seen  # type: ignore[method-assign]

    def write() -> None:
        version = 0
        try:
            while not stop.is_set():
                version += 1
                for rid in ids[2:]:
                    record = _fact(tenant, rid, f"refund rule {rid} version {version}")
                    writer.backend.apply([PutRecord(record=record, replace=True)])
                if version in (3, 6):
                    writer.forget(_erase(tenant, ids[version // 3 - 1]))
        except Exception as err:
            failures.append(f"writer: {err!r}")

    def read() -> None:
        try:
            while not stop.is_set():
                try:
                    selection = reader.recall(_ctx(tenant, limit=8), "refund rule version")
                except TransactionConflict:
                    continue  # every attempt saw a change: allowed, never a stale record
                passed = gated.fingerprints
                for record in selection.records:
                    if record.status is not Status.ACTIVE:
                        failures.append(f"{record.id} returned {record.status.value}")
                    if passed.get(record.id) != record.fingerprint():
                        failures.append(f"{record.id} returned in a state its gate did not pass")
                checked[0] += len(selection.records)
        except Exception as err:
            failures.append(f"reader: {err!r}")

    threads = [threading.Thread(target=write), *(threading.Thread(target=read) for _ in range(3))]
    for thread in threads:
        thread.start()
    time.sleep(6)
    stop.set()
    for thread in threads:
        thread.join(60)
    assert failures == []
    assert checked[0] > 0
    final = reader.recall(_ctx(tenant, limit=8), "refund rule version")
    assert {"f0", "f1"}.isdisjoint(final.ids)
    assert all(r.fingerprint() == gated.fingerprints[r.id] for r in final.records)


def _as_before_sealing(driver: neo4j.Driver, store: MemoryStore, tenant: str) -> dict[str, str]:
    """Rewrite the tenant's fingerprints (live and kept) in clear, tokens of those, as a
    store written before fingerprints were sealed holds them. Returns the live ones."""
    backend = store.backend
    assert isinstance(backend, Neo4jBackend)
    live = {r.id: r.fingerprint() for r in backend.all_records(tenant)}
    with driver.session() as session:
        nodes = session.run(
            "MATCH (m:Memory {tenant: $tenant}) RETURN m.id AS id, m.v_until AS until, m.v_fp AS fps",
            tenant=tenant,
        ).data()
        rows = []
        for row in nodes:
            kept = [
                backend._crypt.fingerprints(tenant, [(row["id"], fp, u)])[0]
                for fp, u in zip(row["fps"] or [], row["until"] or [], strict=True)
            ]
            fp = live[row["id"]]
            rows.append(
                [
                    row["id"],
                    fp,
                    list(fingerprint_tokens(fp)),
                    kept or None,
                    [fingerprint_tokens(f)[0] for f in kept] or None,  # type: ignore[arg-type]
                    [fingerprint_tokens(f)[1] for f in kept] or None,  # type: ignore[arg-type]
                ]
            )
        session.run(
            "UNWIND $rows AS row MATCH (m:Memory {tenant: $tenant, id: row[0]})-[r:APPLIES_TO]->() "
            "SET m.fingerprint = row[1], r.g = r.g[0..8] + row[2] + r.g[10..], "
            "m.v_fp = row[3], m.v_tok1 = row[4], m.v_tok2 = row[5]",
            tenant=tenant,
            rows=rows,
        ).consume()
    return live


def test_a_store_with_clear_fingerprints_is_refused_for_erase_until_migrate_seals_them(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    store = _store(neo4j_driver, neo4j_target)
    backend = store.backend
    assert isinstance(backend, Neo4jBackend)
    store.add_many([_fact(tenant, f"f{i}", f"refund rule {i}") for i in range(5)])
    _revoke(store, tenant, "f1")  # a kept version
    ctx = ReadContext(as_of=KNOWN, tenant=tenant, scopes=("case:c1",), now=T0 + timedelta(days=1))
    before = store.recall(ctx, "refund rule")
    kept = backend.kept_fingerprints(tenant, ["f1"], T0)
    assert set(kept) == {"f1"}
    live = _as_before_sealing(neo4j_driver, store, tenant)
    nodes = _nodes(neo4j_driver, tenant)
    assert nodes["f1"]["v_fp"] is not None
    assert not nodes["f1"]["v_fp"][0].startswith("s1:")
    # Still read as before: recall, verify, kept fingerprints.
    old = _store(neo4j_driver, neo4j_target)
    assert old.recall(ctx, "refund rule") == before
    assert old.verify(before.receipt, ctx).status == "verified"
    assert old.backend.kept_fingerprints(tenant, ["f1"], T0) == kept
    assert nodes["f1"]["v_fp"] == [kept["f1"]]
    for reader in (store, old):
        with pytest.raises(ContractViolation) as err:
            reader.forget(_erase(tenant, "f3"))
        assert err.value.code == "plaintext_store"
        assert "graphmem migrate --encrypt" in err.value.message
        assert reader.get(tenant, "f3").status is Status.ACTIVE  # type: ignore[union-attr]
    assert _nodes(neo4j_driver, tenant) == nodes  # nothing was changed
    # The migration seals them in batches (two records each here), then has nothing to do.
    assert backend.encrypt_stored(batch=2, tenant=tenant) == 5
    assert backend.encrypt_stored(batch=2, tenant=tenant) == 0
    sealed = _nodes(neo4j_driver, tenant)
    for rid, node in sealed.items():
        assert node["fingerprint"].startswith("s1:")
        assert live[rid] not in str(node.values())
        assert node["g"][8:10] == list(stored_tokens(node["fingerprint"]))
        assert backend._crypt.fingerprints(tenant, [(rid, node["fingerprint"], None)]) == [live[rid]]
        assert {
            k: v for k, v in node.items() if k not in ("fingerprint", "g", "v_fp", "v_tok1", "v_tok2")
        } == {
            k: v for k, v in nodes[rid].items() if k not in ("fingerprint", "g", "v_fp", "v_tok1", "v_tok2")
        }
    (version,) = sealed["f1"]["v_fp"]
    assert version.startswith("s1:")
    assert [sealed["f1"]["v_tok1"][0], sealed["f1"]["v_tok2"][0]] == list(stored_tokens(version))
    fresh = _store(neo4j_driver, neo4j_target)
    assert fresh.recall(ctx, "refund rule") == before
    assert fresh.verify(before.receipt, ctx).status == "verified"
    assert fresh.backend.kept_fingerprints(tenant, ["f1"], T0) == kept
    # Erase works from then on, for the refused client too.
    store.forget(_erase(tenant, "f3"))
    assert store.get(tenant, "f3").status is Status.ERASED  # type: ignore[union-attr]
    assert "f3" not in fresh.recall(ctx, "refund rule").ids
