"""Necessary literals of a regular expression: a cheap test that a pattern cannot match a text.

Each poisoning rule is a long alternation whose branches begin with a big
word alternation, so Python's ``re`` tries every branch at every position of
a text. Most branches need a word that most texts lack ("instructions",
"jailbreak", "忽略"). ``requirements`` reads a pattern's parse tree and returns
what every match must contain: a list of clauses, each a set of literal
strings of which at least one is a substring of the match. A branch whose
clauses a text does not satisfy cannot match anywhere in it, so leaving it out
of the alternation changes no match — the same matches at the same places, in
the same order. ``Prefiltered`` applies that per branch and caches the
narrowed patterns.

``requirements`` analyses case-sensitive patterns only; a part under ``(?i:…)``
yields no requirement, which is always sound. ``Prefiltered`` narrows a
case-insensitive alternation on ASCII texts only, where case is plain: its
literals are lowered and looked up in the lowered text (a literal with a
character no ASCII character matches cannot occur there at all).
"""

from __future__ import annotations

import codecs
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from re import _constants as sre_c  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any, Protocol

from graphmem.policy import engine as _engine

__all__ = [
    "Alternatives",
    "Literals",
    "Matcher",
    "Prefiltered",
    "PrefilteredGroup",
    "group_end",
    "leading_literals",
    "literal_first",
    "requirements",
    "top_level",
]

Clause = frozenset[str]
_EXACT_LIMIT = 64
_CLAUSE_LIMIT = 4


@dataclass(frozen=True, slots=True)
class _Info:
    """``exact``: the node matches exactly one of these strings (``None``: unknown);
    ``clauses``: each match contains a string of every clause."""

    exact: frozenset[str] | None
    clauses: tuple[Clause, ...] = ()


_NOTHING = _Info(None)
_EMPTY = _Info(frozenset({""}))


def _score(clause: Clause) -> tuple[int, int]:
    # A clause is as selective as its shortest literal; fewer literals are cheaper to test.
    return (min(len(s) for s in clause), -len(clause))


def _useful(clause: Iterable[str]) -> Clause | None:
    c = frozenset(clause)
    return c if c and "" not in c else None


def _best(info: _Info) -> Clause | None:
    candidates = list(info.clauses)
    if info.exact is not None and (exact := _useful(info.exact)) is not None:
        candidates.append(exact)
    return max(candidates, key=_score) if candidates else None


def _keep(clauses: Iterable[Clause]) -> tuple[Clause, ...]:
    unique = sorted(set(clauses), key=_score, reverse=True)
    return tuple(unique[:_CLAUSE_LIMIT])


def _charset(items: Sequence[tuple[Any, Any]]) -> _Info:
    chars: set[str] = set()
    for op, av in items:
        if op is sre_c.LITERAL:
            chars.add(chr(av))
        elif op is sre_c.RANGE and av[1] - av[0] < 8:
            chars.update(chr(c) for c in range(av[0], av[1] + 1))
        else:
            return _NOTHING
    return _Info(frozenset(chars)) if len(chars) <= 8 else _NOTHING


def _sequence(nodes: Iterable[tuple[Any, Any]]) -> _Info:
    clauses: list[Clause] = []
    run: frozenset[str] | None = frozenset({""})
    all_exact = True
    for op, av in nodes:
        info = _node(op, av)
        if info.exact is not None and run is not None and len(run) * len(info.exact) <= _EXACT_LIMIT:
            run = frozenset(a + b for a in run for b in info.exact)
            continue
        if run is not None and (c := _useful(run)) is not None:
            clauses.append(c)
        clauses.extend(info.clauses)
        if info.exact is None:
            all_exact = False
            run = frozenset({""})
        else:
            run = info.exact
    if all_exact and run is not None:
        return _Info(run, _keep(clauses))
    if run is not None and (c := _useful(run)) is not None:
        clauses.append(c)
    return _Info(None, _keep(clauses))


def _branch(alternatives: Sequence[Any]) -> _Info:
    infos = [_sequence(alt) for alt in alternatives]
    if all(i.exact is not None for i in infos):
        union = frozenset().union(*(i.exact for i in infos if i.exact is not None))
        if len(union) <= _EXACT_LIMIT:
            return _Info(union)
    best = [_best(i) for i in infos]
    if any(b is None for b in best):
        return _NOTHING
    return _Info(None, (frozenset().union(*(b for b in best if b is not None)),))


