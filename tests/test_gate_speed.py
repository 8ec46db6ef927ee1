"""The fast poisoning scan finds exactly what the slow reference finds.

The reference is the scan as first written: every rule's whole alternation
over every view, and the text helpers' per-character loops (kept here, and
patched into ``graphmem.policy.text`` for the reference run).
"""

from __future__ import annotations

import codecs
import json
import re
import unicodedata
import urllib.parse
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from graphmem.eval.gate import _latency_text
from graphmem.eval.gate_data import bipia_lines, default_bipia_dir, jsonl_lines
from graphmem.policy import detector as detector_mod
from graphmem.policy import engine as engine_mod
from graphmem.policy import prefilter as prefilter_mod
from graphmem.policy import text as text_mod
from graphmem.policy.detector import load_detector
from graphmem.policy.poisoning import _RULE_GROUP, concealed_findings, scan_poisoning
from graphmem.policy.prefilter import Literals, Prefiltered, requirements
from graphmem.policy.rules import RULES
from graphmem.policy.secrets import find_secrets

ROOT = Path(__file__).parent


def _old_strip_accents(text: str) -> str:
    out: list[str] = []
    for ch in unicodedata.normalize("NFD", text):
        if unicodedata.category(ch) == "Mn" and out and out[-1].isascii():
            continue
        out.append(ch)
    return unicodedata.normalize("NFC", "".join(out))


def _old_without_invisible(text: str) -> str:
    return "".join(c for c in text if not text_mod._is_invisible(c))


def _old_smuggled_ascii(text: str) -> str:
    return "".join(chr(ord(c) - 0xE0000) for c in text if 0xE0020 <= ord(c) <= 0xE007E)


def _old_deconfuse(text: str) -> str:
    def fix(m: re.Match[str]) -> str:
        word = m.group(0)
        if re.search(r"[a-zA-Z]", word) and text_mod._NONLATIN_CONFUSABLE.search(word):
            return word.translate(text_mod._CONFUSABLES)
        return word

    return re.sub(r"\w+", fix, text)


def _old_deleet(text: str, table: dict[int, str]) -> str:
    def fix(m: re.Match[str]) -> str:
        word = m.group(0)
        mixed = re.search(r"[a-z]", word) and re.search(r"[0-9@$|!]", word)
        return word.translate(table) if mixed else word

    return re.sub(r"[\w@$|!]+", fix, text)


def _old_fold(text: str) -> str:
    text = text_mod._strip_accents(unicodedata.normalize("NFKC", text)).casefold()
    return re.sub(r"\s*\n\s*", "\n", re.sub(r"[^\S\n]+", " ", text)).strip()


def _old_visible_text(text: str) -> str:
    text = text_mod._HTML_COMMENT.sub(" ", text)
    text = text_mod._HIDDEN_ELEMENT.sub(" ", text)
    text = text_mod._MD_LINK.sub(lambda m: f" {m.group(1)} ", text)
    text = text_mod._MD_REFDEF.sub(" ", text)
    return text_mod._TAG.sub(" ", text)


def _old_hidden(text: str) -> Iterator[tuple[str, str]]:
    t = text_mod
    for m in t._HTML_COMMENT.finditer(text):
        yield "html_comment", m.group(1)
    for m in t._HIDDEN_ELEMENT.finditer(text):
        yield "hidden_element", m.group(2)
    for m in t._TAG.finditer(text):
        for attr in t._HTML_ATTR.finditer(m.group(0)):
            yield "html_attribute", attr.group(1) or attr.group(2) or ""
    for m in t._MD_LINK.finditer(text):
        yield "markdown_link", urllib.parse.unquote_plus(m.group(2))
        if m.group(0).startswith("!"):
            yield "markdown_alt", m.group(1)
        if m.group(3):
            yield "markdown_title", m.group(3)
    for m in t._MD_REFDEF.finditer(text):
        yield "markdown_link", " ".join(g for g in m.groups() if g)
    smuggled = _old_smuggled_ascii(text)
    if smuggled:
        yield "tag_characters", smuggled


def _old_unspace(text: str) -> str:
    spaced = re.compile(r"(?<!\w)\w(?P<sep>[ .\-_*·/|])\w(?:(?P=sep)\w)+(?!\w)")
    text = spaced.sub(lambda m: m.group(0).replace(m.group("sep"), ""), text)
    return re.sub(r"(?<=\w)[\-.·_*](?=\w)", "", text)


def _old_deobfuscate(text: str) -> list[str]:
    visible = _old_without_invisible(unicodedata.normalize("NFKC", text))
    base = text_mod.fold(_old_deconfuse(visible))
    squashed = text_mod.fold(_old_unspace(_old_deconfuse(visible)))
    variants = {base, squashed}
    for table in (text_mod._LEET, {**text_mod._LEET, **text_mod._LEET_L}):
        variants.add(_old_deleet(base, table))
        variants.add(_old_unspace(_old_deleet(base, table)))
    return sorted(variants)


