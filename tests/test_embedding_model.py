"""Records carry the id of the model that embedded them (issue 20, item 3): the id is validated
and stored on every backend (sealed on Neo4j, a column of the embedded store), a query embedding
of another dimension or model than a record the read may use is refused, receipts name the
query's model, and nothing changes for records and receipts without one."""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings

from graphmem import (
    ForgetMode,
    ForgetRequest,
    GraphmemError,
    Kind,
    MemoryRecord,
    MemoryStore,
    ReadContext,
    Receipt,
    Source,
    Status,
)
from graphmem.backends.base import PutRecord
from graphmem.backends.neo4j import Neo4jBackend
from graphmem.backends.sql import sql
from graphmem.backends.sqlite_engine import DB_NAME, FORMAT, RECORD_ROW, record_row
from graphmem.embeddings import HashingEmbedder, embed_query, embed_record, embed_records
from graphmem.integrations.langgraph import GraphmemStore, embedding_model_id
from graphmem.model import WriteProposal
from graphmem.model.canonical import canonical_json, sha256
from tests.conftest import KNOWN, T0
from tests.test_neo4j_layout import _node

SCOPE = "workspace:w1"
LATER = T0 + timedelta(days=1)


def note(
    tenant: str,
    record_id: str,
    embedding: Sequence[float] | None = (0.6, 0.8),
    model: str | None = "m-a",
    *,
    scope: str = SCOPE,
    content: str = "the gateway retries twice",
    **fields: Any,
) -> MemoryRecord:
    values: dict[str, Any] = {
        "id": record_id,
        "tenant": tenant,
        "kind": Kind.SEMANTIC,
        "scope": scope,
        "content": content,
        "created_at": T0,
        "valid_from": T0,
        "sources": (Source(id=f"s-{record_id}"),),
        "embedding": None if embedding is None else tuple(embedding),
        "embedding_model": model,
    }
    return MemoryRecord(**{**values, **fields})


def ctx(tenant: str, *scopes: str, limit: int = 50) -> ReadContext:
    return ReadContext(tenant=tenant, scopes=scopes or (SCOPE,), now=LATER, limit=limit)


def code_of(call: Callable[[], object]) -> GraphmemError:
    with pytest.raises(GraphmemError) as err:
        call()
    return err.value


def mismatch(query: str, record: str) -> str:
    """The message both backends give (``graphmem.ranking.embedding_mismatch``)."""
    return (
        f"the query embedding ({query}) cannot be compared with the embedding of a record this read "
        f"may use ({record}); embed the query with the records' model, or embed the records again with "
        "the query's (embed_records) — similarity across models or dimensions means nothing"
    )


def reembed(
    store: MemoryStore, records: Sequence[MemoryRecord], vector: Sequence[float], model: str | None
) -> None:
    """Overwrite stored records with another embedding through the public import path."""
    lines = [
        PutRecord(
            record=MemoryRecord.model_validate(
                {**r.model_dump(), "embedding": tuple(vector), "embedding_model": model}
            )
        ).model_dump_json()
        for r in records
    ]
    store.import_(lines, replace=True)


# -- the field ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad", ["", "has space", "x" * 129, "émbed", "model#1", "a\nb", "open(ai)"], ids=repr
)
def test_a_model_id_is_1_to_128_characters_of_its_alphabet(tenant: str, bad: str) -> None:
    err = code_of(lambda: note(tenant, "r1", model=bad))
    assert err.code == "invalid_embedding_model"
    assert "letters, digits and . _ : @ / + = -" in err.message


@pytest.mark.parametrize(
    "good", ["all-MiniLM-L6-v2", "openai:text-embedding-3-small", "hf/org+x=1@rev.2_a", "m" * 128]
)
def test_model_ids_of_the_alphabet_are_kept(tenant: str, good: str) -> None:
    record = note(tenant, "r1", model=good)
    assert record.embedding_model == good
    assert MemoryRecord.model_validate_json(record.model_dump_json()) == record


def test_a_model_without_an_embedding_is_refused(tenant: str) -> None:
    err = code_of(lambda: note(tenant, "r1", embedding=None, model="m-a"))
    assert err.code == "embedding_model_without_embedding"
    assert note(tenant, "r2", embedding=None, model=None).embedding_model is None


