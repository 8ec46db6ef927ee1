"""The Neo4j backend at parity (issue: Neo4j backend), against a real Neo4j 5.26.

* Cypher lives only in ``cypher/``: every file EXPLAINs on the server, no
  ``.py`` under ``graphmem/`` carries Cypher, no file builds text.
* ``setup()`` is an explicit, versioned, idempotent schema step.
* Writes are all-or-nothing, also when the database fails mid-batch.
* Faults: unreachable at open, and the connection lost mid-write (the
  transaction rolls back, ``BackendUnavailable`` code ``connection_lost``,
  the same call succeeds once the server is back).

The fault tests start their own ``LocalNeo4j`` (module scope) so stopping and
killing it never disturbs the session's server.
"""

from __future__ import annotations

import ast
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import neo4j
import pytest

from graphmem import (
    BackendUnavailable,
    ConflictError,
    DropReason,
    ForgetMode,
    ForgetRequest,
    Kind,
    LineageError,
    MemoryRecord,
    MemoryStore,
    ReadContext,
    Sensitivity,
    Source,
    Status,
    Trust,
)
from graphmem.backends import cypher as cypher_module
from graphmem.backends.base import AddEdge, AppendAudit, Op, PutRecord, ScopeWithin
from graphmem.backends.cypher import cypher, cypher_names, statements
from graphmem.backends.neo4j import SCHEMA_VERSION, Neo4jBackend, fingerprint_tokens
from graphmem.backends.neo4j_rows import send_ops
from graphmem.model import AuditEvent, GateProbe
from graphmem.testing import neo4j_server
from graphmem.testing.neo4j_server import LocalNeo4j, Neo4jTarget

pytestmark = pytest.mark.neo4j

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "graphmem"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
KNOWN = datetime(2100, 1, 1, tzinfo=UTC)

# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def _store(driver: neo4j.Driver, target: Neo4jTarget) -> MemoryStore:
    return MemoryStore(Neo4jBackend(driver, uri=target.uri or ""))


def _episode(tenant: str, i: int, scope: str = "case:c1", prefix: str = "r") -> MemoryRecord:
    return MemoryRecord(
        id=f"{prefix}{i}",
        tenant=tenant,
        kind=Kind.EPISODIC,
        scope=scope,
        content=f"capture attempt {i} timed out on the gateway",
        event_time=T0 + timedelta(seconds=i),
        created_at=T0,
        outcome="unknown",
        sources=(Source(id=f"src-{i % 7}", type="message", trust=Trust.UNTRUSTED),),
    )


def _query(driver: neo4j.Driver, text: str, **params: Any) -> list[dict[str, Any]]:
    with driver.session() as session:
        return [r.data() for r in session.run(text, params)]


def _count_memories(driver: neo4j.Driver, tenant: str) -> int:
    rows = _query(driver, "MATCH (m:Memory {tenant: $tenant}) RETURN count(m) AS n", tenant=tenant)
    return int(rows[0]["n"])


