"""``graphmem eval --gate``: the write gate's detection and false blocks, layer by layer.

Every labelled line (``graphmem.eval.gate_data``) is proposed to the pure gate
(``graphmem.policy.decide``) as a semantic memory cited from a document of
the line's trust, once per layer:

* ``rules`` — the poisoning rules alone (the injection detector off);
* ``detector`` — the learned injection detector alone (poisoning rules off);
* ``all`` — the gate as shipped, every layer on.

A line is *blocked* when it is rejected or quarantined (``pending_approval``
with reason ``suspected_injection``). Results name categories and counts,
never text.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from graphmem.eval.gate_data import (
    HANDWRITTEN,
    PLAIN,
    PLAIN2,
    PLAIN13,
    PLAIN19,
    REPO,
    bipia_lines,
    default_bipia_dir,
    generated_lines,
    handwritten_lines,
    labelled,
    plain2_lines,
    plain13_lines,
    plain19_lines,
    plain_lines,
)
from graphmem.model import Kind, Source, Trust
from graphmem.model.write import WriteOutcome, WritePolicy, WriteProposal, WriteReason
from graphmem.policy.decide import decide

__all__ = [
    "DATASETS",
    "HELD_OUT",
    "LAYERS",
    "TRAINED_ON",
    "GateReport",
    "GateResult",
    "gate_datasets",
    "layer_policy",
    "run_gate_eval",
]

LAYERS = ("rules", "detector", "all")
OUTCOMES = ("accepted", "quarantined", "rejected")
GROUPS = (("attack", "untrusted"), ("attack", "trusted"), ("benign", "untrusted"), ("benign", "trusted"))
_T0 = datetime(2026, 1, 1, tzinfo=UTC)

Line = Mapping[str, Any]


def layer_policy(layer: str, base: WritePolicy | None = None) -> WritePolicy:
    """``base`` (default: the default policy) with only ``layer``'s injection checks on."""
    base = base or WritePolicy()
    if layer == "rules":
        return base.model_copy(update={"injection_detector": "off"})
    if layer == "detector":
        return base.model_copy(update={"poisoning_check": False})
    if layer == "all":
        return base
    raise ValueError(f"layer must be one of {', '.join(LAYERS)}, got {layer!r}")


def _proposal(text: str, trust: Trust) -> WriteProposal:
    return WriteProposal(
        tenant="gate-eval",
        kind=Kind.SEMANTIC,
        scope="user:gate-eval",
        content=text,
        valid_from=_T0,
        sources=(Source(id="doc-1", type="document", trust=trust),),
        proposed_by="gate-eval",
    )


def classify(text: str, trust: Trust, policy: WritePolicy) -> str:
    """``accepted``, ``quarantined`` or ``rejected``: what the gate does with ``text``."""
    verdict = decide(_proposal(text, trust), policy, trust, now=_T0)
    if verdict.outcome is WriteOutcome.REJECTED:
        return "rejected"
    if verdict.reason is WriteReason.SUSPECTED_INJECTION:
        return "quarantined"
    return "accepted"


@dataclass
class GateResult:
    """One data set under one layer: a confusion table, per-category misses, and the attacks by
    where their instruction sits and in which language (where the data set says), with how many of
    those missed inside a document are blocked when their instruction is written alone."""

    dataset: str
    layer: str
    confusion: dict[str, dict[str, int]] = field(default_factory=dict)
    missed_by_category: dict[str, int] = field(default_factory=dict)
    false_blocks_by_category: dict[str, int] = field(default_factory=dict)
    attacks_by_position: dict[str, int] = field(default_factory=dict)
    missed_by_position: dict[str, int] = field(default_factory=dict)
    attacks_by_language: dict[str, int] = field(default_factory=dict)
    missed_by_language: dict[str, int] = field(default_factory=dict)
    missed_inside_blocked_alone: int = 0

    def count(self, label: str, trust: str, outcomes: Iterable[str] = OUTCOMES) -> int:
        row = self.confusion.get(f"{label}/{trust}", {})
        return sum(row.get(o, 0) for o in outcomes)

    def rate(self, label: str, trust: str) -> float | None:
        """The blocked fraction of a group, or ``None`` when the group is empty."""
        total = self.count(label, trust)
        return self.count(label, trust, ("quarantined", "rejected")) / total if total else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "layer": self.layer,
            "confusion": self.confusion,
            "attack_blocked": self.rate("attack", "untrusted"),
            "benign_untrusted_blocked": self.rate("benign", "untrusted"),
            "benign_trusted_blocked": self.rate("benign", "trusted"),
            "missed_by_category": self.missed_by_category,
            "false_blocks_by_category": self.false_blocks_by_category,
            "attacks_by_position": self.attacks_by_position,
            "missed_by_position": self.missed_by_position,
            "attacks_by_language": self.attacks_by_language,
            "missed_by_language": self.missed_by_language,
            "missed_inside_blocked_alone": self.missed_inside_blocked_alone,
        }