def test_a_proposal_carries_its_model_to_the_record(tenant: str) -> None:
    proposal = WriteProposal(
        proposed_by="agent",
        tenant=tenant,
        kind=Kind.EPISODIC,
        scope=SCOPE,
        content="the retry worked",
        event_time=T0,
        outcome="unknown",
        embedding=(1.0, 0.0),
        embedding_model="m-a",
    )
    assert proposal.to_record(Status.ACTIVE, "default").embedding_model == "m-a"
    bad = {**proposal.model_dump(), "embedding": None}
    assert code_of(lambda: WriteProposal(**bad).to_record(Status.ACTIVE, "default")).code == (
        "embedding_model_without_embedding"
    )


def test_embed_records_names_the_embedder(tenant: str) -> None:
    embedder = HashingEmbedder(16)
    one = embed_record(note(tenant, "r1", embedding=None, model=None), embedder)
    assert one.embedding_model == embedder.name
    assert one.embedding is not None
    assert len(one.embedding) == 16
    assert {r.embedding_model for r in embed_records([one, note(tenant, "r2")], embedder)} == {embedder.name}

    class Spaced(HashingEmbedder):
        @property
        def name(self) -> str:
            return "my embedder"

    assert code_of(lambda: embed_record(one, Spaced(16))).code == "invalid_embedding_model"


# -- nothing changes without a model --------------------------------------------------------

#: Computed before records had an ``embedding_model``: they must never change.
PINNED_FINGERPRINT = "f6151cafcb0d584eacfc90d69ebe173ecb915e0967ad1938e3a87d1959cafb97"
PINNED_RECEIPTS = {
    None: "439a38a2ed8e2ba1edecd1e4246b84b4d54c2985040585559418f3bfc8689cc2",
    (1.0, 0.0): "333a51493058dae152cbe72eaf171d042e33b8327a620dc32c106606c1986b4c",
}
#: The receipt's parts before the field.
OLD_RECEIPT_PARTS = (
    "selector_version",
    "now",
    "as_of",
    "query",
    "query_embedding",
    "context_digest",
    "candidates_digest",
    "selection_digest",
    "decisions_digest",
    "selected_ids",
)


def test_records_and_receipts_without_a_model_are_byte_identical_to_before() -> None:
    record = note("t-pin", "pin-1", model=None, sources=(Source(id="s-pin"),))
    assert "embedding_model" not in record.model_dump_json()
    assert "embedding_model" not in record.model_dump()
    assert record.fingerprint() == PINNED_FINGERPRINT
    with MemoryStore.embedded() as store:
        store.add(record)
        context = ReadContext(tenant="t-pin", scopes=(SCOPE,), now=T0.replace(month=2))
        for query_embedding, digest in PINNED_RECEIPTS.items():
            receipt = store.recall(context, "gateway", query_embedding=query_embedding).receipt
            assert receipt.embedding_model is None
            assert receipt.digest == digest
            assert store.verify(receipt, context)


def test_every_backend_digests_a_receipt_without_a_model_as_before(store: MemoryStore, tenant: str) -> None:
    store.add_many([note(tenant, "r1", model=None), note(tenant, "r2", model="m-a")])
    receipt = store.recall(ctx(tenant), "gateway", query_embedding=(1.0, 0.0)).receipt
    body = receipt.model_dump(mode="json")
    assert body["embedding_model"] is None
    assert receipt.digest == sha256(canonical_json({k: body[k] for k in OLD_RECEIPT_PARTS}))
    # A receipt serialised before the field parses and verifies.
    old = {k: v for k, v in body.items() if k != "embedding_model"}
    assert store.verify(Receipt.model_validate({**old, "digest": receipt.digest}), ctx(tenant))


# -- the mismatch ---------------------------------------------------------------------------


def test_a_query_of_another_dimension_is_refused(store: MemoryStore, tenant: str) -> None:
    store.add_many([note(tenant, "r1"), note(tenant, "r2", embedding=None, model=None)])
    for model, named in ((None, ""), ("m-a", ", model 'm-a'")):
        err = code_of(
            lambda model=model: store.recall(  # type: ignore[misc]
                ctx(tenant), "gateway", query_embedding=(1.0, 0.0, 0.0), query_embedding_model=model
            )
        )
        assert err.code == "embedding_model_mismatch"
        assert err.message == mismatch(f"3 dimensions{named}", "2 dimensions, model 'm-a'")
    assert store.recall(ctx(tenant), "gateway", query_embedding=(1.0, 0.0)).ids == ["r1", "r2"]


