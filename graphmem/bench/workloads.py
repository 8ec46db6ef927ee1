"""The timed workloads of ``graphmem bench``. Each runs in its own tenant of one store.

A workload returns result rows (plain dicts): ``workload``, a ``latency``
summary (``n``, ``p50_ms``, ``p95_ms``, ``p99_ms``, ``throughput_per_s``) or a
rate, and the checks that say the timed calls did the right thing. Targets are
attached by ``graphmem.bench.runner``.
"""

from __future__ import annotations

import functools
import gc
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from graphmem.backends.cypher import cypher
from graphmem.bench.core import (
    KNOWN,
    NOW,
    Latency,
    Progress,
    Tick,
    candidates,
    load,
    measure,
    oracle,
    queries,
    synthetic_records,
)
from graphmem.errors import GraphmemError
from graphmem.model import (
    DropReason,
    ForgetMode,
    ForgetReport,
    ForgetRequest,
    Kind,
    MemoryRecord,
    ReadContext,
    Selection,
    Source,
    Status,
)
from graphmem.model.gate import Candidate, drop_reason
from graphmem.ranking import tokenize
from graphmem.store import MemoryStore

__all__ = [
    "BenchConfig",
    "Loaded",
    "explain_workload",
    "forget_source_workload",
    "forget_workload",
    "ingest_row",
    "load_main",
    "naive_workload",
    "recall_broad",
    "recall_selective",
    "recall_workload",
    "trace_workload",
]


def _quiet(description: str, total: int) -> Tick:
    return lambda n: None


@dataclass(frozen=True)
class BenchConfig:
    """Sizes and repeat counts of the workloads (the defaults are what ``docs/bench.md`` reports)."""

    in_scope: int = 1000
    """Selective recall: records in the caller's one case scope."""
    broad_scope_size: int = 100
    """Broad recall: records per case scope of the broad tenant."""
    broad_fraction: float = 0.1
    broad_cap: int = 10_000
    """Broad recall reaches ``min(broad_fraction x records, broad_cap)`` records."""
    repeats: int = 200
    warmup: int = 5
    """Untimed calls before each timed workload."""
    budget_s: float = 20.0
    """Stop timing a workload after this many seconds once 20 samples exist."""
    contexts: int = 20
    trace_depth: int = 10
    trace_chains: int = 20
    cascades: tuple[int, ...] = (1, 100, 10_000)
    """Records each forget takes out of use: a record's dependents, or the claims citing a source."""
    forget_mode: ForgetMode = ForgetMode.REVOKE
    naive_ks: tuple[int, ...] = (100, 1_000, 10_000)
    forget_repeats: int | None = None
    """Repeats of every forget workload; by default fewer for bigger cascades (``cascade_repeats``)."""
    batch: int = 5000
    corpus: str = "natural"
    """The records' and questions' text: ``natural`` (plain language) or ``tokens``."""
    hybrid_dimensions: int = 384
    """Hybrid recall: dimensions of the records' and queries' embeddings (384, as the recall
    issue's targets and all-MiniLM-L6-v2's)."""
    mixed_threads: int = 8
    mixed_ops: int = 1250
    """Concurrency: operations per mixed thread (8 x 1,250 = 10,000), beside 4 reader threads."""
    recall_clients: tuple[int, ...] = (1, 4, 16)
    thread_clients: tuple[int, ...] = (1, 2, 4)
    """``recall_threads``: the numbers of client threads, the first the one the others are compared to."""
    clients_s: float = 5.0
    """Concurrency: seconds of recalls for each number of client threads."""
    #: LangGraph store workload: items a namespace, and operations of the mixed run.
    lgstore_sizes: tuple[int, ...] = (1_000, 10_000)
    lgstore_mixed: int = 1_000
    lgstore_embedders: tuple[str, ...] = ("hash",)
    """LangGraph store workload: the embedding functions both stores share, a set of rows each
    (``hash``: hashed word counts; ``minilm``: the all-MiniLM-L6-v2 model, ``lgstore.EMBEDDERS``)."""
    progress: Progress = field(default=_quiet, compare=False)

    def timed(self, call: Callable[[], object], description: str) -> Latency:
        """``measure`` with this configuration's repeats, warm-up, budget and a progress bar."""
        return measure(
            call,
            self.repeats,
            warmup=self.warmup,
            budget_s=self.budget_s,
            tick=self.progress(description, self.repeats),
        )

    def cascade_repeats(self, dependents: int) -> int:
        """Each forget needs fresh dependents, so big cascades are repeated less."""
        if self.forget_repeats is not None:
            return self.forget_repeats
        if dependents <= 1:
            return 20
        if dependents <= 100:
            return 10
        if dependents <= 1000:
            return 5
        return 3


