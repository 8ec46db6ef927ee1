"""Loads the SQLite statements kept in ``graphmem/sql/`` by name, as ``cypher`` loads Cypher."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

from graphmem.errors import GraphmemError

__all__ = ["schema_statement", "sql"]

_NAME = re.compile(r"[a-z][a-z0-9_]*")


@cache
def sql(name: str) -> str:
    """The text of ``graphmem/sql/<name>.sql``; ``GraphmemError`` if there is no such file."""
    if not _NAME.fullmatch(name):
        raise GraphmemError(f"invalid SQL file name {name!r}", code="invalid_sql_name")
    path = resources.files("graphmem") / "sql" / f"{name}.sql"
    if not path.is_file():
        raise GraphmemError(f"SQL file {name}.sql is missing; reinstall graphmem", code="missing_sql")
    return path.read_text(encoding="utf-8")


def schema_statement(table: str) -> str:
    """The schema's statement that creates ``table``, or the index of that name (a migration
    adding it to an older store runs the same statement a new store does)."""
    for statement in sql("schema").split(";"):
        lines = [line for line in statement.splitlines() if not line.lstrip().startswith("--")]
        text = "\n".join(lines).strip()
        words = text.replace("(", " (").split()
        # create table|index if not exists <name>
        if words[1:2] in (["TABLE"], ["INDEX"]) and words[5:6] == [table]:
            return text
    raise GraphmemError(f"the schema has no table {table!r}", code="missing_sql")