def test_a_query_naming_another_model_is_refused(store: MemoryStore, tenant: str) -> None:
    store.add_many(
        [note(tenant, "r1", (0.6, 0.8)), note(tenant, "r2", (0.8, 0.6), model=None, content="retries")]
    )
    err = code_of(
        lambda: store.recall(ctx(tenant), "gateway", query_embedding=(1.0, 0.0), query_embedding_model="m-b")
    )
    assert err.code == "embedding_model_mismatch"
    assert err.message == mismatch("2 dimensions, model 'm-b'", "2 dimensions, model 'm-a'")
    # The same model, or a record that names none: only the dimensions are compared.
    found = store.recall(ctx(tenant), "", query_embedding=(1.0, 0.0), query_embedding_model="m-a")
    assert found.ids == ["r2", "r1"]  # r2 is the closer vector
    assert found.receipt.embedding_model == "m-a"
    assert [r.embedding_model for r in found.records] == [None, "m-a"]


def test_two_models_among_the_survivors_refuse_any_named_query(store: MemoryStore, tenant: str) -> None:
    store.add_many([note(tenant, "r1", model="m-a"), note(tenant, "r2", model="m-b", content="retries")])
    for model in ("m-a", "m-b"):
        err = code_of(
            lambda model=model: store.recall(  # type: ignore[misc]
                ctx(tenant), "", query_embedding=(1.0, 0.0), query_embedding_model=model
            )
        )
        assert err.code == "embedding_model_mismatch"
    # Without an embedding nothing is compared: lexical recall still works.
    assert store.recall(ctx(tenant), "gateway").ids == ["r1", "r2"]


def test_bad_query_models_are_refused(store: MemoryStore, tenant: str) -> None:
    store.add(note(tenant, "r1"))
    assert (
        code_of(
            lambda: store.recall(ctx(tenant), "", query_embedding=(1.0, 0.0), query_embedding_model="bad id")
        ).code
        == "invalid_embedding_model"
    )
    assert (
        code_of(
            lambda: store.recall(ctx(tenant), "", query_embedding=(1.0, 0.0), query_embedding_model=7)  # type: ignore[arg-type]
        ).code
        == "invalid_embedding_model"
    )
    err = code_of(lambda: store.recall(ctx(tenant), "", query_embedding_model="m-a"))
    assert err.code == "embedding_model_without_embedding"


def test_records_the_gate_dropped_never_cause_a_mismatch(store: MemoryStore, tenant: str) -> None:
    """Only the survivors are compared: a dropped record's model or dimension leaks nothing."""
    store.add_many(
        [
            note(tenant, "keep", (0.6, 0.8), "m-a"),
            note(tenant, "other-scope", (1.0, 0.0, 0.0), "m-b", scope="workspace:w2"),
            note(tenant, "revoked", (1.0, 0.0, 0.0), "m-b", status=Status.REVOKED),
            note(tenant, "secret", (1.0, 0.0, 0.0), "m-b", sensitivity="confidential"),
            note(tenant, "later", (1.0, 0.0, 0.0), "m-b", valid_from=LATER + timedelta(days=1)),
        ]
    )
    found = store.recall(
        ctx(tenant), "gateway", True, query_embedding=(1.0, 0.0), query_embedding_model="m-a"
    )
    assert found.ids == ["keep"]
    reasons = {d.record_id: d.reason for d in found.decisions if not d.selected}
    # A record of a scope the read does not reach is no candidate at all.
    assert reasons == {"revoked": "revoked", "secret": "insufficient_clearance", "later": "not_yet_valid"}
    assert store.verify(found.receipt, ctx(tenant))
    # The same record once the read may use it.
    err = code_of(
        lambda: store.recall(
            ctx(tenant, SCOPE, "workspace:w2"), "", query_embedding=(1.0, 0.0), query_embedding_model="m-a"
        )
    )
    assert err.code == "embedding_model_mismatch"
    assert err.message == mismatch("2 dimensions, model 'm-a'", "3 dimensions, model 'm-b'")


