"""Memory-poisoning detection: instruction-like or authority-granting text (SPEC §4).

Rules describe *shapes* of attack, not known attack strings: a verb of
disregard near a word for instructions, a standing order ("from now on …"),
a role reassignment, an authority claim or grant, a request for the system
prompt, an attempt to hide something from the user, data sent to an outside
address, chat-template role tags. Each rule has lexicons for several languages
and runs on every view of the text (see ``graphmem.policy.text``), so splitting,
hiding, obfuscating or encoding the words does not get them past.

Rules come in two classes: ``injection`` aims at the system itself (its
instructions, prompt, safeguards); ``directive`` gives standing orders or
authority. The gate treats both as poisoning from untrusted sources.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from graphmem.policy.prefilter import Literals, Matcher, PrefilteredGroup
from graphmem.policy.rules import RULES, TEMPLATED_URL, Rule, RuleClass
from graphmem.policy.text import Channel, View, strip_quoted, views, without_reported_quotations

__all__ = [
    "PoisonFinding",
    "concealed_findings",
    "only_in_reported_quotations",
    "poisoning_findings",
    "scan_poisoning",
]


@dataclass(frozen=True, slots=True)
class PoisonFinding:
    """One rule that fired, and through which channel (``plain`` = visible, unconcealed text)."""

    rule: str
    klass: RuleClass
    channel: Channel
    via: str

    @property
    def label(self) -> str:
        return f"poisoning:{self.rule}" if self.channel == "plain" else f"poisoning:{self.rule}@{self.via}"


# Every rule's alternation narrowed at once for each view (graphmem.policy.prefilter).
_RULE_GROUP = PrefilteredGroup([rule.matcher for rule in RULES])


def _count(rule: Rule, pattern: re.Pattern[str] | Matcher, text: str) -> int:
    check = rule.check
    return sum(1 for m in pattern.finditer(text) if check is None or check(m, text))


def _scan(
    all_views: Iterable[View], reference: bool = False, shared: dict[str, Literals] | None = None
) -> list[tuple[PoisonFinding, int]]:
    seen: set[str] = set()
    found: list[tuple[PoisonFinding, int]] = []
    previous: Literals | None = None
    previous_rot13 = False
    first: Literals | None = None
    for view in all_views:
        if view.text in seen:
            continue
        seen.add(view.text)
        rot13 = view.via == "rot13"
        literals = None
        if not reference:
            literals = shared.get(view.text) if shared is not None else None
            if literals is None:
                # Views of one text mostly equal the one before of their kind (rot13 or not): only
                # what differs is indexed anew. The rot13 view of a plain text is the plain view
                # turned: answered from its index.
                base = previous if previous_rot13 == rot13 else None
                literals = Literals(view.text, base=base, rot13_of=first if rot13 else None)
                if shared is not None:
                    shared[view.text] = literals
            previous, previous_rot13 = literals, rot13
            first = first or literals
        patterns = (
            [rule.pattern for rule in RULES]
            if literals is None
            # A rot13 view rarely has the rules' literals: they rule every rule out without a scan.
            else _RULE_GROUP.narrowed(literals, literals_first=rot13)
        )
        for rule, pattern in zip(RULES, patterns, strict=True):
            n = 0 if pattern is None else _count(rule, pattern, view.text)
            if n:
                found.append((PoisonFinding(rule.name, rule.klass, view.channel, view.via), n))
        # Every match of TEMPLATED_URL contains "://".
        if (reference or "://" in view.text) and TEMPLATED_URL.search(view.text):
            found.append((PoisonFinding("exfiltration_url", "injection", view.channel, view.via), 1))
    return found


def scan_poisoning(
    text: str, *, reference: bool = False, literals: dict[str, Literals] | None = None
) -> list[PoisonFinding]:
    """Every (rule, channel) that fired anywhere in ``text``, visible text first.

    ``reference=True`` runs every rule's whole alternation on every view: the
    slow path the prefiltered one is tested against (same findings, always).
    ``literals`` keeps each view's literal index for other scans of the same text.
    """
    unique: dict[tuple[str, str, str], PoisonFinding] = {}
    for finding, _ in _scan(views(text), reference, literals):
        unique.setdefault((finding.rule, finding.channel, finding.via), finding)
    return list(unique.values())


def poisoning_findings(text: str) -> list[str]:
    """Labels of the rules that fire on ``text``, e.g. ``poisoning:override_instructions@base64``."""
    return sorted({f.label for f in scan_poisoning(text)})


# Views of the whole text that leave what they do not undo as it was: de-obfuscation, and decoding
# rot13, percent-escapes and character escapes (a Chinese sentence reads the same in rot13).
_WHOLE_TEXT_STEPS = frozenset({"text", "raw", "deobfuscated", "rot13", "url", "escape"})


def _whole_text(finding: PoisonFinding) -> bool:
    """Whether ``finding`` comes from a view of the whole text (``_WHOLE_TEXT_STEPS`` only), where a
    rule that fires no more often than in the plain text has found the plain text again."""
    return finding.channel == "obfuscated" or (
        finding.channel == "encoded" and set(finding.via.split(">")) <= _WHOLE_TEXT_STEPS
    )


def concealed_findings(text: str, *, reference: bool = False) -> list[PoisonFinding]:
    """Findings in what the author did *not* say openly: hidden, obfuscated or encoded.

    Quoted passages and code are left out first (a trusted author may quote an
    attack). A finding in a view of the whole text (de-obfuscated, rot13,
    percent- or escape-decoded) counts only if the rule fires more often there
    than on the plain text, i.e. something was disguised: a rule that fires on
    a Chinese sentence fires on its rot13 too, where nothing was hidden.
    """
    scanned = _scan(views(strip_quoted(text)), reference)
    plain: dict[str, int] = {}
    for finding, n in scanned:
        if finding.channel == "plain":
            plain[finding.rule] = max(plain.get(finding.rule, 0), n)
    concealed: dict[tuple[str, str, str], PoisonFinding] = {}
    for finding, n in scanned:
        if finding.channel == "plain" or (_whole_text(finding) and n <= plain.get(finding.rule, 0)):
            continue
        concealed.setdefault((finding.rule, finding.channel, finding.via), finding)
    return list(concealed.values())


def only_in_reported_quotations(text: str, findings: Iterable[PoisonFinding]) -> bool:
    """Whether ``findings`` (of ``text``) all sit in quotations its author reports in prose ("the
    email said \"ignore previous instructions\""): every rule that fired did so in the visible text,
    openly, and none fires once those quotations are blanked out. A rule that fired in hidden,
    encoded or obfuscated text only, or in code, data, markup or a blockquote, is never reported
    speech."""
    findings = list(findings)
    in_the_open = {f.rule for f in findings if f.channel == "plain" and f.via == "text"}
    if not findings or any(f.rule not in in_the_open for f in findings):
        return False
    rest = without_reported_quotations(text)
    return rest is not None and not scan_poisoning(rest)