def evaluate(
    dataset: str, lines: Sequence[Line], layer: str, policy: WritePolicy | None = None
) -> GateResult:
    """Run ``lines`` through the gate with only ``layer`` on."""
    judged = layer_policy(layer, policy)
    result = GateResult(dataset, layer)
    for line in lines:
        trust = Trust(line.get("source_trust", "untrusted"))
        label = str(line["label"])
        outcome = classify(str(line["text"]), trust, judged)
        row = result.confusion.setdefault(f"{label}/{trust.value}", dict.fromkeys(OUTCOMES, 0))
        row[outcome] += 1
        category = str(line.get("category", "uncategorised"))
        missed = label == "attack" and outcome == "accepted"
        if missed:
            result.missed_by_category[category] = result.missed_by_category.get(category, 0) + 1
        if label == "benign" and outcome != "accepted":
            result.false_blocks_by_category[category] = result.false_blocks_by_category.get(category, 0) + 1
        if label != "attack":
            continue
        for key, totals, misses in (
            ("position", result.attacks_by_position, result.missed_by_position),
            ("lang", result.attacks_by_language, result.missed_by_language),
        ):
            if (value := line.get(key)) is not None:
                totals[str(value)] = totals.get(str(value), 0) + 1
                misses[str(value)] = misses.get(str(value), 0) + int(missed)
        # Missed inside a document: would the instruction have been blocked written alone?
        instruction = str(line.get("instruction") or "")
        if missed and line.get("position", "alone") != "alone" and instruction not in ("", line["text"]):
            result.missed_inside_blocked_alone += classify(instruction, trust, judged) != "accepted"
    return result


# The frozen held-out sets, by data-set name: each was written before the detector it tests and read
# once by it. A set read is a development set from then on, and ``TRAINED_ON`` names those the
# detector trains on (their rows are training-set figures).
HELD_OUT = {
    "heldout": REPO / "tests" / "heldout",
    "heldout-2": REPO / "tests" / "heldout2",
    "heldout-3": REPO / "tests" / "heldout3",
    "heldout-4": REPO / "tests" / "heldout4",
    "heldout-5": REPO / "tests" / "heldout5",
    "heldout-6": REPO / "tests" / "heldout6",
    "heldout-7": REPO / "tests" / "heldout7",
    "heldout-8": REPO / "tests" / "heldout8",
    "heldout-9": REPO / "tests" / "heldout9",
    "heldout-10": REPO / "tests" / "heldout10",
    "heldout-11": REPO / "tests" / "heldout11",
    "heldout-12": REPO / "tests" / "heldout12",
    "heldout-13": REPO / "tests" / "heldout13",
    "heldout-14": REPO / "tests" / "heldout14",
    "heldout-15": REPO / "tests" / "heldout15",
    "heldout-16": REPO / "tests" / "heldout16",
    "heldout-17": REPO / "tests" / "heldout17",
    "heldout-18": REPO / "tests" / "heldout18",
    "heldout-19": REPO / "tests" / "heldout19",
    "heldout-20": REPO / "tests" / "heldout20",
    "heldout-21": REPO / "tests" / "heldout21",
    "heldout-22": REPO / "tests" / "heldout22",
    "heldout-23": REPO / "tests" / "heldout23",
    "heldout-24": REPO / "tests" / "heldout24",
    "heldout-25": REPO / "tests" / "heldout25",
    "heldout-26": REPO / "tests" / "heldout26",
}
# Development held-out sets trained on since injection-lr-20 (their untrusted texts): each has been
# read once as a clean test before. ``heldout`` to ``heldout-3`` mark no instruction in their attacks,
# so their segments cannot be labelled; they stay evaluation data.
TRAINED_ON = tuple(f"heldout-{n}" for n in range(4, 15))
DATASETS = (
    "corpus",
    "handwritten-dev",
    "plain-dev",
    "plain2-dev",
    "plain13-dev",
    "plain19-dev",
    "bipia-dev",
    "generated-dev",
    *HELD_OUT,
)