def test_precedents_check_the_model_too(store: MemoryStore, tenant: str) -> None:
    def episode(record_id: str, scope: str, model: str) -> MemoryRecord:
        return MemoryRecord(
            id=record_id,
            tenant=tenant,
            kind=Kind.EPISODIC,
            scope=scope,
            content="the gateway timed out",
            created_at=T0,
            event_time=T0,
            outcome="unknown",
            embedding=(1.0, 0.0),
            embedding_model=model,
        )

    store.add_many([episode("ep-a", "merchant:a", "m-a"), episode("ep-b", "merchant:b", "m-b")])
    store.relate_scopes(tenant, "merchant:a", "USES", "system:gw")
    store.relate_scopes(tenant, "merchant:b", "USES", "system:gw")
    read = ReadContext(tenant=tenant, scopes=("merchant:a",), now=LATER, as_of=KNOWN)
    one = store.precedents(
        read, "merchant:a", via=["USES"], hops=0, query_embedding=(1.0, 0.0), query_embedding_model="m-a"
    )
    assert one.ids == ["ep-a"]
    assert one.receipt.embedding_model == "m-a"
    assert store.verify(one.receipt, store.precedents_context(read, "merchant:a", ["USES"], 0))
    err = code_of(
        lambda: store.precedents(
            read, "merchant:a", via=["USES"], hops=2, query_embedding=(1.0, 0.0), query_embedding_model="m-a"
        )
    )
    assert err.code == "embedding_model_mismatch"


# -- receipts -------------------------------------------------------------------------------


def test_the_receipt_names_the_model_and_its_digest_covers_it(store: MemoryStore, tenant: str) -> None:
    store.add(note(tenant, "r1"))
    named = store.recall(ctx(tenant), "gateway", query_embedding=(1.0, 0.0), query_embedding_model="m-a")
    unnamed = store.recall(ctx(tenant), "gateway", query_embedding=(1.0, 0.0))
    assert named.receipt.embedding_model == "m-a"
    assert named.receipt.digest != unnamed.receipt.digest
    assert named.receipt.model_copy(
        update={"embedding_model": None, "digest": ""}
    ) == unnamed.receipt.model_copy(update={"digest": ""})
    assert Receipt.model_validate_json(named.receipt.model_dump_json()) == named.receipt
    assert store.verify(named.receipt, ctx(tenant))
    for forged in ("m-b", None):
        result = store.verify(named.receipt.model_copy(update={"embedding_model": forged}), ctx(tenant))
        assert result.status == "mismatch"
        assert result.differences == ("receipt: its parts do not match its digest",)


def test_verify_after_re_embedding_with_another_model_says_embedding(store: MemoryStore, tenant: str) -> None:
    records = [note(tenant, "r1"), note(tenant, "r2", (0.8, 0.6), content="retries")]
    store.add_many(records)
    receipt = store.recall(
        ctx(tenant), "gateway", query_embedding=(1.0, 0.0), query_embedding_model="m-a"
    ).receipt
    reembed(store, records[1:], (0.8, 0.6), "m-b")
    result = store.verify(receipt, ctx(tenant))
    assert result.status == "mismatch"
    assert len(result.differences) == 1
    assert result.differences[0].startswith("embedding: ")
    assert "model 'm-b'" in result.differences[0]
    reembed(store, records[1:], (0.8, 0.6), "m-a")
    assert store.verify(receipt, ctx(tenant))


# -- storage --------------------------------------------------------------------------------


def test_the_model_is_stored_and_read_back(store: MemoryStore, tenant: str) -> None:
    store.add_many(
        [note(tenant, "r1", model="openai:text-embedding-3-small"), note(tenant, "r2", model=None)]
    )
    got = store.get(tenant, "r1")
    assert got is not None
    assert got.embedding_model == "openai:text-embedding-3-small"
    assert got.fingerprint() == note(tenant, "r1", model="openai:text-embedding-3-small").fingerprint()
    plain = store.get(tenant, "r2")
    assert plain is not None
    assert plain.embedding_model is None
    if isinstance(store.backend, Neo4jBackend):
        node = _node(store.backend.driver, tenant, "r1")
        assert isinstance(node["embedding_model"], bytes)  # sealed, beside the embedding
        assert b"text-embedding" not in node["embedding_model"]
        assert "text-embedding" not in node["json"]
        assert "embedding_model" not in _node(store.backend.driver, tenant, "r2")


