"""Labelled texts for the write gate's evaluation and the injection detector's training.

A *line* is a mapping with ``text``, ``label`` (``attack`` / ``benign``),
``source_trust`` (``trusted`` / ``untrusted``) and ``category``. Data sets:

* ``corpus`` — ``tests/corpus/``, the set the rules were written against
  (its ``secret`` lines are left out: they measure the secret detector).
* ``heldout`` — ``tests/heldout/``, hand-written and frozen; never tuned on.
* ``bipia-train`` / ``bipia-dev`` — BIPIA's *training* split composed the way
  the benchmark composes attacks: one instruction inserted into a clean email,
  table or code answer at its start, middle or end. The instruction
  categories in ``DEV_CATEGORIES`` and the last fifth of the contexts go only
  to ``bipia-dev``, so dev measures attacks of kinds the detector never saw.
* ``generated-train`` / ``generated-dev`` — the instructions and look-alikes of
  ``graphmem.eval.gate_variants`` (13 languages) inserted into the same
  split's clean contexts; dev's phrasings are the half training never used.
* ``handwritten-train`` / ``handwritten-dev`` — ``graphmem/eval/data/handwritten/``:
  plain-language injections written by hand the way they occur in reviews,
  tickets, mail, notes, code, calendars, tables and chats, and benign
  look-alikes (recipes, manuals, requests to colleagues, quoted attacks in
  incident reports, trusted preferences), in 13 languages. Each line's
  ``split`` is a seeded hash of its text (``handwritten_split``).
* ``plain-train`` / ``plain-dev`` — ``graphmem/eval/data/plain/``: 240
  plain-language injections (ten categories, 13 languages, in eleven kinds of
  carrier or alone) and 200 look-alikes (30 trusted), written by a writer who
  had seen none of the gate, its training data or its evaluation sets. Each
  line's half is a seeded hash of its text (``plain_lines``).
* ``plain2-train`` / ``plain2-dev`` — ``graphmem/eval/data/plain2/``: 490
  plain-language injections (fourteen categories, 22 languages, in sixteen
  kinds of carrier or alone) and 418 look-alikes (58 trusted), written by two
  writers who had seen none of the gate, its data or its evaluation sets.
  Halves as the plain set's (``plain2_lines``).
* ``plain3`` — ``graphmem/eval/data/plain3/``: 560 plain-language injections
  (fourteen categories, 28 languages) and 300 look-alikes (40 trusted), written
  by three writers who had seen none of the gate, its data or its evaluation
  sets; training data only, every line (``plain3_lines``).
* ``plain4`` — ``graphmem/eval/data/plain4/``: 400 more plain-language
  injections (ten categories, 38 languages) and 300 look-alikes (36 trusted),
  written the same way after ``injection-lr-8``; training data only
  (``plain4_lines``).
* ``plain5`` — ``graphmem/eval/data/plain5/``: 600 plain-language injections
  phrased as statements, decisions, conditions and wishes (ten categories, 38
  languages) and 360 look-alikes (40 trusted), written the same way after
  ``injection-lr-9``; training data only (``plain5_lines``).
* ``plain6`` — ``graphmem/eval/data/plain6/``: 600 injections in varied layouts
  (wrapped lines, quoted replies, markdown, tables, brackets, emoji, capitals,
  no punctuation; ten categories, 35 languages) and 400 look-alikes (40
  trusted), written by four writers from the briefs beside it after
  ``injection-lr-13``; training data only (``plain6_lines``).
* ``plain7`` — ``graphmem/eval/data/plain7/``: 500 subtle injections (long
  documents, the instruction buried, split, impersonal; ten categories, 31
  languages) and 400 look-alikes (30 trusted), written by four writers from
  the briefs beside it after ``injection-lr-14``; training data only
  (``plain7_lines``).
* ``plain8`` — ``graphmem/eval/data/plain8/``: 500 injections planted in what
  an agent's tools bring back (JSON, CSV, HTML, logs, transcripts, reviews,
  search results; ten categories) and 500 look-alikes of the same kinds (20
  trusted), written by four writers from the briefs beside it after
  ``injection-lr-15``; training data only (``plain8_lines``).
* ``plain9`` — ``graphmem/eval/data/plain9/``: 750 injections from three
  domains of an agent's work (a household's mail and chats, a coding
  assistant's repository, an institution's forms and files; ten categories,
  35 languages) and 600 untrusted look-alikes of the same domains, written
  by six writers from the briefs beside it after ``injection-lr-15``;
  training data only (``plain9_lines``).
* ``plain10`` — ``graphmem/eval/data/plain10/``: 750 injections from three
  more domains (a school's essays and forums, a newsroom's and a lab's
  papers, reviews and transcripts, an agent's tool manifests, other agents'
  messages and the web pages it browses; ten categories, 33 languages) and
  600 untrusted look-alikes of the same domains, six writers, the briefs of
  ``plain9``; training data only (``plain10_lines``).
* ``plain11`` — ``graphmem/eval/data/plain11/``: 750 injections and 600
  untrusted look-alikes from three more domains (travel and hospitality,
  civic life and non-profits, personal finance and investing; 38
  languages), six writers, the briefs of ``plain9``, after
  ``injection-lr-16``; written as training data (``plain11_lines``) but not
  trained on: adding it, at weight 30 or 10, lowered the development sets'
  ranking (docs/eval.md, after ``injection-lr-16``).
* ``plain12`` — ``graphmem/eval/data/plain12/``: 1,200 injections and
  1,140 look-alikes (180 trusted, not trained on) from six more domains (a
  clinic, a law firm's and HR's office, a research group, a freight
  dispatch office, a letting agency, a newsroom; 33 languages), twelve
  writers, the briefs of ``tests/heldout16/`` with other domains, after
  ``injection-lr-19``; training data (``plain12_lines``) from ``injection-lr-20``.
* ``plain13`` — ``graphmem/eval/data/plain13/``: 599 injections and 570
  look-alikes (90 trusted) from three more domains (a restaurant, a garage,
  an insurance claims desk; 27 and 39 languages), written with ``plain12``;
  **not trained on**: the development set ``plain13-dev`` (``plain13_lines``),
  exam-style text no detector trains on.
* ``plain14`` — ``graphmem/eval/data/plain14/``: 600 injections and 570
  look-alikes (90 trusted, not trained on) from three more domains (a
  veterinary practice, a bookkeeping and tax firm, a hotel; 26 and 31
  languages), six writers, ``plain12``'s briefs with other domains, after
  ``injection-lr-21``; training data (``plain14_lines``) from
  ``injection-lr-22``.
* ``plain15`` — ``graphmem/eval/data/plain15/``: 600 injections and 570
  look-alikes (90 trusted, not trained on) from three more domains (a gym,
  a recruitment and staffing agency, a museum; 27 and 31 languages), six
  writers, ``plain14``'s briefs with other domains, after
  ``injection-lr-22``; training data (``plain15_lines``) from
  ``injection-lr-23``.
* ``plain16`` — ``graphmem/eval/data/plain16/``: 599 injections and 570
  look-alikes (90 trusted, not trained on) from three more domains (a
  dental practice, a campsite and holiday park, a driving school), six
  writers, ``plain15``'s briefs with other domains, after
  ``injection-lr-23``; training data (``plain16_lines``) from
  ``injection-lr-24``.
* ``plain17`` — ``graphmem/eval/data/plain17/``: 600 injections and 570
  look-alikes (90 trusted, not trained on) from three more domains (a
  family-run funeral home, a community theatre, a plumbing and heating
  firm), six writers, ``plain16``'s briefs with other domains, after
  ``injection-lr-25``; training data (``plain17_lines``) from
  ``injection-lr-26``.
* ``plain18`` — ``graphmem/eval/data/plain18/``: 600 injections and 570
  look-alikes (90 trusted, not trained on) from three more domains (a
  small IT support firm, a wedding and events venue, a garden centre and
  landscaping business), six writers, ``plain17``'s briefs with other
  domains, after ``injection-lr-27``; training data (``plain18_lines``)
  from ``injection-lr-28``.
* ``plain19`` — ``graphmem/eval/data/plain19/``: 600 short injections and
  660 short look-alikes (60 trusted, not trained on), none over 45 words,
  from three more domains (a community pharmacy, a minicab firm, a
  cleaning company), six writers, after ``injection-lr-28``: the pharmacy's
  and the minicab firm's lines are training data, the cleaning company's
  the development set ``plain19-dev`` (``plain19_lines``).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

__all__ = [
    "DEV_CATEGORIES",
    "HANDWRITTEN",
    "PLAIN",
    "PLAIN2",
    "PLAIN3",
    "PLAIN4",
    "PLAIN5",
    "PLAIN6",
    "PLAIN7",
    "PLAIN8",
    "PLAIN9",
    "PLAIN10",
    "PLAIN11",
    "PLAIN12",
    "PLAIN13",
    "PLAIN14",
    "PLAIN15",
    "PLAIN16",
    "PLAIN17",
    "PLAIN18",
    "PLAIN19",
    "PLAIN19_DEV_DOMAIN",
    "REPO",
    "WHOLE_PLAIN_SETS",
    "bipia_contexts",
    "bipia_lines",
    "compose",
    "default_bipia_dir",
    "generated_lines",
    "handwritten_lines",
    "handwritten_split",
    "jsonl_lines",
    "labelled",
    "plain2_lines",
    "plain3_lines",
    "plain4_lines",
    "plain5_lines",
    "plain6_lines",
    "plain7_lines",
    "plain8_lines",
    "plain9_lines",
    "plain10_lines",
    "plain11_lines",
    "plain12_lines",
    "plain13_lines",
    "plain14_lines",
    "plain15_lines",
    "plain16_lines",
    "plain17_lines",
    "plain18_lines",
    "plain19_lines",
    "plain_lines",
]

Line = dict[str, Any]

REPO = Path(__file__).resolve().parents[2]
_DATA = Path(__file__).resolve().parent / "data"
HANDWRITTEN = _DATA / "handwritten"
PLAIN = _DATA / "plain"
(
    PLAIN2,
    PLAIN3,
    PLAIN4,
    PLAIN5,
    PLAIN6,
    PLAIN7,
    PLAIN8,
    PLAIN9,
    PLAIN10,
    PLAIN11,
    PLAIN12,
    PLAIN13,
    PLAIN14,
    PLAIN15,
    PLAIN16,
    PLAIN17,
    PLAIN18,
    PLAIN19,
) = (_DATA / f"plain{n}" for n in range(2, 20))
# Chosen among 5,000 seeds as the one whose split is most even per category, language and trust.
PLAIN_SEED = 3664
# Among 5,000 seeds, the most even of those that put each category and language of ten lines or
# more a quarter to three quarters in each half.
PLAIN2_SEED = 3019
# Chosen among 20,000 seeds as the one whose split is most even per family and per language.
HANDWRITTEN_SEED = 2296

DEV_CATEGORIES = frozenset(
    {
        # text attacks: one of each family left out, plus two more
        "Learning and Tutoring",
        "Language Translation",
        "Anagramming",
        "Persuasion",
        "Clickbait",
        # code attacks
        "Memory Scanning",
        "Network Propagation",
        "Cryptocurrency Mining",
    }
)
POSITIONS = ("start", "middle", "end")
_SENTENCE_END = re.compile(r"[.!?。]\s+|(?<=[a-z][.!?])(?=[A-Z][a-z])")
_MAX_CONTEXT = 3000


def default_bipia_dir() -> Path | None:
    """``$GRAPHMEM_BIPIA``, else ``../shared/data/bipia-train`` next to the repository, else the
    workplace's shared data folder, if one of them is there."""
    import os

    candidates = [os.environ.get("GRAPHMEM_BIPIA"), REPO.parent / "shared" / "data" / "bipia-train"]
    candidates.append(Path("/work/shared/data/bipia-train"))
    for candidate in candidates:
        if candidate and (Path(candidate) / "text_attack_train.json").is_file():
            return Path(candidate)
    return None