class _Unmemoised(dict[str, str]):
    """Every text folded and deobfuscated anew, rot13 views too (by the patched helpers)."""

    def __getitem__(self, text: str) -> str:
        return text_mod.fold(text)

    def variants(self, text: str, turned_from: str | None = None) -> list[str]:
        return text_mod._deobfuscate(text, self.__getitem__)


@contextmanager
def reference_text() -> Iterator[None]:
    patched = {
        "_strip_accents": _old_strip_accents,
        "_without_invisible": _old_without_invisible,
        "_smuggled_ascii": _old_smuggled_ascii,
        "_deconfuse": _old_deconfuse,
        "_deleet": _old_deleet,
        "_unspace": _old_unspace,
        "fold": _old_fold,
        "visible_text": _old_visible_text,
        "_hidden": _old_hidden,
        "deobfuscate": _old_deobfuscate,
        "_deobfuscate": lambda text, _fold: _old_deobfuscate(text),
    }
    saved = {name: getattr(text_mod, name) for name in patched}
    saved["_Folds"] = text_mod._Folds
    try:
        for name, fn in patched.items():
            setattr(text_mod, name, fn)
        text_mod._Folds = _Unmemoised  # type: ignore[misc]
        yield
    finally:
        for name, fn in saved.items():
            setattr(text_mod, name, fn)


def _findings(text: str, reference: bool) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    def key(findings: list[object]) -> list[tuple[str, str, str]]:
        return [(f.rule, f.channel, f.via) for f in findings]  # type: ignore[attr-defined]

    if reference:
        with reference_text():
            views = [(v.text, v.channel, v.via) for v in text_mod.views(text)]
            found = key(scan_poisoning(text, reference=True)), key(concealed_findings(text, reference=True))
        assert views == [(v.text, v.channel, v.via) for v in text_mod.views(text)]
        return found
    return key(scan_poisoning(text)), key(concealed_findings(text))


def assert_same(text: str) -> None:
    assert _findings(text, reference=False) == _findings(text, reference=True), text[:200]


@pytest.fixture(scope="module", autouse=True)
def _screen_ready() -> None:
    """Fast paths are compared with the screen ready (where Hyperscan is installed), so screened
    narrowing is what is tested; ``python_index`` switches it off with the literal database."""
    if engine_mod.available():
        assert engine_mod.wait_for_screen(timeout=600)


# The labelled sets in the repository: the rules' corpus and every frozen held-out set.
REPOSITORY_SETS = ["corpus", "heldout", *(f"heldout{n}" for n in range(2, 15))]


def _texts(directory: Path) -> list[str]:
    return [
        line["text"] for name in ("attacks", "benign") for line in jsonl_lines(directory / f"{name}.jsonl")
    ]


@pytest.mark.parametrize("directory", REPOSITORY_SETS)
def test_fast_scan_equals_reference_on_repository_sets(directory: str) -> None:
    for text in _texts(ROOT / directory):
        assert_same(text)


def _bipia_texts() -> list[str]:
    bipia = default_bipia_dir()
    if bipia is None:
        pytest.skip("BIPIA's training split is not here")
    texts = [line["text"] for split in ("train", "dev") for line in bipia_lines(bipia, split)]
    for name in ("text_attack_train.json", "code_attack_train.json"):
        by_category = json.loads((bipia / name).read_text(encoding="utf-8"))
        texts += [t for items in by_category.values() for t in items]
    return list(dict.fromkeys(texts))


@pytest.mark.slow
def test_fast_scan_equals_reference_on_bipia_train() -> None:
    for text in _bipia_texts():
        assert_same(text)


def _trigger_words() -> list[str]:
    words: set[str] = set()
    for rule in RULES:
        for alternative in rule.alternatives:
            for clause in requirements(alternative, re.M):
                words.update(sorted(clause)[:4])
    return sorted(words)


_WORDS = _trigger_words()
_FILLER = [
    "the",
    "you",
    "your",
    "now",
    "all",
    "previous",
    "rules",
    "and",
    "to",
    "é",
    "\u0131",
    "\uff21\uff29",
    "0",
    "@",
]
_SEPARATORS = [" ", "  ", "\n", ", ", ". ", "-", "_", ".", ": ", "\u200b", "", "'", '"', "> ", "`"]
_mixed = st.lists(
    st.tuples(st.sampled_from(_WORDS + _FILLER), st.sampled_from(_SEPARATORS)), min_size=1, max_size=30
).map(lambda parts: "".join(w + s for w, s in parts))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mixed)
def test_fast_scan_equals_reference_on_generated_texts(text: str) -> None:
    assert_same(text)
    assert_same(text.upper())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mixed)
