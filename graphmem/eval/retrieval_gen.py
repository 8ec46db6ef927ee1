"""A labelled natural-language retrieval set, generated: facts, questions about them, decoys.

Each record is a note of 10-80 words that states one fact — a person did something
to something, at some time ("Priya cancelled the flight on Monday.") — among ordinary
sentences of the bench's natural corpus. No two records state the same fact, but many
share its words: a *decoy* for a fact names the same person and thing with another
action ("Priya booked the flight ..."), so a question that only matches words ranks
decoys as high as the answer. A question naming a person has exactly one relevant record, its fact:

- ``lexical``: asked with the fact's own words ("When was the flight cancelled by Priya?");
- ``paraphrase``: the thing and the action named by other words ("Did Priya call off
  the plane?");
- ``no_overlap``: not one term in common with the answer (no name, other words for
  everything: "Who called off a plane?") — BM25 cannot find these, meaning can. Its
  relevant records are every one stating that action on that thing.

Seeded and deterministic; ``generate(seed).to_jsonl()`` writes the format
``graphmem.eval_retrieval`` loads.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

from graphmem.bench.natural import NaturalCorpus
from graphmem.eval_retrieval import LabelledQuery, LabelledRecord, RetrievalSet
from graphmem.ranking import tokenize

__all__ = ["STYLES", "generate", "to_jsonl"]

STYLES = ("lexical", "paraphrase", "no_overlap")

#: thing -> words people also use for it
_THINGS: dict[str, tuple[str, ...]] = {
    "flight": ("plane", "air ticket"),
    "refund": ("reimbursement", "money back"),
    "invoice": ("bill",),
    "order": ("purchase",),
    "parcel": ("package",),
    "meeting": ("sync-up", "get-together"),
    "contract": ("agreement",),
    "laptop": ("notebook computer",),
    "car": ("vehicle", "automobile"),
    "holiday": ("vacation", "time off"),
    "salary": ("wages", "pay"),
    "doctor appointment": ("physician visit", "medical checkup"),
    "hotel booking": ("room reservation",),
    "password": ("passphrase", "login credentials"),
    "subscription": ("membership", "recurring plan"),
    "server": ("host machine",),
    "report": ("write-up", "summary document"),
    "budget": ("spending plan",),
    "shipment": ("consignment", "freight"),
    "loan": ("credit line", "borrowed money"),
    "lease": ("rental agreement", "tenancy"),
    "insurance claim": ("coverage request",),
    "dinner reservation": ("restaurant table",),
    "exam": ("test paper", "assessment"),
    "printer": ("copier",),
    "database": ("data store",),
    "newsletter": ("mailing",),
    "kitchen repair": ("cooker fix",),
    "passport": ("travel document",),
    "bank transfer": ("wire payment",),
}

#: action (past tense) -> (base form, other words for it in the past tense)
_ACTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "cancelled": ("cancel", ("called off", "scrapped")),
    "approved": ("approve", ("signed off on", "okayed")),
    "shipped": ("ship", ("sent out", "dispatched")),
    "returned": ("return", ("sent back", "brought back")),
    "postponed": ("postpone", ("pushed back", "delayed")),
    "rejected": ("reject", ("turned down", "declined")),
    "paid": ("pay", ("settled",)),
    "repaired": ("repair", ("mended", "patched up")),
    "reviewed": ("review", ("looked over", "checked through")),
    "deleted": ("delete", ("wiped", "erased")),
    "booked": ("book", ("reserved", "arranged")),
    "renewed": ("renew", ("extended",)),
    "submitted": ("submit", ("handed in", "filed")),
    "replaced": ("replace", ("swapped out",)),
    "requested": ("request", ("asked for",)),
    "lost": ("lose", ("misplaced",)),
}

_WHEN = (
    "on Monday", "on Tuesday", "on Wednesday", "on Thursday", "on Friday", "last week", "yesterday",
    "this morning", "in March", "in April", "in June", "at the end of the month", "before the holiday",
)  # fmt: skip

_PEOPLE = (
    "Alice", "Bruno", "Carmen", "Deepak", "Elif", "Fatima", "Goran", "Hana", "Ismael", "Joanna",
    "Kwame", "Liang", "Marta", "Nikos", "Olga", "Pavel", "Quinn", "Rania", "Sven", "Tariq", "Ursula",
    "Viktor", "Wanjiru", "Xiu", "Yusuf", "Zofia", "Anders", "Beatriz", "Cormac", "Dalia",
)  # fmt: skip


def generate(
    seed: int = 11, *, facts: int = 1_000, decoys: int = 1, questions: int = 300, filler: int = 3
) -> RetrievalSet:
    """``facts`` fact records plus ``decoys`` decoys per fact (at least 2,000 records by
    default), and ``questions`` questions spread evenly over ``STYLES``."""
    rng = random.Random(seed)
    corpus = NaturalCorpus(seed)
    fillers = iter(corpus.texts(facts * (1 + decoys), min_words=8, max_words=12 * filler))
    triples = [(p, a, t) for p in _PEOPLE for a in _ACTIONS for t in _THINGS]
    rng.shuffle(triples)
    chosen = triples[:facts]
    taken = set(chosen)
    records: list[LabelledRecord] = []
    facts_of: list[tuple[str, str, str, str, str]] = []  # id, person, action, thing, text
    stating: dict[tuple[str, str], list[str]] = {}  # (action, thing) -> every record stating it
    for i, (person, action, thing) in enumerate(chosen):
        rid = f"fact-{i:04d}"
        text = _note(rng, f"{person} {action} the {thing} {rng.choice(_WHEN)}.", next(fillers))
        records.append(LabelledRecord(rid, text, "fact"))
        facts_of.append((rid, person, action, thing, text))
        stating.setdefault((action, thing), []).append(rid)
        for d in range(decoys):
            other = _decoy(rng, person, action, thing, taken)
            if other is None:
                continue
            taken.add(other)
            did = f"decoy-{i:04d}-{d}"
            decoy = f"{other[0]} {other[1]} the {other[2]} {rng.choice(_WHEN)}."
            records.append(LabelledRecord(did, _note(rng, decoy, next(fillers)), "decoy"))
            stating.setdefault((other[1], other[2]), []).append(did)
    rng.shuffle(records)
    text_of = {r.id: r.content for r in records}
    asked: list[LabelledQuery] = []
    per_style = -(-questions // len(STYLES))
    counts = dict.fromkeys(STYLES, 0)
    for rid, person, action, thing, text in rng.sample(facts_of, len(facts_of)):
        style = min(STYLES, key=lambda s: (counts[s], STYLES.index(s)))
        if counts[style] >= per_style:
            break
        if style == "no_overlap" and len(stating[action, thing]) > 3:
            continue  # asked without a name, it would have too many answers to rank five
        answers = [text_of[r] for r in stating[action, thing]] if style == "no_overlap" else [text]
        found = _question(rng, style, person, action, thing, answers)
        if found is None:
            continue
        query, by_person = found
        # A question naming the person has one answer; one that does not, every record
        # stating that action on that thing.
        relevant = (rid,) if by_person else tuple(stating[action, thing])
        asked.append(LabelledQuery(f"q{len(asked):04d}", query, relevant, style))
        counts[style] += 1
    meta = {
        "name": "graphmem-generated-retrieval-set",
        "seed": seed,
        "description": "Generated by graphmem.eval.retrieval_gen: fact notes, decoys that share a fact's "
        "person and thing with another action, one relevant record per question; styles " + ", ".join(STYLES),
    }
    return RetrievalSet(tuple(records), tuple(asked), meta)


def _note(rng: random.Random, statement: str, filler: str) -> str:
    """The statement among ordinary sentences, at the start, middle or end."""
    sentences = [s.strip() + "." for s in filler.split(".") if s.strip()]
    at = rng.randint(0, len(sentences))
    return " ".join([*sentences[:at], statement, *sentences[at:]])


def _decoy(
    rng: random.Random, person: str, action: str, thing: str, taken: set[tuple[str, str, str]]
) -> tuple[str, str, str] | None:
    for _ in range(20):
        other = rng.choice([a for a in _ACTIONS if a != action])
        if (person, other, thing) not in taken:
            return person, other, thing
    return None


def _question(
    rng: random.Random, style: str, person: str, action: str, thing: str, answers: list[str]
) -> tuple[str, bool] | None:
    """The question and whether it names the person."""
    other_words = _ACTIONS[action][1]
    if style == "lexical":  # the fact's own words (the action as written, so BM25 can match it)
        return f"When was the {thing} {action} by {person}?", True
    if style == "paraphrase":
        return f"When did {person} get the {rng.choice(_THINGS[thing])} {rng.choice(other_words)}?", True
    # no_overlap: no name, other words for the thing and the action, and not one shared term.
    answer = {term for text in answers for term in tokenize(text)}
    for _ in range(30):
        asked = f"Who {rng.choice(other_words)} a {rng.choice(_THINGS[thing])}?"
        if not set(tokenize(asked)) & answer:
            return asked, False
    return None


def to_jsonl(data: RetrievalSet) -> Iterator[str]:
    """The set as JSON Lines in ``graphmem.eval_retrieval``'s format."""
    yield json.dumps({"type": "meta", **data.meta})
    for r in data.records:
        yield json.dumps({"type": "record", "id": r.id, "domain": r.domain, "content": r.content})
    for q in data.queries:
        yield json.dumps(
            {"type": "query", "id": q.id, "style": q.style, "query": q.query, "relevant": list(q.relevant)}
        )