def jsonl_lines(path: Path) -> list[Line]:
    """The JSON objects of a JSON Lines file, one a line."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def labelled(directory: Path, *, skip_categories: frozenset[str] = frozenset()) -> list[Line]:
    """``attacks.jsonl`` and ``benign.jsonl`` of ``directory`` as labelled lines."""
    lines: list[Line] = []
    for name, label in (("attacks", "attack"), ("benign", "benign")):
        for line in jsonl_lines(directory / f"{name}.jsonl"):
            if line.get("category") in skip_categories:
                continue
            lines.append({**line, "label": label, "source_trust": line.get("source_trust", "untrusted")})
    return lines


def compose(context: str, instruction: str, position: str, *, table: bool = False) -> str:
    """``context`` with ``instruction`` inserted at its start, middle (a sentence or row break) or end."""
    sep = "\n" if table else " "
    if position == "start":
        return f"{instruction}{sep}{context}"
    if position == "end":
        return f"{context}{sep}{instruction}"
    if table:
        rows = context.split("\n")
        half = len(rows) // 2
        return "\n".join([*rows[:half], instruction, *rows[half:]])
    # At a sentence break; in text without one, at a space (never inside a word).
    cuts = [m.end() for m in _SENTENCE_END.finditer(context)]
    cuts = cuts or [m.end() for m in re.finditer(r"\s+", context)] or [len(context) // 2]
    mid = min(cuts, key=lambda c: abs(c - len(context) / 2))
    return f"{context[:mid].rstrip()} {instruction} {context[mid:].lstrip()}"


def _contexts(directory: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for kind in ("email", "table", "code"):
        texts = []
        for row in jsonl_lines(directory / f"{kind}_train.jsonl"):
            context = row["context"]
            text = "\n".join(context) if isinstance(context, list) else str(context)
            text = text.strip()
            if text and len(text) <= _MAX_CONTEXT:
                texts.append(text)
        out[kind] = texts
    return out


def _split(items: list[str], split: str) -> list[str]:
    cut = len(items) - len(items) // 5
    return items[:cut] if split == "train" else items[cut:]


def _instructions(directory: Path, split: str) -> Iterator[tuple[str, str, str]]:
    """(family, category, instruction) of the split: ``text`` attacks and ``code`` attacks."""
    for family, name in (("text", "text_attack_train.json"), ("code", "code_attack_train.json")):
        with (directory / name).open(encoding="utf-8") as handle:
            by_category: dict[str, list[str]] = json.load(handle)
        for category, texts in sorted(by_category.items()):
            if (category in DEV_CATEGORIES) == (split == "dev"):
                for text in texts:
                    yield family, category, text


def bipia_contexts(directory: Path, split: str) -> list[tuple[str, str]]:
    """The clean contexts of ``split`` as ``(kind, text)``: ``email``, ``table`` or ``code``."""
    if split not in ("train", "dev"):
        raise ValueError(f"split must be 'train' or 'dev', got {split!r}")
    return [(kind, t) for kind, texts in _contexts(directory).items() for t in _split(texts, split)]


def generated_lines(directory: Path, split: str, *, n: int = 600, seed: int = 23) -> list[Line]:
    """Generated instructions (``gate_variants.injections``) inserted into the split's contexts, and
    its look-alikes as benign lines. All untrusted. Deterministic for a seed."""
    from graphmem.eval.gate_variants import injections, look_alikes

    rng = random.Random(f"{seed}:{split}:generated")
    contexts = bipia_contexts(directory, split)
    prose = [c for c in contexts if c[0] != "code"]
    code = [c for c in contexts if c[0] == "code"]
    lines: list[Line] = []
    for k, (lang, family, instruction) in enumerate(injections(split, n, seed=seed)):
        kind, context = rng.choice(code if family == "code" else prose)
        position = POSITIONS[k % 3]
        lines.append(
            {
                "text": compose(context, instruction, position, table=kind == "table"),
                "label": "attack",
                "source_trust": "untrusted",
                "category": family,
                "lang": lang,
                "carrier": kind,
                "position": position,
                "inserted": instruction,
            }
        )
    # Look-alikes alone: one inserted into an unrelated email or table would not be an ordinary text.
    for sentence in look_alikes(split):
        lines.append(
            {"text": sentence, "label": "benign", "source_trust": "untrusted", "category": "look_alike"}
        )
    return lines


def bipia_lines(directory: Path, split: str, *, per_instruction: int = 6, seed: int = 19) -> list[Line]:
    """BIPIA-composed attacks and the clean contexts of ``split`` (``train`` or ``dev``).

    Each instruction goes into ``per_instruction`` contexts (text attacks into
    emails and tables, code attacks into code answers), cycling through the
    three positions; every clean context of the split is a benign line. All
    lines are untrusted: they come from documents. Deterministic for a seed.
    """
    if split not in ("train", "dev"):
        raise ValueError(f"split must be 'train' or 'dev', got {split!r}")
    rng = random.Random(f"{seed}:{split}")
    contexts = {kind: _split(texts, split) for kind, texts in _contexts(directory).items()}
    prose = [("email", t) for t in contexts["email"]] + [("table", t) for t in contexts["table"]]
    code = [("code", t) for t in contexts["code"]]
    lines: list[Line] = []
    for n, (family, category, instruction) in enumerate(_instructions(directory, split)):
        pool = code if family == "code" else prose
        for k, (kind, context) in enumerate(rng.sample(pool, min(per_instruction, len(pool)))):
            position = POSITIONS[(n + k) % 3]
            lines.append(
                {
                    "text": compose(context, instruction, position, table=kind == "table"),
                    "label": "attack",
                    "source_trust": "untrusted",
                    "category": category,
                    "carrier": kind,
                    "position": position,
                }
            )
    for kind, texts in contexts.items():
        for text in texts:
            lines.append(
                {"text": text, "label": "benign", "source_trust": "untrusted", "category": f"clean_{kind}"}
            )
    return lines


def _half(name: str, seed: int, text: str) -> str:
    """``train`` or ``dev``: the lowest bit of a seeded hash of ``text`` (stable: one line's split
    never depends on the other lines)."""
    digest = hashlib.sha256(f"{name}:{seed}:{text}".encode()).digest()
    return "train" if digest[0] & 1 == 0 else "dev"


def handwritten_split(text: str, seed: int = HANDWRITTEN_SEED) -> str:
    """The hand-written line's half (``_half``)."""
    return _half("handwritten", seed, text)