@dataclass
class Loaded:
    """The recall tenant after loading: records, the callers' contexts and what the oracle expects."""

    tenant: str
    records: list[MemoryRecord]
    scopes: int
    contexts: list[ReadContext]
    queries: list[str]
    reached: list[list[tuple[Candidate, bool]]]
    expected: list[list[str]]
    eligible: list[set[str]]
    matching: list[list[str]]
    ingest_s: float

    def case_records(self, i: int) -> list[MemoryRecord]:
        """The records in context ``i``'s case scope."""
        return [c.record for c, _ in self.reached[i] if c.record is not None]


def _timed_recalls(
    store: MemoryStore,
    contexts: list[ReadContext],
    query_list: list[str],
    expected: list[list[str]],
    cfg: BenchConfig,
    description: str,
    explain: bool = False,
) -> tuple[Latency, Latency, bool, list[Selection]]:
    """Time each context's first recall, then recalls round-robin over the contexts.

    Every selection is checked against ``expected`` afterwards. Returns (steady
    latency, first-recall latency, all equal to expected, one selection per context).
    """
    results: list[tuple[int, Selection]] = []
    # Each caller's first recall fills the store's caches for its scope (the embedded
    # backend's gate views): timed on its own, then the steady state is timed.
    firsts: list[float] = []
    for k, ctx in enumerate(contexts):
        start = time.perf_counter()
        results.append((k, store.recall(ctx, query_list[k], explain=explain)))
        firsts.append((time.perf_counter() - start) * 1000.0)
    i = 0

    def one() -> None:
        nonlocal i
        k = i % len(contexts)
        i += 1
        results.append((k, store.recall(contexts[k], query_list[k], explain=explain)))

    latency = cfg.timed(one, description)
    exact = all(sel.ids == expected[k] for k, sel in results)
    first = dict(reversed(results))
    each = [first[k] for k in range(len(contexts))]
    return latency, Latency(firsts), exact, each


# -- the recall tenant: ingest, selective recall, explain, the naive baseline --------------


def _questions(cfg: BenchConfig, seed: int, asked: list[list[MemoryRecord]]) -> list[str]:
    """One question per caller; a natural one hits at least a fifth of that caller's records."""
    if cfg.corpus == "tokens":
        return queries(len(asked), seed=seed, corpus="tokens")
    return [queries(1, seed=seed * 1000 + k, against=records)[0] for k, records in enumerate(asked)]


