"""Secret detection and redaction: credentials must never be stored verbatim (SPEC §4).

Rules are by *shape* (a provider's key format, a private-key block, a Luhn-valid
card number) or by *context* (a value assigned to ``password``/``api_key``/…
that looks like a credential rather than prose, a placeholder or code).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
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
# Words that make "<owner> password is …" a statement about someone's own password.
_OWNERS = (
    "my",
    "our",
    "his",
    "her",
    "their",
    "mi",
    "mon",
    "ma",
    "mein",
    "meine",
    "minha",
    "meu",
    "il mio",
    "la mia",
    "мой",
)
_PREFIX = 40  # word characters a credential word may be prefixed with ("db_password", "admin password")
# "db_password = …", "password for the admin account: …"
_ASSIGNED_PASSWORD = re.compile(
    rf"(?<![\w-])(?:[\w-]{{0,{_PREFIX}}}[_-])?(?:{_CREDENTIAL_WORDS})(?![\w-])(?:\s+[\w-]+){{0,3}}?[\"']?\s*(?:[:=]|"
    rf"=>|:=)\s*"
    r"(?P<secret>(?P<value>\"[^\"\n]*\"|'[^'\n]*'|`[^`\n]*`|[^\s,;&]+))",
    re.I,
)
# "my password is sunshine42", "das WLAN Passwort ist …"
_STATED_PASSWORD = re.compile(
    rf"(?P<owner>\b(?:{'|'.join(_OWNERS)})\s+)?"
    rf"(?:(?<![\w-])[\w-]{{1,{_PREFIX}}}\s+)?(?:{_CREDENTIAL_WORDS})"
    rf"(?P<mid>(?:\s+[\w-]+){{1,4}}?)?\s+(?:is now|"
    rf"is|was|es|est|ist|e|é|è|—|-|это)\s+"
    r"(?P<q>[\"'`“«])?(?P<secret>(?P<value>[^\s\"'`”»,;]+?))(?=\.?(?:[\s,;\"'`”»]|$))",
    re.I,
)
# "password Xy7!kq2m"
_PASSWORD_THEN_VALUE = re.compile(rf"(?<![\w-])(?:{_CREDENTIAL_WORDS})\s+(?P<secret>[^\s,;]{{6,}})", re.I)
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
    ("password", _ASSIGNED_PASSWORD, _assignment_secret),
    ("password", _STATED_PASSWORD, _stated_password),
    (
        "password",
        re.compile(r"(?<![\w-])pass\s*[:=]\s*(?P<secret>[^\s,;&]{6,})", re.I),
        lambda m: bool(
            re.search(r"[A-Za-z]", m.group("secret")) and re.search(r"[\d\W_]", m.group("secret"))
        ),
    ),
    ("password", _PASSWORD_THEN_VALUE, lambda m: _credential_shaped(m.group("secret"))),
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

_CREDENTIAL = re.compile(rf"(?:{_CREDENTIAL_WORDS})", re.I)
# How every credential word begins, lowered; a word begins only where its start is in the text
# folded by _CASE_FOLD.
_CREDENTIAL_STARTS = (
    "pass",
    "pwd",
    "wifi",
    "wi-fi",
    "wlan",
    "wpa",
    "network",
    "contrase",
    "mot de passe",
    "mdp",
    "kennwort",
    "senha",
    "parola d'ordine",
    "wachtwoord",
    "has",
    "п",
    "密",
    "口",
    "パ",
    "비",
)
# Each character that matches a character of those starts, ignoring case, to that character (one
# character to one, so positions stay): A-Z, and the few others re.IGNORECASE pairs with them.
_CASE_FOLD = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
_CASE_FOLD.update({0x130: ord("i"), 0x131: ord("i"), 0x17F: ord("s"), 0x212A: ord("k"), 0x41F: ord("п")})


def _credential_words(text: str) -> list[int]:
    """Every position of ``text`` a credential word begins at (``_CREDENTIAL`` matches), in order."""
    folded = text.lower() if text.isascii() else text.translate(_CASE_FOLD)
    candidates: set[int] = set()
    for start in _CREDENTIAL_STARTS:
        at = folded.find(start)
        while at >= 0:
            candidates.add(at)
            at = folded.find(start, at + 1)
    return [at for at in sorted(candidates) if _CREDENTIAL.match(text, at)]


_OWNER_LONGEST = max(map(len, _OWNERS))


def _stated_start(text: str, word: int) -> int:
    """No match of ``_STATED_PASSWORD`` whose credential word begins at ``word`` begins before this.

    Before the word, each followed by whitespace: a word of up to ``_PREFIX`` characters, an
    owner, or both (the owner, whitespace, the word). Whitespace is what ``\\s`` matches
    (``str.isspace``); the other characters are not whitespace.
    """
    k = word
    while k and text[k - 1].isspace():
        k -= 1
    if k == word:
        return word  # nothing may come before the credential word but whitespace-ended parts
    j = k  # the earliest start of a word of up to _PREFIX characters ending at k
    while j > k - _PREFIX and j and not text[j - 1].isspace():
        j -= 1
    w = j  # an owner before that word ends before its whitespace
    while w and text[w - 1].isspace():
        w -= 1
    return max(0, min(k - _PREFIX, w - _OWNER_LONGEST))


# Rules every match of which holds a credential word: the least position a match may begin at,
# given where its credential word begins.
_CREDENTIAL_LED: dict[re.Pattern[str], Callable[[str, int], int]] = {
    _ASSIGNED_PASSWORD: lambda _, word: max(0, word - _PREFIX - 1),
    _STATED_PASSWORD: _stated_start,
    _PASSWORD_THEN_VALUE: lambda _, word: word,
}


def _credential_led(
    pattern: re.Pattern[str], text: str, words: list[int], start: Callable[[str, int], int]
) -> Iterator[re.Match[str]]:
    """``pattern.finditer(text)`` for a pattern of ``_CREDENTIAL_LED``: the same matches, tried only
    from ``start`` to each credential word's position (``words``) instead of at every position.

    Every match begins at one of those positions; they are tried in order, each from where the
    last match ended, as ``finditer`` does (no match of these patterns is empty).
    """
    pos = 0
    for p in sorted({p for word in words for p in range(start(text, word), word + 1)}):
        if p < pos:
            continue
        m = pattern.match(text, p)
        if m is not None:
            yield m
            pos = max(m.end(), p + 1)


def find_secrets(text: str, *, reference: bool = False) -> list[SecretFinding]:
    """Every secret in ``text``, by position; overlapping matches are merged into the first.

    ``reference=True`` runs every rule on the text without the prefilter (the same findings).
    """
    found: list[SecretFinding] = []
    literals = Literals(text, index=False)  # few rules: look their literals up directly
    words: list[int] | None = None
    matches: Iterable[re.Match[str]]
    for (kind, pattern, check), prefiltered in zip(_RULES, _FILTERS, strict=True):
        if reference:
            matches = pattern.finditer(text)
        elif kind == "card_number" and not _THIRTEEN_DIGITS.search(text):
            continue
        elif (start := _CREDENTIAL_LED.get(pattern)) is not None:
            if prefiltered.narrowed(literals) is None:
                continue
            if words is None:
                words = _credential_words(text)
            matches = _credential_led(pattern, text, words, start)
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
