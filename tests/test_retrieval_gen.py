"""The generated retrieval set (graphmem.eval.retrieval_gen): labelled as it says, and
evaluated through the real read path for BM25, the embedding alone and hybrid."""

from __future__ import annotations

from collections import Counter

from graphmem import MemoryStore
from graphmem.embeddings import HashingEmbedder
from graphmem.eval.retrieval_gen import STYLES, generate, to_jsonl
from graphmem.eval_retrieval import evaluate, load_dataset
from graphmem.ranking import tokenize


def test_the_set_is_big_enough_balanced_and_seeded() -> None:
    data = generate(11)
    assert len(data.records) >= 2000
    assert len(data.queries) >= 300
    assert Counter(q.style for q in data.queries) == dict.fromkeys(STYLES, 100)
    assert generate(11) == data
    assert generate(12).records != data.records
    lengths = [len(r.content.split()) for r in data.records]
    assert min(lengths) >= 10
    assert max(lengths) <= 80
    assert load_dataset(list(to_jsonl(data))) == data  # the format eval_retrieval reads


def test_labels_mean_what_the_styles_promise() -> None:
    data = generate(11)
    text = {r.id: r.content for r in data.records}
    for q in data.queries:
        answers = [set(tokenize(text[rid])) for rid in q.relevant]
        asked = set(tokenize(q.query))
        if q.style == "no_overlap":
            assert all(not (asked & words) for words in answers), q
        else:
            assert len(q.relevant) == 1
            assert asked & answers[0], q  # at least the person's name
        if q.style == "lexical":
            assert len(asked & answers[0]) >= 3, q  # person, action and thing
    decoys = [r for r in data.records if r.domain == "decoy"]
    assert len(decoys) >= 900


def test_the_evaluation_reports_bm25_vector_and_hybrid_per_style() -> None:
    data = generate(3, facts=60, questions=30)
    result = evaluate(MemoryStore.embedded, HashingEmbedder(64), data, k=5)
    for mode in ("bm25", "vector", "hybrid"):
        assert set(result[mode]["by_style"]) == set(STYLES)
        assert 0.0 <= result[mode]["recall@5"] <= 1.0
    # BM25 finds what shares the question's words and nothing that shares none.
    assert result["bm25"]["by_style"]["lexical"]["recall@5"] > 0.5
    assert result["bm25"]["by_style"]["no_overlap"]["recall@5"] == 0.0