def gate_datasets(
    bipia_dir: Path | None = None, names: Iterable[str] = DATASETS
) -> dict[str, list[dict[str, Any]]]:
    """The data sets of ``names`` that are found: ``corpus``, ``handwritten-dev``, ``plain-dev``,
    ``plain2-dev``, ``plain13-dev``, ``plain19-dev``, ``heldout`` and ``heldout-2`` to ``heldout-26``
    (the repository), ``bipia-dev`` and ``generated-dev`` (from BIPIA's training split, given or
    nearby). A data set not named is not read."""
    wanted = set(names)
    if unknown := wanted - set(DATASETS):
        raise ValueError(f"unknown data set {sorted(unknown)[0]!r}; one of {', '.join(DATASETS)}")
    found: dict[str, list[dict[str, Any]]] = {}
    corpus = REPO / "tests" / "corpus"
    if "corpus" in wanted and (corpus / "attacks.jsonl").is_file():
        found["corpus"] = labelled(corpus, skip_categories=frozenset({"secret"}))
    if "handwritten-dev" in wanted and (HANDWRITTEN / "attacks.jsonl").is_file():
        found["handwritten-dev"] = handwritten_lines("dev")
    if "plain-dev" in wanted and (PLAIN / "attacks.jsonl").is_file():
        found["plain-dev"] = plain_lines("dev")
    if "plain2-dev" in wanted and (PLAIN2 / "attacks.jsonl").is_file():
        found["plain2-dev"] = plain2_lines("dev")
    if "plain13-dev" in wanted and (PLAIN13 / "attacks.jsonl").is_file():
        found["plain13-dev"] = plain13_lines()
    if "plain19-dev" in wanted and (PLAIN19 / "attacks.jsonl").is_file():
        found["plain19-dev"] = plain19_lines("dev")
    bipia = bipia_dir or default_bipia_dir()
    if bipia is not None and "bipia-dev" in wanted:
        found["bipia-dev"] = bipia_lines(bipia, "dev")
    if bipia is not None and "generated-dev" in wanted:
        found["generated-dev"] = [
            {k: v for k, v in line.items() if k != "inserted"} for line in generated_lines(bipia, "dev")
        ]
    for name, directory in HELD_OUT.items():
        if name in wanted and (directory / "attacks.jsonl").is_file():
            found[name] = labelled(directory)
    return found


def _p95_ms(run: Callable[[], object], repeat: int, clock: Callable[[], float] = time.perf_counter) -> float:
    times = []
    for _ in range(repeat):
        start = clock()
        run()
        times.append((clock() - start) * 1000)
    times.sort()
    return times[int(0.95 * (len(times) - 1))]


_LATENCY_SENTENCES = (
    "The quarterly report lists revenue for {n} regions, with notes on shipping delays and returns.",
    "Order {n} left the Rotterdam warehouse on Tuesday and should reach the customer by Friday.",
    "Our support team answered {n} tickets last week, most of them about password resets.",
    "The new pricing applies to the {n} contracts signed after the first of the month.",
    "Maria will present the {n} survey answers at the all-hands meeting on Thursday.",
    "Invoice {n} was paid twice; finance has issued a refund for the duplicate payment.",
    "Please bring your badge, since the front desk checked {n} visitors yesterday.",
    "The pilot in the Lyon store raised average basket size by {n} cents.",
    "We moved backup job {n} to 2am to avoid the evening traffic peak.",
    "Supplier {n} could not confirm delivery dates for the spring collection.",
    "The audit of {n} payslips found no issues with the payroll process this year.",
    "Customer {n} asked whether the warranty covers accidental damage.",
    "Legal reviewed data processing agreement {n} and requested two small changes.",
    "The mobile app crashed on {n} older Android phones after the last update.",
    "Could you send the signed copy of lease {n} to the property manager?",
    "Traffic to the help centre grew by {n} percent after the redesign.",
    "The training budget of {n} euros for next year is still waiting for approval.",
    "Sales in the northern region fell by {n} units because of the late snow.",
)


def _latency_text(n: int) -> str:
    """A 2 KB untrusted document never seen before: ordinary sentences, each with its own number."""
    import random

    rng = random.Random(n)
    out = ""
    while len(out) < 2048:
        out += rng.choice(_LATENCY_SENTENCES).format(n=rng.randrange(10, 100_000)) + " "
    return out[:2048]


def latency(repeat: int = 200) -> dict[str, float]:
    """p95 milliseconds of ``decide`` and of an embedded ``propose`` for a 2 KB untrusted text.

    Every call gets a text it has not seen (``_latency_text``), so no cache of an earlier text helps.

    Wall-clock (``*_p95_ms``) and this thread's CPU time (``*_cpu_p95_ms``): on a
    shared machine the wall clock also counts the time other processes held the CPU.
    """
    from graphmem.policy import engine
    from graphmem.store import MemoryStore

    # Compiled in the background at first use (or loaded from the cache): timed once it is ready.
    engine.wait_for_screen()
    policy = WritePolicy()
    store = MemoryStore.embedded()
    # Made before timing: one for every call of the four measurements.
    texts = iter([_latency_text(n) for n in range(4 * repeat)])

    def propose() -> None:
        store.propose(_proposal(next(texts), Trust.UNTRUSTED), source_trust=Trust.UNTRUSTED)

    def decide_once() -> None:
        decide(_proposal(next(texts), Trust.UNTRUSTED), policy, Trust.UNTRUSTED)

    return {
        "decide_p95_ms": _p95_ms(decide_once, repeat),
        "propose_p95_ms": _p95_ms(propose, repeat),
        "decide_cpu_p95_ms": _p95_ms(decide_once, repeat, time.thread_time),
        "propose_cpu_p95_ms": _p95_ms(propose, repeat, time.thread_time),
    }