def handwritten_lines(split: str | None = None, directory: Path = HANDWRITTEN) -> list[Line]:
    """The hand-written set's lines of ``split`` (``train``, ``dev``; ``None``: every line)."""
    if split not in ("train", "dev", None):
        raise ValueError(f"split must be 'train' or 'dev', got {split!r}")
    return [line for line in labelled(directory) if split is None or line["split"] == split]


def plain_lines(
    split: str | None = None, directory: Path = PLAIN, *, name: str = "plain", seed: int = PLAIN_SEED
) -> list[Line]:
    """The plain set's lines of ``split`` (``train``, ``dev``; ``None``: every line), each with its
    half (``_half``) as ``split``."""
    if split not in ("train", "dev", None):
        raise ValueError(f"split must be 'train' or 'dev', got {split!r}")
    lines = [{**line, "split": _half(name, seed, line["text"])} for line in labelled(directory)]
    return [line for line in lines if split is None or line["split"] == split]


def plain2_lines(split: str | None = None, directory: Path = PLAIN2) -> list[Line]:
    """The second plain set's lines of ``split``, halved as the first's (``plain_lines``)."""
    return plain_lines(split, directory, name="plain2", seed=PLAIN2_SEED)


def plain3_lines(directory: Path = PLAIN3) -> list[Line]:
    """The third plain set's lines: training data only, so every line is in ``train``."""
    return [{**line, "split": "train"} for line in labelled(directory)]


