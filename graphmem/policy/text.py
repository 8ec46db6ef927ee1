"""Text views for the detectors: normalised, de-obfuscated, hidden carriers, decoded payloads.

Attackers hide instructions where a person does not look (HTML comments, link
targets, zero-width characters, look-alike letters, base64 …). The detectors
run on *views* of a text; each view says through which channel it was found,
so the gate can treat concealment differently from plain speech.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import html
import json
import re
import sys
import unicodedata
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

__all__ = [
    "QUOTE_MARKS",
    "Channel",
    "View",
    "code_fences",
    "deobfuscate",
    "fold",
    "json_document",
    "quotations",
    "reader_text",
    "reported",
    "strip_quoted",
    "views",
    "visible_text",
    "without_invisible",
    "without_reported_quotations",
]

Channel = Literal["plain", "obfuscated", "hidden", "encoded"]

# Format characters (zero-width space/joiners, bidi controls, BOM, soft hyphen)
# are invisible; Unicode "tag" characters smuggle ASCII invisibly.
_TAG_BASE = 0xE0000
_WS = re.compile(r"[^\S\n]+")
_OTHER_SPACE = re.compile(r"[^\S \n]")
_NL = re.compile(r"\s*\n\s*")
_HTML_COMMENT = re.compile(r"<!--(.*?)(?:-->|$)", re.S)
_HTML_ATTR = re.compile(r"""\b[\w:-]+\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_HIDDEN_ELEMENT = re.compile(
    r"<(\w+)[^>]*style\s*=\s*[\"'][^\"']*(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0"
    r"|opacity\s*:\s*0(?:\.0+)?\b|color\s*:\s*(?:white|#fff(?:fff)?\b|transparent))[^\"']*[\"'][^>]*>(.{0,5000}?)</\1>",
    re.S | re.I,
)
_TAG = re.compile(r"<[^<>]{1,500}>")
_MD_LINK = re.compile(
    r"!?\[([^\[\]]{0,1000})\]\(\s*<?([^()\[\]\s>]{0,2000})>?(?:\s+[\"'(]([^\"')]{0,1000})[\"')])?\s*\)"
)
_MD_REFDEF = re.compile(r"^[^\S\n]*\[[^\]\n]{1,200}\]:\s*(\S+)(?:\s+[\"'(]([^\"')]*)[\"')])?", re.M)
_B64 = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_HEX = re.compile(r"(?:\\x|0x)?(?:[0-9a-fA-F]{2}(?:[\s:,]|\\x)?){8,}")
_HEX_RUN = re.compile(r"[0-9a-fA-Fx\\\s:,]{16,}")
_ESCAPES = re.compile(r"\\u[0-9a-fA-F]{4}|\\x[0-9a-fA-F]{2}|&#x?[0-9a-fA-F]+;|&[a-z]+;")
_SPACED = re.compile(r"(?<!\w)\w(?P<sep>[ .\-_*·/|])\w(?:(?P=sep)\w)+(?!\w)")
# The last four characters of every _SPACED match and the boundary after them; most texts have none.
_SPACED_HINT = re.compile(r"[ .\-_*·/|]\w[ .\-_*·/|]\w(?!\w)")
# Starts at the separator, so the regex engine skips quickly to candidates.
_INWORD = re.compile(r"[\-.·_*](?<=\w[\-.·_*])(?=\w)")
_CODE_FENCE = re.compile(r"```.*?(?:```|$)|~~~.*?(?:~~~|$)", re.S)
# A quotation inside a line of prose (no backticks, no blockquote): the candidates for reported speech.
_INLINE_QUOTE = re.compile(
    r"\"[^\"\n]{2,}\"|“[^”]{2,2000}”|„[^“”]{2,2000}[“”]|«[^»]{2,2000}»|「[^」]{1,2000}」|『[^』]{1,2000}』"
)
# Every quoted passage: inline code, those quotations, blockquote lines.
_QUOTED = re.compile(rf"`[^`\n]+`|{_INLINE_QUOTE.pattern}|^[^\S\n]*>.*$", re.M)
# A key of data (YAML, front matter, settings): a name with "_", "." or "-" in it, then a colon.
_DATA_KEY = re.compile(r"[\w.-]*[_.-][\w.-]*:")
# Scripts written without spaces between words: a letter there carries about a word's worth of text.
_UNSPACED = re.compile(
    r"[\u0e00-\u0e7f\u0e80-\u0eff\u1000-\u109f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]"
)
# A reported quotation needs this much of the author's own prose on its line, and the text this much
# around its quotations (weighted letters: about two and about twelve words).
_LINE_PROSE = 10
_TEXT_PROSE = 60
_NEAR = 600
_AROUND = 200  # how much of its line on either side shows whether a quotation sits in prose

