"""Secret detection and redaction: credentials must never be stored verbatim (SPEC §4).

Rules are by *shape* (a provider's key format, a private-key block, a Luhn-valid
card number) or by *context* (a value assigned to ``password``/``api_key``/…
that looks like a credential rather than prose, a placeholder or code).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from graphmem.policy.prefilter import Literals, Prefiltered

__all__ = ["SecretFinding", "find_secrets", "redact_secrets"]


@dataclass(frozen=True, slots=True)
class SecretFinding:
    """Where a secret is: its kind and ``[start, end)`` span. Never holds the secret itself."""

    kind: str
    start: int
    end: int

    @property
    def label(self) -> str:
        return f"secret:{self.kind}"


Check = Callable[[re.Match[str]], bool]


def _always(_: re.Match[str]) -> bool:
    return True


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _key_like(value: str, min_len: int = 16) -> bool:
    """Random-looking: long, mixes letters and digits, high character entropy, not an identifier path."""
    if len(value) < min_len or not re.search(r"\d", value) or not re.search(r"[A-Za-z]", value):
        return False
    if re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", value):
        return False
    return _entropy(value) >= 3.0


_PLACEHOLDER = re.compile(
    r"""^(?:<[^>]*>|\$\{?[\w.:-]*\}?|\{\{.*\}\}|%\(?\w*\)?s?|\*+|x{3,}|\.{3,}|…|redacted|\[redacted[^\]]*\]
    |none|null|nil|undefined|true|false|empty|n/?a|tbd|todo|changeme|change_me|your[_-]?\w*|example\w*
    |•+|!\w+|[~.]?/.*|https?://.*|secret|password|passwd|token|str|string|bytes|int|optional\[.*|secretstr|dummy|fake|placeholder|sample)$""",
    re.I | re.X,
)
_CODE_REF = re.compile(r"^[A-Za-z_][\w]*(?:\.[\w]+|\[|\()|^[A-Z][A-Z0-9_]{2,}$|^\w+\(")
_PROSE = frozenset(
    """a an the is are was be been being not no yes to of in on at by for with from as it this that these
    those
    must should will can could would may might shall do does did has have had reset resets resetting required
    optional incorrect wrong invalid expired expires expiring changed change changing updated update stored
    kept managed rotated rotating set sent saved hidden masked needed missing blank same new old strong weak
    too very still also only just here there see via using and or but if when then so because please policy
    policies length minimum maximum characters field fields prompt prompts screen page link email emails form
    manager vault protected encrypted hashed salted""".split()
)


def _assignment_secret(m: re.Match[str]) -> bool:
    value = m.group("value").rstrip(")]}>.").strip("\"'`")
    quoted = m.group("value")[:1] in "\"'`"
    if not value or _PLACEHOLDER.match(value) or _CODE_REF.match(value):
        return False
    if value.casefold() in _PROSE:
        return False
    return len(value) >= 4 or quoted


def _stated_password(m: re.Match[str]) -> bool:
    # "the password is stored in Vault" is prose; "my password is sunshine42" is a secret.
    value = m.group("value")
    if len(value) < 4 or value.casefold() in _PROSE or _PLACEHOLDER.match(value) or _CODE_REF.match(value):
        return False
    if m.group("q"):
        return True
    if re.search(r"[\d\W_]", value) or re.search(r"[a-z][A-Z]", value):
        return True
    return bool(m.group("owner")) and not m.group("mid")


def _credential_shaped(value: str) -> bool:
    """A bare word after "password" counts only if it looks made up: letters, digits and symbols/case."""
    value = value.rstrip(".,;:!?)")
    if _PLACEHOLDER.match(value) or _CODE_REF.match(value) or len(value) < 6:
        return False
    kinds = sum(bool(re.search(p, value)) for p in (r"[a-z]", r"[A-Z]", r"\d", r"[^\w\s]"))
    return bool(re.search(r"[A-Za-z]", value) and re.search(r"\d", value)) and kinds >= 3


def _generic_key(m: re.Match[str]) -> bool:
    return _key_like(m.group("value").strip("\"'`"))


