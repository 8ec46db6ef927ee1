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

import hashlib
import logging
import os
import platform
import re
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

_hs: Any
try:  # an optional extra: graphmem[fast]
    import hyperscan as _hs
except ImportError:  # pragma: no cover - exercised where the extra is not installed
    _hs = None

__all__ = [
    "available",
    "cache_dir",
    "enabled",
    "satisfied",
    "screen",
    "screened",
    "set_enabled",
    "wait_for_screen",
]

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


# --- Screening: which regular expressions may match an ASCII text, in one scan -------------------
#
# Alternatives of the gate's alternations are registered (``screen``) and compiled into one database
# in Hyperscan's prefilter mode, where a construct Hyperscan lacks (lookaround, back-reference) is
# widened, never narrowed: an expression it does not report cannot match. Only texts on which
# Python's ``re`` and Hyperscan's byte-wise, ASCII semantics agree are screened: ASCII, without the
# characters ``re`` calls whitespace and Hyperscan may not (\v, \f, \x1c-\x1f). A non-ASCII
# character in a pattern becomes its UTF-8 bytes (grouped outside a class, so a quantifier binds all
# of them); no ASCII text contains those bytes, and a class keeps the ASCII members it had.
#
# Compiling takes seconds, so it runs in a background thread at first use (until then nothing is
# screened), and the compiled database is kept in a cache directory for the next process (checked
# by SHA-256 before it is loaded; any failure means compiling again).

_log = logging.getLogger(__name__)
_SCREENED: list[tuple[str | None, int]] = []  # (pattern, re flags), in registration order
_SCREEN_LOCK = threading.Lock()
_UNSAFE_TEXT = re.compile(r"[^\x00-\x0a\x0d-\x1b\x20-\x7f]")
# Never screened: escapes of non-ASCII characters, conditionals, atomic groups, possessive quantifiers,
# verbose patterns.
_UNSUPPORTED = re.compile(r"\\[uUN]|\(\?\(|\(\?>|[*+?}]\+|\(\?[aiLmsu-]*x")
_CASELESS_INLINE = re.compile(r"\(\?[aLmsux-]*i")
_MIN_OMITTED = re.compile(r"\{,(\d+)\}")
_CACHE_MAGIC = b"graphmem-screen-1\n"


def screen(patterns: Sequence[str | None], flags: int = 0) -> int:
    """Register ``patterns`` (compiled with ``re`` ``flags``; ``None``: never screened out) for
    screening; returns the bit of the first in ``screened``'s answer (the others follow it)."""
    with _SCREEN_LOCK:
        offset = len(_SCREENED)
        _SCREENED.extend((p, flags) for p in patterns)
    return offset


def _expression(pattern: str, flags: int) -> tuple[bytes, int] | None:
    """The Hyperscan expression and flags for a Python pattern, or ``None`` when it is not sure to
    find every text ``re`` matches (then it is never screened out)."""
    if flags & ~(re.MULTILINE | re.DOTALL | re.IGNORECASE | re.UNICODE) or _UNSUPPORTED.search(pattern):
        return None
    if (flags & re.IGNORECASE or _CASELESS_INLINE.search(pattern)) and not pattern.isascii():
        return None  # re's Unicode case rules match some ASCII letters to other characters
    out: list[str] = []
    in_class = False
    k = 0
    while k < len(pattern):
        ch = pattern[k]
        if ch == "\\":
            nxt = pattern[k + 1 : k + 2]
            if not nxt.isascii() or nxt.isdigit():
                return None  # an escaped non-ASCII character, a back-reference or an octal escape
            out.append(pattern[k : k + 2])
            k += 2
            continue
        if in_class:
            if ch == "]" and not (out and out[-1] in ("[", "[^")):
                in_class = False
        elif ch == "[":
            in_class = True
            if pattern[k + 1 : k + 2] == "^":
                out.append("[^")
                k += 2
                if pattern[k : k + 1] == "]":
                    out.append("\\]")
                    k += 1
                continue
        if ch == "{" and not in_class and (omitted := _MIN_OMITTED.match(pattern, k)):
            out.append(f"{{0,{omitted.group(1)}}}")  # re reads "{,n}" as "{0,n}"; Hyperscan as text
            k = omitted.end()
            continue
        if ch.isascii():
            out.append(ch)
        else:
            hexed = "".join(f"\\x{b:02x}" for b in ch.encode("utf-8"))
            out.append(hexed if in_class else f"(?:{hexed})")
        k += 1
    hs_flags = _hs.HS_FLAG_PREFILTER | _hs.HS_FLAG_SINGLEMATCH | _hs.HS_FLAG_ALLOWEMPTY
    if flags & re.MULTILINE:
        hs_flags |= _hs.HS_FLAG_MULTILINE
    if flags & re.DOTALL:
        hs_flags |= _hs.HS_FLAG_DOTALL
    if flags & re.IGNORECASE:
        hs_flags |= _hs.HS_FLAG_CASELESS
    return "".join(out).encode("ascii"), hs_flags


class _Screen:
    """The compiled database of the first ``count`` registered patterns; ``always``: the bits of
    those that are never screened out."""

    __slots__ = ("always", "count", "db", "ids")

    def __init__(self, count: int, db: Any, ids: list[int], always: int) -> None:
        self.count, self.db, self.ids, self.always = count, db, ids, always


_SCREEN: list[_Screen | None] = [None]
_BUILDING: list[threading.Thread | None] = [None]