def _schema_snapshot(driver: neo4j.Driver) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    constraints = _query(
        driver,
        "SHOW CONSTRAINTS YIELD id, name, type, entityType, labelsOrTypes, properties, ownedIndex",
    )
    indexes = _query(
        driver,
        "SHOW INDEXES YIELD id, name, state, type, entityType, labelsOrTypes, properties, "
        "indexProvider, owningConstraint",
    )

    def rows(found: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return sorted(tuple(str(v) for v in row.values()) for row in found)

    return rows(constraints), rows(indexes)


def _require_launcher() -> None:
    ok, why = neo4j_server.available()
    if ok:
        return
    if os.environ.get("GRAPHMEM_REQUIRE_NEO4J") == "1":
        pytest.fail(f"GRAPHMEM_REQUIRE_NEO4J=1 but the local Neo4j launcher cannot run: {why}")
    pytest.skip(f"LOCAL NEO4J LAUNCHER UNAVAILABLE, fault tests not run: {why}")


# --------------------------------------------------------------------------
# Cypher only in cypher/
# --------------------------------------------------------------------------

_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
#: plausible dummies for EXPLAIN (it plans, never runs); anything else is None
_DUMMIES: dict[str, Any] = {
    "rows": [],
    "tenant": "t-explain",
    "ids": ["x"],
    "id": "x",
    "scopes": ["case:x"],
    "scope": "case:x",
    "entry_scopes": ["case:x"],
    "run_scope": "run:r1",
    "kinds": ["episodic"],
    "policy": "default",
    "now": 0,
    "clearance_rank": 1,
    "environment": [],
    "with_embeddings": True,
    "version": SCHEMA_VERSION,
    "applied_at": 0,
    "timeout_seconds": 1,
    "dimensions": 4,
}


def _is_schema_file(name: str) -> bool:
    return re.fullmatch(r"schema_v\d+", name) is not None


def test_cypher_directory_is_not_empty_and_names_are_loadable() -> None:
    names = cypher_names()
    assert {"gate", "put_records", f"schema_v{SCHEMA_VERSION}"} <= set(names)
    on_disk = sorted(p.stem for p in (REPO / "cypher").glob("*.cypher"))
    assert names == on_disk
    for name in names:
        assert cypher(name).strip()


def _runnable_texts(name: str) -> list[str]:
    """What the backend sends: each statement of a multi-statement file, else the file verbatim."""
    parts = statements(name)
    return parts if len(parts) > 1 else [cypher(name)]


@pytest.mark.parametrize("name", cypher_names())
def test_every_cypher_file_explains_on_the_server(
    name: str, neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget
) -> None:
    """Each file is valid Cypher for Neo4j 5.26: EXPLAIN plans it with every ``$param`` bound."""
    texts = _runnable_texts(name)
    assert texts, f"{name}.cypher has no statement"
    with neo4j_driver.session() as session:
        for text in texts:
            params = {p: _DUMMIES.get(p) for p in _PARAM.findall(text)}
            summary = session.run("EXPLAIN " + text, params).consume()
            assert summary.plan is not None, f"{name}: no plan for {text[:80]!r}"


def _described(plan: Any) -> list[tuple[str, int, int, str]]:
    """(operator, database hits, rows, its details) of a profiled plan, root first: what a failed plan
    assertion shows (a plan is chosen from the statistics of the moment and cached, so a plan that
    reads more may come only in some runs)."""
    details = str(plan.get("args", {}).get("Details", ""))[:160]
    found = [(plan["operatorType"].split("@")[0], plan.get("dbHits", 0), plan.get("rows", 0), details)]
    for child in plan.get("children", []):
        found += _described(child)
    return found


def _operators(plan: Any) -> list[tuple[str, int]]:
    """(operator, database hits) of a profiled plan, root first."""
    return [(name, hits) for name, hits, _, _ in _described(plan)]


def _first_apply(plan: Any) -> Any:
    """The plan's topmost Apply, below the projections of its result."""
    while plan["operatorType"].split("@")[0] != "Apply":
        (plan,) = plan["children"]
    return plan


def test_the_gate_seeks_its_candidates_in_the_edge_index(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    """The gate finds the reached scopes' APPLIES_TO edges by seeking the range index that
    holds every input it checks, and reads nothing else of an active candidate. A scan (of the
    edges or of the index) would cost every recall time in every record of the database."""
    store = _store(neo4j_driver, neo4j_target)
    store.add_many([_episode(tenant, i) for i in range(30)])
    backend = store.backend
    assert isinstance(backend, Neo4jBackend)
    ctx = ReadContext(as_of=KNOWN, tenant=tenant, scopes=("case:c1",), now=T0 + timedelta(days=1))
    real_read = backend._read
    profiled: list[Any] = []

    def profile(name: str, **params: Any) -> list[neo4j.Record]:
        if name != "gate":
            return real_read(name, **params)
        with neo4j_driver.session() as session:
            result = session.run("PROFILE " + cypher("gate"), params)
            rows = list(result)
            profiled.append(result.consume().profile)
        return rows

    backend._read = profile  # type: ignore[method-assign]
    assert len(store.recall(ctx, "", explain=True).decisions) == 30
    (plan,) = profiled
    # First the tenant's counts (erasures, writes begun and done): three seeks of the schema
    # nodes' unique index, on the left of an Apply, so they are read before any candidate;
    # last the count of writes begun again, on the right of an Apply above it, so it is read
    # after every candidate.
    outer = _first_apply(plan)
    inner, after = outer["children"]
    assert inner["operatorType"].split("@")[0] == "Apply", _operators(plan)
    counter, candidates = inner["children"]
    for part, seeks in ((counter, 3), (after, 1)):
        assert [name for name, _ in _operators(part) if "Seek" in name or "Scan" in name] == [
            "NodeUniqueIndexSeek"
        ] * seeks, _operators(part)
        assert sum(hits for _, hits in _operators(part)) <= 3 * seeks, _operators(part)
    operators = _operators(candidates)
    names = [name for name, _ in operators]
    assert "DirectedRelationshipIndexSeek" in names, operators
    # a plan is printed whole (a list in the message would be cut short)
    plan_text = "\n".join(map(str, _described(candidates)))
    assert not [name for name in names if "Scan" in name], plan_text
    # the checks and the report read nothing more: every input came with the index entry
    above_union = operators[: names.index("Union")]
    assert [hits for _, hits in above_union] == [0] * len(above_union), plan_text
    (seek_hits,) = [hits for name, hits in operators if name == "DirectedRelationshipIndexSeek"]
    assert seek_hits <= 31, operators


def test_schema_files_split_into_several_statements() -> None:
    counts = []
    for version in range(1, SCHEMA_VERSION + 1):
        parts = statements(f"schema_v{version}")
        counts.append(len(parts))
        assert all(p.strip() and ";" not in p and not p.lstrip().startswith("//") for p in parts)
    assert min(counts) >= 1
    assert max(counts) > 1


_CLAUSE_AT_START = re.compile(
    r"^\s*(MATCH|OPTIONAL\s+MATCH|MERGE|UNWIND|CREATE|CALL|RETURN|SHOW|DROP|DETACH\s+DELETE)\s"
)
_CLAUSE_INSIDE = re.compile(
    r"\b(MATCH|MERGE|CREATE)\s*\(\s*\w*\s*:"  # MATCH (m:Memory
    r"|\bUNWIND\s+\$"
    r"|\bCALL\s+(db|dbms|apoc|gds)\.\w"
    r"|\bSHOW\s+(INDEXES|CONSTRAINTS)\b"
    r"|\bDETACH\s+DELETE\b"
    r"|\bRETURN\s+[\w.]+\s+AS\s+\w"
)


# The embedded engine's and the key store's SQLite statements (SQL, not Cypher) live in these modules.
_SQL_MODULES = {"sqlite_engine.py", "sqlite_check.py", "embedded.py", "engine.py", "keystore.py"}


def _string_literals(path: Path) -> Iterator[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def test_no_cypher_in_python_string_literals() -> None:
    """Every statement is a file in cypher/: no ``.py`` under graphmem/ carries a Cypher clause."""
    offenders: list[str] = []
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 10
    for path in files:
        if path.name in _SQL_MODULES:
            continue
        for line, text in _string_literals(path):
            if _CLAUSE_AT_START.search(text) or _CLAUSE_INSIDE.search(text):
                offenders.append(f"{path.relative_to(REPO)}:{line}: {text.strip()[:70]!r}")
    assert not offenders, "Cypher found in Python string literals:\n" + "\n".join(offenders)


def _named_cypher_files() -> tuple[set[str], set[str]]:
    """(names passed as literals to cypher()/statements()/_read(), every string literal) in graphmem/."""
    called: set[str] = set()
    literals: set[str] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                literals.add(node.value)
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            fname = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            first = node.args[0]
            if fname in {"cypher", "statements", "_read"} and isinstance(first, ast.Constant):
                called.add(str(first.value))
    return called, literals


def test_python_names_only_existing_cypher_files() -> None:
    """Every ``cypher("name")`` / ``_read("name")`` in graphmem/ names a shipped file, and every
    shipped file is named somewhere (no stale statements)."""
    names = set(cypher_names())
    called, literals = _named_cypher_files()
    assert called, "found no cypher(...) calls; did the loader move?"
    assert called <= names, f"unknown Cypher files referenced: {sorted(called - names)}"
    assert {f"schema_v{v}" for v in range(1, SCHEMA_VERSION + 1)} <= names
    unused = {n for n in names if not _is_schema_file(n)} - literals
    assert not unused, f"Cypher files no Python code names: {sorted(unused)}"


def test_files_run_verbatim_are_single_statements() -> None:
    """``cypher(name)`` / ``_read(name)`` send the whole file, so it must hold exactly one statement."""
    called, _ = _named_cypher_files()
    for name in sorted(called):
        if not _is_schema_file(name):
            assert len(statements(name)) == 1, f"{name}.cypher is run verbatim but has several statements"


_CONCAT = re.compile(
    r"\+(?!=)\s*(\$|'|\")"  # + $param, + 'text'
    r"|(\$[\w.]+|'[^'\n]*'|\"[^\"\n]*\")\s*\+(?!=)"  # $param +, 'text' +
)
_DYNAMIC = re.compile(r"apoc\.(cypher|create\.addLabels|create\.setLabels|merge\.)", re.IGNORECASE)


@pytest.mark.parametrize("name", cypher_names())
def test_cypher_files_build_no_text(name: str) -> None:
    """Labels, types and clauses are fixed text; values come only from parameters."""
    code = "\n".join(line for line in cypher(name).splitlines() if not line.lstrip().startswith("//"))
    assert not _CONCAT.search(code), f"{name}.cypher concatenates text: {_CONCAT.search(code)}"
    assert not _DYNAMIC.search(code), f"{name}.cypher runs dynamic Cypher/labels"


def test_cypher_loader_refuses_unknown_and_path_like_names() -> None:
    from graphmem.errors import GraphmemError

    for bad in ["../pyproject", "gate.cypher", "Gate", "nope_missing"]:
        with pytest.raises(GraphmemError):
            cypher(bad)
    assert cypher_module._directory().is_dir()


# --------------------------------------------------------------------------
# schema: explicit, versioned, idempotent
# --------------------------------------------------------------------------


def test_setup_twice_changes_nothing(neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget) -> None:
    store = _store(neo4j_driver, neo4j_target)
    first = store.setup()
    before = _schema_snapshot(neo4j_driver)
    # The schema marker; the other GraphmemSchema nodes are the tenants' write locks, their
    # counts of finished writes and their erasure counters.
    markers = (
        "MATCH (v:GraphmemSchema) WHERE NOT v.name STARTS WITH 'tenant-lock:' "
        "AND NOT v.name STARTS WITH 'tenant-done:' AND NOT v.name STARTS WITH 'tenant-erasures:' "
        "RETURN v.name AS name, v.version AS version, v.applied_at AS applied_at"
    )
    marker = _query(neo4j_driver, markers)
    second = store.setup()
    after = _schema_snapshot(neo4j_driver)
    assert first == second == SCHEMA_VERSION
    assert isinstance(store.backend, Neo4jBackend)
    assert store.backend.schema_version() == SCHEMA_VERSION
    assert before == after
    assert marker == _query(neo4j_driver, markers)
    assert len(marker) == 1
    assert marker[0]["version"] == SCHEMA_VERSION


def test_schema_has_no_fulltext_index_and_has_uniqueness_constraints(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget
) -> None:
    """Since schema 5 stored text is encrypted: no fulltext index holds it (recall ranks the
    gate's survivors in the client)."""
    _store(neo4j_driver, neo4j_target).setup()
    indexes = {
        r["name"]: r
        for r in _query(neo4j_driver, "SHOW INDEXES YIELD name, type, state, labelsOrTypes, properties")
    }
    # (The benchmark's naive baseline indexes plaintext copies of its own synthetic records.)
    assert not [n for n, r in indexes.items() if r["type"] == "FULLTEXT" and "Memory" in r["labelsOrTypes"]]
    assert "graphmem_memory_content" not in indexes
    assert all(r["state"] == "ONLINE" for n, r in indexes.items() if n.startswith("graphmem_"))
    constraints = {
        (tuple(r["labelsOrTypes"]), tuple(r["properties"]))
        for r in _query(neo4j_driver, "SHOW CONSTRAINTS YIELD type, labelsOrTypes, properties")
        if r["type"] in {"UNIQUENESS", "NODE_KEY"}
    }
    assert {
        (("Memory",), ("tenant", "id")),
        (("Scope",), ("tenant", "key")),
        (("Source",), ("tenant", "id")),
    } <= constraints


# --------------------------------------------------------------------------
# unreachable at open
# --------------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    "uri",
    ["bolt://127.0.0.1:1", "neo4j://127.0.0.1:1", f"bolt://127.0.0.1:{_closed_port()}"],
    ids=["bolt-port-1", "neo4j-routing-port-1", "bolt-free-port"],
)
def test_unreachable_server_at_open_names_the_uri(uri: str) -> None:
    t0 = time.monotonic()
    with pytest.raises(BackendUnavailable) as info:
        MemoryStore.neo4j(uri, auth=("neo4j", "x"), connection_timeout=2.0)
    assert time.monotonic() - t0 < 10.0
    assert info.value.code == "backend_unavailable"
    assert uri in str(info.value)
    assert uri in info.value.message


def test_open_with_an_unreachable_uri_through_store_open() -> None:
    with pytest.raises(BackendUnavailable, match=re.escape("bolt://127.0.0.1:1")):
        MemoryStore.open("bolt://127.0.0.1:1", auth=("neo4j", "x"), connection_timeout=2.0)


def test_missing_database_is_backend_unavailable_naming_it(neo4j_target: Neo4jTarget) -> None:
    assert neo4j_target.uri is not None
    uri = neo4j_target.uri
    opened: list[MemoryStore] = []

    def open_and_read() -> None:
        store = MemoryStore.neo4j(uri, auth=neo4j_target.auth, database="nosuchdb", connection_timeout=3.0)
        opened.append(store)
        store.get("t-any", "x")

    try:
        with pytest.raises(BackendUnavailable) as info:
            open_and_read()
        assert "nosuchdb" in info.value.message
        assert uri in info.value.message
    finally:
        for store in opened:
            store.close()


def test_routing_uri_works_against_a_single_server(neo4j_target: Neo4jTarget, tenant: str) -> None:
    """SPEC §6: a ``neo4j://`` routing URI works too (here against a single server)."""
    assert neo4j_target.uri is not None
    uri = re.sub(r"^bolt(\+s|\+ssc)?://", lambda m: f"neo4j{m.group(1) or ''}://", neo4j_target.uri)
    with MemoryStore.open(uri, auth=neo4j_target.auth, connection_timeout=5.0) as store:
        assert store.setup() == SCHEMA_VERSION
        record = store.add(_episode(tenant, 1))
        assert store.get(tenant, record.id) == record
        ctx = ReadContext(as_of=KNOWN, tenant=tenant, scopes=("case:c1",), now=T0 + timedelta(days=1))
        assert store.recall(ctx, "capture").ids == [record.id]


# --------------------------------------------------------------------------
# the survivors' text held by the backend between recalls
# --------------------------------------------------------------------------


def _fact(tenant: str, record_id: str, content: str) -> MemoryRecord:
    return MemoryRecord(
        id=record_id,
        tenant=tenant,
        kind=Kind.SEMANTIC,
        scope="case:c1",
        content=content,
        created_at=T0,
        valid_from=T0,
        sources=(Source(id=f"src-{record_id}"),),
    )


def _facts(tenant: str) -> list[MemoryRecord]:
    return [
        _fact(tenant, "f1", "the refund window is thirty days"),
        _fact(tenant, "f2", "refunds go back to the original card"),
        _fact(tenant, "f3", "the office closes at six"),
    ]


def _rewrite(driver: neo4j.Driver, target: Neo4jTarget, record: MemoryRecord) -> None:
    """Replace a stored record's text through a second backend, as another process would."""
    Neo4jBackend(driver, uri=target.uri or "").apply([PutRecord(record=record, replace=True)])


def _recall(store: MemoryStore, tenant: str, query: str) -> tuple[list[str], str, list[MemoryRecord]]:
    ctx = ReadContext(as_of=KNOWN, tenant=tenant, scopes=("case:c1",), now=T0 + timedelta(days=1), limit=1)
    selection = store.recall(ctx, query)
    return selection.ids, selection.receipt.digest, list(selection.records)


def _facts_store(driver: neo4j.Driver, target: Neo4jTarget, tenant: str) -> tuple[MemoryStore, Neo4jBackend]:
    store = _store(driver, target)
    store.add_many(_facts(tenant))
    assert isinstance(store.backend, Neo4jBackend)
    return store, store.backend


def test_a_repeated_recall_reads_only_the_probe(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    """Verdicts, fingerprints, text and the selected records held from the first recall:
    the second sends the probe only, and a recall after a write the gate again."""
    store, backend = _facts_store(neo4j_driver, neo4j_target, tenant)
    store.invalidate(tenant, "f2", by="f1", reason="replaced", at=T0)  # one dropped candidate
    reads: list[str] = []
    plain_read = backend._read

    def read(name: str, **params: Any) -> list[neo4j.Record]:
        reads.append(name)
        return plain_read(name, **params)

    backend._read = read  # type: ignore[method-assign]
    first = _recall(store, tenant, "refund card")
    assert reads == ["gate_state", "gate", "candidate_docs"]
    assert _recall(store, tenant, "refund card") == first
    assert reads == ["gate_state", "gate", "candidate_docs", "gate_state"]
    assert first == _recall(_store(neo4j_driver, neo4j_target), tenant, "refund card")
    _store(neo4j_driver, neo4j_target).add(_fact(tenant, "f9", "an unrelated note"))
    assert _recall(store, tenant, "refund card")[0] == first[0]  # f9 is a candidate now
    assert reads[4:] == ["gate_state", "gate", "candidate_docs"]


def test_text_another_writer_changed_is_never_ranked_from_memory(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    store = _store(neo4j_driver, neo4j_target)
    store.add_many(_facts(tenant))
    assert _recall(store, tenant, "office closes")[0] == ["f3"]  # every survivor's text is now held
    _rewrite(neo4j_driver, neo4j_target, _fact(tenant, "f3", "the cafeteria serves lunch"))
    fresh = _store(neo4j_driver, neo4j_target)
    for query in ("office closes", "cafeteria lunch", "refund window"):
        assert _recall(store, tenant, query) == _recall(fresh, tenant, query), query
    assert _recall(store, tenant, "cafeteria lunch")[0] == ["f3"]


def test_a_selected_record_another_writer_changed_is_returned_as_it_is_now(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    store, backend = _facts_store(neo4j_driver, neo4j_target, tenant)
    asked: list[list[str]] = []
    plain_auto = backend._auto

    def auto(name: str, write: bool, params: dict[str, Any]) -> list[neo4j.Record]:
        if name == "recalled_records":
            asked.append(params["ids"])
        return plain_auto(name, write, params)

    backend._auto = auto  # type: ignore[method-assign]
    before = _recall(store, tenant, "office closes")
    assert _recall(store, tenant, "office closes") == before
    assert asked == [["f3"]]  # held whole after the first recall: nothing is read again
    changed = _fact(tenant, "f3", "the office closes at six").model_copy(update={"tags": ("hours",)})
    _rewrite(neo4j_driver, neo4j_target, changed)
    after = _recall(store, tenant, "office closes")
    assert after[2] == [changed]
    with _store(neo4j_driver, neo4j_target) as other:  # its recall's event is appended on close
        assert after == _recall(other, tenant, "office closes")
    assert [e.action for e in store.audit(tenant)].count("recalled") == 4


def test_recall_runs_in_read_access_mode_through_a_routing_uri(
    neo4j_target: Neo4jTarget, tenant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Behind ``neo4j://`` a cluster sends READ sessions to followers and read replicas: every
    session a recall opens is one, with or without its audit event, and the event still lands."""
    assert neo4j_target.uri is not None
    routing = "neo4j://" + neo4j_target.uri.split("://", 1)[1]
    backend = Neo4jBackend.connect(routing, auth=neo4j_target.auth)
    opened: list[tuple[str, str]] = []
    plain_session = backend.driver.session

    def session(**config: Any) -> Any:
        opened.append((threading.current_thread().name, config.get("default_access_mode", "")))
        return plain_session(**config)

    for audit_recalls in (True, False):
        store = MemoryStore(backend, audit_recalls=audit_recalls)
        store.add_many(_facts(tenant))
        fresh = Neo4jBackend(backend.driver, uri=routing)  # nothing held: the recall reads the records
        store = MemoryStore(fresh, audit_recalls=audit_recalls)
        monkeypatch.setattr(backend.driver, "session", session)
        opened.clear()
        assert _recall(store, tenant, "office closes")[0] == ["f3"]
        mine = [mode for thread, mode in opened if thread == threading.current_thread().name]
        assert mine, "the recall opened no session"
        assert set(mine) == {neo4j.READ_ACCESS}, audit_recalls
        monkeypatch.undo()
        recalled = [e for e in store.audit(tenant) if e.action == "recalled"]
        assert len(recalled) == (1 if audit_recalls else 0)
        fresh._recalls.close()
        tenant += "-2"
    backend.close()


def test_a_record_held_whole_in_another_state_than_the_gate_saw_is_read_again(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    store, backend = _facts_store(neo4j_driver, neo4j_target, tenant)
    stale = _fact(tenant, "f3", "the office closes at five")
    plain_gate = backend.gate_probe

    def gate(ctx: ReadContext) -> Any:
        result = plain_gate(ctx)  # then another recall of this process holds an older state whole
        backend._docs.put_many(tenant, [("f3", "s1:stale", stale.fingerprint(), stale.content, None, None)])
        backend._docs.put_record(tenant, "s1:stale", stale)
        return result

    backend.gate_probe = gate  # type: ignore[method-assign]
    for _ in range(2):
        assert _recall(store, tenant, "office closes")[2] == [_facts(tenant)[2]]


def test_a_record_changed_between_the_gate_and_its_text_is_gated_again(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    store, backend = _facts_store(neo4j_driver, neo4j_target, tenant)
    reads: list[str] = []
    plain_read = backend._read

    def read(name: str, **params: Any) -> list[neo4j.Record]:
        reads.append(name)
        if name == "candidate_docs" and reads.count("candidate_docs") == 1:
            _rewrite(neo4j_driver, neo4j_target, _fact(tenant, "f3", "the cafeteria serves lunch"))
        return plain_read(name, **params)

    backend._read = read  # type: ignore[method-assign]
    result = _recall(store, tenant, "cafeteria lunch")
    assert reads == ["gate_state", "gate", "candidate_docs", "gate"]
    assert result == _recall(_store(neo4j_driver, neo4j_target), tenant, "cafeteria lunch")
    assert result[0] == ["f3"]


def test_erasing_a_record_drops_its_held_text(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    store = _store(neo4j_driver, neo4j_target)
    store.add_many(_facts(tenant))
    assert _recall(store, tenant, "office closes")[0] == ["f3"]
    backend = store.backend
    assert isinstance(backend, Neo4jBackend)
    held = repr(backend._docs._entries)
    assert "the office closes at six" in held
    store.forget(
        ForgetRequest(tenant=tenant, target="f3", mode=ForgetMode.ERASE, reason="asked", requested_by="dpo")
    )
    assert "the office closes at six" not in repr(backend._docs._entries)
    assert "the refund window is thirty days" in repr(backend._docs._entries)


def test_an_unchanged_gate_report_reuses_its_verdicts_and_nothing_else_does(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    store, _ = _facts_store(neo4j_driver, neo4j_target, tenant)
    ctx = ReadContext(as_of=KNOWN, tenant=tenant, scopes=("case:c1",), now=T0 + timedelta(days=1), limit=1)
    first = store._gate_view(ctx).verdicts
    assert store._gate_view(ctx).verdicts is first
    later = ctx.model_copy(update={"now": T0 + timedelta(days=2)})  # a later now changing no verdict
    assert store._gate_view(later).verdicts is first
    fresh = _store(neo4j_driver, neo4j_target)
    for query in ("refund window", "office closes", "card", ""):
        assert _recall(store, tenant, query) == _recall(fresh, tenant, query), query
    # another writer changes a record: the report differs, so the verdicts are made anew
    _rewrite(neo4j_driver, neo4j_target, _fact(tenant, "f3", "the cafeteria serves lunch"))
    changed = store._gate_view(ctx).verdicts
    assert changed is not first
    assert "the cafeteria serves lunch" in {doc[1] for doc in changed.corpus.docs.values()}
    assert _recall(store, tenant, "cafeteria lunch") == _recall(fresh, tenant, "cafeteria lunch")
    # as of before the records were valid: other reasons, other verdicts
    before = ctx.model_copy(update={"now": T0 - timedelta(days=1)})
    assert store._gate_view(before).verdicts is not changed
    assert [r for _, r in store._gate_view(before).dropped()] == [DropReason.NOT_YET_VALID] * 3


def test_erasing_a_record_purges_the_gate_cache_of_its_tenant(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    store, _ = _facts_store(neo4j_driver, neo4j_target, tenant)
    other = f"{tenant}-other"
    store.add_many(_facts(other))
    assert _recall(store, tenant, "office closes")[0] == ["f3"]
    assert _recall(store, other, "office closes")[0] == ["f3"]
    cache = store._gate_cache
    assert cache.texts().count("the office closes at six") == 2
    store.forget(
        ForgetRequest(tenant=tenant, target="f3", mode=ForgetMode.ERASE, reason="asked", requested_by="dpo")
    )
    assert {key[0] for key in cache._entries} == {other}
    assert cache.texts().count("the office closes at six") == 1  # the other tenant's own
    assert _recall(store, tenant, "office closes")[0] == ["f1"]  # f3 is gone; the top eligible record
    assert cache.texts().count("the office closes at six") == 1


def test_held_text_is_bounded(neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str) -> None:
    backend = Neo4jBackend(neo4j_driver, uri=neo4j_target.uri or "", doc_cache=2)
    store = MemoryStore(backend)
    store.add_many(_facts(tenant))
    assert _recall(store, tenant, "refund window")[0] == ["f1"]
    assert len(backend._docs._entries) == 2
    assert _recall(store, tenant, "refund window") == _recall(
        _store(neo4j_driver, neo4j_target), tenant, "refund window"
    )


def test_the_gate_cache_is_bounded_by_the_candidates_it_holds(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    store = MemoryStore(Neo4jBackend(neo4j_driver, uri=neo4j_target.uri or ""), gate_cache=12)
    store.add_many(_facts(tenant))
    ctx = ReadContext(as_of=KNOWN, tenant=tenant, scopes=("case:c1",), now=T0 + timedelta(days=1))
    # four reports of three candidates each: as asked, another environment, another kind,
    # another policy (another time is the same report's key, read again)
    others = [
        ctx.model_copy(update={"environment": ("cap-x",)}),
        ctx.model_copy(update={"kinds": (Kind.EPISODIC,)}),
        ctx.model_copy(update={"policy": "other"}),
    ]
    valid = store._gate_view(ctx).verdicts
    equipped, kinds, _ = (store._gate_view(other).verdicts for other in others)
    assert store._gate_cache.held == 12
    assert store._gate_view(others[0]).verdicts is equipped
    assert store._gate_view(ctx).verdicts is valid  # the least recently used is now ``kinds``
    store._gate_view(ctx.model_copy(update={"clearance": Sensitivity.PUBLIC}))  # a fifth report
    assert store._gate_cache.held == 12
    assert store._gate_view(others[0]).verdicts is equipped
    assert store._gate_view(ctx).verdicts is valid
    assert store._gate_view(others[1]).verdicts is not kinds


# --------------------------------------------------------------------------
# all-or-nothing writes
# --------------------------------------------------------------------------


def test_add_many_with_one_taken_id_writes_none_of_3000(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    store = _store(neo4j_driver, neo4j_target)
    seed = store.add(_episode(tenant, 0, prefix="seed"))
    batch = [_episode(tenant, i) for i in range(3000)]
    batch[1777] = _episode(tenant, 0, prefix="seed").model_copy(update={"content": "other text"})
    with pytest.raises(ConflictError) as info:
        store.add_many(batch)
    assert info.value.code == "duplicate_id"
    assert _count_memories(neo4j_driver, tenant) == 1
    assert store.get(tenant, seed.id) == seed
    assert [e.action for e in store.audit(tenant)] == ["added"]


def test_batch_the_database_refuses_midway_leaves_nothing(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    """Bypass the store's checks: a backend batch of 3000 new records whose record #2500 reuses
    a stored id. The first 2000-row chunk is written, then the uniqueness constraint refuses the
    second chunk (ConstraintError): the whole transaction rolls back, scope edge and audit too."""
    store = _store(neo4j_driver, neo4j_target)
    seed = store.add(_episode(tenant, 0, prefix="seed"))
    (seed_event,) = store.audit(tenant)
    records = [_episode(tenant, i) for i in range(3000)]
    records[2500] = _episode(tenant, 0, prefix="seed").model_copy(update={"content": "overwrite attempt"})
    ops: list[Op] = [ScopeWithin(tenant=tenant, child="case:c1", parent="domain:payments")]
    ops.extend(PutRecord(record=r) for r in records)
    ops.append(AppendAudit(event=AuditEvent(tenant=tenant, action="added", at=T0)))
    with pytest.raises(ConflictError) as info:
        store.backend.apply(ops)
    assert info.value.code == "conflict"
    assert _count_memories(neo4j_driver, tenant) == 1
    assert store.get(tenant, seed.id) == seed
    assert store.backend.existing_ids(tenant, [r.id for r in records]) == {seed.id}
    assert store.backend.scope_parents(tenant, "case:c1") == set()
    assert store.audit(tenant) == [seed_event]
    # the same batch without the offending record goes in whole
    records.pop(2500)
    ops = [op for op in ops if not (isinstance(op, PutRecord) and op.record.id == seed.id)]
    store.backend.apply(ops)
    assert _count_memories(neo4j_driver, tenant) == 3000
    assert store.backend.scope_parents(tenant, "case:c1") == {"domain:payments"}


def test_id_taken_by_a_writer_without_the_lock_after_the_check_is_a_conflict(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer that does not take the tenant's lock (another tool, an older graphmem) adds id
    ``r1777`` right after this add_many's existence check: the write must fail with
    ConflictError (not overwrite theirs) and leave nothing of the batch."""
    store = _store(neo4j_driver, neo4j_target)
    theirs = _episode(tenant, 1777).model_copy(update={"content": "written by the other process"})
    real = store.backend.existing_ids
    raced: list[bool] = []

    def existing_ids_then_race(t: str, ids: Sequence[str]) -> set[str]:
        found = real(t, ids)
        if not raced:
            raced.append(True)
            with neo4j_driver.session() as session:
                session.execute_write(send_ops, [PutRecord(record=theirs)], store.backend._crypt)  # type: ignore[attr-defined]
        return found

    monkeypatch.setattr(store.backend, "existing_ids", existing_ids_then_race)
    batch = [_episode(tenant, i) for i in range(3000)]
    with pytest.raises(ConflictError):
        store.add_many(batch)
    assert store.get(tenant, theirs.id) == theirs
    assert _count_memories(neo4j_driver, tenant) == 1


def test_refused_writes_in_many_threads_each_fail_alone(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    """A refused statement makes the driver give its connection back to the pool at once; the
    failed transaction must not touch it after that, or two threads end up sharing one
    connection (errors that are not theirs, or a read that never returns). Four threads on one
    driver each make the database refuse a batch, then read, 100 times over."""
    store = _store(neo4j_driver, neo4j_target)
    seed = store.add(_episode(tenant, 0, prefix="seed"))
    refused = [
        ScopeWithin(tenant=tenant, child="case:c1", parent="domain:payments"),
        PutRecord(record=_episode(tenant, 1)),
        PutRecord(record=seed.model_copy(update={"content": "overwrite attempt"})),
        AppendAudit(event=AuditEvent(tenant=tenant, action="added", at=T0)),
    ]
    outcomes: list[str] = []
    barrier = threading.Barrier(4)

    def refuse_then_read() -> None:
        barrier.wait()
        for _ in range(100):
            try:
                store.backend.apply(refused)
                outcomes.append("stored")
            except ConflictError:
                outcomes.append("conflict" if store.get(tenant, seed.id) == seed else "read wrong")
            except BaseException as err:  # collected and asserted below
                outcomes.append(f"{type(err).__name__}: {err}")

    threads = [threading.Thread(target=refuse_then_read, daemon=True) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a thread hangs on a connection another one holds"
    assert [o for o in outcomes if o != "conflict"] == []
    assert len(outcomes) == 400
    assert _count_memories(neo4j_driver, tenant) == 1
    assert store.backend.scope_parents(tenant, "case:c1") == set()


# --------------------------------------------------------------------------
# one transaction per operation
# --------------------------------------------------------------------------


def test_a_write_block_that_raises_leaves_nothing_and_reads_inside_see_its_writes(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    store = _store(neo4j_driver, neo4j_target)
    outside = _store(neo4j_driver, neo4j_target)

    def give_up() -> None:
        with store.backend.write():
            store.add(_episode(tenant, 1))
            store.scope_within(tenant, "case:c1", "domain:payments")
            assert store.get(tenant, "r1") == _episode(tenant, 1)  # its own writes, uncommitted
            assert outside.get(tenant, "r1") is None  # nobody else sees them yet
            raise RuntimeError("the caller gives up")

    with pytest.raises(RuntimeError):
        give_up()
    assert _count_memories(neo4j_driver, tenant) == 0
    assert store.backend.scope_parents(tenant, "case:c1") == set()
    assert store.audit(tenant) == []
    with store.backend.write(), store.backend.write():  # nested blocks are one transaction
        store.add(_episode(tenant, 2))
    assert outside.get(tenant, "r2") == _episode(tenant, 2)


def test_writers_of_one_tenant_wait_for_each_other_and_other_tenants_do_not(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    """The first read of a write transaction takes its tenant's lock: a second writer of the
    tenant waits until the first commits and then decides on what it wrote; a writer of another
    tenant, and every reader, goes on."""
    store = _store(neo4j_driver, neo4j_target)
    other = _store(neo4j_driver, neo4j_target)
    store.add(_episode(tenant, 0))
    holding = threading.Event()
    release = threading.Event()
    order: list[str] = []

    def first() -> None:
        with store.backend.write():
            assert store.backend.get(tenant, "r0") is not None
            holding.set()
            release.wait(30)
            store.add(_episode(tenant, 1))
            order.append("first committed")

    def second() -> None:
        other.add(_episode(tenant, 2))
        order.append("second committed")

    holder = threading.Thread(target=first, daemon=True)
    holder.start()
    assert holding.wait(30)
    waiter = threading.Thread(target=second, daemon=True)
    waiter.start()
    time.sleep(0.5)
    assert order == []  # waiting for the lock
    other.add(_episode(f"{tenant}-other", 3))  # another tenant: no wait
    assert other.get(tenant, "r0") == _episode(tenant, 0)  # readers take no lock
    release.set()
    holder.join(30)
    waiter.join(30)
    assert order == ["first committed", "second committed"]
    assert _count_memories(neo4j_driver, tenant) == 3


def test_the_database_refuses_a_second_successor_a_scope_cycle_and_a_dangling_edge(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    """Checked in the transaction that adds the edge, so no writer gets around them by racing
    the store's own checks (or by writing ops directly); the whole batch rolls back."""
    store = _store(neo4j_driver, neo4j_target)
    store.add_many([_fact(tenant, "f1", "one"), _fact(tenant, "f2", "two"), _fact(tenant, "f3", "three")])
    store.supersede(tenant, "f1", _fact(tenant, "f4", "four"), reason="newer")
    store.scope_within(tenant, "case:c1", "domain:payments")
    at = T0 + timedelta(days=1)
    refused = {
        "already_superseded": AddEdge(tenant=tenant, label="SUPERSEDES", src="f2", dst="f1", at=at),
        "unknown_record": AddEdge(tenant=tenant, label="SUPERSEDES", src="f2", dst="nope", at=at),
        "scope_cycle": ScopeWithin(tenant=tenant, child="domain:payments", parent="case:c1"),
    }
    for code, op in refused.items():
        with pytest.raises(LineageError) as info:
            store.backend.apply([PutRecord(record=_fact(tenant, "f9", "nine")), op])
        assert info.value.code == code
        assert store.get(tenant, "f9") is None
    invalid = AddEdge(tenant=tenant, label="INVALIDATED_BY", src="f2", dst="src-x", dst_is_source=True, at=at)
    with pytest.raises(LineageError) as info:
        store.backend.apply([invalid])
    assert info.value.code == "unknown_record"
    again = AddEdge(tenant=tenant, label="SUPERSEDES", src="f4", dst="f1", at=at, reason="newer")
    store.backend.apply([again])  # the same edge again (an import) is no second successor
    assert [e.src for e in store.trace(tenant, "f1").edges if e.type == "SUPERSEDES"] == ["f4"]


def test_a_record_forgotten_between_the_gate_and_its_fetch_is_gated_again(
    neo4j_driver: neo4j.Driver, neo4j_target: Neo4jTarget, tenant: str
) -> None:
    store, backend = _facts_store(neo4j_driver, neo4j_target, tenant)
    other = _store(neo4j_driver, neo4j_target)
    plain_gate = backend.gate_rows
    gates: list[int] = []

    def gate(ctx: ReadContext, probe: GateProbe) -> Any:
        result = plain_gate(ctx, probe)
        gates.append(1)
        if len(gates) == 1:  # another process erases the top match right after the gate
            other.forget(
                ForgetRequest(
                    tenant=tenant, target="f3", mode=ForgetMode.ERASE, reason="asked", requested_by="dpo"
                )
            )
        return result

    backend.gate_rows = gate  # type: ignore[method-assign]
    ids, _, records = _recall(store, tenant, "office closes")
    assert len(gates) == 2
    assert ids == [r.id for r in records] != ["f3"]
    assert all(r.status is Status.ACTIVE for r in records)
    recalled = [e for e in store.audit(tenant) if e.action == "recalled"]
    assert [e.record_ids for e in recalled] == [tuple(ids)]


# --------------------------------------------------------------------------
# faults: a server of our own that we stop, kill and restart
# --------------------------------------------------------------------------

_TIMEOUT = 3.0


@pytest.fixture(scope="module")
def own_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalNeo4j]:
    """A private Neo4j with a kept data directory, so stop()/kill() + start() keep port and data."""
    _require_launcher()
    server = LocalNeo4j(data_dir=tmp_path_factory.mktemp("own-neo4j"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def own_store(own_server: LocalNeo4j) -> Iterator[MemoryStore]:
    if not own_server.running:
        own_server.start()
    store = MemoryStore.neo4j(own_server.uri, auth=own_server.auth, connection_timeout=_TIMEOUT)
    try:
        yield store
    finally:
        if not own_server.running:
            own_server.start()
        store.close()


def test_setup_on_a_fresh_database_then_again_changes_nothing(own_store: MemoryStore) -> None:
    """Runs first on the private server: version 0 -> SCHEMA_VERSION, then a no-op."""
    backend = own_store.backend
    assert isinstance(backend, Neo4jBackend)
    assert backend.schema_version() == 0
    tenant = f"t-{uuid.uuid4().hex[:12]}"
    ctx = ReadContext(as_of=KNOWN, tenant=tenant, scopes=("case:c1",), now=T0 + timedelta(days=1))
    # Before the schema, writes are refused as reads are: without its constraints two first
    # writers of a tenant could each merge a write lock of their own. Four threads race
    # their first writes; every one is refused and nothing reaches the database.
    barrier = threading.Barrier(4)
    refused: list[str] = []

    def first_write(k: int) -> None:
        barrier.wait()
        try:
            own_store.add(_episode(tenant, k))
            refused.append("stored")
        except BackendUnavailable as err:
            refused.append(err.code)

    threads = [threading.Thread(target=first_write, args=(k,), daemon=True) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert refused == ["schema_missing"] * 4
    assert _query(backend.driver, "MATCH (n) RETURN count(n) AS n") == [{"n": 0}]
    with pytest.raises(BackendUnavailable) as info:
        own_store.recall(ctx, "")
    assert (info.value.code, "graphmem schema apply" in info.value.message) == ("schema_missing", True)
    assert own_store.setup() == SCHEMA_VERSION
    own_store.add(_episode(tenant, 0))
    assert own_store.recall(ctx, "").ids == ["r0"]
    before = _schema_snapshot(backend.driver)
    assert before[0]
    assert before[1]
    assert own_store.setup() == SCHEMA_VERSION
    assert backend.schema_version() == SCHEMA_VERSION
    assert _schema_snapshot(backend.driver) == before


def test_setup_with_embeddings_adds_one_online_vector_index_idempotently(own_store: MemoryStore) -> None:
    """SPEC §6: the schema step also creates the vector index (when embeddings are configured)."""
    backend = own_store.backend
    assert isinstance(backend, Neo4jBackend)
    assert own_store.setup(embedding_dimensions=4) == SCHEMA_VERSION
    vector = _query(
        backend.driver, "SHOW VECTOR INDEXES YIELD name, state, labelsOrTypes, properties, options"
    )
    assert [(v["labelsOrTypes"], v["properties"], v["state"]) for v in vector] == [
        (["Memory"], ["embedding"], "ONLINE")
    ]
    assert vector[0]["options"]["indexConfig"]["vector.dimensions"] == 4
    before = _schema_snapshot(backend.driver)
    assert own_store.setup(embedding_dimensions=4) == SCHEMA_VERSION
    assert own_store.setup() == SCHEMA_VERSION
    assert _schema_snapshot(backend.driver) == before
    with pytest.raises(ConflictError) as info:
        own_store.setup(embedding_dimensions=8)
    assert info.value.code == "embedding_dimensions"
    assert _schema_snapshot(backend.driver) == before


def test_setup_migrates_version_2_gate_lists_in_place(own_store: MemoryStore) -> None:
    """Version 2 lists (on the node, no fingerprint tokens, status as a flag, edge times at 8 and
    9) become the current layout: on the APPLIES_TO edge, with tokens and the status's code."""
    backend = own_store.backend
    assert isinstance(backend, Neo4jBackend)
    assert own_store.setup() == SCHEMA_VERSION
    tenant = f"t-mig-{uuid.uuid4().hex[:8]}"
    own_store.add_many([*_facts(tenant), _fact(tenant, "f5", "refund disputes take a week")])
    own_store.supersede(
        tenant, "f1", _fact(tenant, "f4", "the refund window is sixty days"), reason="policy changed"
    )
    own_store.invalidate(tenant, "f2", by="f4", reason="wrong", at=T0 + timedelta(hours=1))
    own_store.forget(
        ForgetRequest(tenant=tenant, target="f5", mode=ForgetMode.REVOKE, reason="r", requested_by="u")
    )
    ctx = ReadContext(as_of=KNOWN, tenant=tenant, scopes=("case:c1",), now=T0 + timedelta(days=1))
    expected = own_store.recall(ctx, "refund window", explain=True)
    reasons = {d.record_id: d.reason for d in expected.decisions}
    assert (reasons["f2"], reasons["f5"]) == (DropReason.INVALIDATED, DropReason.REVOKED)
    lists = (
        "MATCH (m:Memory {tenant: $tenant})-[r:APPLIES_TO]->(s:Scope) "
        "RETURN m.id AS id, m.g AS node, properties(r) AS edge, s.key AS scope ORDER BY id"
    )
    current = _query(backend.driver, lists, tenant=tenant)
    assert all(row["node"] is None and row["edge"]["scope"] == row["scope"] for row in current)
    # Version 2 stored fingerprints in clear (the tokens version 3 adds are of those).
    clear = {r.id: r.fingerprint() for r in own_store.backend.all_records(tenant)}
    _query(
        backend.driver,
        "UNWIND $rows AS row MATCH (m:Memory {tenant: $tenant, id: row[0]}) SET m.fingerprint = row[1]",
        tenant=tenant,
        rows=[[rid, fp] for rid, fp in clear.items()],
    )
    _query(
        backend.driver,
        "MATCH (m:Memory {tenant: $tenant})-[r:APPLIES_TO]->() "
        "SET m.g = [r.g[0], CASE WHEN r.g[1] = 0 THEN 0 ELSE 1 END] + r.g[2..8] + r.g[10..12] "
        "REMOVE r.tenant, r.scope, r.policy, r.id, r.g",
        tenant=tenant,
    )
    _query(backend.driver, "MATCH (v:GraphmemSchema) SET v.version = 2")
    with pytest.raises(BackendUnavailable) as info:
        MemoryStore(Neo4jBackend(backend.driver, uri="bolt://old")).recall(ctx, "refund window")
    assert info.value.code == "schema_version"
    assert own_store.setup() == SCHEMA_VERSION
    # Lists migrated from version 2 carry no knowledge times (entries 12-13): known at every time.
    known_always = [
        {
            **row,
            "edge": {
                **row["edge"],
                "g": [*row["edge"]["g"][:8], *fingerprint_tokens(clear[row["id"]]), *row["edge"]["g"][10:12]],
            },
        }
        for row in current
    ]
    migrated = _query(backend.driver, lists, tenant=tenant)
    assert migrated == known_always
    fresh = MemoryStore(Neo4jBackend(backend.driver, uri="bolt://migrated"))
    assert fresh.recall(ctx, "refund window", explain=True) == expected
    tokens = {row["id"]: row["edge"]["g"][8:10] for row in migrated}
    assert tokens == {
        r.id: list(fingerprint_tokens(r.fingerprint())) for r in fresh.backend.all_records(tenant)
    }


def test_connection_lost_during_setup_is_backend_unavailable(
    own_server: LocalNeo4j, own_store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server dies right after setup() read the schema version (here: pretending 0)."""
    backend = own_store.backend
    assert isinstance(backend, Neo4jBackend)

    def version_then_crash() -> int:
        own_server.kill()
        return 0

    monkeypatch.setattr(backend, "schema_version", version_then_crash)
    with pytest.raises(BackendUnavailable) as info:
        own_store.setup()
    assert info.value.code == "connection_lost"
    assert own_server.uri in info.value.message


def test_server_down_then_back_the_same_call_succeeds(
    own_server: LocalNeo4j, own_store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server stops after add_many's checks, just before its write: the call fails with
    ``connection_lost``, names the URI and says the write was rolled back (after the driver's
    retries). Started again on the same port and data, the same call succeeds, the earlier data is
    intact and nothing of the failed attempt was left behind."""
    own_store.setup()
    tenant = f"t-{uuid.uuid4().hex[:12]}"
    before = own_store.add_many([_episode(tenant, i, prefix="before") for i in range(50)])
    batch = [_episode(tenant, i) for i in range(500)]
    backend = own_store.backend
    assert isinstance(backend, Neo4jBackend)
    real_apply = backend.apply

    def stop_then_apply(ops: Sequence[Op]) -> None:
        own_server.stop()
        real_apply(ops)

    monkeypatch.setattr(backend, "apply", stop_then_apply)
    t0 = time.monotonic()
    with pytest.raises(BackendUnavailable) as info:
        own_store.add_many(batch)
    assert time.monotonic() - t0 < 120.0
    assert not own_server.running
    assert info.value.code == "connection_lost"
    assert own_server.uri in info.value.message
    assert "rolled back" in info.value.message
    monkeypatch.setattr(backend, "apply", real_apply)
    own_server.start()
    assert own_store.add_many(batch) == batch
    assert _count_memories(backend.driver, tenant) == 550
    assert backend.get_many(tenant, [r.id for r in before]) == before
    assert backend.get_many(tenant, [r.id for r in batch]) == batch
    assert [e.action for e in own_store.audit(tenant)] == ["added", "added"]


def test_server_killed_during_a_big_write_leaves_all_or_nothing(
    own_server: LocalNeo4j, own_store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGKILL the server while one add_many of 20k records is in flight; after recovery
    the tenant holds all 20k records or none, and the same call then completes the job."""
    own_store.setup()
    tenant = f"t-{uuid.uuid4().hex[:12]}"
    kept = own_store.add(_episode(tenant, 0, prefix="kept"))
    batch = [_episode(tenant, i) for i in range(20_000)]
    backend = own_store.backend
    assert isinstance(backend, Neo4jBackend)
    writing = threading.Event()
    real_apply = backend.apply

    def apply(ops: Sequence[Op]) -> None:
        writing.set()
        real_apply(ops)

    monkeypatch.setattr(backend, "apply", apply)
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = own_store.add_many(batch)
        except BaseException as err:  # reported to the main thread
            outcome["error"] = err

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    assert writing.wait(120), "add_many never reached the write"
    time.sleep(1.0)
    finished_before_kill = not worker.is_alive()
    own_server.kill()
    worker.join(180)
    assert not worker.is_alive(), "add_many hung after the server died"
    monkeypatch.setattr(backend, "apply", real_apply)
    own_server.start()
    stored = backend.existing_ids(tenant, [r.id for r in batch])
    assert len(stored) in {0, len(batch)}, f"partial write survived the crash: {len(stored)} records"
    assert backend.get(tenant, kept.id) == kept
    assert not finished_before_kill, "the write finished before the kill; use more records"
    if "error" in outcome:
        err = outcome["error"]
        assert isinstance(err, BackendUnavailable), repr(err)
        assert err.code == "connection_lost"
        assert own_server.uri in err.message
        assert "rolled back" in err.message
        assert not stored, "the error said the write was rolled back, but it was stored"
        assert own_store.add_many(batch) == batch
    else:  # the commit got through just before the kill: then all of it is there
        assert len(stored) == len(batch)
    assert len(backend.existing_ids(tenant, [r.id for r in batch])) == len(batch)
    assert _count_memories(backend.driver, tenant) == len(batch) + 1
    assert [e.action for e in own_store.audit(tenant)] == ["added", "added"]