def test_a_group_narrowed_literals_first_is_narrowed_as_screen_first(text: str) -> None:
    # A rot13 view looks its literals up before the screen: the same narrowed rules, whether the
    # literals rule every rule out (most rot13 text) or not (the rot13 of a rot13 attack).
    for view in (text, codecs.encode(text, "rot13")):
        first = _RULE_GROUP.narrowed(Literals(view), literals_first=True)
        screened = _RULE_GROUP.narrowed(Literals(view))
        assert [p and p.pattern for p in first] == [p and p.pattern for p in screened]


_ALTERNATIVE = st.sampled_from(
    [
        r"\bab",
        r"a+b",
        r"b(?=a)",
        r"(?<!a)b",
        r"^a",
        r"a$",
        r"\ba\s+b\b",
        r"(x)?a",
        r"ab|ba",
        r"[ab]{2,3}",
        r"(?<=\bb)a",
        r"\w+ c",
        r"",
    ]
)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(_ALTERNATIVE, min_size=2, max_size=5),
    st.text(alphabet="ab cx\n", max_size=24),
    st.integers(0, 3),
)
def test_alternatives_tried_one_at_a_time_find_what_their_alternation_finds(
    alternatives: list[str], text: str, pos: int
) -> None:
    # A narrowed alternation not compiled yet: the same spans from match and search, the same
    # matches from finditer, before and after it is compiled.
    whole = re.compile("|".join(f"(?:{a})" for a in alternatives), re.M)
    tried = prefilter_mod.Alternatives(tuple(re.compile(f"(?:{a})", re.M) for a in alternatives), re.M)
    assert tried.pattern == whole.pattern
    for _ in range(2):
        for k in range(pos, len(text) + 1):
            for ours, theirs in (
                (tried.match(text, k), whole.match(text, k)),
                (tried.search(text, k), whole.search(text, k)),
            ):
                assert (ours and ours.span()) == (theirs and theirs.span())
        assert [m.span() for m in tried.finditer(text)] == [m.span() for m in whole.finditer(text)]
        tried._calls = prefilter_mod._COMPILE_AFTER  # the next use compiles it


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_fast_text_helpers_equal_the_loops(text: str) -> None:
    assert text_mod._strip_accents(text) == _old_strip_accents(text)
    assert text_mod._without_invisible(text) == _old_without_invisible(text)
    assert text_mod._smuggled_ascii(text) == _old_smuggled_ascii(text)
    assert text_mod._deconfuse(text) == _old_deconfuse(text)
    for table in (text_mod._LEET, {**text_mod._LEET, **text_mod._LEET_L}):
        assert text_mod._deleet(text, table) == _old_deleet(text, table)
    assert text_mod._unspace(text) == _old_unspace(text)
    assert text_mod.deobfuscate(text) == _old_deobfuscate(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(["a", " ", "\n", "é", "\xa0", *map(chr, range(32))]), max_size=40))
def test_other_space_is_what_the_regex_calls_other_space(text: str) -> None:
    assert text_mod._other_space(text) == bool(text_mod._OTHER_SPACE.search(text))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60))
def test_ascii_tokenisers_equal_the_unicode_ones_on_ascii_text(text: str) -> None:
    assert detector_mod._WORD_ASCII.findall(text) == detector_mod._WORD.findall(text)
    assert detector_mod._TOKEN_ASCII.findall(text) == detector_mod._TOKEN.findall(text)


def _tokens(words: list[str], runs: list[str]) -> list[str]:
    """A segment's hashed tokens but the 4-grams, spelled out: each word and the word bigram ending
    in it ("^" begins the segment, "$" ends it), then the character bigrams of CJK runs."""
    ends = [*words, "$"]
    tokens = [""] * (2 * len(ends))
    tokens[0::2] = ends
    tokens[1::2] = map("{} {}".format, ["^", *words], ends)
    for run in runs:
        tokens += [run[k : k + 2] for k in range(len(run) - 1)]
    return tokens


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(["ask", "you", "日本語", "テキスト", "é", " ", ".", "!", "a", "1", "ü", "Ω", "x y"]),
        max_size=20,
    ).map("".join)
)
def test_token_crcs_are_the_crcs_of_the_tokens(text: str) -> None:
    # The detector hashes bigrams without building them: the same CRCs, in the same order.
    words, runs = detector_mod._WORD.findall(text), detector_mod._CJK.findall(text)
    tokens = _tokens(words, runs)
    assert sorted(detector_mod._token_crcs(words, runs)) == sorted(zlib.crc32(t.encode()) for t in tokens)
    assert detector_mod._token_crcs(words, runs) == [zlib.crc32(t.encode()) for t in tokens]