def _node(op: Any, av: Any) -> _Info:
    if op is sre_c.LITERAL:
        return _Info(frozenset({chr(av)}))
    if op is sre_c.AT or op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
        return _EMPTY  # zero width: the strings on either side are adjacent in the match
    if op is sre_c.IN:
        return _charset(av)
    if op is sre_c.BRANCH:
        return _branch(av[1])
    if op is sre_c.SUBPATTERN:
        _, add_flags, _, sub = av
        if add_flags & sre_c.SRE_FLAG_IGNORECASE:
            return _NOTHING
        return _sequence(sub)
    if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT):
        lo, hi, sub = av
        inner = _sequence(sub)
        if lo == 0:
            if hi == 1 and inner.exact is not None:
                return _Info(inner.exact | {""})
            return _NOTHING
        if lo == hi == 1:
            return inner
        best = _best(inner)
        return _Info(None, _keep([*inner.clauses, *([best] if best else [])]))
    if op is sre_c.ATOMIC_GROUP:
        return _sequence(av)
    return _NOTHING


def requirements(pattern: str, flags: int = 0) -> tuple[Clause, ...]:
    """Clauses every match of ``pattern`` satisfies: a string of each clause is a substring of it.

    An empty tuple means no requirement was found (the pattern may match anything).
    """
    parsed = sre_parse.parse(pattern, flags)
    if parsed.state.flags & sre_c.SRE_FLAG_IGNORECASE:
        return ()
    info = _sequence(parsed.data)
    best = _best(info)
    clauses = list(info.clauses)
    if best is not None:
        clauses.append(best)
    return _keep(clauses)


def _ascii_reachable(literal: str) -> bool:
    """Whether some ASCII string matches ``literal`` case-insensitively (the long s matches "s")."""
    return all(any(re.fullmatch(re.escape(ch), chr(a), re.IGNORECASE) for a in range(128)) for ch in literal)


def _ascii_requirements(pattern: str, flags: int) -> tuple[Clause, ...]:
    """Clauses every case-insensitive match in an ASCII text satisfies in the lowered text."""
    clauses: list[Clause] = []
    for clause in requirements(pattern, flags & ~re.IGNORECASE):
        kept = set()
        for literal in clause:
            if literal.isascii():
                kept.add(literal.lower())
            elif _ascii_reachable(literal):
                break  # cannot be looked up in the lowered text: drop the clause
        else:
            if not kept:
                return (frozenset(),)  # no ASCII text can satisfy this clause
            clauses.append(frozenset(kept))
    return tuple(clauses)


def _signature(literal: str) -> frozenset[str]:
    """What a text containing ``literal`` contains too: its three-character substrings (its
    characters, if shorter)."""
    if len(literal) < 3:
        return frozenset(literal)
    return frozenset(literal[k : k + 3] for k in range(len(literal) - 2))


class _Need:
    """One clause, compiled: its literals' signatures; ``bit`` stands for it in a set of clauses."""

    __slots__ = ("bit", "literals", "serial", "signatures")

    def __init__(self, clause: Clause) -> None:
        self.literals = tuple(sorted(clause))
        self.signatures = tuple(_signature(s) for s in self.literals)
        self.serial = len(_NEEDS)  # compiled clauses are numbered in order
        self.bit = 1 << self.serial


_NEEDS: dict[Clause, _Need] = {}
_NEED_LIST: list[_Need] = []
_LONGEST = [1]  # the length of the longest literal compiled
_LITERAL_BITS: dict[str, int] = {}  # every literal of a compiled clause: the bits of its clauses


_COMPILING = threading.Lock()
"""Held while a clause is compiled: its serial, bit and literals are registered together, and a
clause is counted (``_NEED_LIST``) only once its literals are, so the literal database compiled
for a count of clauses holds every literal of them, whichever thread compiles clauses meanwhile."""


def _literal_bits() -> dict[str, int]:
    with _COMPILING:
        return dict(_LITERAL_BITS)


