"""Loads the Cypher statements kept in ``cypher/`` (shipped as ``graphmem/cypher`` in the wheel)."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from pathlib import Path

from graphmem.errors import GraphmemError

__all__ = ["cypher", "cypher_names", "statements"]

_NAME = re.compile(r"[a-z][a-z0-9_]*")


def _directory() -> Path:
    packaged = resources.files("graphmem") / "cypher"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "cypher"


def cypher_names() -> list[str]:
    """Every statement file's name, without ``.cypher``."""
    return sorted(p.stem for p in _directory().glob("*.cypher"))


@cache
def cypher(name: str) -> str:
    """The text of ``cypher/<name>.cypher``; raises ``GraphmemError`` if there is no such file."""
    if not _NAME.fullmatch(name):
        raise GraphmemError(f"invalid Cypher file name {name!r}", code="invalid_cypher_name")
    path = _directory() / f"{name}.cypher"
    if not path.is_file():
        raise GraphmemError(
            f"Cypher file {name}.cypher is missing from {path.parent}; reinstall graphmem",
            code="missing_cypher",
        )
    return path.read_text(encoding="utf-8")


@cache
def statements(name: str) -> list[str]:
    """The ``;``-separated statements of a file (one or more), comment lines removed."""
    body = "\n".join(line for line in cypher(name).splitlines() if not line.lstrip().startswith("//"))
    return [s.strip() for s in body.split(";") if s.strip()]
