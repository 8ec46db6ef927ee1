"""The local Neo4j launcher (graphmem.testing.neo4j_server) against a real server.

These tests start real Neo4j 5.26 Community JVMs (about 5 s each). They skip,
loudly, when Java 17+ / javac / Maven are missing, unless
``GRAPHMEM_REQUIRE_NEO4J=1``, in which case they fail.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import neo4j
import pytest

from graphmem.testing import neo4j_server
from graphmem.testing.neo4j_server import LocalNeo4j, Neo4jLaunchError, java_processes, resolve_test_neo4j

REPO_ROOT = Path(__file__).resolve().parents[1]


def _require_launcher() -> None:
    ok, reason = neo4j_server.available()
    if ok:
        return
    if os.environ.get("GRAPHMEM_REQUIRE_NEO4J") == "1":
        pytest.fail(f"GRAPHMEM_REQUIRE_NEO4J=1 but the local Neo4j launcher cannot run: {reason}")
    pytest.skip(f"LOCAL NEO4J LAUNCHER UNAVAILABLE, Neo4j tests not run: {reason}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); it is dead for our purposes
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.2)
    return not _alive(pid)


@pytest.fixture(scope="module")
def server() -> Iterator[LocalNeo4j]:
    _require_launcher()
    with LocalNeo4j() as started:
        yield started


def _run(srv: LocalNeo4j, query: str, **params: object) -> list[dict[str, object]]:
    with neo4j.GraphDatabase.driver(srv.uri, auth=srv.auth) as driver:
        records, _, _ = driver.execute_query(query, params)
        return [r.data() for r in records]


@pytest.mark.neo4j
def test_bolt_answers_return_1(server: LocalNeo4j) -> None:
    assert server.uri == f"bolt://127.0.0.1:{server.port}"
    assert _run(server, "RETURN 1 AS one") == [{"one": 1}]


@pytest.mark.neo4j
@pytest.mark.parametrize("auth", [None, ("neo4j", "anything")], ids=["no-auth", "basic-auth"])
def test_auth_disabled_accepts_any_credentials(server: LocalNeo4j, auth: tuple[str, str] | None) -> None:
    with neo4j.GraphDatabase.driver(server.uri, auth=auth) as driver:
        driver.verify_connectivity()
        records, _, _ = driver.execute_query("RETURN 2 AS two")
    assert records[0]["two"] == 2


@pytest.mark.neo4j
def test_server_version_is_5_26_community(server: LocalNeo4j) -> None:
    rows = _run(server, "CALL dbms.components() YIELD name, versions, edition RETURN *")
    assert len(rows) == 1
    versions = rows[0]["versions"]
    assert isinstance(versions, list)
    assert str(versions[0]).startswith("5.26"), rows
    assert versions[0] == neo4j_server.NEO4J_VERSION
    assert rows[0]["edition"] == "community"


@pytest.mark.neo4j
def test_fulltext_and_vector_indexes(server: LocalNeo4j) -> None:
    tag = f"t{uuid.uuid4().hex[:8]}"
    ft, vec = f"ft_{tag}", f"vec_{tag}"
    with neo4j.GraphDatabase.driver(server.uri, auth=server.auth) as driver:
        driver.execute_query(f"CREATE FULLTEXT INDEX {ft} IF NOT EXISTS FOR (n:Memory) ON EACH [n.content]")
        driver.execute_query(
            f"CREATE VECTOR INDEX {vec} IF NOT EXISTS FOR (n:Memory) ON (n.embedding) "
            "OPTIONS {indexConfig: {`vector.dimensions`: 4, `vector.similarity_function`: 'cosine'}}"
        )
        driver.execute_query("CALL db.awaitIndexes(300)")
        driver.execute_query(
            "UNWIND $rows AS row CREATE (:Memory {tag: $tag, content: row.content, embedding: row.emb})",
            {
                "tag": tag,
                "rows": [
                    {"content": "the quick brown fox jumps", "emb": [1.0, 0.0, 0.0, 0.0]},
                    {"content": "a lazy dog sleeps all day", "emb": [0.0, 1.0, 0.0, 0.0]},
                    {"content": "foxes and dogs are friends", "emb": [0.7, 0.7, 0.0, 0.0]},
                ],
            },
        )
        states, _, _ = driver.execute_query(
            "SHOW INDEXES YIELD name, type, state WHERE name IN $names RETURN name, type, state",
            {"names": [ft, vec]},
        )
        assert {(r["name"], r["type"], r["state"]) for r in states} == {
            (ft, "FULLTEXT", "ONLINE"),
            (vec, "VECTOR", "ONLINE"),
        }

        hits, _, _ = driver.execute_query(
            "CALL db.index.fulltext.queryNodes($index, $q) YIELD node, score "
            "WHERE node.tag = $tag RETURN node.content AS content, score",
            {"index": ft, "q": "fox", "tag": tag},
        )
        assert [h["content"] for h in hits] == ["the quick brown fox jumps"]

        near, _, _ = driver.execute_query(
            "CALL db.index.vector.queryNodes($index, 10, $v) YIELD node, score "
            "WHERE node.tag = $tag RETURN node.content AS content, score",
            {"index": vec, "v": [0.9, 0.1, 0.0, 0.0], "tag": tag},
        )
        contents = [n["content"] for n in near]
        assert contents[0] == "the quick brown fox jumps"
        assert contents[-1] == "a lazy dog sleeps all day"
        scores = [float(n["score"]) for n in near]
        assert scores == sorted(scores, reverse=True)
        assert 0.99 < scores[0] <= 1.0

        driver.execute_query(f"DROP INDEX {ft}")
        driver.execute_query(f"DROP INDEX {vec}")


@pytest.mark.neo4j
def test_restart_keeps_data_and_port(server: LocalNeo4j) -> None:
    key = uuid.uuid4().hex
    uri, home, old_pid = server.uri, server.home, server.pid
    assert old_pid is not None
    _run(server, "CREATE (:Probe {key: $key})", key=key)

    server.restart()

    assert server.uri == uri
    assert server.home == home
    assert server.pid != old_pid
    assert _wait_gone(old_pid, 30)
    assert _run(server, "MATCH (p:Probe {key: $key}) RETURN count(p) AS n", key=key) == [{"n": 1}]


@pytest.mark.neo4j
def test_kill_then_start_recovers_committed_data(server: LocalNeo4j) -> None:
    key = uuid.uuid4().hex
    uri = server.uri
    _run(server, "CREATE (:Probe {key: $key})", key=key)
    server.kill()  # no clean shutdown, like a crash
    with (
        neo4j.GraphDatabase.driver(uri, auth=server.auth) as driver,
        pytest.raises(neo4j.exceptions.ServiceUnavailable),
    ):
        driver.verify_connectivity()
    server.start()
    assert server.uri == uri
    assert _run(server, "MATCH (p:Probe {key: $key}) RETURN count(p) AS n", key=key) == [{"n": 1}]


@pytest.mark.neo4j
def test_resolve_falls_back_to_local_and_stop_leaves_no_java_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _require_launcher()
    monkeypatch.delenv("NEO4J_URI", raising=False)
    target = resolve_test_neo4j(allow_docker=False)
    try:
        assert target.kind == "local", target.reason
        assert target.uri is not None
        assert target.uri.startswith("bolt://127.0.0.1:")
        srv = target.server
        assert srv is not None
        pid, home = srv.pid, srv.home
        assert pid is not None
        assert home is not None
        assert java_processes(str(home)) == [pid]
        with neo4j.GraphDatabase.driver(target.uri, auth=target.auth) as driver:
            driver.verify_connectivity()
    finally:
        target.close()  # == srv.stop()
    assert not srv.running
    assert _wait_gone(pid, 5), "java still running after stop() returned"
    assert java_processes(str(home)) == []
    assert not home.exists(), "temporary data dir not removed"
    srv.stop()  # idempotent
    target.close()  # idempotent


@pytest.mark.neo4j
def test_start_failure_raises_with_log_tail() -> None:
    """A busy port makes the launcher exit; start() reports why, leaves nothing running."""
    _require_launcher()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        srv = LocalNeo4j(port=busy.getsockname()[1])
        try:
            with pytest.raises(Neo4jLaunchError, match="exited with code") as info:
                srv.start()
            assert "Address already in use" in str(info.value)
            assert not srv.running
            assert srv.home is not None
            assert java_processes(str(srv.home)) == []
        finally:
            srv.stop()


@pytest.mark.neo4j
def test_cli_server_exits_when_parent_dies(tmp_path: Path) -> None:
    """``python -m graphmem.testing.neo4j_server`` serves; if that Python
    process is SIGKILLed, the JVM sees stdin close and shuts itself down."""
    _require_launcher()
    data = tmp_path / "neo4j"
    out, err = tmp_path / "cli.out", tmp_path / "cli.err"
    pythonpath = [str(REPO_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(pythonpath)}
    with open(out, "wb") as out_fh, open(err, "wb") as err_fh:
        cli = subprocess.Popen(
            [sys.executable, "-m", "graphmem.testing.neo4j_server", "--data-dir", str(data)],
            stdin=subprocess.DEVNULL,
            stdout=out_fh,
            stderr=err_fh,
            cwd=REPO_ROOT,
            env=env,
        )
    try:
        deadline = time.monotonic() + 180
        while not out.read_text().strip():
            assert cli.poll() is None, err.read_text()
            assert time.monotonic() < deadline, err.read_text()
            time.sleep(0.2)
        uri = out.read_text().strip().splitlines()[0]
        assert uri.startswith("bolt://127.0.0.1:")
        with neo4j.GraphDatabase.driver(uri, auth=None) as driver:
            records, _, _ = driver.execute_query("RETURN 1 AS one")
            assert records[0]["one"] == 1
        java = java_processes(str(data))
        assert len(java) == 1

        cli.send_signal(signal.SIGKILL)  # no cleanup code runs in the parent
        cli.wait(timeout=10)
        assert _wait_gone(java[0], 60), "orphaned launcher outlived its parent"
        assert "neo4j stopped" in (data / "launcher.log").read_text()
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
        for pid in java_processes(str(data)):
            os.kill(pid, signal.SIGKILL)


def test_env_target_takes_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", "bolt://db.invalid:7687")
    monkeypatch.setenv("NEO4J_USER", "alice")
    monkeypatch.setenv("NEO4J_PASSWORD", "s3cret")
    target = resolve_test_neo4j()
    assert (target.kind, target.uri, target.auth) == ("env", "bolt://db.invalid:7687", ("alice", "s3cret"))
    with pytest.raises(NotImplementedError):
        target.restart()
    target.close()


def test_nothing_available_gives_loud_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NEO4J_URI", raising=False)
    target = resolve_test_neo4j(allow_docker=False, allow_local=False)
    assert target.uri is None
    assert not target.available
    assert "NO NEO4J AVAILABLE" in target.reason
    with pytest.raises(NotImplementedError):
        target.restart()
