"""graphmem eval (issue "graphmem eval"): the gate removes every unsafe result, and only the gate."""

from __future__ import annotations

import json
from pathlib import Path

import neo4j
import pytest

from graphmem import DropReason, MemoryStore
from graphmem.backends.neo4j import Neo4jBackend
from graphmem.eval import (
    CAPABILITIES,
    SYSTEMS,
    CapabilityResult,
    EvalReport,
    build_workloads,
    reaches_source,
    recall_without_gate,
    run_eval,
    strip_timing,
)
from graphmem.model import Lineage, LineageEdge, LineageNode
from graphmem.testing.neo4j_server import Neo4jTarget

SEED = 7
SIZE = 3  # covers every scenario variant of every capability
GATED = ("graphmem", "gate-restored")
UNGATED = ("no-gate", "untyped")
# Where an ungated system must show unsafe results, and of which kind.
EXPECTED_HARM = {
    "working_interference": "wrong_run",
    "procedural_transfer": "incompatible_procedure",
    "semantic_update": "superseded",
    "cross_type_contamination": "failed_episode",
}


@pytest.fixture(scope="module")
def report() -> EvalReport:
    return run_eval(MemoryStore.embedded, seed=SEED, sizes=(SIZE,))


def rows(report: EvalReport) -> dict[tuple[str, str], CapabilityResult]:
    (run,) = report.runs
    return {(r.capability, r.system): r for r in run.results}


def comparable(report: EvalReport) -> dict[str, object]:
    """The report without wall-clock fields and backend labels."""
    data = strip_timing(report.as_dict())
    for run in data["runs"]:
        run.pop("backend")
    return dict(data)


def test_every_capability_and_system_is_scored(report: EvalReport) -> None:
    assert set(rows(report)) == {(c, s) for c in CAPABILITIES for s in SYSTEMS}
    assert all(r.queries >= SIZE for r in rows(report).values())


@pytest.mark.parametrize("system", GATED)
def test_gated_recall_returns_nothing_unsafe_and_solves_every_task(report: EvalReport, system: str) -> None:
    for capability in CAPABILITIES:
        row = rows(report)[capability, system]
        assert row.unsafe_rate == 0.0, (capability, row.unsafe_by_category)
        assert row.leakage == 0.0, capability
        assert row.task_success == 1.0, (capability, row.failed_queries)
        if row.abstention is not None:
            assert row.abstention == 1.0, capability


@pytest.mark.parametrize("system", UNGATED)
def test_without_the_gate_unsafe_results_appear(report: EvalReport, system: str) -> None:
    for capability, category in EXPECTED_HARM.items():
        row = rows(report)[capability, system]
        assert row.unsafe_rate > 0.0, capability
        assert row.unsafe_by_category.get(category, 0) > 0, (capability, row.unsafe_by_category)
        assert row.task_success < 1.0, capability


def test_restoring_the_gate_restores_the_same_selections(report: EvalReport) -> None:
    (run,) = report.runs
    assert run.restored_identical is True
    table = rows(report)
    for capability in CAPABILITIES:
        before, after = table[capability, "graphmem"].as_dict(), table[capability, "gate-restored"].as_dict()
        for row in (before, after):
            row.pop("system")
            row.pop("median_ms")
        assert before == after


def test_erasure_holds_even_without_the_gate(report: EvalReport) -> None:
    """Erased content is physically gone, so no system can return it; revoked content is not."""
    for system in SYSTEMS:
        row = rows(report)["cascade_deletion", system]
        assert "erased_entity" not in row.unsafe_by_category, system
    for system in UNGATED:
        assert rows(report)["cascade_deletion", system].unsafe_by_category.get("derived_from_deleted", 0) > 0


def test_json_is_reproducible_for_a_fixed_seed(report: EvalReport) -> None:
    again = run_eval(MemoryStore.embedded, seed=SEED, sizes=(SIZE,))
    assert again.to_json(timing=False) == report.to_json(timing=False)
    data = json.loads(report.to_json())
    assert data["runs"][0]["results"][0]["median_ms"] >= 0.0
    assert "median_ms" not in report.to_json(timing=False)
    other = run_eval(MemoryStore.embedded, seed=SEED + 1, sizes=(SIZE,), systems=("graphmem",))
    assert other.to_json(timing=False) != report.to_json(timing=False)


