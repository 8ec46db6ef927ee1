"""One pass over a text for every necessary literal of the gate's regexes (Hyperscan, if installed).

``graphmem.policy.prefilter`` narrows each alternation to the alternatives a
text can match by their necessary literals: clauses of literal strings, of
which the text must contain one each. Which clauses a text satisfies is asked
of every compiled clause at once. With Hyperscan installed (``pip install
graphmem[fast]``) every literal of every compiled clause is in one literal
database, compiled once per process on first use (again only if clauses were
compiled since), and one scan of the text's UTF-8 bytes reports each literal it
contains: a clause is satisfied when one of its literals is reported. UTF-8 is
a prefix-free code, so a text contains a literal exactly when its bytes
contain the literal's bytes (lone surrogates are encoded the same way on both
sides). The answer is exact, so every narrowed alternation — and every match —
is the one the pure-Python index gives (which may keep an alternative for
nothing, never leave one out). Without Hyperscan, or switched off
(``set_enabled(False)``, or ``GRAPHMEM_FAST_GATE=0``), that index is used.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

_hs: Any
try:  # an optional extra: graphmem[fast]
    import hyperscan as _hs
except ImportError:  # pragma: no cover - exercised where the extra is not installed
    _hs = None

__all__ = ["available", "enabled", "satisfied", "set_enabled"]

_ENABLED = [_hs is not None and os.environ.get("GRAPHMEM_FAST_GATE", "1") != "0"]
_LOCK = threading.Lock()
_LOCAL = threading.local()


class _Database:
    """The literals of the first ``clauses`` compiled clauses, and each literal's clause bits by id."""

    __slots__ = ("bits", "clauses", "db")

    def __init__(self, literals: dict[str, int], clauses: int) -> None:
        items = list(literals.items())
        self.clauses = clauses
        self.bits = [bits for _, bits in items]
        self.db: Any = None
        if items:
            db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
            db.compile(
                expressions=[literal.encode("utf-8", "surrogatepass") for literal, _ in items],
                ids=list(range(len(items))),
                elements=len(items),
                flags=_hs.HS_FLAG_SINGLEMATCH,
                literal=True,
            )
            self.db = db


_CURRENT: list[_Database | None] = [None]


def available() -> bool:
    """Whether Hyperscan is importable."""
    return _hs is not None


def enabled() -> bool:
    """Whether clauses are answered by the literal database."""
    return _ENABLED[0]


def set_enabled(flag: bool) -> bool:
    """Switch the literal database on or off (on only where Hyperscan is available); returns the
    previous setting."""
    previous = _ENABLED[0]
    _ENABLED[0] = bool(flag) and _hs is not None
    return previous


def _database(clauses: int, literals: Callable[[], dict[str, int]]) -> _Database:
    current = _CURRENT[0]
    if current is None or current.clauses != clauses:
        with _LOCK:
            current = _CURRENT[0]
            if current is None or current.clauses != clauses:
                current = _CURRENT[0] = _Database(literals(), clauses)
    return current


def _on_match(literal_id: int, start: int, end: int, flags: int, found: list[int]) -> None:
    found.append(literal_id)


def satisfied(text: str, clauses: int, literals: Callable[[], dict[str, int]]) -> int | None:
    """The bits of the clauses (of the first ``clauses`` compiled) that ``text`` satisfies, or
    ``None`` if the literal database is off. ``literals()`` gives every literal of those clauses
    with its clauses' bits (called under a lock, only when the database is compiled)."""
    if not _ENABLED[0]:
        return None
    database = _database(clauses, literals)
    if database.db is None:
        return 0
    local = _LOCAL.__dict__
    scratch = local.get("scratch")
    if scratch is None or local.get("database") is not database:
        # Each thread scans with its own scratch space, made for the database it scans.
        scratch = local["scratch"] = _hs.Scratch(database.db)
        local["database"] = database
    found: list[int] = []
    database.db.scan(
        text.encode("utf-8", "surrogatepass"), match_event_handler=_on_match, context=found, scratch=scratch
    )
    bits, sat = database.bits, 0
    for literal_id in found:
        sat |= bits[literal_id]
    return sat