_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s"})
_LEET_L = str.maketrans({"1": "l", "|": "l", "!": "i", "8": "b", "9": "g"})
_LEET_ALL = {**_LEET, **_LEET_L}
_LEET_RUN = re.compile(r"[0-9@$|!]+")
_TOKEN_CHAR = re.compile(r"[\w@$|!]")
_TOKEN_FROM = re.compile(r"[\w@$|!]*")
_LEET_THEN_LETTER = re.compile(r"[0-9@$|!][\w@$|!]*?[a-z]")
_LOWER = re.compile(r"[a-z]")

# Latin look-alikes from Cyrillic and Greek; applied only inside mixed-script
# words so genuine Russian or Greek text is left alone.
_CONFUSABLES = str.maketrans(
    "аеорсухкмтвніјѕԁɡӏАЕОРСУХКМТВНІЈЅαοριυνκτεΑΒΕΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxkmtbhijsdglAEOPCYXKMTBHIJSaopiuvkteABEHIKMNOPTYX",
)
_LATIN = re.compile(r"[a-zA-Z]")
_NONLATIN_CONFUSABLE = re.compile(r"[аеорсухкмтвніјѕԁɡӏАЕОРСУХКМТВНІЈЅαοριυνκτεΑΒΕΗΙΚΜΝΟΡΤΥΧ]")


@dataclass(frozen=True, slots=True)
class View:
    """Folded text to scan, and the channel through which it was reached."""

    text: str
    channel: Channel
    via: str


def _is_invisible(ch: str) -> bool:
    return unicodedata.category(ch) == "Cf" or 0xE0000 <= ord(ch) <= 0xE007F


def char_class(chars: Iterator[int]) -> str:
    """A regex character class of the given code points, as ranges."""
    ranges: list[list[int]] = []
    for c in chars:
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    return (
        "[" + "".join(re.escape(chr(a)) + ("-" + re.escape(chr(b)) if b > a else "") for a, b in ranges) + "]"
    )


@cache
def _invisible_re() -> re.Pattern[str]:
    # Built on first use from this Python's Unicode tables (no ASCII character is invisible).
    return re.compile(char_class(c for c in range(0x80, sys.maxunicode + 1) if _is_invisible(chr(c))))