# Every literal of a compiled clause, by one element of its signature (the one of the least common
# letters, so that few literals are tried on a text): (its signature, the bits of its clauses).
_BY_KEY: dict[str, dict[str, tuple[frozenset[str], int]]] = {}
# The same for each literal under rot13: a text's rot13 has a literal where the text has its rot13.
_BY_KEY_ROT13: dict[str, dict[str, tuple[frozenset[str], int]]] = {}
_COMMON = " etaoinsrhldcum"  # ordinary text's most frequent characters, most frequent first


def _rarity(gram: str) -> tuple[int, str]:
    return (sum(len(_COMMON) - _COMMON.index(c) if c in _COMMON else 0 for c in gram), gram)


def _key(signature: frozenset[str]) -> str:
    return min(signature, key=_rarity)


def _compiled_needs(clauses: Iterable[Clause]) -> tuple[_Need, ...]:
    # Equal clauses share one _Need, so a text tests each once.
    out = []
    for clause in clauses:
        need = _NEEDS.get(clause)
        if need is None:
            with _COMPILING:
                need = _NEEDS.get(clause) or _register(clause)
        out.append(need)
    return tuple(out)


def _register(clause: Clause) -> _Need:
    """Compile ``clause`` and register it, under ``_COMPILING``: its literals first, then it is
    counted and found (``_NEED_LIST``, ``_NEEDS``), so a clause another thread finds or counts
    has every literal registered."""
    need = _Need(clause)
    _LONGEST[0] = max(_LONGEST[0], *map(len, need.literals))
    for literal, signature in zip(need.literals, need.signatures, strict=True):
        _LITERAL_BITS[literal] = _LITERAL_BITS.get(literal, 0) | need.bit
        by_literal = _BY_KEY.setdefault(_key(signature), {})
        _, bits = by_literal.get(literal, (signature, 0))
        by_literal[literal] = (signature, bits | need.bit)
        turned = codecs.encode(literal, "rot13")
        turned_signature = _signature(turned)
        by_turned = _BY_KEY_ROT13.setdefault(_key(turned_signature), {})
        _, bits = by_turned.get(turned, (turned_signature, 0))
        by_turned[turned] = (turned_signature, bits | need.bit)
    _NEED_LIST.append(need)
    _NEEDS[clause] = need
    return need


def _text_signature(text: str) -> frozenset[str]:
    return frozenset(map("".join, zip(text, text[1:], text[2:], strict=False))).union(text)


def _common_prefix(a: str, b: str) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # a[:lo] == b[:lo]; find the longest such lo
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


_ANCHOR = 8  # characters two texts must share to be taken as back in step after an edit
_REACH = 48  # how far past an edit the shared characters are looked for
_MAX_EDITS = 32


def _from_base(base: Literals, text: str) -> int | None:
    """The clauses ``text`` may satisfy, from a ``base`` text it differs from in a few small edits:
    the base's and those of the windows around the edits; ``None`` if the edits are not few and
    small. A literal in ``text`` lies in a piece it shares with the base (so the base has it) or
    overlaps or touches an edit, within a literal's length of it."""
    spans = _edits(base.text, text)
    if spans is None:
        return None
    margin = _LONGEST[0] - 1
    windows: list[list[int]] = []
    for start, end in spans:
        lo, hi = max(0, start - margin), end + margin
        if windows and lo <= windows[-1][1]:
            windows[-1][1] = max(windows[-1][1], hi)
        else:
            windows.append([lo, hi])
    if 4 * sum(hi - lo for lo, hi in windows) >= len(text):
        return None
    # Joined by a character no literal has, so no literal is made across a join.
    joined = "\x00".join(text[lo:hi] for lo, hi in windows)
    return base._indexed() | Literals(joined)._indexed()


def _edits(a: str, b: str) -> list[tuple[int, int]] | None:
    """Spans of ``b`` (possibly empty: a deletion) outside of which ``b`` is made of pieces of ``a``,
    in order, each piece checked equal; ``None`` if no such few, small edits are found.

    Every substring of ``b`` that lies within one piece is a substring of ``a``; every other one
    overlaps or touches a span.
    """
    spans: list[tuple[int, int]] = []
    i = j = 0
    while len(spans) <= _MAX_EDITS:
        step = _common_prefix(a[i:], b[j:])
        i, j = i + step, j + step
        if j == len(b) or i == len(a):
            if (i, j) != (len(a), len(b)):
                spans.append((j, len(b)))
            return spans
        for skip in range(_REACH):  # b[j : j + skip] replaces a[i : k]
            anchor = b[j + skip : j + skip + _ANCHOR]
            if len(anchor) < _ANCHOR:
                return None
            k = a.find(anchor, i, i + _REACH + _ANCHOR)
            if k >= 0:
                spans.append((j, j + skip))
                i, j = k, j + skip
                break
        else:
            return None
    return None