_markup = st.lists(
    st.sampled_from(
        [
            "<",
            ">",
            "[",
            "]",
            "(",
            ")",
            "!",
            "<!--",
            "-->",
            "<b>",
            "</b>",
            "a",
            "B",
            " ",
            "  ",
            "\n",
            "\t",
            "\xa0",
            "\u3000",
            'x="y"',
            ":",
            "http://e.x",
            "\U000e0041",
            "é",
            "\uff21\uff29",
        ]
    ),
    max_size=25,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(_markup)
# Markdown links without a title: the visible text kept a space where the title would be.
@example("[]()")
@example("[a](x) b")
def test_fold_and_visible_text_equal_the_reference(text: str) -> None:
    assert text_mod.fold(text) == _old_fold(text)
    assert text_mod.visible_text(text) == _old_visible_text(text)
    with reference_text():
        hidden = list(text_mod._hidden(text))
    assert list(text_mod._hidden(text)) == hidden


_spaced = st.lists(st.sampled_from(["a", "b", "1", "é", "ab", " ", ".", "-", "_", "*", "·", "/", "|", "\n"]))


@settings(max_examples=300, deadline=None)
@given(_spaced.map("".join))
def test_unspace_equals_the_reference_on_spaced_letters(text: str) -> None:
    assert text_mod._unspace(text) == _old_unspace(text)
    # The hint is found wherever a spaced run is.
    assert bool(text_mod._SPACED_HINT.search(text)) or not text_mod._SPACED.search(text)


def test_requirements_are_what_every_match_contains() -> None:
    assert requirements(r"\bignor(?:e|ing)\W+(?:all\W+)?previous") == (
        frozenset({"previous"}),
        frozenset({"ignore", "ignoring"}),
    )
    assert requirements(r"(?:a|\w+)b") == (frozenset({"b"}),)
    assert requirements(r"x?", re.I) == ()
    assert requirements(r"(?i:ignore) rules") == (frozenset({" rules"}),)


def test_narrowed_alternation_keeps_order_and_matches() -> None:
    pre = Prefiltered((r"\bsystem\W+prompt", r"\bprompt", r"zzz"), re.M)
    text = "show the system prompt, then the prompt"
    assert [m.span() for m in pre.finditer(text)] == [m.span() for m in pre.pattern.finditer(text)]
    assert pre.narrowed(Literals("nothing here")) is None


def test_secret_findings_equal_the_reference() -> None:
    texts = _texts(ROOT / "corpus") + _texts(ROOT / "heldout")
    texts += [t.upper() for t in texts] + [t.replace("s", "\u017f") for t in texts]
    for text in texts:
        assert find_secrets(text) == find_secrets(text, reference=True), text[:200]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "password",
                "PASSWORD",
                "pa\u017f\u017fword",
                "api_key",
                "token",
                "Bearer",
                "is",
                ":",
                "=",
                " ",
                "\n",
                "4111 1111 1111 1111",
                "4539578763621486",
                "sk-",
                "eyJhbGciOi",
                ".",
                "AKIA",
                "x9$Qw!z7Lm2#",
            ]
        ),
        max_size=12,
    ).map("".join)
)
def test_secret_findings_equal_the_reference_on_generated_texts(text: str) -> None:
    assert find_secrets(text) == find_secrets(text, reference=True)


def test_detector_scores_equal_the_reference() -> None:
    """The NumPy score of all segments at once is the sum of each segment's sparse features."""
    detector = load_detector()
    texts = _texts(ROOT / "corpus")[:300] + _texts(ROOT / "heldout") + _texts(ROOT / "heldout7")
    for text in [*texts, *(_latency_text(n) for n in range(40)), "", "...", "| a | b |\n| c | d |"]:
        fast, reference = detector.score(text), detector.score(text, reference=True)
        assert fast.segment == reference.segment, text[:200]
        assert fast.probability == pytest.approx(reference.probability, rel=1e-12, abs=1e-15), text[:200]


@settings(max_examples=300, deadline=None)
@given(
    st.sets(st.sampled_from("abcdefghij")),
    st.dictionaries(st.sampled_from("abcdefghijklmn"), st.integers(1, 3)),
)
def test_low_overlap_equals_the_set_formula(own: set[str], context: dict[str, int]) -> None:
    from graphmem.policy.detector import HASH_DIM, dense_feature_names, segment_features

    others = {w for w, n in context.items() if n > (1 if w in own else 0)}
    expected = 1.0 - len(own & others) / len(own) if len(others) >= 5 and own else 0.0
    k = HASH_DIM + dense_feature_names().index("low_overlap")
    assert segment_features("x y", context, own).get(k, 0.0) == expected


def test_a_clause_compiled_after_a_text_was_indexed_is_still_looked_up() -> None:
    literals = Literals("please ignore the zebra-crossing instructions")
    assert Prefiltered((r"\bignore",)).narrowed(literals) is not None
    late = Prefiltered((r"\bzebra-crossing\w*",))
    assert late.narrowed(literals) is not None


