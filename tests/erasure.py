"""Erasure in tests: forgetting records in turn, and scanning every place a store keeps data
for a piece of text (erase completeness checks)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

from graphmem import ForgetMode, ForgetRequest, MemoryStore
from graphmem.backends.embedded import EmbeddedBackend
from graphmem.backends.neo4j import Neo4jBackend


def forget_alternately(
    store: MemoryStore, tenant: str, ids: Sequence[str], after: Callable[[str], object] | None = None
) -> None:
    """Forget ``ids`` one by one, in order: revoked at even positions, erased at odd ones;
    ``after(id)`` once each has returned."""
    for k, rid in enumerate(ids):
        mode = ForgetMode.ERASE if k % 2 else ForgetMode.REVOKE
        request = ForgetRequest(tenant=tenant, target=rid, mode=mode, reason="asked", requested_by="alice")
        store.forget(request)
        if after is not None:
            after(rid)


def places_holding(store: MemoryStore, tenant: str, text: str) -> list[str]:
    """Every place ``text`` is still findable: nodes, edges, indexes, audit, export, files."""
    found: list[str] = []
    for record in store.backend.all_records(tenant):
        if text in record.model_dump_json():
            found.append(f"record {record.id}")
    if any(text in held for held in store._gate_cache.texts(tenant)):
        found.append("gate cache")
    if any(text in line for line in store.export(tenant)):
        found.append("export")
    if any(text in json.dumps(e.model_dump(mode="json"), ensure_ascii=False) for e in store.audit(tenant)):
        found.append("audit")
    backend = store.backend
    if isinstance(backend, EmbeddedBackend):
        found += _embedded_places(backend, text)
    elif isinstance(backend, Neo4jBackend):
        holds = (
            "any(k IN keys(x) WHERE CASE WHEN valueType(x[k]) STARTS WITH 'LIST' "
            "THEN any(v IN x[k] WHERE toString(v) CONTAINS $text) "
            "ELSE toString(x[k]) CONTAINS $text END)"
        )
        with backend.driver.session(database=backend.database) as session:
            nodes = session.run(
                f"MATCH (x) WHERE x.tenant = $tenant AND {holds} RETURN count(x) AS c",
                text=text,
                tenant=tenant,
            ).single()
            rels = session.run(
                f"MATCH (a)-[x]->() WHERE a.tenant = $tenant AND {holds} RETURN count(x) AS c",
                text=text,
                tenant=tenant,
            ).single()
            phrase = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
            fulltext = [
                r["name"]
                for r in session.run("SHOW FULLTEXT INDEXES YIELD name, labelsOrTypes, entityType")
                if r["entityType"] == "NODE" and "Memory" in r["labelsOrTypes"]
            ]
            hits = None
            for index in fulltext:  # none since schema 5: the text is encrypted
                hits = session.run(
                    "CALL db.index.fulltext.queryNodes($index, $q) YIELD node "
                    "WHERE node.tenant = $tenant RETURN count(node) AS c",
                    index=index,
                    q=phrase,
                    tenant=tenant,
                ).single()
        if nodes and nodes["c"]:
            found.append(f"{nodes['c']} neo4j node(s)")
        if rels and rels["c"]:
            found.append(f"{rels['c']} neo4j relationship(s)")
        if hits and hits["c"]:
            found.append(f"{hits['c']} fulltext hit(s)")
    return found


def _embedded_places(backend: EmbeddedBackend, text: str) -> list[str]:
    """Rows of every table, the raw bytes of the database (pages, free pages) and its files."""
    found: list[str] = []
    with backend.reading() as conn:
        assert isinstance(conn, sqlite3.Connection)
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for row in conn.execute(f"SELECT * FROM {table}"):  # noqa: S608 - names from sqlite_master
                if any(
                    text in (v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)) for v in row
                ):
                    found.append(f"table {table}")
        if backend.directory is None and text.encode() in conn.serialize():
            found.append("database image")
    if backend.directory is not None:
        for path in Path(backend.directory).iterdir():
            if path.is_file() and text.encode() in path.read_bytes():
                found.append(f"file {path.name}")
    return found