class Literals:
    """Which clauses one text may satisfy, each clause answered once.

    With ``index`` (for many patterns, such as the poisoning rules) the text's characters and
    three-character substrings are collected once, and every compiled clause is answered in one
    pass: a literal is searched for only if all its three-character substrings (a short one: all
    its characters) are in the text. A text that mostly equals another one (``base``) is indexed
    only where it differs, and may then be said to satisfy a clause only the base satisfies (an
    alternative kept for nothing), never not to satisfy one it does. Without ``index`` (a few
    patterns) each literal is searched for directly.
    """

    __slots__ = (
        "_asked",
        "_base",
        "_known",
        "_lowered",
        "_rot13_of",
        "_sat",
        "_screened",
        "_seen",
        "_signature",
        "text",
    )

    def __init__(
        self,
        text: str,
        *,
        index: bool = True,
        base: Literals | None = None,
        rot13_of: Literals | None = None,
    ) -> None:
        self.text = text
        # A text this one may be the rot13 of (checked): its literals are answered from that one's index.
        self._rot13_of = rot13_of if index and rot13_of is not None and rot13_of._known >= 0 else None
        self._known: int = 0 if index else -1  # -1: no index, clauses are looked up one by one
        # A text this one mostly equals (another view of the same input): only the difference is indexed.
        self._base = base if index and base is not None and base._known >= 0 else None
        self._signature: frozenset[str] | None = None
        self._sat = 0  # the bits of the clauses the text may satisfy, of the first _known compiled
        self._seen: dict[_Need, bool] = {}
        self._lowered: Literals | None = None
        self._screened: int | None = None
        self._asked = False  # whether the screen was asked about this text

    def screened(self) -> int | None:
        """The bits of the screened alternatives that may match the text (``graphmem.policy.engine``),
        or ``None`` if it is not screened."""
        if not self._asked:
            self._screened, self._asked = _engine.screened(self.text), True
        return self._screened

    def lowered(self) -> Literals | None:
        """The same for the lowered text, if the text is ASCII (else ``None``: case is not plain)."""
        if self._lowered is None and self.text.isascii():
            self._lowered = Literals(self.text.lower(), index=self._known >= 0)
        return self._lowered

    def _indexed(self) -> int:
        """The bits of every compiled clause the text may satisfy (clauses compiled since included)."""
        total = len(_NEED_LIST)
        if self._known == total:
            return self._sat
        # A view that differs from its base in a few places: the base's clauses and those of the
        # windows around the edits (a short scan), before any scan of the whole text.
        if self._known == 0 and (base := self._base) is not None:
            self._base = None
            sat = _from_base(base, self.text)
            if sat is not None:
                self._sat, self._known = sat, total
                return sat
        # One scan for every literal (graphmem.policy.engine), if installed: exact.
        exact = _engine.satisfied(self.text, total, _literal_bits)
        if exact is not None:
            self._sat, self._known = exact, total
            return exact
        if self._known == 0 and (turned := self._rot13_of) is not None:
            self._rot13_of = None
            turned._indexed()
            signature = turned._signature
            if signature is not None and codecs.encode(turned.text, "rot13") == self.text:
                sat, contains = 0, turned.text.__contains__
                for key in signature.intersection(_BY_KEY_ROT13):
                    for literal, (literal_signature, bits) in _BY_KEY_ROT13[key].items():
                        if bits & ~sat and literal_signature <= signature and contains(literal):
                            sat |= bits
                self._sat, self._known = sat, total
                return sat
        signature = self._signature
        if signature is None:
            signature = self._signature = _text_signature(self.text)
        sat = self._sat
        if self._known == 0:
            contains = self.text.__contains__
            for key in signature.intersection(_BY_KEY):
                for literal, (literal_signature, bits) in _BY_KEY[key].items():
                    # The signature rules most literals out; the few left are looked up.
                    if bits & ~sat and literal_signature <= signature and contains(literal):
                        sat |= bits
        else:
            contains = self.text.__contains__
            for need in _NEED_LIST[self._known : total]:
                if any(map(contains, need.literals)):
                    sat |= need.bit
        self._sat, self._known = sat, total
        return sat

    def satisfied(self, needs: Iterable[_Need]) -> int:
        """The bits of those of ``needs`` the text may satisfy."""
        if self._known >= 0:
            return self._indexed()
        contains = self.text.__contains__
        seen = self._seen
        sat = 0
        for need in needs:
            found = seen.get(need)
            if found is None:
                found = seen[need] = any(map(contains, need.literals))
            if found:
                sat |= need.bit
        return sat

    def may_satisfy(self, needs: Iterable[_Need]) -> bool:
        """False if some clause has no literal in the text (so nothing needing it can match)."""
        needs = tuple(needs)
        mask = sum(n.bit for n in set(needs))
        return self.satisfied(needs) & mask == mask