def test_markdown_has_a_row_per_capability_and_system(report: EvalReport) -> None:
    text = report.to_markdown()
    for capability in CAPABILITIES:
        for system in SYSTEMS:
            assert f"| {capability} | {system} |" in text
    assert "identical to graphmem's" in text


def test_persisted_store_gives_the_same_numbers(report: EvalReport, tmp_path: Path) -> None:
    counter = iter(range(10))
    persisted = run_eval(
        lambda: MemoryStore.embedded(tmp_path / f"memdir-{next(counter)}"), seed=SEED, sizes=(SIZE,)
    )
    assert comparable(persisted) == comparable(report)


def test_the_ablation_returns_what_the_gate_drops(tenant: str) -> None:
    """``recall_without_gate`` surfaces the crafted failed episode; the gate gives a drop reason for it."""
    store = MemoryStore.embedded()
    (work,) = build_workloads(store, tenant, seed=SEED, size=1, capabilities=("cross_type_contamination",))
    query = next(q for q in work.queries if q.id.endswith("q-procedure"))
    ungated = [r.id for r in recall_without_gate(store, query.ctx, query.text)]
    assert ungated[0].endswith("-failed")
    assert store.explain(query.ctx, ungated[0]).reason is DropReason.KIND_NOT_REQUESTED
    assert [r.id for r in store.recall(query.ctx, query.text).records] == list(query.expect)


def test_reaches_source_needs_a_live_path() -> None:
    def lineage(parent_status: str, source_status: str) -> Lineage:
        return Lineage(
            root="claim",
            nodes=(
                LineageNode(id="claim", type="memory", kind="semantic", status="active"),
                LineageNode(id="ep", type="memory", kind="episodic", status=parent_status),
                LineageNode(id="src", type="source", kind="message", status=source_status),
            ),
            edges=(
                LineageEdge(src="claim", dst="ep", type="DERIVED_FROM"),
                LineageEdge(src="ep", dst="src", type="CITES"),
            ),
        )

    assert reaches_source(lineage("active", "active"))
    assert not reaches_source(lineage("revoked", "active"))
    assert not reaches_source(lineage("active", "erased"))


def test_bad_system_lists_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown system"):
        run_eval(MemoryStore.embedded, systems=("graphmem", "bm25"))
    with pytest.raises(ValueError, match="no-gate before"):
        run_eval(MemoryStore.embedded, systems=("gate-restored", "no-gate"))


def test_a_store_passed_in_stays_open_and_gets_a_fresh_tenant_per_size() -> None:
    store = MemoryStore.embedded()
    report = run_eval(store, seed=SEED, sizes=(1, 2), systems=("graphmem",))
    assert [run.size for run in report.runs] == [1, 2]
    assert store.get("nobody", "x") is None  # still open
    assert all(r.queries > 0 for run in report.runs for r in run.results)
    assert {r.capability for r in report.runs[0].results} == set(CAPABILITIES)


@pytest.mark.neo4j
def test_neo4j_gives_the_embedded_numbers(
    report: EvalReport, neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget
) -> None:
    """Same workloads, same non-timing numbers (gate-restored repeats graphmem: embedded only)."""
    systems = ("graphmem", "no-gate", "untyped")
    store = MemoryStore(Neo4jBackend(neo4j_driver, uri=neo4j_target.uri or ""))
    on_neo4j = run_eval(store, seed=SEED, sizes=(SIZE,), systems=systems)
    assert on_neo4j.runs[0].backend == "neo4j"
    on_embedded = run_eval(MemoryStore.embedded, seed=SEED, sizes=(SIZE,), systems=systems)
    assert comparable(on_neo4j) == comparable(on_embedded)
    assert all(r.unsafe_rate == 0.0 for r in on_neo4j.runs[0].results if r.system == "graphmem")
