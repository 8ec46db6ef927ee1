"""Retrieval quality of recall: BM25 alone versus BM25 fused with embeddings.

Loads a labelled set (memory records plus queries with their relevant record
ids) into a fresh store, then runs every query twice through the real read
path, ``store.recall``: once without a query embedding (BM25 only) and once
with the records and the query embedded (hybrid). Reports recall@k and MRR,
overall and per query style (``lexical`` / ``paraphrase``).

The set's format, one JSON object per line::

    {"type": "meta", ...}                                          (optional)
    {"type": "record", "id": "pay-01", "domain": "payments", "content": "..."}
    {"type": "query", "id": "q01", "style": "paraphrase", "query": "...", "relevant": ["pay-01"]}

Run it::

    python -m graphmem.eval_retrieval --embedder minilm      # or hashing (default)
    python -m graphmem.eval_retrieval --store bolt://localhost:7687 --user neo4j --password pw
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from graphmem.embeddings import Embedder, HashingEmbedder, MiniLMEmbedder, embed_query, embed_records
from graphmem.errors import ContractViolation
from graphmem.model import Kind, MemoryRecord, ReadContext, Source, Trust
from graphmem.store import MemoryStore

__all__ = [
    "DEFAULT_DATASET",
    "LabelledQuery",
    "LabelledRecord",
    "RetrievalSet",
    "evaluate",
    "load_dataset",
    "main",
]

DEFAULT_DATASET = Path(__file__).resolve().parent.parent / "tests" / "retrieval" / "retrieval_set.jsonl"
"""The set shipped in the source tree (not in the wheel)."""

_SCOPE = "workspace:retrieval-eval"
_T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class LabelledRecord:
    id: str
    content: str
    domain: str = ""


@dataclass(frozen=True)
class LabelledQuery:
    id: str
    query: str
    relevant: tuple[str, ...]
    style: str = "lexical"


@dataclass(frozen=True)
class RetrievalSet:
    records: tuple[LabelledRecord, ...]
    queries: tuple[LabelledQuery, ...]
    meta: dict[str, Any] = field(default_factory=dict)


def load_dataset(source: str | Path | Iterable[str] | None = None) -> RetrievalSet:
    """Parse a JSON Lines retrieval set (a path, or lines); default :data:`DEFAULT_DATASET`."""
    if source is None:
        source = DEFAULT_DATASET
    lines: Iterable[str]
    if isinstance(source, str | Path):
        path = Path(source)
        if not path.is_file():
            raise ContractViolation(f"no retrieval set at {path}; pass --dataset", code="dataset_not_found")
        lines = path.read_text(encoding="utf-8").splitlines()
    else:
        lines = source
    records: list[LabelledRecord] = []
    queries: list[LabelledQuery] = []
    meta: dict[str, Any] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        row = json.loads(line)
        kind = row.get("type")
        if kind == "meta":
            meta = {k: v for k, v in row.items() if k != "type"}
        elif kind == "record":
            records.append(LabelledRecord(row["id"], row["content"], row.get("domain", "")))
        elif kind == "query":
            queries.append(
                LabelledQuery(row["id"], row["query"], tuple(row["relevant"]), row.get("style", "lexical"))
            )
        else:
            raise ContractViolation(f"line {number}: unknown row type {kind!r}", code="invalid_dataset")
    known = {r.id for r in records}
    if len(known) != len(records):
        raise ContractViolation("record ids in the retrieval set must be unique", code="invalid_dataset")
    for q in queries:
        missing = [rid for rid in q.relevant if rid not in known]
        if not q.relevant or missing:
            raise ContractViolation(
                f"query {q.id!r} needs relevant ids that exist (missing: {missing})", code="invalid_dataset"
            )
    return RetrievalSet(tuple(records), tuple(queries), meta)


def _memory_records(tenant: str, dataset: RetrievalSet) -> list[MemoryRecord]:
    return [
        MemoryRecord(
            id=r.id,
            tenant=tenant,
            kind=Kind.SEMANTIC,
            scope=_SCOPE,
            content=r.content,
            created_at=_T0,
            # Distinct, label-independent recency, so ties (e.g. no query term matches) are not
            # broken in favour of the relevant record.
            valid_from=_T0 + timedelta(minutes=i),
            sources=(Source(id=f"src-{r.id}", type="document", trust=Trust.TRUSTED),),
            tags=(f"domain:{r.domain}",) if r.domain else (),
        )
        for i, r in enumerate(dataset.records)
    ]


def _metrics(ranks: Sequence[tuple[list[int], int]], k: int) -> dict[str, Any]:
    """``ranks``: per query, the 1-based ranks of its relevant records (0 = not returned) and how many."""
    if not ranks:
        return {f"recall@{k}": 0.0, "mrr": 0.0, "queries": 0}
    recall = sum(sum(1 for r in found if 0 < r <= k) / total for found, total in ranks) / len(ranks)
    mrr = sum(1.0 / min((r for r in found if r > 0), default=float("inf")) for found, _ in ranks) / len(ranks)
    return {f"recall@{k}": round(recall, 4), "mrr": round(mrr, 4), "queries": len(ranks)}


def evaluate(
    store_factory: Callable[[], MemoryStore],
    embedder: Embedder,
    dataset: RetrievalSet | str | Path | None = None,
    *,
    k: int = 5,
    tenant: str | None = None,
) -> dict[str, Any]:
    """Recall@k and MRR of BM25 alone, the embedding alone and hybrid (BM25 + cosine) on ``dataset``.

    ``store_factory`` makes the store to load (a fresh one: this call closes it).
    Records are embedded with ``embedder`` and written once; each query is then
    recalled without and with its embedding. MRR is over the full ranking (the
    context's limit covers every record). Returns a JSON-ready dict.
    """
    data = dataset if isinstance(dataset, RetrievalSet) else load_dataset(dataset)
    tenant = tenant or f"retrieval-eval-{uuid.uuid4().hex[:12]}"
    records = embed_records(_memory_records(tenant, data), embedder)
    query_vectors = [embed_query(q.query, embedder) for q in data.queries]
    ctx = ReadContext(
        tenant=tenant,
        scopes=(_SCOPE,),
        now=_T0 + timedelta(days=1),
        limit=max(1, len(records)),
        kinds=(Kind.SEMANTIC,),
    )
    per_query: list[dict[str, Any]] = []
    by_mode: dict[str, list[tuple[str, list[int], int]]] = {"bm25": [], "vector": [], "hybrid": []}
    with store_factory() as store:
        store.add_many(records)
        for query, vector in zip(data.queries, query_vectors, strict=True):
            row: dict[str, Any] = {"id": query.id, "style": query.style, "query": query.query}
            # vector: the query's embedding alone (no terms), through the same read path.
            modes = (("bm25", query.query, None), ("vector", "", vector), ("hybrid", query.query, vector))
            for mode, text, embedding in modes:
                model = None if embedding is None else embedder.name
                order = store.recall(ctx, text, query_embedding=embedding, query_embedding_model=model).ids
                position = {rid: i for i, rid in enumerate(order, 1)}
                found = [position.get(rid, 0) for rid in query.relevant]
                by_mode[mode].append((query.style, found, len(query.relevant)))
                row[f"{mode}_ranks"] = found
                row[f"{mode}_top"] = order[:k]
            per_query.append(row)
    styles = sorted({q.style for q in data.queries})
    result: dict[str, Any] = {
        "embedder": embedder.name,
        "dimensions": embedder.dimensions,
        "records": len(data.records),
        "queries": len(data.queries),
        "k": k,
    }
    for mode, rows in by_mode.items():
        summary = _metrics([(f, n) for _, f, n in rows], k)
        summary["by_style"] = {s: _metrics([(f, n) for st, f, n in rows if st == s], k) for s in styles}
        result[mode] = summary
    result["per_query"] = per_query
    return result


def _format(result: dict[str, Any]) -> str:
    k = result["k"]
    lines = [
        f"retrieval set: {result['records']} records, {result['queries']} queries; "
        f"embedder {result['embedder']} ({result['dimensions']} dims)",
        f"{'':22}{'recall@' + str(k):>10}{'MRR':>8}",
    ]
    for mode in ("bm25", "vector", "hybrid"):
        summary = result[mode]
        lines.append(f"{mode:22}{summary[f'recall@{k}']:>10.3f}{summary['mrr']:>8.3f}")
        for style, sub in summary["by_style"].items():
            label = f"  {style} ({sub['queries']})"
            lines.append(f"{label:22}{sub[f'recall@{k}']:>10.3f}{sub['mrr']:>8.3f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m graphmem.eval_retrieval", description="BM25 vs hybrid recall on a labelled set."
    )
    parser.add_argument("--embedder", choices=["hashing", "minilm"], default="hashing")
    parser.add_argument("--dimensions", type=int, default=256, help="hashing embedder dimensions")
    parser.add_argument(
        "--dataset", type=Path, default=None, help=f"JSON Lines set (default {DEFAULT_DATASET})"
    )
    parser.add_argument(
        "--generated",
        action="store_true",
        help="the generated set instead (graphmem.eval.retrieval_gen: 2,000 records, 300 questions)",
    )
    parser.add_argument("--seed", type=int, default=11, help="--generated: the seed")
    parser.add_argument("--store", default="memory://", help="store URI (memory://, bolt://…, neo4j://…)")
    parser.add_argument("--user", default=None)
    parser.add_argument("--password", default=None)
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the full result as JSON")
    args = parser.parse_args(argv)
    embedder: Embedder = MiniLMEmbedder() if args.embedder == "minilm" else HashingEmbedder(args.dimensions)
    options: dict[str, Any] = {}
    if args.user is not None:
        options["auth"] = (args.user, args.password or "")

    def factory() -> MemoryStore:
        return MemoryStore.open(args.store, **options)

    dataset: RetrievalSet | Path | None = args.dataset
    if args.generated:
        from graphmem.eval.retrieval_gen import generate, to_jsonl

        dataset = load_dataset(list(to_jsonl(generate(args.seed))))
    result = evaluate(factory, embedder, dataset, k=args.k)
    print(json.dumps(result, indent=2) if args.json else _format(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