def test_an_erase_clears_the_model(store: MemoryStore, tenant: str) -> None:
    store.add(note(tenant, "r1", model="acme:private-model-7"))
    store.forget(
        ForgetRequest(tenant=tenant, target="r1", mode=ForgetMode.ERASE, reason="asked", requested_by="dpo")
    )
    erased = store.get(tenant, "r1")
    assert erased is not None
    assert erased.status is Status.ERASED
    assert (erased.embedding, erased.embedding_model) == (None, None)
    assert all("private-model" not in line for line in store.export(tenant))
    if isinstance(store.backend, Neo4jBackend):
        assert "embedding_model" not in _node(store.backend.driver, tenant, "r1")


def test_export_and_import_keep_the_model(store: MemoryStore, tenant: str) -> None:
    store.add_many([note(tenant, "r1", model="m-a"), note(tenant, "r2", model=None, content="retries")])
    copy = f"{tenant}-copy"
    lines = [line.replace(json.dumps(tenant), json.dumps(copy)) for line in store.export(tenant)]
    for target in (store, MemoryStore.embedded()):  # this backend, and across backends
        target.import_(lines)
        got = {rid: target.get(copy, rid) for rid in ("r1", "r2")}
        assert {rid: r.embedding_model for rid, r in got.items() if r is not None} == {
            "r1": "m-a",
            "r2": None,
        }
        copied = got["r1"]
        assert copied is not None
        assert copied.fingerprint() == note(copy, "r1", model="m-a").fingerprint()
        assert (
            code_of(
                lambda target=target: target.recall(  # type: ignore[misc]
                    ctx(copy), "", query_embedding=(1.0, 0.0), query_embedding_model="m-b"
                )
            ).code
            == "embedding_model_mismatch"
        )


def _swap(ddl: str, old: str, new: str = "") -> str:
    """``ddl`` with its one occurrence of ``old`` replaced by ``new``."""
    assert ddl.count(old) == 1, old
    return ddl.replace(old, new)


def _old_file(path: Path, version: int, records: Sequence[MemoryRecord]) -> None:
    """A store file as graphmem wrote it before records had an ``embedding_model`` column:
    format 4 as it was, or format 3 (no relation times, kept versions without bodies either)."""
    ddl = _swap(sql("schema"), " embedding_model TEXT,")
    if version == 3:
        ddl = _swap(ddl, " body TEXT,")
        ddl = _swap(
            ddl, "recorded TEXT,\n    PRIMARY KEY (tenant, a, type, b)", "PRIMARY KEY (tenant, a, type, b)"
        )
    path.mkdir()
    conn = sqlite3.connect(path / DB_NAME)
    conn.executescript(ddl)
    columns = [c.strip() for c in RECORD_ROW.split(",")]
    old = columns[: columns.index("embedding_model")]
    conn.executemany(
        f"INSERT INTO records ({', '.join(old)}) VALUES ({', '.join('?' * len(old))})",  # noqa: S608 - constant columns
        [record_row(r)[: len(old)] for r in records],
    )
    conn.executemany(
        "INSERT OR IGNORE INTO scopes (tenant, key) VALUES (?, ?)", [(r.tenant, r.scope) for r in records]
    )
    cited = [(r.tenant, s.id, r.id, s.model_dump_json(exclude={"quote"})) for r in records for s in r.sources]
    conn.executemany(
        "INSERT INTO sources (tenant, id, body) VALUES (?, ?, ?)", [(t, s, b) for t, s, _, b in cited]
    )
    conn.executemany("INSERT INTO cites (tenant, source, record) VALUES (?, ?, ?)", [c[:3] for c in cited])
    conn.execute(f"PRAGMA user_version = {version}")
    conn.commit()
    have = {row[1] for row in conn.execute("PRAGMA table_info(records)")}
    assert "embedding_model" not in have
    conn.close()


