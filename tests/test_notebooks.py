"""Every notebook under notebooks/ runs top to bottom, so none can rot."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS


def _execute(path: Path, workdir: Path) -> nbformat.NotebookNode:
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}
    )
    client.execute()
    return notebook


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes(path: Path, tmp_path: Path) -> None:
    notebook = _execute(path, tmp_path)
    errors = [o for c in notebook.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == []


@pytest.mark.slow
def test_lineage_notebook_draws_lineage_before_and_after_erasure(tmp_path: Path) -> None:
    _execute(Path(__file__).parent.parent / "notebooks" / "lineage_and_forgetting.ipynb", tmp_path)
    pictures = sorted(p.name for p in tmp_path.glob("*.png"))
    assert pictures == ["lineage-after.png", "lineage-before.png"]
    assert all((tmp_path / p).stat().st_size > 5_000 for p in pictures)