def _bearer(m: re.Match[str]) -> bool:
    return _key_like(m.group("value"), 16) or m.group("value").startswith("eyJ")


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


# Publicly documented test numbers (Stripe, Adyen, Braintree docs): not anyone's card.
_TEST_CARDS = frozenset(
    {
        "4242424242424242",
        "4111111111111111",
        "4000056655665556",
        "5555555555554444",
        "5200828282828210",
        "5105105105105100",
        "2223003122003222",
        "378282246310005",
        "371449635398431",
        "6011111111111117",
        "3056930009020004",
        "3566002020360505",
    }
)


def _issuer(digits: str) -> bool:
    """Visa, Mastercard (51-55, 2221-2720), Amex, Diners, JCB, Discover/UnionPay prefixes."""
    two, four = int(digits[:2]), int(digits[:4])
    return (
        digits[0] == "4"
        or 51 <= two <= 55
        or 2221 <= four <= 2720
        or two in (34, 37, 30, 36, 38, 39, 35, 62, 64, 65)
        or digits.startswith("6011")
    )


def _card(m: re.Match[str]) -> bool:
    raw = m.group(0)
    digits = re.sub(r"\D", "", raw)
    separators = set(re.findall(r"\D", raw))
    if len(separators) > 1 or not 13 <= len(digits) <= 19:
        return False
    # Issuer ranges (Visa 4, Mastercard 2/5, Amex/Diners/JCB 3, Discover/UnionPay 6).
    return _issuer(digits) and digits not in _TEST_CARDS and len(set(digits)) > 2 and _luhn(digits)


def _connection(m: re.Match[str]) -> bool:
    password = m.group("secret")
    return not _PLACEHOLDER.match(password) and not re.fullmatch(r"\$\{?\w+\}?|%\w+%|\{\w+\}", password)


_CREDENTIAL_WORDS = (
    r"password|passwd|passphrase|passcode|pwd|(?:wifi|wi-fi|"
    r"wlan|wpa2?|network)\s+key|contrase[nñ]a|mot de passe|mdp|passwort|kennwort"
    r"|senha|parola d'ordine|пароль|密码|密碼|口令|パスワード|비밀번호|wachtwoord|has[lł]o"
)
_RULES: tuple[tuple[str, re.Pattern[str], Check], ...] = (
    (
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY"
            r"(?: BLOCK)?-----|\Z)",
            re.S,
        ),
        _always,
    ),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[A-Z0-9]{16}\b"), _always),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})\b"), _always),
    ("gitlab_token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b"), _always),
    ("slack_token", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{10,}\b"), _always),
    (
        "slack_webhook",
        re.compile(r"https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+"),
        _always,
    ),
    ("stripe_key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{12,}\b"), _always),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}"), _always),
    (
        "openai_key",
        re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?(?P<key>[A-Za-z0-9_-]{20,})"),
        lambda m: _key_like(m.group("key"), 20),
    ),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), _always),
    ("sendgrid_key", re.compile(r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}\b"), _always),
    ("npm_token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), _always),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"), _always),
    (
        "connection_string",
        re.compile(r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@]*:(?P<secret>[^\s@/]+)@[^\s/]+"),
        _connection,
    ),
    (
        "bearer_token",
        re.compile(r"\b(?:bearer|token)\s+(?P<secret>(?P<value>[A-Za-z0-9._~+/-]{16,}=*))", re.I),
        _bearer,
    ),
    (
        "basic_auth",
        re.compile(r"\bauthorization\s*:\s*basic\s+(?P<secret>[A-Za-z0-9+/]{8,}=*)", re.I),
        _always,
    ),
    (
        "password",
        re.compile(
            rf"(?<![\w-])(?:[\w-]{{0,40}}[_-])?(?:{_CREDENTIAL_WORDS})(?![\w-])(?:\s+[\w-]+){{0,3}}?[\"']?\s*(?:[:=]|"
            rf"=>|:=)\s*"
            r"(?P<secret>(?P<value>\"[^\"\n]*\"|'[^'\n]*'|`[^`\n]*`|[^\s,;&]+))",
            re.I,
        ),
        _assignment_secret,
    ),
    (
        "password",
        re.compile(
            rf"(?P<owner>\b(?:my|our|his|her|their|mi|mon|ma|mein|meine|minha|meu|il mio|la mia|мой)\s+)?"
            rf"(?:(?<![\w-])[\w-]{{1,40}}\s+)?(?:{_CREDENTIAL_WORDS})"
            rf"(?P<mid>(?:\s+[\w-]+){{1,4}}?)?\s+(?:is now|"
            rf"is|was|es|est|ist|e|é|è|—|-|это)\s+"
            r"(?P<q>[\"'`“«])?(?P<secret>(?P<value>[^\s\"'`”»,;]+?))(?=\.?(?:[\s,;\"'`”»]|$))",
            re.I,
        ),
        _stated_password,
    ),
    (
        "password",
        re.compile(r"(?<![\w-])pass\s*[:=]\s*(?P<secret>[^\s,;&]{6,})", re.I),
        lambda m: bool(
            re.search(r"[A-Za-z]", m.group("secret")) and re.search(r"[\d\W_]", m.group("secret"))
        ),
    ),
    (
        "password",
        re.compile(rf"(?<![\w-])(?:{_CREDENTIAL_WORDS})\s+(?P<secret>[^\s,;]{{6,}})", re.I),
        lambda m: _credential_shaped(m.group("secret")),
    ),
    (
        "api_key",
        re.compile(
            r"(?<![\w-])(?:[\w-]{0,40}(?:api|access|auth|secret|session|refresh|client|private|signing|encryption)"
            r"[_-]?(?:key|token|secret)|token|secret|apikey|client_secret|aws_secret_access_key)"
            r"(?![\w-])(?:\s+[\w-]+){0,3}?[\"']?\s*(?:[:=]|=>|"
            r":=)\s*(?P<secret>(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s,;&]+))",
            re.I,
        ),
        _generic_key,
    ),
    ("card_number", re.compile(r"(?<![\d.-])\d(?:[ -]?\d){12,18}(?![\d-]|\.\d)"), _card),
)


