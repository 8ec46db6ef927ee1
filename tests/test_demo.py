"""The walk-through's claims, asserted (SPEC §8, issue: graphmem demo)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from graphmem import DropReason, MemoryStore
from graphmem.demo import DemoResult, run_demo


@pytest.fixture
def result(store: MemoryStore, tenant: str) -> DemoResult:
    return run_demo(store, tenant)


def test_untyped_similarity_puts_the_failed_episode_first(result: DemoResult) -> None:
    top, _ = result.untyped[0]
    assert top.id == "ep-retry-failed"
    assert top.outcome == "duplicate-charge"


def test_typed_recall_returns_procedure_v2_for_a_gateway_v2_environment(result: DemoResult) -> None:
    selection = result.procedure_v2_env
    assert selection.ids == ["proc-capture-retry-v2"]
    assert selection.reason_for("proc-capture-retry-v1") is DropReason.SUPERSEDED
    assert selection.reason_for("ep-retry-failed") is DropReason.KIND_NOT_REQUESTED


def test_typed_recall_abstains_for_a_gateway_v1_environment(result: DemoResult) -> None:
    selection = result.procedure_v1_env
    assert selection.ids == []
    assert selection.reason_for("proc-capture-retry-v2") is DropReason.PRECONDITION_UNMET
    assert selection.reason_for("proc-capture-retry-v1") is DropReason.SUPERSEDED


def test_history_still_recalls_the_failed_episode(result: DemoResult) -> None:
    assert result.history.ids[0] == "ep-retry-failed"
    assert "ep-retry-ok" in result.history.ids
    assert result.history.reason_for("obs-current") is DropReason.KIND_NOT_REQUESTED


def test_receipt_verifies(result: DemoResult) -> None:
    assert result.receipt_verified


def test_demo_is_deterministic_across_runs_and_backends(result: DemoResult, tenant: str) -> None:
    """Every backend gives the in-memory store's answer, receipts included."""
    assert result.to_json() == run_demo(tenant=tenant).to_json() == run_demo(tenant=tenant).to_json()


def test_cli_demo_json() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "graphmem", "demo", "--json"], capture_output=True, text=True, check=True
    )
    data = json.loads(out.stdout)
    assert data["untyped_similarity"][0]["id"] == "ep-retry-failed"
    assert data["typed_procedure_gateway_v2"]["selected"] == ["proc-capture-retry-v2"]
    assert data["typed_procedure_gateway_v1"]["selected"] == []
    assert data["receipt_verified"] is True


def test_cli_demo_tables() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "graphmem", "demo"], capture_output=True, text=True, check=True
    )
    assert "precondition_unmet" in out.stdout
    assert "abstains" in out.stdout
    assert "Receipt" in out.stdout