@cache
def _accent_re() -> re.Pattern[str]:
    marks = char_class(c for c in range(0x80, sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Mn")
    return re.compile(rf"(?<=[\x00-\x7f]){marks}+")


def _without_invisible(text: str) -> str:
    # Most texts have no invisible character, and a search is several times cheaper than a sub.
    invisible = _invisible_re()
    return text if text.isascii() or invisible.search(text) is None else invisible.sub("", text)


def without_invisible(text: str) -> str:
    """``text`` without the characters a reader does not see: zero-width spaces and joiners, bidi
    controls, soft hyphens, byte-order marks."""
    return _without_invisible(text)


def _smuggled_ascii(text: str) -> str:
    if text.isascii():
        return ""
    return "".join(chr(ord(c) - _TAG_BASE) for c in text if 0xE0020 <= ord(c) <= 0xE007E)


def _strip_accents(text: str) -> str:
    # Combining marks are dropped only after ASCII letters: "précédentes" folds to
    # "precedentes", while Japanese voiced kana and Cyrillic й keep their marks.
    # (No ASCII character is a combining mark, and NFD/NFC leave ASCII alone.)
    if text.isascii():
        return text
    return unicodedata.normalize("NFC", _accent_re().sub("", unicodedata.normalize("NFD", text)))


def fold(text: str) -> str:
    """NFKC, accents off Latin letters, case-folded, runs of spaces and of line breaks collapsed."""
    text = _strip_accents(unicodedata.normalize("NFKC", text)).casefold()
    if "  " not in text and "\n" not in text and not _other_space(text):
        return text.strip()  # every run of spaces is one space already
    return _NL.sub("\n", _WS.sub(" ", text)).strip()


# The ASCII characters _OTHER_SPACE matches: looked for one by one in ASCII text (faster).
_ASCII_OTHER_SPACES = tuple(c for c in map(chr, range(128)) if _OTHER_SPACE.match(c))


def _other_space(text: str) -> bool:
    """Whether ``text`` has white space other than spaces and line breaks."""
    if text.isascii():
        return any(map(text.__contains__, _ASCII_OTHER_SPACES))
    return _OTHER_SPACE.search(text) is not None


def _deconfuse(text: str) -> str:
    if not _NONLATIN_CONFUSABLE.search(text):
        return text  # no word can change

    def fix(m: re.Match[str]) -> str:
        word = m.group(0)
        if _LATIN.search(word) and _NONLATIN_CONFUSABLE.search(word):
            return word.translate(_CONFUSABLES)
        return word

    return re.sub(r"\w+", fix, text)


def _leety(text: str) -> bool:
    """Whether undoing leetspeak may change ``text`` (under any table)."""
    # Only tokens (runs of [\w@$|!]) holding both a lower-case letter and a digit or symbol change.
    # No token holds a letter after a digit or symbol (found in the text or in the text reversed):
    # nothing changes.
    return bool(_LEET_THEN_LETTER.search(text) or _LEET_THEN_LETTER.search(text[::-1]))


def _deleet(text: str, table: dict[int, str]) -> str:
    return _deleet_tokens(text, table) if _leety(text) else text


def _deleet_tokens(text: str, table: dict[int, str]) -> str:
    """``_deleet`` of a text ``_leety`` says may change."""
    # Each run of digits and symbols, widened to its token; a token is looked at once.
    out: list[str] = []
    copied = done = 0
    for m in _LEET_RUN.finditer(text):
        start, end = m.span()
        if start < done:
            continue  # in the token just looked at
        while start > done and _TOKEN_CHAR.match(text, start - 1):
            start -= 1
        rest = _TOKEN_FROM.match(text, end)  # always matches (maybe nothing)
        done = rest.end() if rest else end
        word = text[start:done]
        if _LOWER.search(word):
            out += (text[copied:start], word.translate(table))
            copied = done
    return "".join(out) + text[copied:] if out else text


def _unspace(text: str) -> str:
    # "i g n o r e  a l l" / "i.g.n.o.r.e a.l.l" -> "ignore all"; "in-struc-tions" -> "instructions"
    if _SPACED_HINT.search(text):  # every _SPACED match ends with what it finds
        text = _SPACED.sub(lambda m: m.group(0).replace(m.group("sep"), ""), text)
    return _INWORD.sub("", text)


def deobfuscate(text: str) -> list[str]:
    """Folded variants with invisible characters, look-alikes, leetspeak and spacing undone."""
    return _deobfuscate(text, fold)


def _deobfuscate(text: str, fold: Callable[[str], str]) -> list[str]:
    return _undone(text, fold)[0]


def _undone(text: str, fold: Callable[[str], str]) -> tuple[list[str], bool]:
    """The deobfuscated variants, and whether undoing leetspeak changed nothing."""
    visible = _without_invisible(unicodedata.normalize("NFKC", text))
    deconfused = _deconfuse(visible)
    base = fold(deconfused)
    unspaced = _unspace(deconfused)
    squashed = base if unspaced == deconfused else fold(unspaced)
    variants = {base, squashed}
    unspace: dict[str, str] = {}
    leety = _leety(base)
    for table in (_LEET, _LEET_ALL):
        deleeted = _deleet_tokens(base, table) if leety else base
        variants.add(deleeted)
        if deleeted not in unspace:
            unspace[deleeted] = _unspace(deleeted)
        variants.add(unspace[deleeted])
    return sorted(variants), set(unspace) == {base}


def _printable(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(text) < 6:
        return None
    good = sum(1 for c in text if c.isprintable() or c in "\n\r\t")
    letters = sum(1 for c in text if c.isalpha())
    return text if good / len(text) >= 0.9 and letters / len(text) >= 0.4 else None


def _b64_decode(candidate: str) -> str | None:
    raw = candidate.rstrip("=")
    if not (re.search(r"[a-z]", raw) and re.search(r"[A-Z0-9]", raw)):
        return None
    padded = raw + "=" * (-len(raw) % 4)
    for decoder in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            decoded = _printable(decoder(padded))
        except (binascii.Error, ValueError):
            continue
        if decoded is not None:
            return decoded
    return None


def _hex_decode(candidate: str) -> str | None:
    digits = re.sub(r"\\x|0x|[\s:,]", "", candidate)
    if len(digits) % 2:
        digits = digits[:-1]
    try:
        return _printable(bytes.fromhex(digits))
    except ValueError:
        return None


def _unescape(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        token = m.group(0)
        if token.startswith(("\\u", "\\x")):
            return chr(int(token[2:], 16))
        return html.unescape(token)

    return _ESCAPES.sub(one, text)


def _json_strings(value: Any) -> Iterator[str]:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(str(k) for k in item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _decoded(text: str) -> Iterator[tuple[str, str]]:
    """(how, decoded text) for every encoded segment that decodes to readable text."""
    for m in _B64.finditer(text):
        decoded = _b64_decode(m.group(0))
        if decoded is not None:
            yield "base64", decoded
    # Every character of a _HEX match is one of _HEX_RUN's, and it has 16 or more: most texts have
    # no such run, and the run is found without _HEX's backtracking.
    for m in _HEX.finditer(text) if _HEX_RUN.search(text) else ():
        decoded = _hex_decode(m.group(0))
        if decoded is not None:
            yield "hex", decoded
    if re.search(r"%[0-9a-fA-F]{2}", text):
        yield "url", urllib.parse.unquote_plus(text)
    if _ESCAPES.search(text):
        yield "escape", _unescape(text)
    yield "rot13", codecs.decode(text, "rot13")


def _hidden(text: str) -> Iterator[tuple[str, str]]:
    """(carrier, text) for content a reader of the rendered text would not see."""
    if "<" not in text and "[" not in text and text.isascii():
        return  # no markup to hide in, no tag characters
    for m in _HTML_COMMENT.finditer(text):
        yield "html_comment", m.group(1)
    for m in _HIDDEN_ELEMENT.finditer(text):
        yield "hidden_element", m.group(2)
    for m in _TAG.finditer(text):
        for attr in _HTML_ATTR.finditer(m.group(0)):
            yield "html_attribute", attr.group(1) or attr.group(2) or ""
    for m in _MD_LINK.finditer(text):
        yield "markdown_link", urllib.parse.unquote_plus(m.group(2))
        if m.group(0).startswith("!"):
            yield "markdown_alt", m.group(1)
        if m.group(3):
            yield "markdown_title", m.group(3)
    for m in _MD_REFDEF.finditer(text):
        yield "markdown_link", " ".join(g for g in m.groups() if g)
    smuggled = _smuggled_ascii(text)
    if smuggled:
        yield "tag_characters", smuggled


def _prose(
    text: str, hidden: Callable[[str], str], tag: Callable[[str], str], link: Callable[[re.Match[str]], str]
) -> str:
    """``text`` with markup taken out: what ``hidden`` makes of each comment, hidden element and
    reference title, what ``link`` makes of each link, what ``tag`` makes of each tag."""
    if "<" not in text and "[" not in text:
        return text  # every pattern below needs one of them
    text = _HTML_COMMENT.sub(lambda m: hidden(m.group(1)), text)
    text = _HIDDEN_ELEMENT.sub(lambda m: hidden(m.group(2)), text)
    text = _MD_LINK.sub(link, text)
    text = _MD_REFDEF.sub(lambda m: hidden(m.group(2) or ""), text)
    return _TAG.sub(lambda m: tag(m.group(0)), text)


def _nothing(_: str) -> str:
    return " "


def _link_text(link: re.Match[str]) -> str:
    return f" {link.group(1)} "


def visible_text(text: str) -> str:
    """What a person reading the rendered text sees: comments, tags, link targets and titles
    removed."""
    return _prose(text, _nothing, _nothing, _link_text)


# Attributes a model reading the markup takes as prose: alternative text, titles, labels, a form
# field's value (a hidden one too), a meta element's content (a page's description) and data
# attributes. The names are matched whole: ``data-value`` is one attribute, not ``value``.
_PROSE_ATTR = re.compile(
    r"""(?<![\w-])(?:alt|title|aria-label|placeholder|value|content|label|data-[\w-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""",
    re.I,
)


def _own_line(text: str) -> str:
    return f"\n{text}\n" if text.strip() else " "


def _tag_prose(tag: str) -> str:
    return " ".join(_own_line(a.group(1) or a.group(2) or "") for a in _PROSE_ATTR.finditer(tag)) or " "


def _link_and_title(link: re.Match[str]) -> str:
    return f" {link.group(1)} {_own_line(link.group(3) or '')}"


def reader_text(text: str) -> str:
    """What a model reading the raw text takes in, as prose: the visible text, and the text of
    comments, hidden elements, alternative text and link titles, each on a line of its own (a
    person sees none of it; a model reads all of it). Tags and link targets are removed."""
    return _prose(text, _own_line, _tag_prose, _link_and_title)


def code_fences(text: str) -> list[tuple[int, int]]:
    """Where ``text``'s fenced code blocks (```…``` or ~~~…~~~, the last one open to the end) are."""
    return [m.span() for m in _CODE_FENCE.finditer(text)] if "```" in text or "~~~" in text else []


def strip_quoted(text: str) -> str:
    """The author's own voice: code fences, inline code, quotations and blockquotes removed."""
    return _QUOTED.sub(" ", _CODE_FENCE.sub(" ", text))


def _weight(text: str) -> int:
    """Letters, each letter of a script written without spaces counted three times."""
    return sum(map(str.isalpha, text)) + 2 * len(_UNSPACED.findall(text))


# What a value opens after: an assignment, a call, a list, an object, the next item, a cell.
_VALUE_OPENERS = ("=", "(", "[", "{", ",", ";", "|")


def reported(text: str, quote: re.Match[str]) -> bool:
    """Whether the quotation ``quote`` (a match in ``text``) is speech the author reports inside a
    sentence of their own, not a string in code, data or markup: not inside a tag, not a string
    literal (``r"…"``), not a value after ``=``, ``(``, ``[``, ``{``, ``,``, a cell after ``;`` or
    ``|``, a quoted key or a key such as ``note_to_ai:``, not a link title, not on a blockquote
    line, no markup inside it, and the line around it holds prose of the author's."""
    start, end = quote.span()
    # Every look around the quotation is bounded (a tag is at most 500 characters long), so a long
    # text with many quotations costs in proportion to them.
    near = max(0, start - _NEAR)
    if "<" in quote.group() or text.rfind("<", near, start) > text.rfind(">", near, start):
        return False
    if quote.group()[0] == '"' and text[start - 1 : start].isalnum():
        return False
    kept = text[near:start].rstrip(" \t")
    if kept[-1:] in _VALUE_OPENERS or (kept[-1:] == ":" and kept[:-1].rstrip()[-1:] in ('"', "'")):
        return False
    token = kept.rsplit(None, 1)[-1] if kept.strip() else ""
    if "://" in token or token.startswith(("(", "[")) or _DATA_KEY.fullmatch(token):
        return False
    line_start = text.rfind("\n", near, start) + 1 or near
    line_end = text.find("\n", end, end + _NEAR)
    line_end = min(len(text), end + _NEAR) if line_end < 0 else line_end
    head, tail = text[max(line_start, start - _AROUND) : start], text[end : min(line_end, end + _AROUND)]
    if head.lstrip().startswith(">"):
        return False
    return _weight(_INLINE_QUOTE.sub(" ", f"{head} {tail}")) >= _LINE_PROSE


QUOTE_MARKS = ('"', "“", "„", "«", "「", "『")


def quotations(text: str) -> Iterator[re.Match[str]]:
    """Every quotation inside a line of prose ("…", “…”, „…“, «…», 「…」, 『…』), in order: the
    candidates for speech an author reports (``reported``)."""
    if any(mark in text for mark in QUOTE_MARKS):
        yield from _INLINE_QUOTE.finditer(text)


def json_document(text: str) -> bool:
    """Whether ``text`` is a JSON object or array: data, whose strings are values (a notebook's
    cells, a tool's result), never reported speech nor code's string literals."""
    if not text.lstrip().startswith(("{", "[")):
        return False
    try:
        return isinstance(json.loads(text), dict | list)
    except (ValueError, RecursionError):
        return False


def without_reported_quotations(text: str) -> str | None:
    """``text`` with the quotations its author reports in prose blanked out ("the email said
    \"…\"", „…“, «…», 「…」), or ``None`` when it has none or too little prose of its own around
    them: at least about twelve words, and at least as much as they quote. Code, JSON, markup
    attributes, link titles and blockquotes are never reported speech."""
    if not any(mark in text for mark in QUOTE_MARKS):
        return None
    if json_document(text):
        return None
    fences = code_fences(text)
    parts: list[str] = []
    last = quoted = 0
    for quote in quotations(text):
        if any(a <= quote.start() < b for a, b in fences):
            continue
        if reported(text, quote):
            parts += [text[last : quote.start()], " "]
            last = quote.end()
            quoted += _weight(quote.group())
    if not parts:
        return None
    rest = "".join([*parts, text[last:]])
    own = _weight(strip_quoted(rest))
    return rest if own >= max(_TEXT_PROSE, quoted) else None


class _Folds(dict[str, str]):
    """``fold`` for one ``views`` call: a text folded once however often it turns up; and the
    deobfuscated variants of each text, with whether undoing leetspeak changed nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.undone: dict[str, tuple[list[str], bool]] = {}

    def __missing__(self, text: str) -> str:
        folded = self[text] = fold(text)
        return folded

    def variants(self, text: str, turned_from: str | None = None) -> list[str]:
        """``_deobfuscate(text)``; for ``text``, the rot13 of ``turned_from``, turned from the variants
        of ``turned_from`` when every step commutes with rot13: an ASCII text (so no normalisation,
        invisible character or look-alike is undone, and folding maps case as rot13 keeps it) in
        which undoing leetspeak changes nothing (rot13 keeps every digit, symbol and lower-case
        letter of a token what it was, so nothing changes in the turned text either)."""
        earlier = self.undone.get(turned_from) if turned_from is not None else None
        if earlier is not None and earlier[1] and turned_from is not None and turned_from.isascii():
            return sorted(codecs.encode(v, "rot13") for v in earlier[0])
        if text not in self.undone:
            self.undone[text] = _undone(text, self.__getitem__)
        return self.undone[text][0]


def _variants(
    text: str, channel: Channel, via: str, folds: _Folds, turned_from: str | None = None
) -> Iterator[View]:
    yield View(folds[text], channel, via)
    for variant in folds.variants(text, turned_from):
        if channel == "plain":
            yield View(variant, "obfuscated", "deobfuscated" if via == "text" else f"{via}+deobfuscated")
        else:
            yield View(variant, channel, via)


def views(text: str, depth: int = 2) -> Iterator[View]:
    """Every view of ``text`` the poisoning detectors scan, the plain view first.

    Decoded payloads are themselves viewed again (up to ``depth`` levels), so a
    base64 string inside an HTML comment is still read.
    """
    return _views(text, depth, _Folds())


def _views(text: str, depth: int, folds: _Folds) -> Iterator[View]:
    yield from _variants(visible_text(text), "plain", "text", folds)
    # Markup itself (chat-template role tags, templated link targets) is read in the raw text.
    yield View(folds[text], "plain", "raw")
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, dict | list):
        for value in _json_strings(parsed):
            yield from _variants(value, "plain", "json", folds)
    for carrier, hidden in _hidden(text):
        yield from _variants(hidden, "hidden", carrier, folds)
    if depth <= 0:
        return
    for how, decoded in _decoded(text):
        if how == "rot13":
            yield from _variants(decoded, "encoded", how, folds, turned_from=text)
            continue
        for inner in _views(decoded, depth - 1, folds):
            yield View(inner.text, "encoded", f"{how}>{inner.via}")