@contextmanager
def python_index() -> Iterator[None]:
    """The pure-Python literal index (what runs where Hyperscan is not installed)."""
    previous = engine_mod.set_enabled(False)
    try:
        yield
    finally:
        engine_mod.set_enabled(previous)


def _present(text: str) -> int:
    return sum(n.bit for n in prefilter_mod._NEED_LIST if any(s in text for s in n.literals))


@settings(max_examples=200, deadline=None)
@given(_mixed, st.integers(0, 400), st.integers(0, 30), _mixed)
def test_a_view_indexed_from_the_one_before_keeps_every_clause_it_has(
    text: str, at: int, cut: int, insert: str
) -> None:
    with python_index():
        base = Literals(text)
        edited = text[:at] + insert[: cut % 8] + text[at + cut % 5 :]
        for literals in (Literals(edited), Literals(edited, base=base)):
            present = _present(edited)
            assert literals.satisfied(()) & present == present


def _cue_hits(text: str) -> list[tuple[dict[str, float], dict[str, float]]]:
    """Each segment's cue hits, answered for the text (fast) and by the whole regexes (reference),
    also after a salutation's lead-in."""
    own = detector_mod._own_text(text)
    cues = detector_mod._TextCues(Literals(own))
    reference = detector_mod._REFERENCE_CUES
    out = []
    for segment in detector_mod._segments_of(own):
        out.append((cues.hits(segment), reference.hits(segment)))
        lead = detector_mod._LEAD_IN.match(segment)
        if lead:
            after = segment[lead.end() :]
            out.append((cues.hits(after), reference.hits(after)))
    return out


def assert_same_cues(text: str) -> None:
    for fast, reference in _cue_hits(text):
        assert fast == reference, text[:200]
    detector_mod._STATIC_CACHE.clear()
    assert detector_mod.text_segment_features(text) == detector_mod.text_segment_features(
        text, reference=True
    ), text[:200]


@pytest.mark.parametrize("directory", REPOSITORY_SETS)
def test_cue_hits_equal_the_whole_regexes_on_repository_sets(directory: str) -> None:
    for text in _texts(ROOT / directory):
        assert_same_cues(text)


@pytest.mark.slow
def test_cue_hits_equal_the_whole_regexes_on_bipia_train() -> None:
    for text in _bipia_texts():
        assert_same_cues(text)


def _cue_words() -> list[str]:
    """Every word the cues name, in all their languages, and the literals their regexes need."""
    words: set[str] = set()
    for sorted_cue in detector_mod._SORTED.values():
        words |= sorted_cue.words | sorted_cue.prefixes | sorted_cue.last
        for alternative in (*sorted_cue.anchored, *sorted_cue.rest):
            for clause in requirements(alternative):
                words.update(clause)
    return sorted(w.strip() for w in words if w.strip())


_CUE_WORDS = _cue_words()
_CUE_FILLER = [
    "you",
    "your",
    "the",
    "please",
    "ai",
    "assistant",
    "x",
    "7",
    "é",
    "ok",
    "s",
    "ing",
    "'s",
    "\u4f60",
]
_CUE_SEPARATORS = [
    " ",
    "  ",
    ", ",
    ". ",
    "? ",
    "! ",
    ": ",
    "\n",
    "-",
    "'",
    "",
    "\u3002",
    "\uff1f",
    " | ",
    "...",
    "?",
]
_cue_text = st.lists(
    st.tuples(st.sampled_from(_CUE_WORDS + _CUE_FILLER), st.sampled_from(_CUE_SEPARATORS)),
    min_size=1,
    max_size=24,
).map(lambda parts: "".join(w + s for w, s in parts))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cue_text)
def test_cue_hits_equal_the_whole_regexes_on_generated_texts(text: str) -> None:
    assert_same_cues(text)


def test_cue_words_cover_the_thirteen_languages() -> None:
    scripts = {
        "de": "ubersetze",
        "fr": "traduis",
        "es": "traduce",
        "pt": "traduz",
        "it": "traduci",
        "nl": "vertaal",
        "pl": "przetlumacz",
        "tr": "cevir",
        "ru": "переведи",
        "zh": "翻译",
        "ja": "翻訳",
        "ko": "번역",
        "en": "translate",
    }
    for word in scripts.values():
        assert any(word in w or w in word for w in _CUE_WORDS), word


_leety = st.text(alphabet="ab z09@$|!_\u00e91 .-\n5\u0131\u0130", max_size=60)


@settings(max_examples=400, deadline=None)
@given(_leety)
def test_deleet_equals_the_loop_on_letters_digits_and_symbols(text: str) -> None:
    for table in (text_mod._LEET, {**text_mod._LEET, **text_mod._LEET_L}):
        assert text_mod._deleet(text, table) == _old_deleet(text, table)


