"""The built wheel ships the Cypher files and works on Neo4j from a clean virtualenv.

Builds the wheel from the repository, checks every ``cypher/*.cypher`` is inside
it as ``graphmem/cypher/…``, installs it (with the ``neo4j`` extra, pytest and
hypothesis) into a fresh venv without system site-packages, and runs the
payment-incident demo against the session's Neo4j from a directory outside the
repository, so ``import graphmem`` can only resolve to the installed wheel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path
from typing import Any

import pytest

from graphmem.testing.neo4j_server import Neo4jTarget

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]


def _repo_cypher_files() -> list[str]:
    return sorted(p.name for p in (REPO / "cypher").glob("*.cypher"))


def _shipped_cypher_files(wheel: Path) -> list[str]:
    prefix = "graphmem/cypher/"
    with zipfile.ZipFile(wheel) as archive:
        return sorted(n.removeprefix(prefix) for n in archive.namelist() if n.startswith(prefix))


SCRIPT = textwrap.dedent(
    """
    import json, os, sys, sysconfig, uuid
    from pathlib import Path

    import graphmem
    from graphmem import DropReason, MemoryStore
    from graphmem.backends import cypher as cypher_loader
    from graphmem.demo import run_demo

    uri = os.environ["GRAPHMEM_WHEEL_NEO4J_URI"]
    auth = json.loads(os.environ["GRAPHMEM_WHEEL_NEO4J_AUTH"])
    tenant = "wheel-" + uuid.uuid4().hex[:12]
    with MemoryStore.neo4j(uri, auth=None if auth is None else tuple(auth)) as store:
        version = store.setup()
        result = run_demo(store, tenant)
        version_again = store.setup()
    embedded = run_demo(tenant=tenant)

    def reason(selection, record_id):
        value = selection.reason_for(record_id)
        return None if value is None else DropReason(value).value

    print(json.dumps({
        "graphmem_file": graphmem.__file__,
        "site_packages": sysconfig.get_paths()["purelib"],
        "cypher_dir": str(cypher_loader._directory()),
        "cypher_names": cypher_loader.cypher_names(),
        "sys_path": sys.path,
        "version": version,
        "version_again": version_again,
        "untyped_top": result.untyped[0][0].id,
        "v2_selected": result.procedure_v2_env.ids,
        "v2_reason_v1": reason(result.procedure_v2_env, "proc-capture-retry-v1"),
        "v2_reason_failed_episode": reason(result.procedure_v2_env, "ep-retry-failed"),
        "v1_selected": result.procedure_v1_env.ids,
        "v1_reason_v2": reason(result.procedure_v1_env, "proc-capture-retry-v2"),
        "history_selected": result.history.ids,
        "receipt_verified": result.receipt_verified,
        "same_as_embedded": result.to_json() == embedded.to_json(),
    }))
    """
)


def _clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without anything that would put the repo on sys.path."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"}}
    env.update(extra)
    return env


def _run(cmd: list[str], *, cwd: Path, timeout: float, env: dict[str, str]) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, (
        f"{cmd} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    )
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(REPO)],
        cwd=REPO,
        timeout=300,
        env=_clean_env(),
    )
    (built,) = out.glob("graphmem-*.whl")
    return built


def test_wheel_ships_every_cypher_file(wheel: Path) -> None:
    repo_files = _repo_cypher_files()
    assert repo_files, "no cypher/*.cypher in the repository"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for name in repo_files:
            member = f"graphmem/cypher/{name}"
            assert member in names, f"{member} missing from {wheel.name}"
            assert archive.read(member) == (REPO / "cypher" / name).read_bytes()
    assert _shipped_cypher_files(wheel) == repo_files
    assert "graphmem/cypher/gate.cypher" in names
    assert "graphmem/backends/cypher.py" in names
    # The embedded store's SQL statements ship the same way (graphmem.backends.sql).
    sql_files = sorted(p.name for p in (REPO / "graphmem" / "sql").glob("*.sql"))
    assert sql_files
    assert all(f"graphmem/sql/{name}" in names for name in sql_files)
    assert "graphmem/py.typed" in names
    assert not any(n.startswith("cypher/") for n in names), "cypher/ must live inside the package"


def test_wheel_ships_the_injection_detector_weights(wheel: Path) -> None:
    member = "graphmem/policy/detector_weights.json"
    with zipfile.ZipFile(wheel) as archive:
        assert member in archive.namelist(), f"{member} missing from {wheel.name}"
        assert archive.read(member) == (REPO / member).read_bytes()


def test_installed_wheel_runs_the_demo_on_neo4j(
    wheel: Path, neo4j_target: Neo4jTarget, tmp_path: Path
) -> None:
    assert neo4j_target.uri is not None
    venv = tmp_path / "venv"
    work = tmp_path / "work"
    work.mkdir()
    env = _clean_env()
    _run([sys.executable, "-m", "venv", str(venv)], cwd=work, timeout=120, env=env)
    cfg = (venv / "pyvenv.cfg").read_text()
    assert "include-system-site-packages = false" in cfg
    python = venv / "bin" / "python"
    _run(
        [str(python), "-m", "pip", "install", "--quiet", f"{wheel}[neo4j]", "pytest", "hypothesis"],
        cwd=work,
        timeout=300,
        env=env,
    )
    script = work / "check_wheel.py"
    script.write_text(SCRIPT)
    run_env = _clean_env(
        GRAPHMEM_WHEEL_NEO4J_URI=neo4j_target.uri,
        GRAPHMEM_WHEEL_NEO4J_AUTH=json.dumps(None if neo4j_target.auth is None else list(neo4j_target.auth)),
    )
    out = _run([str(python), str(script)], cwd=work, timeout=180, env=run_env)
    data: dict[str, Any] = json.loads(out.strip().splitlines()[-1])

    site = Path(data["site_packages"]).resolve()
    assert site.is_relative_to(venv.resolve())
    graphmem_file = Path(data["graphmem_file"]).resolve()
    assert graphmem_file.is_relative_to(site), data["graphmem_file"]
    assert not graphmem_file.is_relative_to(REPO)
    assert str(REPO) not in data["sys_path"]
    cypher_dir = Path(data["cypher_dir"]).resolve()
    assert cypher_dir == site / "graphmem" / "cypher"
    assert data["cypher_names"] == [n.removesuffix(".cypher") for n in _shipped_cypher_files(wheel)]
    assert "gate" in data["cypher_names"]

    assert data["version"] == data["version_again"] >= 1
    assert data["untyped_top"] == "ep-retry-failed"
    assert data["v2_selected"] == ["proc-capture-retry-v2"]
    assert data["v2_reason_v1"] == "superseded"
    assert data["v2_reason_failed_episode"] == "kind_not_requested"
    assert data["v1_selected"] == []
    assert data["v1_reason_v2"] == "precondition_unmet"
    assert data["history_selected"][0] == "ep-retry-failed"
    assert "ep-retry-ok" in data["history_selected"]
    assert data["receipt_verified"] is True
    assert data["same_as_embedded"] is True

    cli = _run([str(venv / "bin" / "graphmem"), "demo", "--json"], cwd=work, timeout=120, env=env)
    demo = json.loads(cli)
    assert demo["typed_procedure_gateway_v2"]["selected"] == ["proc-capture-retry-v2"]
    assert demo["typed_procedure_gateway_v1"]["selected"] == []