def _class_end(pattern: str, start: int) -> int:
    """The index of the ``]`` closing the class opened at ``pattern[start]`` (the pattern's length
    if none does). A ``]`` right after ``[`` or ``[^`` is a literal, as in ``re``."""
    k = start + 1
    if pattern[k : k + 1] == "^":
        k += 1
    if pattern[k : k + 1] == "]":
        k += 1
    while k < len(pattern) and pattern[k] != "]":
        k += 2 if pattern[k] == "\\" else 1
    return k


def _structure(pattern: str, start: int = 0) -> Iterator[tuple[int, str, int]]:
    """The ``(``, ``)`` and ``|`` of ``pattern`` from ``start`` that are outside escapes and
    character classes, each with its index and the group depth after it. A class's ``]`` right
    after ``[`` or ``[^`` is a literal, as in ``re``."""
    depth, k, size = 0, start, len(pattern)
    while k < size:
        ch = pattern[k]
        if ch == "\\":
            k += 2
            continue
        if ch == "[":
            k = _class_end(pattern, k)
        elif ch == "(":
            depth += 1
            yield k, ch, depth
        elif ch == ")":
            depth -= 1
            yield k, ch, depth
        elif ch == "|":
            yield k, ch, depth
        k += 1


def top_level(pattern: str) -> list[str]:
    """``pattern`` cut at its top-level ``|`` (outside groups, classes and escapes)."""
    parts, begin = [], 0
    for k, ch, depth in _structure(pattern):
        if ch == "|" and depth == 0:
            parts.append(pattern[begin:k])
            begin = k + 1
    parts.append(pattern[begin:])
    return parts


def group_end(piece: str, start: int) -> int:
    """The index just past the group opened at ``piece[start]`` (-1 if it is not closed)."""
    for k, ch, depth in _structure(piece, start):
        if ch == ")" and depth == 0:
            return k + 1
    return -1


_LITERAL_RUN = re.compile(r"[^\\.^$*+?{}\[\]|()]+")
_QUANTIFIERS = ("?", "*", "+", "{")


def _led(item: str) -> tuple[str, frozenset[str]] | None:
    """``item`` after a ``\\b``, written so that each way a match can begin starts with literal
    characters and a lookbehind for the boundary (``\\bword…`` as ``word(?<=\\bword)…``), and those
    literals; ``None`` if it cannot be."""
    if item.startswith("(?:"):
        end = group_end(item, 0)
        if end < 0:
            return None
        inner, after = top_level(item[3 : end - 1]), item[end:]
        if after[:1] in _QUANTIFIERS:
            if not after.startswith("?") or after[1:2] in ("?", "+") or not after[1:]:
                return None
            # (?:a|b)?rest tries a, then b, then neither: (?:arest|brest|rest), in that order.
            options = [*(f"{i}{after[1:]}" for i in inner), after[1:]]
            after = ""
        else:
            options = inner
        led = [_led(o) for o in options]
        if any(o is None for o in led):
            return None
        parts = [o for o in led if o is not None]
        text = "(?:" + "|".join(p for p, _ in parts) + ")" + after
        return text, frozenset().union(*(leads for _, leads in parts))
    m = _LITERAL_RUN.match(item)
    if m is None:
        return None
    literal = m.group(0)
    if item[m.end() : m.end() + 1] in _QUANTIFIERS:
        literal = literal[:-1]  # a quantifier binds the last character
    if not literal:
        return None
    return f"{literal}(?<=\\b{literal}){item[len(literal) :]}", frozenset({literal})