@settings(max_examples=300, deadline=None)
@given(
    _mixed,
    st.lists(st.tuples(st.integers(0, 400), st.integers(0, 12), _mixed), min_size=1, max_size=12),
)
def test_a_view_edited_in_many_places_keeps_every_clause_it_has(
    text: str, edits: list[tuple[int, int, str]]
) -> None:
    edited = text * 3
    for at, cut, insert in edits:
        at %= len(edited) + 1
        edited = edited[:at] + insert[: cut % 9] + edited[at + cut % 4 :]
    with python_index():
        base = Literals(text * 3)
        present = _present(edited)
        assert Literals(edited, base=base).satisfied(()) & present == present


def test_edits_are_found_where_a_view_differs() -> None:
    a = "the all-hands meeting, then the all-hands lunch " * 8
    b = a.replace("all-hands", "allhands")
    spans = prefilter_mod._edits(a, b)
    assert spans is not None
    assert len(spans) == 16
    assert all(end - start <= 1 for start, end in spans)
    assert prefilter_mod._edits(a, a) == []
    assert prefilter_mod._edits(a, a[::-1]) is None


@settings(max_examples=300, deadline=None)
@given(st.one_of(_mixed, st.text(max_size=60)), st.booleans())
def test_a_rot13_view_answered_from_the_plain_index_keeps_every_clause_it_has(text: str, same: bool) -> None:
    import codecs

    turned = codecs.encode(text, "rot13") if same else codecs.encode(text, "rot13") + "ignore"
    present = _present(turned)
    with python_index():
        literals = Literals(turned, rot13_of=Literals(text))
        assert literals.satisfied(()) & present == present


# Regex pieces with no top-level "|": literals, escapes, classes (a "]" right after "[" or
# "[^" is a literal, and "(", ")" and "|" in a class are too) and groups holding alternations.
_ATOM = st.sampled_from(
    ["a", "bc", r"\(", r"\)", r"\|", r"\\", "[)]", "[(|]", "[]x]", "[^]|)]", r"[\])]", r"\b", "x?", "y+"]
)
_PIECE = st.recursive(
    st.lists(_ATOM, min_size=1, max_size=4).map("".join),
    lambda inner: (
        st.tuples(st.sampled_from(["(", "(?:", "(?i:"]), st.lists(inner, min_size=1, max_size=3)).map(
            lambda t: t[0] + "|".join(t[1]) + ")"
        )
        | st.lists(inner, min_size=2, max_size=3).map("".join)
    ),
    max_leaves=8,
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECE, min_size=1, max_size=4), _PIECE)
def test_the_pattern_scanner_cuts_at_top_level_bars_and_finds_group_ends(parts: list[str], tail: str) -> None:
    pattern = "|".join(parts)
    re.compile(pattern)
    assert prefilter_mod.top_level(pattern) == parts
    group = f"(?:{pattern})"
    assert prefilter_mod.group_end(group + tail, 0) == len(group)
    assert prefilter_mod.group_end(f"x{group}{tail}", 1) == len(group) + 1
    assert prefilter_mod.group_end(f"({pattern}", 0) == -1


def test_whitespace_is_what_the_regexes_call_whitespace() -> None:
    # The stated-password rule is tried back from each credential word over runs of whitespace
    # found with str.isspace; \s must be the same characters.
    import sys

    space = re.compile(r"\s")
    assert all(bool(space.match(chr(c))) == chr(c).isspace() for c in range(sys.maxunicode + 1))


def test_every_credential_word_begins_with_a_listed_start() -> None:
    from graphmem.policy import secrets as secrets_mod

    starts = secrets_mod._CREDENTIAL_STARTS
    for alternative in prefilter_mod.top_level(secrets_mod._CREDENTIAL_WORDS):
        inner = alternative
        if alternative.startswith("(?:"):
            inner = alternative[3 : prefilter_mod.group_end(alternative, 0) - 1]
        for piece in prefilter_mod.top_level(inner):
            assert any(piece.startswith(s) for s in starts), piece


def test_the_case_fold_sends_every_character_to_the_start_character_it_matches() -> None:
    import sys

    from graphmem.policy import secrets as secrets_mod

    chars = sorted(set("".join(secrets_mod._CREDENTIAL_STARTS)))
    every = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    matching = re.compile("[" + "".join(map(re.escape, chars)) + "]", re.I)
    for m in matching.finditer(every):
        ch = m.group(0)
        (target,) = [c for c in chars if re.fullmatch(re.escape(c), ch, re.I)]
        assert ch.translate(secrets_mod._CASE_FOLD) == target, hex(ord(ch))
    assert len(every.translate(secrets_mod._CASE_FOLD)) == len(every)