# The fourth to twelfth and the fourteenth to eighteenth plain sets: training data only, each loaded
# as the third (``plain3_lines``).
plain4_lines = partial(plain3_lines, PLAIN4)
plain5_lines = partial(plain3_lines, PLAIN5)
plain6_lines = partial(plain3_lines, PLAIN6)
plain7_lines = partial(plain3_lines, PLAIN7)
plain8_lines = partial(plain3_lines, PLAIN8)
plain9_lines = partial(plain3_lines, PLAIN9)
plain10_lines = partial(plain3_lines, PLAIN10)
plain11_lines = partial(plain3_lines, PLAIN11)
plain12_lines = partial(plain3_lines, PLAIN12)
plain14_lines = partial(plain3_lines, PLAIN14)
plain15_lines = partial(plain3_lines, PLAIN15)
plain16_lines = partial(plain3_lines, PLAIN16)
plain17_lines = partial(plain3_lines, PLAIN17)
plain18_lines = partial(plain3_lines, PLAIN18)

# Those sets by name, in the order they were written.
WHOLE_PLAIN_SETS: dict[str, Callable[[], list[Line]]] = {
    "plain3": plain3_lines,
    "plain4": plain4_lines,
    "plain5": plain5_lines,
    "plain6": plain6_lines,
    "plain7": plain7_lines,
    "plain8": plain8_lines,
    "plain9": plain9_lines,
    "plain10": plain10_lines,
    "plain11": plain11_lines,
    "plain12": plain12_lines,
    "plain14": plain14_lines,
    "plain15": plain15_lines,
    "plain16": plain16_lines,
    "plain17": plain17_lines,
    "plain18": plain18_lines,
}


# The nineteenth plain set's development half: one of its three domains, so that short texts are
# measured on a business the detector was not trained on.
PLAIN19_DEV_DOMAIN = "cleaning"


def plain19_lines(split: str | None = None, directory: Path = PLAIN19) -> list[Line]:
    """The nineteenth plain set's lines of ``split`` (``train``: the pharmacy's and the minicab firm's;
    ``dev``: the cleaning company's, ``PLAIN19_DEV_DOMAIN``; ``None``: every line), each with its half
    as ``split``."""
    if split not in ("train", "dev", None):
        raise ValueError(f"split must be 'train' or 'dev', got {split!r}")
    lines = [
        {**line, "split": "dev" if line["domain"] == PLAIN19_DEV_DOMAIN else "train"}
        for line in labelled(directory)
    ]
    return [line for line in lines if split is None or line["split"] == split]


def plain13_lines(directory: Path = PLAIN13) -> list[Line]:
    """The thirteenth plain set's lines: a development set only (``plain13-dev``), every line in ``dev``."""
    return [{**line, "split": "dev"} for line in labelled(directory)]