def literal_first(piece: str) -> str:
    """``piece``, the same regex (the same matches, tried in the same order), written so that it
    begins with literal characters where it began with ``\\b`` and words: the regex engine then
    skips to where those characters occur instead of trying every position."""
    led = _led(piece[2:]) if piece.startswith(r"\b") else None
    return piece if led is None else led[0]


def leading_literals(piece: str) -> frozenset[str] | None:
    """The literals every match of ``piece`` begins with, right after a word boundary, if it begins
    with ``\\b`` and words (else ``None``)."""
    led = _led(piece[2:]) if piece.startswith(r"\b") else None
    return None if led is None else led[1]


_MAX_NARROWED = 512
# How many times a narrowed alternation of several alternatives is tried one alternative at a time
# before it is compiled: compiling an alternation costs as much as hundreds of searches of a
# sentence, and most of those a fresh text narrows to are never used again.
_COMPILE_AFTER = 40


class Matcher(Protocol):
    """What a narrowed alternation offers: a compiled pattern, or ``Alternatives``."""

    @property
    def pattern(self) -> str: ...

    def match(self, string: str, pos: int = ...) -> re.Match[str] | None: ...

    def search(self, string: str, pos: int = ...) -> re.Match[str] | None: ...

    def finditer(self, string: str) -> Iterator[re.Match[str]]: ...


class Alternatives:
    """An alternation of a ``Prefiltered``'s alternatives, each compiled on its own (once), tried
    one at a time until it has been used ``_COMPILE_AFTER`` times, then compiled whole.

    ``match`` and ``search`` find the alternation's match (the same span: the leftmost position
    where an alternative matches, and there the first alternative in order that does); its
    groups are numbered as in that alternative alone. ``finditer`` compiles the alternation
    unless no alternative matches anywhere (then it finds nothing, as the alternation would).
    """

    __slots__ = ("_calls", "_compiled", "_flags", "_singles", "pattern")

    def __init__(self, singles: tuple[re.Pattern[str], ...], flags: int) -> None:
        self._singles = singles
        self._flags = flags
        self._calls = 0
        self._compiled: re.Pattern[str] | None = None
        self.pattern = "|".join(p.pattern for p in singles)

    def _whole(self) -> re.Pattern[str] | None:
        """The compiled alternation once it is worth compiling, else ``None``."""
        compiled = self._compiled
        if compiled is None:
            self._calls += 1
            if self._calls <= _COMPILE_AFTER:
                return None
            compiled = self._compiled = re.compile(self.pattern, self._flags)
        return compiled

    def _first_at(self, string: str, pos: int) -> re.Match[str] | None:
        for single in self._singles:
            found = single.match(string, pos)
            if found is not None:
                return found
        return None

    def match(self, string: str, pos: int = 0) -> re.Match[str] | None:
        whole = self._whole()
        return self._first_at(string, pos) if whole is None else whole.match(string, pos)

    def search(self, string: str, pos: int = 0) -> re.Match[str] | None:
        whole = self._whole()
        if whole is not None:
            return whole.search(string, pos)
        found = [single.search(string, pos) for single in self._singles]
        starts = [m.start() for m in found if m is not None]
        return self._first_at(string, min(starts)) if starts else None

    def finditer(self, string: str) -> Iterator[re.Match[str]]:
        whole = self._whole()
        if whole is None:
            if all(single.search(string) is None for single in self._singles):
                return iter(())
            whole = self._compiled = re.compile(self.pattern, self._flags)
        return whole.finditer(string)


def _unanchored(pattern: str) -> str:
    """``pattern`` without its anchors (``^``, ``$``, ``\\A``, ``\\Z`` outside classes): it matches
    wherever ``pattern`` does, on a part of a text or on the whole text around it."""
    out: list[str] = []
    k, size = 0, len(pattern)
    while k < size:
        ch = pattern[k]
        if ch == "\\":
            if pattern[k + 1 : k + 2] not in ("A", "Z"):
                out.append(pattern[k : k + 2])
            k += 2
        elif ch == "[":
            end = _class_end(pattern, k)
            out.append(pattern[k : end + 1])
            k = end + 1
        else:
            if ch not in "^$":
                out.append(ch)
            k += 1
    return "".join(out)