_CREDENTIAL_PARTS = [
    "password",
    "PassWord",
    "PASSWD",
    "pa\u017f\u017fphrase",
    "pwd",
    "WiFi",
    "wi-fi",
    "WLAN",
    "wpa2",
    "network",
    "key",
    "contraseña",
    "CONTRASENA",
    "mot de passe",
    "MDP",
    "Passwort",
    "\u212aennwort",
    "senha",
    "parola d'ordine",
    "пароль",
    "ПАРОЛЬ",
    "密码",
    "パスワード",
    "비밀번호",
    "wachtwoord",
    "hasło",
    "HASLO",
    "my",
    "MY",
    "il mio",
    "la mia",
    "мой",
    "their",
    "db_",
    "admin-",
    "x" * 38,
    "is",
    "is now",
    "ist",
    "est",
    "e",
    "è",
    "—",
    "-",
    "was",
    ":",
    "=",
    "=>",
    '"',
    "'",
    "“",
    "«",
    "sunshine42",
    "Xy7!kq2m",
    "hunter2",
    ".",
    ",",
]
_CREDENTIAL_GAPS = ["", " ", "  ", "\n", "\t", "\u3000", "_"]
_credential_text = st.lists(
    st.tuples(st.sampled_from(_CREDENTIAL_PARTS), st.sampled_from(_CREDENTIAL_GAPS)),
    max_size=16,
).map(lambda parts: "".join(w + s for w, s in parts))


@settings(max_examples=500, deadline=None)
@given(_credential_text)
def test_credential_rules_find_what_the_whole_scan_finds(text: str) -> None:
    from graphmem.policy import secrets as secrets_mod

    every = re.compile(rf"(?=(?:{secrets_mod._CREDENTIAL_WORDS}))", re.I)
    words = [m.start() for m in every.finditer(text)]
    assert secrets_mod._credential_words(text) == words
    for pattern, start in secrets_mod._CREDENTIAL_LED.items():
        fast = [(m.span(), m.groupdict()) for m in secrets_mod._credential_led(pattern, text, words, start)]
        assert fast == [(m.span(), m.groupdict()) for m in pattern.finditer(text)], text
    assert find_secrets(text) == find_secrets(text, reference=True)


# The literal database (graphmem.policy.engine, where Hyperscan is installed) against the pure-Python
# index: texts of the rules' and cues' words in every language, arbitrary Unicode, lone surrogates.
_ANY_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=()) | st.sampled_from(["\ud800", "\udfff", "\x00"]),
    max_size=120,
)
_LANGUAGE_TEXT = st.one_of(_mixed, _cue_text, _ANY_TEXT, st.tuples(_cue_text, _ANY_TEXT).map("".join))
needs_engine = pytest.mark.skipif(
    not engine_mod.available(), reason="Hyperscan (graphmem[fast]) is not installed"
)


@needs_engine
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_LANGUAGE_TEXT)
def test_the_literal_database_finds_exactly_the_clauses_a_text_satisfies(text: str) -> None:
    assert engine_mod.enabled()
    assert Literals(text).satisfied(()) == _present(text)
    assert Literals(text.upper()).satisfied(()) == _present(text.upper())


def _gate_results(text: str) -> tuple[object, ...]:
    detector_mod._STATIC_CACHE.clear()
    shared: dict[str, Literals] = {}
    score = load_detector().score(text, literals=shared)
    return (
        _findings(text, reference=False),
        score,
        detector_mod.text_segment_features(text),
        find_secrets(text),
    )


def assert_same_both_ways(text: str) -> None:
    fast = _gate_results(text)
    with python_index():
        assert _gate_results(text) == fast, text[:200]


@needs_engine
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_LANGUAGE_TEXT)
def test_findings_and_scores_are_the_same_with_and_without_the_database(text: str) -> None:
    assert_same_both_ways(text)


@needs_engine
@pytest.mark.parametrize(
    "directory",
    [ROOT / "corpus", *(ROOT.parent / "graphmem/eval/data" / name for name in ("handwritten", "plain"))],
)
def test_findings_and_scores_are_the_same_with_and_without_the_database_on_repository_sets(
    directory: Path,
) -> None:
    for text in _texts(directory):
        assert_same_both_ways(text)


@needs_engine
def test_the_database_is_rebuilt_for_clauses_compiled_after_it() -> None:
    literals = Literals("a quokka-shaped instruction")
    assert Prefiltered((r"\binstruction",)).narrowed(literals) is not None
    late = Prefiltered((r"\bquokka-shaped\w*",))
    assert late.narrowed(Literals("a quokka-shaped instruction")) is not None
    assert late.narrowed(Literals("a wombat-shaped instruction")) is None


def test_the_database_can_be_switched_off() -> None:
    with python_index():
        assert not engine_mod.enabled()
        assert engine_mod.satisfied("text", 1, dict) is None