# Each rule, run only on texts that may contain its necessary literals (graphmem.policy.prefilter).
_FILTERS = tuple(Prefiltered((pattern.pattern,), pattern.flags) for _, pattern, _ in _RULES)
# A card number holds no literal, but it begins with 13 digits; this pattern finds those fast.
_THIRTEEN_DIGITS = re.compile(r"\d(?:[ -]?\d){12}")


def find_secrets(text: str, *, reference: bool = False) -> list[SecretFinding]:
    """Every secret in ``text``, by position; overlapping matches are merged into the first.

    ``reference=True`` runs every rule on the text without the prefilter (the same findings).
    """
    found: list[SecretFinding] = []
    literals = Literals(text, index=False)  # few rules: look their literals up directly
    for (kind, pattern, check), prefiltered in zip(_RULES, _FILTERS, strict=True):
        if reference:
            matches = pattern.finditer(text)
        elif kind == "card_number" and not _THIRTEEN_DIGITS.search(text):
            continue
        else:
            matches = prefiltered.finditer(text, literals)
        for m in matches:
            if check(m):
                span = m.span("secret") if "secret" in pattern.groupindex else m.span()
                found.append(SecretFinding(kind, *span))
    found.sort(key=lambda f: (f.start, -f.end))
    merged: list[SecretFinding] = []
    for finding in found:
        if merged and finding.start < merged[-1].end:
            last = merged[-1]
            merged[-1] = SecretFinding(last.kind, last.start, max(last.end, finding.end))
            continue
        merged.append(finding)
    return merged


def redact_secrets(text: str) -> tuple[str, list[SecretFinding]]:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]``, and the findings (spans in ``text``)."""
    findings = find_secrets(text)
    out: list[str] = []
    pos = 0
    for finding in findings:
        out.append(text[pos : finding.start])
        out.append(f"[REDACTED:{finding.kind}]")
        pos = finding.end
    out.append(text[pos:])
    return "".join(out), findings