@dataclass(frozen=True)
class Prefiltered:
    """An alternation that runs, on each text, only the alternatives that text can match."""

    alternatives: tuple[str, ...]
    flags: int = 0
    # "text": also screened (graphmem.policy.engine) on the texts it runs on; "parts": it runs on
    # parts of a text (cut where no word character touches the cut) and is screened on the whole
    # text, each alternative without its anchors (which then matches wherever it matched a part).
    screen: str = "no"
    _offset: int = field(init=False, repr=False)
    _all: int = field(init=False, repr=False)
    _by_screened: dict[tuple[int, int], Matcher | None] = field(init=False, repr=False, default_factory=dict)
    _needs: tuple[tuple[_Need, ...], ...] = field(init=False, repr=False)
    _ignorecase: bool = field(init=False, repr=False)
    _masks: tuple[int, ...] = field(init=False, repr=False)
    _union: tuple[_Need, ...] = field(init=False, repr=False)
    _union_mask: int = field(init=False, repr=False)
    _compiled: dict[tuple[int, ...], Matcher | None] = field(init=False, repr=False, default_factory=dict)
    _singles: dict[int, re.Pattern[str]] = field(init=False, repr=False, default_factory=dict)
    _by_satisfied: dict[int, Matcher | None] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_ignorecase", bool(self.flags & re.IGNORECASE))
        if self._ignorecase:
            needs = tuple(_compiled_needs(_ascii_requirements(a, self.flags)) for a in self.alternatives)
        else:
            needs = tuple(_compiled_needs(requirements(a, self.flags)) for a in self.alternatives)
        object.__setattr__(self, "_needs", needs)
        # An alternative is kept when the text may satisfy every clause of it (all its bits).
        object.__setattr__(self, "_masks", tuple(sum(n.bit for n in set(ns)) for ns in needs))
        object.__setattr__(self, "_union", tuple({n: None for ns in needs for n in ns}))
        object.__setattr__(self, "_union_mask", sum(n.bit for n in self._union))
        offset = -1
        if self._ignorecase:
            pass  # never screened: its literals are looked up in the lowered text
        elif self.screen == "text":
            offset = _engine.screen(self.alternatives, self.flags)
        elif self.screen == "parts":
            offset = _engine.screen([_unanchored(a) for a in self.alternatives], self.flags)
        object.__setattr__(self, "_offset", offset)
        object.__setattr__(self, "_all", (1 << len(self.alternatives)) - 1)

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        """The whole alternation, as the reference path compiles it."""
        return re.compile("|".join(f"(?:{a})" for a in self.alternatives), self.flags)

    def narrowed(self, literals: Literals) -> Matcher | None:
        """The alternation of the alternatives ``literals.text`` may match, or ``None`` if there are none."""
        if self._ignorecase:
            lowered = literals.lowered()
            if lowered is None:
                return self.pattern
            literals = lowered
        possible = literals.screened() if self._offset >= 0 else None
        if possible is not None:
            key = literals.satisfied(self._union) & self._union_mask
            return self._narrowed_screened(key, possible >> self._offset & self._all)
        # Texts that satisfy the same of this alternation's clauses get the same alternatives.
        key = literals.satisfied(self._union) & self._union_mask
        try:
            return self._by_satisfied[key]
        except KeyError:
            pass
        pattern = self._compile(tuple(i for i, mask in enumerate(self._masks) if key & mask == mask))
        if len(self._by_satisfied) < _MAX_NARROWED:
            self._by_satisfied[key] = pattern
        return pattern

    def _narrowed_screened(self, key: int, possible: int) -> Matcher | None:
        """The alternatives whose clauses the text satisfies and that the screen did not rule out."""
        try:
            return self._by_screened[key, possible]
        except KeyError:
            pass
        active = tuple(i for i, mask in enumerate(self._masks) if key & mask == mask and possible >> i & 1)
        pattern = self._compile(active)
        if len(self._by_screened) < _MAX_NARROWED:
            self._by_screened[key, possible] = pattern
        return pattern

    def _compile(self, active: tuple[int, ...]) -> Matcher | None:
        if active in self._compiled:
            return self._compiled[active]
        pattern: Matcher | None = None
        if len(active) == 1:
            pattern = self._single(active[0])
        elif active:
            pattern = Alternatives(tuple(map(self._single, active)), self.flags)
        if len(self._compiled) < _MAX_NARROWED:
            self._compiled[active] = pattern
        return pattern

    def _single(self, i: int) -> re.Pattern[str]:
        """Alternative ``i`` compiled alone (as the alternation of it alone)."""
        found = self._singles.get(i)
        if found is None:
            found = self._singles[i] = re.compile(f"(?:{self.alternatives[i]})", self.flags)
        return found

    def finditer(self, text: str, literals: Literals | None = None) -> Iterator[re.Match[str]]:
        """``pattern.finditer(text)``, faster: the same matches in the same order."""
        pattern = self.narrowed(literals or Literals(text))
        return iter(()) if pattern is None else pattern.finditer(text)

    def search(self, text: str, literals: Literals | None = None) -> re.Match[str] | None:
        """``pattern.search(text)``: the same first match (``literals`` may describe a text containing it)."""
        pattern = self.narrowed(literals or Literals(text))
        return None if pattern is None else pattern.search(text)


