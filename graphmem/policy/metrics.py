"""Detection and false-rejection rates of the write gate over labelled corpora."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from graphmem.model import Kind, Source, Trust
from graphmem.model.write import WriteOutcome, WritePolicy, WriteProposal
from graphmem.policy.decide import PolicyVerdict, decide

__all__ = ["corpus_metrics"]


def corpus_metrics(
    attacks: Iterable[Mapping[str, Any]],
    benign: Iterable[Mapping[str, Any]],
    policy: WritePolicy | None = None,
) -> dict[str, Any]:
    """Detection rate on ``attacks`` and false-rejection rate on ``benign`` corpus lines.

    Each line has ``text`` and ``source_trust`` (``trusted``/``untrusted``). A line
    is *flagged* when its proposal is rejected or its content redacted. Results
    name lines by index and category, never by text.
    """
    policy = policy or WritePolicy()

    def flagged(line: Mapping[str, Any]) -> PolicyVerdict:
        trust = Trust(line.get("source_trust", "untrusted"))
        proposal = WriteProposal(
            tenant="corpus",
            kind=Kind.EPISODIC,
            scope="user:corpus",
            content=line["text"],
            sources=(Source(type="message", trust=trust),),
            proposed_by="corpus",
        )
        return decide(proposal, policy)

    def is_flagged(v: PolicyVerdict) -> bool:
        return v.outcome is WriteOutcome.REJECTED or any(f.startswith("secret:") for f in v.findings)

    attack_lines, benign_lines = list(attacks), list(benign)
    missed: list[dict[str, Any]] = []
    by_category: dict[str, tuple[int, int]] = {}
    for i, line in enumerate(attack_lines):
        hit = is_flagged(flagged(line))
        category = str(line.get("category", "uncategorised"))
        caught, total = by_category.get(category, (0, 0))
        by_category[category] = (caught + hit, total + 1)
        if not hit:
            missed.append({"index": i, "category": category, "lang": line.get("lang")})
    false_rejections: list[dict[str, Any]] = []
    for i, line in enumerate(benign_lines):
        verdict = flagged(line)
        if is_flagged(verdict):
            false_rejections.append(
                {
                    "index": i,
                    "category": line.get("category"),
                    "reason": str(verdict.reason),
                    "findings": list(verdict.findings),
                }
            )
    n_attacks, n_benign = len(attack_lines), len(benign_lines)
    return {
        "policy": policy.version,
        "attacks": n_attacks,
        "detected": n_attacks - len(missed),
        "detection_rate": (n_attacks - len(missed)) / n_attacks if n_attacks else 1.0,
        "benign": n_benign,
        "false_rejections": len(false_rejections),
        "false_rejection_rate": len(false_rejections) / n_benign if n_benign else 0.0,
        "missed": missed,
        "false_rejected": false_rejections,
        "by_category": {k: {"detected": c, "total": t} for k, (c, t) in sorted(by_category.items())},
    }