def load_main(store: MemoryStore, tenant: str, total: int, cfg: BenchConfig) -> Loaded:
    """Load ``total`` records, ``in_scope`` per case scope; pick the callers and ask the oracle."""
    scopes = max(1, total // cfg.in_scope)
    records = list(synthetic_records(tenant, total, scopes, corpus=cfg.corpus))
    ingest_s = load(store, records, cfg.batch, cfg.progress(f"loading {total:,} records", total))
    rng = random.Random(11)
    cases = [rng.randrange(scopes) for _ in range(cfg.contexts)]
    contexts = [
        ReadContext(
            tenant=tenant, scopes=(f"case:c{c}",), now=NOW, as_of=KNOWN, environment=("cap-a",), limit=10
        )
        for c in cases
    ]
    by_case = {c: candidates(records[c::scopes]) for c in set(cases)}
    query_list = _questions(cfg, 11, [records[c::scopes] for c in cases])
    reached = [by_case[c] for c in cases]
    answers = [oracle(r, ctx, q) for r, ctx, q in zip(reached, contexts, query_list, strict=True)]
    return Loaded(
        tenant=tenant,
        records=records,
        scopes=scopes,
        contexts=contexts,
        queries=query_list,
        reached=reached,
        expected=[a.selected for a in answers],
        eligible=[a.eligible for a in answers],
        matching=[a.matching for a in answers],
        ingest_s=ingest_s,
    )


def ingest_row(loaded: Loaded) -> dict[str, Any]:
    total = len(loaded.records)
    return {
        "workload": "ingest",
        "records_loaded": total,
        "batch": "add_many",
        "seconds": round(loaded.ingest_s, 3),
        "records_per_s": round(total / loaded.ingest_s) if loaded.ingest_s else 0,
    }


def recall_selective(store: MemoryStore, loaded: Loaded, cfg: BenchConfig) -> dict[str, Any]:
    """Recall in one case scope of ``in_scope`` records out of the whole store."""
    latency, firsts, exact, _ = _timed_recalls(
        store, loaded.contexts, loaded.queries, loaded.expected, cfg, "recall, selective scope"
    )
    return {
        "workload": "recall_selective",
        "candidates": len(loaded.reached[0]),
        "latency": latency.summary(),
        "first_recall": firsts.summary(),
        "recall_equals_oracle": exact,
    }


def explain_workload(store: MemoryStore, loaded: Loaded, cfg: BenchConfig) -> list[dict[str, Any]]:
    """``recall(..., explain=True)`` (a decision per candidate) and ``explain(ctx, record_id)``."""
    latency, _, exact, selections = _timed_recalls(
        store, loaded.contexts, loaded.queries, loaded.expected, cfg, "recall with explain=True", True
    )
    complete = all(len(sel.decisions) == len(loaded.reached[k]) for k, sel in enumerate(selections))
    # Records of each caller's case, in a fixed shuffled order: selected, ranked-out and dropped ones.
    rng = random.Random(13)
    asks: list[tuple[int, str]] = []
    for k in range(len(loaded.contexts)):
        ids = [r.id for r in loaded.case_records(k)]
        asks += [(k, rid) for rid in rng.sample(ids, min(5, len(ids)))]
    rng.shuffle(asks)
    by_id = {k: {d.record_id: d for d in sel.decisions} for k, sel in enumerate(selections)}
    agrees = all(
        store.explain(loaded.contexts[k], rid, loaded.queries[k]) == by_id[k][rid] for k, rid in asks
    )
    j = 0

    def one() -> object:
        nonlocal j
        k, rid = asks[j % len(asks)]
        j += 1
        return store.explain(loaded.contexts[k], rid, loaded.queries[k])

    one_latency = cfg.timed(one, "explain(ctx, id)")
    return [
        {
            "workload": "explain_recall",
            "candidates": len(loaded.reached[0]),
            "latency": latency.summary(),
            "recall_equals_oracle": exact,
            "decision_per_candidate": complete,
        },
        {
            "workload": "explain_one",
            "latency": one_latency.summary(),
            "agrees_with_explain_recall": agrees,
        },
    ]


def _naive(store: MemoryStore, ctx: ReadContext, query: str, k: int) -> list[str]:
    """Fulltext top-k over the whole database, then the gate: what "filter after ranking" returns."""
    from graphmem.backends.neo4j import Neo4jBackend

    backend = store.backend
    if not isinstance(backend, Neo4jBackend):
        raise GraphmemError("the naive baseline needs the Neo4j backend", code="bench_backend")
    lucene = " OR ".join(tokenize(query)) or "*"
    rows = backend._read("naive_fulltext_topk", query=lucene, k=k, tenant=ctx.tenant)
    kept: list[str] = []
    for row in rows:
        record = MemoryRecord.model_validate_json(row["json"])
        in_scope = record.scope in ctx.scopes
        if drop_reason(Candidate.of(record, None, None), ctx, in_scope) is None:
            kept.append(record.id)
    return kept[: ctx.limit]


def _mirror_for_naive(store: MemoryStore, loaded: Loaded) -> None:
    """Plaintext copies of the synthetic records in a fulltext index of their own: graphmem's
    nodes hold their text encrypted, so the naive baseline ranks these instead."""
    from graphmem.backends.neo4j import Neo4jBackend

    backend = store.backend
    if not isinstance(backend, Neo4jBackend):
        raise GraphmemError("the naive baseline needs the Neo4j backend", code="bench_backend")
    backend._write_one(cypher("bench_naive_index"), {})
    for i in range(0, len(loaded.records), 5000):
        rows = [
            {"id": r.id, "content": r.content, "json": r.model_dump_json()}
            for r in loaded.records[i : i + 5000]
        ]
        backend._write_one(cypher("bench_naive_mirror"), {"tenant": loaded.tenant, "rows": rows})
    backend._read("await_indexes", timeout_seconds=300)


def naive_workload(
    store: MemoryStore, loaded: Loaded, cfg: BenchConfig, graphmem: dict[str, Any]
) -> list[dict[str, Any]]:
    """The naive "fulltext top-k, then filter" recall on the same Neo4j server, for growing k.

    The sweep stops at the first k whose recall against the oracle equals
    graphmem's; that row (or, if no k gets there, the largest k) is the one
    compared with graphmem (``compared: true``). Fulltext never returns an
    eligible record that matches no query term, which recall must rank last
    when fewer than ``limit`` records match, so ``recall_of_matching_records``
    also reports recall over the oracle's matching records only.
    """
    graphmem_recall = 1.0 if graphmem["recall_equals_oracle"] else 0.0
    _mirror_for_naive(store, loaded)
    rows: list[dict[str, Any]] = []
    for k in sorted(cfg.naive_ks):
        hits = wanted = match_hits = matches = 0
        for n, (ctx, q) in enumerate(zip(loaded.contexts, loaded.queries, strict=True)):
            got = set(_naive(store, ctx, q, k))
            hits += len(got & set(loaded.expected[n]))
            wanted += len(loaded.expected[n])
            match_hits += len(got & set(loaded.matching[n]))
            matches += len(loaded.matching[n])
        recall = round(hits / wanted, 4) if wanted else 1.0
        j = 0

        def one(k: int = k) -> object:
            nonlocal j
            j += 1
            n = j % len(loaded.contexts)
            return _naive(store, loaded.contexts[n], loaded.queries[n], k)

        latency = cfg.timed(one, f"naive top-{k} then filter")
        summary = latency.summary()
        rows.append(
            {
                "workload": "naive_topk_filter",
                "k": k,
                "latency": summary,
                "recall_vs_oracle": recall,
                "recall_of_matching_records": round(match_hits / matches, 4) if matches else 1.0,
                "graphmem_recall_vs_oracle": graphmem_recall,
                "speedup_p95": round(summary["p95_ms"] / graphmem["latency"]["p95_ms"], 2),
                "compared": False,
            }
        )
        if recall >= graphmem_recall:
            break
    rows[-1]["compared"] = True
    rows[-1]["equal_recall"] = rows[-1]["recall_vs_oracle"] >= graphmem_recall
    return rows


# -- broad recall: one caller reaching many scopes ------------------------------------------


def broad_reach(total: int, cfg: BenchConfig) -> tuple[int, int]:
    """(case scopes of the broad tenant, how many of them the broad caller reaches)."""
    scopes = max(1, total // cfg.broad_scope_size)
    reach = min(round(total * cfg.broad_fraction), cfg.broad_cap)
    return scopes, max(1, min(scopes, reach // cfg.broad_scope_size))


def recall_broad(store: MemoryStore, tenant: str, total: int, cfg: BenchConfig) -> dict[str, Any]:
    """``total`` records, ``broad_scope_size`` per case scope; the caller's scope ``desk:broad`` is
    WITHIN the first cases (records of a scope apply in the scopes within it), so one recall
    gates and ranks every record of those cases."""
    scopes, reached_scopes = broad_reach(total, cfg)
    records = list(synthetic_records(tenant, total, scopes, seed=17, corpus=cfg.corpus))
    ingest_s = load(store, records, cfg.batch, cfg.progress(f"loading {total:,} records (broad)", total))
    for c in range(reached_scopes):
        store.scope_within(tenant, "desk:broad", f"case:c{c}")
    reached = candidates(r for i, r in enumerate(records) if i % scopes < reached_scopes)
    asked = [c.record for c, _ in reached[:2000] if c.record is not None]
    query_list = _questions(cfg, 19, [asked] * cfg.contexts)
    contexts = [
        ReadContext(
            tenant=tenant, scopes=("desk:broad",), now=NOW, as_of=KNOWN, environment=("cap-a",), limit=10
        )
    ] * cfg.contexts
    expected = [oracle(reached, ctx, q).selected for ctx, q in zip(contexts, query_list, strict=True)]
    latency, firsts, exact, _ = _timed_recalls(
        store, contexts, query_list, expected, cfg, "recall, broad scope"
    )
    return {
        "workload": "recall_broad",
        "candidates": len(reached),
        "scopes_reached": reached_scopes,
        "latency": latency.summary(),
        "first_recall": firsts.summary(),
        "recall_equals_oracle": exact,
        "ingest_records_per_s": round(total / ingest_s) if ingest_s else 0,
    }


# -- lineage: trace and forget --------------------------------------------------------------


def _semantic(tenant: str, rid: str, scope: str, content: str, **fields: Any) -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        tenant=tenant,
        kind=Kind.SEMANTIC,
        scope=scope,
        content=content,
        created_at=NOW - timedelta(days=2),
        valid_from=NOW - timedelta(days=1),
        **fields,
    )


def _depth(lineage_edges: list[tuple[str, str]], leaf: str) -> int:
    """Longest DERIVED_FROM path from ``leaf``."""
    parents: dict[str, list[str]] = {}
    for src, dst in lineage_edges:
        parents.setdefault(src, []).append(dst)

    def down(node: str) -> int:
        return max((1 + down(p) for p in parents.get(node, ())), default=0)

    return down(leaf)


def trace_workload(store: MemoryStore, tenant: str, cfg: BenchConfig) -> dict[str, Any]:
    """``trace`` of the deepest record of DERIVED_FROM chains ``trace_depth`` hops long
    (``trace_depth + 1`` records; the root cites one source)."""
    depth = cfg.trace_depth
    batch: list[MemoryRecord] = []
    for c in range(cfg.trace_chains):
        scope = f"case:trace{c}"
        batch.append(_semantic(tenant, f"t{c}-0", scope, f"chain {c} root", sources=(Source(id=f"ts{c}"),)))
        batch += [
            _semantic(tenant, f"t{c}-{d}", scope, f"chain {c} level {d}", derived_from=(f"t{c}-{d - 1}",))
            for d in range(1, depth + 1)
        ]
    store.add_many(batch)
    leaves = [f"t{c}-{depth}" for c in range(cfg.trace_chains)]
    lineage = store.trace(tenant, leaves[0])
    found = _depth([(e.src, e.dst) for e in lineage.edges if e.type == "DERIVED_FROM"], leaves[0])
    memories = sum(1 for n in lineage.nodes if n.type == "memory")
    i = 0

    def one() -> object:
        nonlocal i
        i += 1
        return store.trace(tenant, leaves[i % len(leaves)])

    latency = cfg.timed(one, f"trace depth {depth}")
    return {
        "workload": "trace",
        "depth": found,
        "memory_nodes": memories,
        "source_nodes": sum(1 for n in lineage.nodes if n.type == "source"),
        "latency": latency.summary(),
    }


_GONE = {ForgetMode.REVOKE: DropReason.REVOKED, ForgetMode.ERASE: DropReason.ERASED}


@dataclass(frozen=True)
class _Forget:
    """One repeat of a forget workload: fresh records in a scope of their own and the request."""

    scope: str
    records: list[MemoryRecord]
    request: ForgetRequest
    dependents: frozenset[str]
    """The records that only lose their support (counted in ``removed_dependents``)."""
    touched: frozenset[str]
    """Exactly what the report must list and recall must show out of use."""


def _erased(store: MemoryStore, case: _Forget, report: ForgetReport) -> bool:
    """Every touched record is a tombstone: no content, embedding, tags or quotes, but its id,
    kind, and who asked when and why; a forgotten source is marked erased wherever it is cited."""
    req = case.request
    dead = {req.target} if req.target_type == "source" else set()
    if report.erased_sources != tuple(sorted(dead)):
        return False
    originals = {r.id: r for r in case.records if r.id in case.touched}
    stored = store.backend.get_many(req.tenant, sorted(originals))
    return len(stored) == len(originals) and all(
        r.status is Status.ERASED
        and r.kind is originals[r.id].kind
        and not r.content
        and r.embedding is None
        and not r.tags
        and r.tombstone is not None
        and (r.tombstone.reason, r.tombstone.requested_by) == (req.reason, req.requested_by)
        and all(s.quote is None and (s.status == "erased") == (s.id in dead) for s in r.sources)
        for r in stored
    )


def _timed_forgets(
    store: MemoryStore,
    cfg: BenchConfig,
    workload: str,
    n: int,
    build: Callable[[int], _Forget],
    description: str,
) -> dict[str, Any]:
    """Load each repeat's records (untimed), time ``forget``, then check the report, a
    ``recall(explain=True)`` over the repeat's scope and, for erase, the stored tombstones."""
    if cfg.forget_mode not in _GONE:
        raise GraphmemError("the forget workloads revoke or erase", code="bench_forget_mode")
    erase = cfg.forget_mode is ForgetMode.ERASE
    repeats = cfg.cascade_repeats(n)
    tick = cfg.progress(description, repeats)
    samples: list[float] = []
    removed: list[int] = []
    complete: list[bool] = []
    erased: list[bool] = []
    for k in range(repeats):
        case = build(k)
        load(store, case.records, cfg.batch)
        gc.collect()
        start = time.perf_counter()
        report = store.forget(case.request)
        samples.append((time.perf_counter() - start) * 1000.0)
        tenant = case.request.tenant
        check = store.recall(
            ReadContext(tenant=tenant, scopes=(case.scope,), now=NOW, as_of=KNOWN), explain=True
        )
        out = {d.record_id for d in check.decisions if d.reason is _GONE[cfg.forget_mode]}
        removed.append(len(out & case.dependents))
        listed = [e.record_id for e in report.entries]
        complete.append(
            out == case.touched
            and len(listed) == len(case.touched)
            and set(report.touched) == case.touched
            and not check.records
        )
        if erase:
            erased.append(_erased(store, case, report))
        tick(1)
    row: dict[str, Any] = {
        "workload": workload,
        "dependents": n,
        "mode": cfg.forget_mode.value,
        "latency": Latency(samples).summary(),
        "removed_dependents": removed,
        "all_removed": all(complete) and all(r == n for r in removed),
    }
    if erase:
        row["erased"] = all(erased)
    return row


def forget_workload(store: MemoryStore, tenant: str, cfg: BenchConfig) -> list[dict[str, Any]]:
    """``forget`` of one record that ``n`` records derive from, cascading to all of them.

    Every repeat builds a fresh root and fresh dependents in a scope of their
    own (untimed), times the forget, then checks that the report lists the root
    and every dependent, and through ``recall(explain=True)`` that exactly those
    are out of use; with ``forget_mode`` erase, that each one is a tombstone.
    """

    def build(n: int, k: int) -> _Forget:
        scope = f"case:f{n}-{k}"
        root = f"f{n}-{k}-root"
        records = [_semantic(tenant, root, scope, f"forget root {n} {k}", sources=(Source(id=f"fs{n}-{k}"),))]
        records += [
            _semantic(tenant, f"f{n}-{k}-d{j}", scope, f"dependent {j} of {root}", derived_from=(root,))
            for j in range(n)
        ]
        request = ForgetRequest(
            tenant=tenant,
            target=root,
            mode=cfg.forget_mode,
            reason="benchmark",
            requested_by="graphmem-bench",
            cascade=True,
        )
        dependents = frozenset(r.id for r in records[1:])
        return _Forget(scope, records, request, dependents, dependents | {root})

    return [
        _timed_forgets(
            store, cfg, f"forget_cascade_{n}", n, functools.partial(build, n), f"forget cascading to {n:,}"
        )
        for n in cfg.cascades
    ]


def forget_source_workload(store: MemoryStore, tenant: str, cfg: BenchConfig) -> list[dict[str, Any]]:
    """``forget`` of one source that ``n`` semantic claims cite (and nothing else supports).

    Every repeat builds a fresh source and fresh claims in a scope of their own
    (untimed), times ``forget(target_type="source")``, then checks that the
    report lists exactly the ``n`` claims and through ``recall(explain=True)``
    that all of them are out of use; with ``forget_mode`` erase, that each one
    is a tombstone and the source is marked erased.
    """

    def build(n: int, k: int) -> _Forget:
        scope = f"case:fsrc{n}-{k}"
        source = f"fsrc{n}-{k}"
        cited = (Source(id=source, quote=f"quoted from {source}"),)
        records = [
            _semantic(tenant, f"{source}-c{j}", scope, f"claim {j} from {source}", sources=cited)
            for j in range(n)
        ]
        request = ForgetRequest(
            tenant=tenant,
            target=source,
            target_type="source",
            mode=cfg.forget_mode,
            reason="benchmark",
            requested_by="graphmem-bench",
            cascade=True,
        )
        claims = frozenset(r.id for r in records)
        return _Forget(scope, records, request, claims, claims)

    return [
        _timed_forgets(
            store, cfg, f"forget_source_{n}", n, functools.partial(build, n), f"forget a source {n:,} cite"
        )
        for n in cfg.cascades
    ]


def recall_workload(
    store: MemoryStore,
    tenant: str,
    total: int,
    in_scope: int = 1000,
    repeats: int = 200,
    batch: int = 5000,
    naive_k: int | None = None,
    progress: Tick | None = None,
) -> dict[str, Any]:
    """Load ``total`` records, ``in_scope`` per case scope, then time recall for one case.

    The first version of the benchmark, kept for callers of it: ingest rate,
    selective recall checked against the oracle and, with ``naive_k`` (Neo4j
    only), the naive baseline at that k.
    """
    tick = progress

    def bars(description: str, count: int) -> Tick:
        return tick if tick is not None and description.startswith("loading") else _quiet(description, count)

    cfg = BenchConfig(in_scope=in_scope, repeats=repeats, batch=batch, budget_s=float("inf"), progress=bars)
    loaded = load_main(store, tenant, total, cfg)
    recall = recall_selective(store, loaded, cfg)
    result: dict[str, Any] = {
        "records": total,
        "in_scope": total // loaded.scopes,
        "ingest_records_per_s": ingest_row(loaded)["records_per_s"],
        "recall": recall["latency"],
        "recall_equals_oracle": recall["recall_equals_oracle"],
    }
    if naive_k is not None:
        row = naive_workload(store, loaded, replace(cfg, naive_ks=(naive_k,)), recall)[0]
        result["naive"] = {
            "k": naive_k,
            "recall_vs_oracle": row["recall_vs_oracle"],
            "latency": row["latency"],
        }
    return result