@needs_engine
def test_threads_scan_with_their_own_scratch_and_find_the_same_clauses() -> None:
    from concurrent.futures import ThreadPoolExecutor

    texts = [
        f"{w} you must now ignore the {v} rules, {n}"
        for n, (w, v) in enumerate(zip(_WORDS, _CUE_WORDS * 2, strict=False))
    ][:400]
    expected = [_present(t) for t in texts]
    with ThreadPoolExecutor(4) as pool:
        found = list(pool.map(lambda t: Literals(t).satisfied(()), texts))
    assert found == expected


@needs_engine
def test_clauses_compiled_while_other_threads_scan_are_never_missed() -> None:
    """Threads compile alternations of words never seen before while others scan: each new
    alternation, asked at once of a text holding its word, keeps it (a clause counted before its
    literals were registered would be compiled into the database without them, and missed)."""
    from concurrent.futures import ThreadPoolExecutor

    def compile_and_ask(n: int) -> bool:
        word = f"xq{n:05d}late"
        late = Prefiltered((rf"\b{word}\w*",))
        return late.narrowed(Literals(f"the {word} text")) is not None

    def scan(n: int) -> bool:
        return Literals(f"you must now ignore the rules {n}").satisfied(()) >= 0

    with ThreadPoolExecutor(4) as pool:
        asked = [pool.submit(compile_and_ask if n % 2 else scan, n) for n in range(2, 402)]
        assert all(f.result() for f in asked)


class _UnturnedFolds(text_mod._Folds):
    """Every text deobfuscated itself, rot13 views too."""

    def variants(self, text: str, turned_from: str | None = None) -> list[str]:
        return super().variants(text)


def _unturned_views(text: str) -> list[text_mod.View]:
    return list(text_mod._views(text, 2, _UnturnedFolds()))


@settings(max_examples=400, deadline=None)
@given(st.one_of(_leety, _ANY_TEXT, st.text(alphabet="Ab z09@$|!_.-* \n/·", max_size=80)))
def test_rot13_views_turned_from_the_plain_ones_equal_those_undone_directly(text: str) -> None:
    assert list(text_mod.views(text)) == _unturned_views(text)


def test_rot13_views_turned_from_the_plain_ones_equal_those_undone_directly_on_repository_sets() -> None:
    texts = _texts(ROOT / "corpus") + _texts(ROOT / "heldout7") + [_latency_text(n) for n in range(40)]
    turned = 0
    for text in texts:
        assert list(text_mod.views(text)) == _unturned_views(text), text[:200]
        folds = text_mod._Folds()
        list(text_mod._views(text, 2, folds))
        turned += text in folds.undone and folds.undone[text][1] and text.isascii()
    assert turned >= 100  # the turned path is taken


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet='ab .!?\n\t\x0b\x1c|:AB_\u3002\uff1f"{},]', max_size=80))
def test_ascii_segment_breaks_are_the_whole_patterns_breaks(text: str) -> None:
    """The splitter for ASCII text without "|" breaks where the whole pattern does, with and without
    a JSON record's keys (tried only in text with a double quotation mark)."""
    quoted = '"' in text
    expected = detector_mod._SPLITTERS[False, quoted].split(text)
    if text.isascii() and "|" not in text:
        assert detector_mod._SPLITTERS[True, quoted].split(text) == expected
    if not quoted:
        assert detector_mod._SPLITTERS[False, True].split(text) == expected
    edges = ' -*•:;,"“”„«»>'
    assert detector_mod._segments_of(text) == [
        q.lstrip(edges).rstrip(edges + "}]")
        for part in expected
        for q in (
            detector_mod._RUN_ON.split(part) if part.count(" ") > detector_mod._RUN_ON_WORDS else (part,)
        )
        if len(q.strip(edges)) > 1
    ]


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet='ab Z9[]()<>+—|:\uff1a,,"\n', max_size=150))
def test_a_segment_the_label_check_skips_has_no_stamp_and_no_label(text: str) -> None:
    """``_may_be_labelled`` only saves time: where it says no, neither a stamp nor a label matches."""
    if not detector_mod._may_be_labelled(text):
        assert detector_mod._STAMP.match(text) is None
        assert detector_mod._LABEL.match(text) is None


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet='ab Z9[]()<>+—|:\uff1a,,"\n', max_size=150))
@example("lee: assistant: [09:03] send the list")  # stamps after two labels
@example("[09:03] caio: bot, send the list")  # a stamp, a label, no more
def test_no_stamp_is_left_where_a_line_s_own_words_begin(text: str) -> None:
    """``_unlabelled`` tries the stamps after its labels only when it took every label it may: after
    a break the stamps there were just taken, greedily, so none is left where the words begin."""
    at, _ = detector_mod._unlabelled(text, None)
    left = detector_mod._STAMP.match(text, at)
    assert left is None or left.end() == len(text)