@pytest.mark.parametrize("version", [3, 4])
def test_a_file_from_before_the_column_opens_and_gains_it(tmp_path: Path, tenant: str, version: int) -> None:
    path = tmp_path / f"v{version}"
    old = note(tenant, "old", model=None)
    _old_file(path, version, [old])
    with MemoryStore.embedded(path) as store:
        assert store.backend.check() == []  # type: ignore[attr-defined]
        assert store.get(tenant, "old") == old
        assert store.recall(
            ctx(tenant), "gateway", query_embedding=(1.0, 0.0), query_embedding_model="m-a"
        ).ids == ["old"]
        store.add(note(tenant, "new", (0.8, 0.6), "m-b", content="retries"))
    with MemoryStore.embedded(path) as store:
        got = store.get(tenant, "new")
        assert got is not None
        assert got.embedding_model == "m-b"
        assert store.backend.check() == []  # type: ignore[attr-defined]
        assert (
            code_of(
                lambda: store.recall(ctx(tenant), "", query_embedding=(1.0, 0.0), query_embedding_model="m-a")
            ).code
            == "embedding_model_mismatch"
        )
    conn = sqlite3.connect(path / DB_NAME)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == FORMAT == 4
    assert "embedding_model" in {row[1] for row in conn.execute("PRAGMA table_info(records)")}
    conn.close()


def test_a_fresh_file_has_the_column(tmp_path: Path) -> None:
    with MemoryStore.embedded(tmp_path / "new"):
        pass
    conn = sqlite3.connect(tmp_path / "new" / DB_NAME)
    assert "embedding_model" in {row[1] for row in conn.execute("PRAGMA table_info(records)")}
    conn.close()


# -- LangGraph ------------------------------------------------------------------------------


class FakeEmbeddings(Embeddings):
    """An ``Embeddings`` object with a model name, as LangChain's are."""

    model = "text-embedding-3-small"

    def __init__(self, dims: int = 2, first: float = 1.0) -> None:
        self.dims, self.first = dims, first

    def _vector(self, text: str) -> list[float]:
        return [self.first, *([0.5] * (self.dims - 1))]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


def two_dims(texts: Sequence[str]) -> list[list[float]]:
    return [[1.0, float(len(t) % 3)] for t in texts]


def test_langgraph_model_ids_are_derived_from_the_index() -> None:
    assert embedding_model_id("openai:text-embedding-3-small") == "openai:text-embedding-3-small"
    assert embedding_model_id(FakeEmbeddings()) == "FakeEmbeddings:text-embedding-3-small"
    assert embedding_model_id(two_dims) == "two_dims"
    assert embedding_model_id(lambda texts: []) == "lambda"
    assert embedding_model_id("my provider: model (v2)") == "my-provider:-model-v2"
    assert embedding_model_id("x" * 300) == "x" * 128
    assert embedding_model_id("###") is None


def test_langgraph_items_carry_the_model_and_searches_check_it(store: MemoryStore, tenant: str) -> None:
    first = GraphmemStore(store, tenant, index={"dims": 2, "embed": FakeEmbeddings()})  # type: ignore[typeddict-item]
    assert first.embedding_model == "FakeEmbeddings:text-embedding-3-small"
    first.put(("docs",), "a", {"text": "gateway retries"})
    (record,) = [r for r in store.backend.all_records(tenant) if r.tags == ("langgraph",)]  # type: ignore[attr-defined]
    assert json.loads(record.content)["embedding_model"] == "FakeEmbeddings:text-embedding-3-small"
    assert [i.key for i in first.search(("docs",), query="gateway")] == ["a"]
    named = GraphmemStore(store, tenant, index={"dims": 2, "embed": two_dims}, embedding_model="m-b")  # type: ignore[typeddict-item]
    err = code_of(lambda: named.search(("docs",), query="gateway"))
    assert err.code == "embedding_model_mismatch"
    assert "model 'FakeEmbeddings:text-embedding-3-small'" in err.message
    wider = GraphmemStore(store, tenant, index={"dims": 3, "embed": FakeEmbeddings(3)})  # type: ignore[typeddict-item]
    assert code_of(lambda: wider.search(("docs",), query="gateway")).code == "embedding_model_mismatch"
    assert [i.key for i in wider.search(("docs",))] == ["a"]  # no query: nothing compared
    assert code_of(lambda: GraphmemStore(store, tenant, embedding_model="m-a")).code == (
        "embedding_model_without_embedding"
    )
    assert (
        code_of(
            lambda: GraphmemStore(
                store, tenant, index={"dims": 2, "embed": two_dims}, embedding_model="bad id"
            )  # type: ignore[typeddict-item]
        ).code
        == "invalid_embedding_model"
    )


# -- MCP ------------------------------------------------------------------------------------