def cache_dir() -> Path | None:
    """Where compiled databases are kept: ``GRAPHMEM_CACHE_DIR``, else the user's cache directory
    (with ``platformdirs``), else nowhere."""
    configured = os.environ.get("GRAPHMEM_CACHE_DIR")
    if configured:
        return Path(configured)
    try:
        import platformdirs
    except ImportError:  # pragma: no cover - platformdirs comes with graphmem[fast]
        return None
    return Path(platformdirs.user_cache_dir("graphmem", appauthor=False))


def _build(patterns: list[tuple[str | None, int]], directory: Path | None) -> _Screen:
    expressions, hs_flags, ids, always = [], [], [], 0
    for k, (pattern, flags) in enumerate(patterns):
        translated = None if pattern is None else _expression(pattern, flags)
        if translated is None:
            always |= 1 << k
            continue
        expressions.append(translated[0])
        hs_flags.append(translated[1])
        ids.append(k)
    key = hashlib.sha256(
        repr((_hs.__version__, platform.machine(), expressions, hs_flags)).encode("utf-8")
    ).hexdigest()[:32]
    path = directory / f"screen-{key}.hsdb" if directory is not None else None
    db = _load(path) if path is not None else None
    if db is None and expressions:
        db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
        db.compile(
            expressions=expressions,
            ids=list(range(len(expressions))),
            elements=len(expressions),
            flags=hs_flags,
        )
        if path is not None:
            _save(path, _hs.dumpb(db))
    return _Screen(len(patterns), db, ids, always)


def _private(path: Path) -> bool:
    """Whether only this user can have written ``path`` and its directory (as ssh asks of its keys):
    a database that screens out what it should not would let attacks through unscanned."""
    if not hasattr(os, "getuid"):  # pragma: no cover - Windows: the user's profile directory
        return True
    for item in (path, path.parent):
        info = item.stat()
        if info.st_uid != os.getuid() or info.st_mode & 0o022:
            return False
    return True


def _load(path: Path) -> Any:
    try:
        if not path.is_file() or not _private(path):
            return None
        blob = path.read_bytes()
        if not blob.startswith(_CACHE_MAGIC):
            return None
        digest, payload = blob[len(_CACHE_MAGIC) : len(_CACHE_MAGIC) + 32], blob[len(_CACHE_MAGIC) + 32 :]
        if hashlib.sha256(payload).digest() != digest:
            return None
        return _hs.loadb(payload, _hs.HS_MODE_BLOCK)
    except (OSError, _hs.error):
        return None


def _save(path: Path, payload: bytes) -> None:
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".screen-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(_CACHE_MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        # One database is kept: those of other pattern sets (earlier versions) are removed, and so
        # are files a writer killed before its rename left (a writer still running then only
        # fails to cache, and the next process compiles again).
        for old in (*path.parent.glob("screen-*.hsdb"), *path.parent.glob(".screen-*")):
            if old != path:
                old.unlink(missing_ok=True)
    except OSError:
        pass  # no cache: the next process compiles again


def _start_build() -> threading.Thread | None:
    """Start compiling every registered pattern unless that is under way; the thread doing it."""
    with _SCREEN_LOCK:
        current = _SCREEN[0]
        if current is not None and current.count == len(_SCREENED):
            return None
        running = _BUILDING[0]
        if running is not None and running.is_alive():
            return running
        patterns = list(_SCREENED)

        def run() -> None:
            try:
                screen = _build(patterns, cache_dir())
            except Exception:  # a pattern Hyperscan rejects: nothing is screened out, and not retried
                _log.warning("the gate's screen could not be compiled; regexes run unscreened", exc_info=True)
                screen = _Screen(len(patterns), None, [], -1)
            with _SCREEN_LOCK:
                previous = _SCREEN[0]
                if previous is None or previous.count < screen.count:
                    _SCREEN[0] = screen

        thread = _BUILDING[0] = threading.Thread(target=run, name="graphmem-screen", daemon=True)
        thread.start()
        return thread


def wait_for_screen(timeout: float | None = None) -> bool:
    """Compile the screen now if it is not (or not for every registered pattern), and wait;
    whether it is ready."""
    if not _ENABLED[0]:
        return False
    thread = _start_build()
    if thread is not None:
        thread.join(timeout)
    current = _SCREEN[0]
    return current is not None and current.count == len(_SCREENED)


def screened(text: str) -> int | None:
    """The bits of the registered patterns that may match ``text`` (every bit at and above the
    number compiled is set), or ``None`` when ``text`` cannot be screened or the screen is not ready."""
    if not _ENABLED[0]:
        return None
    current = _SCREEN[0]
    if current is None or current.count != len(_SCREENED):
        _start_build()
    if current is None or not text.isascii() or _UNSAFE_TEXT.search(text):
        return None
    found = current.always | (-1 << current.count)
    db, ids = current.db, current.ids
    if db is None:
        return found
    local = _LOCAL.__dict__
    scratch = local.get("screen_scratch")
    if scratch is None or local.get("screen_db") is not db:
        # Each thread scans with its own scratch space, made for the database it scans.
        scratch = local["screen_scratch"] = _hs.Scratch(db)
        local["screen_db"] = db
    hits: list[int] = []
    db.scan(text.encode("ascii"), match_event_handler=_on_match, context=hits, scratch=scratch)
    for expression in hits:
        found |= 1 << ids[expression]
    return found
