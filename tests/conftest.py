"""Shared fixtures: one ``store`` fixture parametrised over every backend.

Each test gets a fresh tenant instead of a wiped database, so tests never
interfere and never need a global delete. The Neo4j server is found once per
session: ``NEO4J_URI``, else a testcontainers container, else the project's
local launcher; with none of them the Neo4j tests skip loudly, or fail when
``GRAPHMEM_REQUIRE_NEO4J=1`` (as in CI).
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import neo4j
import pytest

from graphmem import MemoryStore
from graphmem.backends.neo4j import Neo4jBackend
from graphmem.testing.neo4j_server import Neo4jTarget, resolve_test_neo4j

T0 = datetime(2026, 1, 1, tzinfo=UTC)
KNOWN = datetime(2100, 1, 1, tzinfo=UTC)


class Clock:
    """A store clock the test moves by hand."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


"""A knowledge time after every write of a test: a read ``as_of=KNOWN`` sees everything recorded,
whatever ``now`` (valid time) it replays."""

BACKENDS = ["embedded", "persisted", pytest.param("neo4j", marks=pytest.mark.neo4j)]


def pytest_configure(config: pytest.Config) -> None:
    """The Neo4j backend's data keys go to a key store of this session, never the user's."""
    os.environ["GRAPHMEM_KEYS"] = str(Path(tempfile.mkdtemp(prefix="graphmem-keys-")) / "keys.sqlite3")


def require_neo4j() -> bool:
    return os.environ.get("GRAPHMEM_REQUIRE_NEO4J") == "1"


@pytest.fixture(scope="session")
def neo4j_target() -> Iterator[Neo4jTarget]:
    """A running Neo4j 5.26 for the whole session (or a loud skip / failure)."""
    target = resolve_test_neo4j()
    if not target.available:
        if require_neo4j():
            pytest.fail(f"GRAPHMEM_REQUIRE_NEO4J=1 but {target.reason}")
        pytest.skip(target.reason)
    try:
        yield target
    finally:
        target.close()


@pytest.fixture(scope="session")
def neo4j_driver(neo4j_target: Neo4jTarget) -> Iterator[neo4j.Driver]:
    """One driver for the session, with the schema applied once."""
    assert neo4j_target.uri is not None
    backend = Neo4jBackend.connect(neo4j_target.uri, auth=neo4j_target.auth)
    backend.setup()
    backend._owns_driver = False
    try:
        yield backend.driver
    finally:
        backend.driver.close()


@pytest.fixture
def tenant() -> str:
    """A tenant no other test uses."""
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore]:
    """A ``MemoryStore`` on each backend; the shared behavioural suite runs on all of them."""
    if request.param == "embedded":
        opened = MemoryStore.embedded()
    elif request.param == "persisted":
        opened = MemoryStore.embedded(tmp_path / "memdir")
    else:
        driver: neo4j.Driver = request.getfixturevalue("neo4j_driver")
        target: Neo4jTarget = request.getfixturevalue("neo4j_target")
        opened = MemoryStore(Neo4jBackend(driver, uri=target.uri or ""))
    with opened:
        yield opened


@pytest.fixture(params=["persisted", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def reopenable(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], MemoryStore]:
    """Each call opens another store over the same data (a new backend, nothing held in
    memory): the backends whose data outlives a store, a file and a server."""
    if request.param == "persisted":
        return lambda: MemoryStore.embedded(tmp_path / "memdir")
    driver: neo4j.Driver = request.getfixturevalue("neo4j_driver")
    target: Neo4jTarget = request.getfixturevalue("neo4j_target")
    return lambda: MemoryStore(Neo4jBackend(driver, uri=target.uri or ""))