def test_the_mcp_recall_takes_a_query_embedding_and_its_model(tenant: str) -> None:
    import asyncio

    import anyio
    from mcp import Client

    from graphmem.integrations.mcp_server import build_server

    store = MemoryStore.embedded()
    store.add(note(tenant, "r1"))
    server = build_server(store, tenant, "agent-1", default_scopes=(SCOPE,))

    async def main() -> tuple[Any, Any]:
        with anyio.fail_after(30):
            async with Client(server) as client:
                same = await client.call_tool(
                    "recall",
                    {"query": "gateway", "query_embedding": [1.0, 0.0], "query_embedding_model": "m-a"},
                )
                other = await client.call_tool(
                    "recall",
                    {"query": "gateway", "query_embedding": [1.0, 0.0], "query_embedding_model": "m-b"},
                )
                return same, other

    with store:
        same, other = asyncio.run(main())
    assert not same.is_error
    assert same.structured_content["receipt"]["embedding_model"] == "m-a"
    assert other.is_error
    assert other.structured_content["error"]["code"] == "embedding_model_mismatch"


# -- concurrency ----------------------------------------------------------------------------


def test_recalls_racing_re_embedding_never_rank_across_models(store: MemoryStore, tenant: str) -> None:
    """Writers re-embed records with one model or another while recalls name one: each recall
    either ranks survivors all of that model or raises embedding_model_mismatch."""
    records = [note(tenant, f"r{i}", (1.0, i / 10), content=f"gateway note {i}") for i in range(6)]
    store.add_many(records)
    stop = threading.Event()
    failures: list[BaseException] = []
    outcomes = {"ranked": 0}
    refusals: list[str] = []
    lock = threading.Lock()
    # The writers start once both readers are reading, so the race is run however the threads
    # are scheduled (a busy machine could otherwise finish every re-embedding first).
    reading = threading.Barrier(4)

    def writer(seed: int) -> None:
        # Each writer re-embeds its own records (even or odd), a different subset each time.
        own = records[seed::2]
        try:
            reading.wait(60)
            for n in range(12):
                chosen = [r for i, r in enumerate(own) if (i + n) % 2 == 0] or own[:1]
                reembed(store, chosen, (1.0, 0.5), "m-b" if (n + seed) % 2 else "m-a")
        except BaseException as err:
            failures.append(err)
        finally:
            stop.set()

    def reader() -> None:
        try:
            reading.wait(60)
            first = True  # at least one recall each, however soon the writers finish
            while first or not stop.is_set():
                first = False
                try:
                    found = store.recall(
                        ctx(tenant), "gateway", query_embedding=(1.0, 0.0), query_embedding_model="m-a"
                    )
                except GraphmemError as err:
                    with lock:
                        refusals.append(err.code)
                    continue
                assert sorted(found.ids) == [r.id for r in records]
                assert {r.embedding_model for r in found.records} == {"m-a"}
                with lock:
                    outcomes["ranked"] += 1
        except BaseException as err:
            failures.append(err)

    threads = [threading.Thread(target=writer, args=(s,)) for s in (0, 1)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not failures, failures
    assert set(refusals) <= {"embedding_model_mismatch"}, refusals
    assert outcomes["ranked"] + len(refusals) > 0
    reembed(store, records, (1.0, 0.5), "m-a")
    assert store.recall(ctx(tenant), "", query_embedding=(1.0, 0.0), query_embedding_model="m-a").records
    reembed(store, records[:1], (1.0, 0.5), "m-b")
    assert (
        code_of(
            lambda: store.recall(ctx(tenant), "", query_embedding=(1.0, 0.0), query_embedding_model="m-a")
        ).code
        == "embedding_model_mismatch"
    )


def test_unique_tenants_keep_models_apart(store: MemoryStore) -> None:
    """Another tenant's records, whatever their model, are never a survivor of this tenant's read."""
    mine, theirs = (f"t-{uuid.uuid4().hex[:12]}" for _ in range(2))
    store.add_many([note(mine, "r1", model="m-a"), note(theirs, "r1", (1.0, 0.0, 0.0), model="m-b")])
    assert store.recall(ctx(mine), "", query_embedding=(1.0, 0.0), query_embedding_model="m-a").ids == ["r1"]
    query = embed_query("gateway", HashingEmbedder(3))
    assert (
        code_of(lambda: store.recall(ctx(mine), "", query_embedding=query)).code == "embedding_model_mismatch"
    )