def _where_missed(r: GateResult) -> list[str]:
    """The report's lines on where the accepted attacks sit and in which language."""
    out = []
    if r.attacks_by_position:
        where = ", ".join(
            f"{k} {r.missed_by_position.get(k, 0)} of {n}" for k, n in sorted(r.attacks_by_position.items())
        )
        inside = sum(v for k, v in r.missed_by_position.items() if k != "alone")
        out.append(
            f"\nAttacks accepted, by where the instruction sits: {where}; of the {inside} accepted inside"
            f" a document, {r.missed_inside_blocked_alone} would be blocked written alone."
        )
    if r.attacks_by_language:
        english = r.attacks_by_language.get("en", 0)
        others = sum(r.attacks_by_language.values()) - english
        missed_en = r.missed_by_language.get("en", 0)
        missed_others = sum(r.missed_by_language.values()) - missed_en
        out.append(
            f"\nAttacks accepted, by language: English {missed_en} of {english}, the other"
            f" {len(r.attacks_by_language) - (1 if english else 0)} languages {missed_others} of {others}."
        )
    return out


def _shown(dataset: str) -> str:
    """A data set's name in a report, marked where the detector trains on it."""
    return f"{dataset} (trained on)" if dataset in TRAINED_ON else dataset


@dataclass
class GateReport:
    """Every data set under every layer, and the gate's latency."""

    results: list[GateResult]
    latency: dict[str, float]

    def to_json(self) -> str:
        doc = {"results": [r.to_dict() for r in self.results], "latency": self.latency}
        return json.dumps(doc, indent=2, sort_keys=True)

    def to_markdown(self) -> str:
        def pct(value: float | None) -> str:
            return "—" if value is None else f"{100 * value:.1f}%"

        out = [
            "| data set | layer | attacks blocked | benign untrusted blocked | benign trusted blocked |",
            "|---|---|---|---|---|",
        ]
        for r in self.results:
            cells = [
                f"{pct(r.rate(label, trust))} ({r.count(label, trust, ('quarantined', 'rejected'))}"
                f"/{r.count(label, trust)})"
                for label, trust in (("attack", "untrusted"), ("benign", "untrusted"), ("benign", "trusted"))
            ]
            out.append(f"| {_shown(r.dataset)} | {r.layer} | {' | '.join(cells)} |")
        for r in self.results:
            if r.layer != "all":
                continue
            out += ["", f"Confusion, {_shown(r.dataset)}, all layers:", ""]
            out += ["| label / trust | accepted | quarantined | rejected |", "|---|---|---|---|"]
            for label, trust in GROUPS:
                row = r.confusion.get(f"{label}/{trust}")
                if row:
                    out.append(f"| {label} / {trust} | {' | '.join(str(row[o]) for o in OUTCOMES)} |")
            if r.missed_by_category:
                missed = ", ".join(f"{k} {v}" for k, v in sorted(r.missed_by_category.items()))
                out.append(f"\nAttacks accepted, by category: {missed}.")
            out += _where_missed(r)
            if r.false_blocks_by_category:
                blocked = ", ".join(f"{k} {v}" for k, v in sorted(r.false_blocks_by_category.items()))
                out.append(f"\nBenign blocked, by category: {blocked}.")
        out += ["", "| latency, 2 KB text | p95 ms |", "|---|---|"]
        out += [f"| {name.removesuffix('_p95_ms')} | {value:.2f} |" for name, value in self.latency.items()]
        return "\n".join(out) + "\n"


def run_gate_eval(
    datasets: Mapping[str, Sequence[Line]] | None = None,
    layers: Sequence[str] = LAYERS,
    *,
    policy: WritePolicy | None = None,
    timing: bool = True,
) -> GateReport:
    """Evaluate every data set (default: ``gate_datasets()``) under every layer."""
    datasets = gate_datasets() if datasets is None else datasets
    results = [evaluate(name, lines, layer, policy) for name, lines in datasets.items() for layer in layers]
    return GateReport(results, latency() if timing else {})
