"""``graphmem check`` on the embedded engine: SQLite's integrity check, then graphmem's invariants."""

from __future__ import annotations

import sqlite3

import networkx as nx

from graphmem.backends.sqlite_engine import RECORD_ROW, record_row
from graphmem.errors import GraphmemError
from graphmem.model import MemoryRecord
from graphmem.model.canonical import sha256

__all__ = ["check_database"]

_DANGLING = {
    "record applies to a scope that does not exist": (
        "SELECT r.tenant, r.id FROM records r "
        "LEFT JOIN scopes s ON s.tenant = r.tenant AND s.key = r.scope WHERE s.key IS NULL"
    ),
    "DERIVED_FROM names a parent that does not exist": (
        "SELECT d.tenant, d.child || ' -> ' || d.parent FROM derived d "
        "LEFT JOIN records r ON r.tenant = d.tenant AND r.id = d.parent WHERE r.id IS NULL"
    ),
    "CITES names a source that does not exist": (
        "SELECT c.tenant, c.record || ' -> ' || c.source FROM cites c "
        "LEFT JOIN sources s ON s.tenant = c.tenant AND s.id = c.source WHERE s.id IS NULL"
    ),
    "lineage edge from a record that does not exist": (
        "SELECT l.tenant, l.label || ' ' || l.src FROM lineage l "
        "LEFT JOIN records r ON r.tenant = l.tenant AND r.id = l.src WHERE r.id IS NULL"
    ),
    "lineage edge to a record that does not exist": (
        "SELECT l.tenant, l.label || ' ' || l.dst FROM lineage l "
        "LEFT JOIN records r ON r.tenant = l.tenant AND r.id = l.dst "
        "WHERE l.dst_is_source = 0 AND r.id IS NULL"
    ),
    "lineage edge to a source that does not exist": (
        "SELECT l.tenant, l.label || ' ' || l.dst FROM lineage l "
        "LEFT JOIN sources s ON s.tenant = l.tenant AND s.id = l.dst "
        "WHERE l.dst_is_source = 1 AND s.id IS NULL"
    ),
    "WITHIN names a scope that does not exist": (
        "SELECT w.tenant, w.child || ' -> ' || w.parent FROM within w "
        "WHERE NOT EXISTS (SELECT 1 FROM scopes s WHERE s.tenant = w.tenant AND s.key = w.child) "
        "OR NOT EXISTS (SELECT 1 FROM scopes s WHERE s.tenant = w.tenant AND s.key = w.parent)"
    ),
}
_ACYCLIC = {
    "DERIVED_FROM": "SELECT tenant, child, parent FROM derived",
    "SUPERSEDES": "SELECT tenant, src, dst FROM lineage WHERE label = 'SUPERSEDES'",
    "WITHIN": "SELECT tenant, child, parent FROM within",
}


def check_database(conn: sqlite3.Connection) -> list[str]:
    """Every violation found, one line each: damaged pages first (then nothing else is read),
    dangling edges, cycles, records whose stored fingerprint, columns or key do not match them.

    Edges cannot cross tenants here: each row holds one tenant and both ends are looked up in it.
    """
    try:
        problems = [f"sqlite: {msg}" for (msg,) in conn.execute("PRAGMA integrity_check") if msg != "ok"]
    except sqlite3.DatabaseError as err:  # a page so damaged that the check itself stops
        return [f"sqlite: {err}"]
    if problems:
        return problems
    for what, sql in _DANGLING.items():
        problems += [f"{what}: tenant {t!r}, {where}" for t, where in conn.execute(sql)]
    for label, sql in _ACYCLIC.items():
        by_tenant: dict[str, nx.DiGraph[str]] = {}
        for tenant, a, b in conn.execute(sql):
            by_tenant.setdefault(tenant, nx.DiGraph()).add_edge(a, b)
        for tenant, graph in sorted(by_tenant.items()):
            for cycle in nx.simple_cycles(graph):
                problems.append(f"{label} cycle in tenant {tenant!r}: {' -> '.join(cycle)}")
                break
    for row in conn.execute(f"SELECT {RECORD_ROW} FROM records"):  # noqa: S608 - a constant column list
        tenant, rid, fingerprint, body = row[0], row[1], row[7], row[16]
        if sha256(body) != fingerprint:
            problems.append(f"fingerprint mismatch: tenant {tenant!r}, record {rid!r}")
            continue
        try:
            record = MemoryRecord.model_validate_json(body)
        except GraphmemError as err:
            problems.append(f"unreadable record: tenant {tenant!r}, record {rid!r}: {err}")
            continue
        if record_row(record) != tuple(row):
            problems.append(f"stored columns differ from the record: tenant {tenant!r}, record {rid!r}")
    return problems