class PrefilteredGroup:
    """Alternations narrowed together on each text the screen answers, in one step, cached by what the
    screen says of the text and by the literals of the alternatives it did not rule out.

    ``narrowed`` returns ``derive`` of the members' patterns, in order (``None`` for a member with
    nothing left), each as the member's ``narrowed`` gives it. Every member is screened.
    """

    def __init__(
        self,
        members: Sequence[Prefiltered],
        derive: Callable[[tuple[Matcher | None, ...]], Any] = lambda patterns: patterns,
    ) -> None:
        if not members or any(m._offset < 0 for m in members):
            raise ValueError("a group narrows screened alternations only")
        self.members = tuple(members)
        self._derive = derive
        self._low = min(m._offset for m in self.members)
        high = max(m._offset + len(m.alternatives) for m in self.members)
        self._mask = (1 << (high - self._low)) - 1
        # Each alternative's literal clauses, by its bit in the group's part of the screen's answer.
        self._clauses = [0] * (high - self._low)
        for m in self.members:
            for i, mask in enumerate(m._masks):
                self._clauses[m._offset - self._low + i] = mask
        self._cache: dict[tuple[int, int], Any] = {}
        self._lock = threading.Lock()
        self._nothing: Any = None  # ``derive`` of no member left, once made
        self._hopeless: dict[int, bool] = {}  # literal answers, by whether no alternative has its clauses

    def narrowed(self, literals: Literals, *, literals_first: bool = False) -> Any:
        """``literals_first``: look the literals up before asking the screen, and stop if no
        alternative has every clause it needs (cheaper for text that rarely has them, such as a
        rot13 view)."""
        if literals_first and literals._known >= 0 and self._rules_out(literals.satisfied(())):
            if self._nothing is None:
                self._nothing = self._derive((None,) * len(self.members))
            return self._nothing
        possible = literals.screened()
        if possible is None or literals._known < 0:
            return self._derive(tuple(m.narrowed(literals) for m in self.members))
        answer = possible >> self._low & self._mask
        clauses, bits, rest = self._clauses, 0, answer
        while rest:
            low = rest & -rest
            bits |= clauses[low.bit_length() - 1]
            rest ^= low
        # The literals are looked up only if some alternative the screen let through has clauses.
        sat = literals.satisfied(()) & bits if bits else 0
        try:
            return self._cache[answer, sat]
        except KeyError:
            pass
        out = self._derive(
            tuple(m._narrowed_screened(sat, possible >> m._offset & m._all) for m in self.members)
        )
        with self._lock:
            if len(self._cache) >= _MAX_NARROWED:
                del self._cache[next(iter(self._cache))]
            self._cache[answer, sat] = out
        return out

    def _rules_out(self, sat: int) -> bool:
        """Whether no alternative has every clause it needs among ``sat`` (so none can match)."""
        found = self._hopeless.get(sat)
        if found is None:
            found = all(clauses & ~sat for clauses in self._clauses)
            with self._lock:
                if len(self._hopeless) >= _MAX_NARROWED:
                    del self._hopeless[next(iter(self._hopeless))]
                self._hopeless[sat] = found
        return found
