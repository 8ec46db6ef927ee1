"""Backends move rows: a backend module imports, of graphmem, only the model, the errors and
other backend modules; never the ranking, receipt or cache code."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import graphmem

BACKENDS = sorted((Path(graphmem.__file__).parent / "backends").glob("*.py"))
RANKING = ("graphmem.gated", "graphmem.ranking", "graphmem.receipts", "graphmem.gate_cache")
ALLOWED = ("graphmem.model", "graphmem.errors", "graphmem.backends")


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth (inside functions too), resolved."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = "graphmem.backends".split(".")[: 3 - node.level]
                base = ".".join([*package, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def test_the_backend_modules_are_found() -> None:
    assert {p.name for p in BACKENDS} >= {"base.py", "embedded.py", "neo4j.py", "neo4j_cache.py"}


@pytest.mark.parametrize("path", BACKENDS, ids=lambda p: p.name)
def test_a_backend_module_imports_no_ranking_code(path: Path) -> None:
    ranking = {name for name in _imports(path) if name.startswith(RANKING)}
    assert ranking == set(), f"{path.name} imports {sorted(ranking)}"


def test_the_check_sees_an_import_of_ranking_code(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from graphmem.gated import Verdicts\ndef f():\n    from ..ranking import rank\n")
    assert {"graphmem.gated", "graphmem.ranking", "graphmem.ranking.rank"} <= _imports(probe)


@pytest.mark.parametrize("path", BACKENDS, ids=lambda p: p.name)
def test_a_backend_module_imports_only_the_model_errors_and_backends(path: Path) -> None:
    ours = {name for name in _imports(path) if name == "graphmem" or name.startswith("graphmem.")}
    other = {name for name in ours if not any(name == a or name.startswith(a + ".") for a in ALLOWED)}
    assert other == set(), f"{path.name} imports {sorted(other)}"


def test_the_check_sees_an_import_from_outside_the_model(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from graphmem.model.gate import drop_reason\nfrom graphmem.policy import rules\n")
    other = {n for n in _imports(probe) if not any(n == a or n.startswith(a + ".") for a in ALLOWED)}
    assert other == {"graphmem.policy", "graphmem.policy.rules"}
