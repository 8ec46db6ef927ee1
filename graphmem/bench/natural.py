"""A natural-language corpus for ``graphmem bench``: seeded, deterministic, no data files.

Real memories are short notes in plain language: stop words everywhere, a few
domain words that recur in many notes (Zipf's law), names, numbers, the same
thing said with different words. Uniform random tokens have none of that — a
three-word query over them hits a handful of candidates, where a real question
hits a fifth of them or more and ranking has to work. So records here are
sentences from templates over domain nouns, verbs and adjectives, each word
drawn from a Zipf-Mandelbrot distribution over its class; 10 to 80 words; some
nouns replaced by a synonym. Questions are built from the frequent head of the
same distribution (so their terms hit at least a fifth of the candidates), and
every fourth question is a paraphrase that uses the synonyms.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Sequence
from itertools import accumulate

from graphmem.ranking import tokenize

__all__ = ["NaturalCorpus"]

_NOUNS = """
refund invoice payment charge card gateway receipt balance fee transfer account statement
chargeback subscription plan discount coupon tax bank wallet ticket customer agent complaint
reply escalation queue case callback survey chat email phone manager priority order shipment
parcel delivery warehouse courier address tracking label pallet return carrier route depot
driver deploy server database cache timeout retry request service build release test incident
alert log config migration cluster node backup meeting schedule holiday contract salary review
team office laptop badge training onboarding deadline project report budget forecast supplier
vendor quote purchase approval policy audit risk compliance password login session token
permission role user profile setting notification reminder calendar appointment clinic patient
doctor prescription insurance claim premium policyholder tenant lease landlord repair
maintenance inspection contractor permit kitchen bathroom heating window roof garden car engine
tyre brake battery mileage garage mechanic flight hotel booking passport visa luggage seat
airport train ticketing itinerary conference speaker agenda slide workshop venue catering
student course exam grade teacher lesson homework semester library thesis recipe ingredient oven
dinner lunch breakfast allergy diet menu restaurant reservation product feature bug roadmap
sprint backlog estimate customer-success churn renewal discount-code campaign newsletter
webinar lead prospect demo trial license seat-count upgrade downgrade outage latency throughput
dashboard metric threshold pager rota handover runbook checklist warranty defect replacement
serial model firmware update device printer monitor keyboard router network vpn firewall
certificate domain mailbox storage folder document spreadsheet draft signature deposit loan
mortgage interest rate savings pension payroll expense mileage-claim reimbursement-form
""".split()

_VERBS = """
refunded cancelled approved rejected shipped delivered returned escalated resolved reopened
deployed rolled-back restarted migrated updated upgraded downgraded renewed paid charged
invoiced booked rescheduled postponed confirmed declined reviewed signed submitted uploaded
downloaded deleted archived restored flagged reported fixed broke failed timed-out retried
merged tested released planned estimated requested ordered received checked inspected repaired
replaced installed configured enabled disabled blocked unblocked reset locked unlocked
notified reminded called emailed messaged asked answered promised forgot missed changed moved
""".split()

_ADJECTIVES = """
late early urgent overdue duplicate partial full pending final new old broken slow fast
expensive cheap missing damaged wrong correct monthly weekly annual temporary permanent
internal external main backup primary secondary large small quick long short recurring
unexpected usual manual automatic premium basic free paid open closed critical minor major
flaky stable noisy quiet busy empty full-time part-time remote local regional national
""".split()

_PEOPLE = """
Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia Peggy Rupert Sybil
Trent Victor Walter Yusuf Zara Amira Bruno Chen Dmitri Elena Farid Greta Hiro Ines Jonas Kemal
Lena Mateo Noor Oskar Priya Quentin Rosa Sanjay Tomas Uma Vera Wen Ximena Yara
""".split()

_WHEN = """
on Monday|on Tuesday|on Wednesday|on Thursday|on Friday|last week|yesterday|this morning|
in March|in April|in June|at the end of the month|before the holiday|after the outage|
during the call|since the update|next quarter|by Friday|within two days|over the weekend
""".replace("\n", "").split("|")

#: noun -> the other words people use for it (records swap some nouns, paraphrases use these).
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "refund": ("reimbursement", "money back"),
    "invoice": ("bill",),
    "customer": ("client", "buyer"),
    "order": ("purchase",),
    "shipment": ("consignment",),
    "parcel": ("package",),
    "meeting": ("call", "sync"),
    "deadline": ("due date",),
    "incident": ("outage", "disruption"),
    "server": ("host", "machine"),
    "bug": ("defect", "glitch"),
    "ticket": ("case",),
    "password": ("passphrase", "credentials"),
    "holiday": ("vacation", "leave"),
    "salary": ("pay", "wages"),
    "doctor": ("physician",),
    "flight": ("plane",),
    "booking": ("reservation",),
    "car": ("vehicle",),
    "repair": ("fix",),
    "laptop": ("notebook computer",),
    "manager": ("supervisor", "lead"),
    "contract": ("agreement",),
    "report": ("summary", "write-up"),
    "schedule": ("timetable", "plan"),
    "budget": ("spending limit",),
    "supplier": ("provider",),
    "approval": ("sign-off",),
    "discount": ("reduction", "markdown"),
    "delivery": ("drop-off",),
}

_SENTENCES = (
    "{P} {V} the {A} {N} for the {N} {W}.",
    "The {N} was {V} because the {N} {V} again.",
    "We {V} {NUM} {N}s after the {A} {N} {V}.",
    "{P} said the {N} should be {V} {W}.",
    "According to {P}, the {N} of the {N} is {A}.",
    "There is a {A} {N} in the {N} that nobody {V}.",
    "Note that the {N} {V} {W} and the {N} was {A}.",
    "{P} asked whether the {N} could be {V} {W}.",
    "The {A} {N} for {P} was {V}, so the {N} is still {A}.",
    "If the {N} is {A}, the {N} must be {V} first.",
    "{P} prefers a {A} {N} over the {N}.",
    "Our {N} {V} {NUM} times {W}, which made the {N} {A}.",
    "The {N} and the {N} were both {V} by {P}.",
    "It turned out the {N} had been {V} before the {N} was {V}.",
    "{P} will handle the {N} while {P} looks at the {N}.",
)

_QUESTIONS = (
    "what happened to the {N} {N}",
    "why was the {N} {V}",
    "when did {P} ask about the {N}",
    "how do we handle a {A} {N}",
    "what did we decide about the {N} and the {N}",
    "who {V} the {A} {N}",
    "is the {N} for the {N} still {A}",
    "which {N} was {V} {W}",
)


_ARTICLE = re.compile(r"\b([Aa]) (?=[aeiou])")


def _zipf_weights(count: int, s: float = 1.07, q: float = 2.7) -> list[float]:
    """Cumulative Zipf-Mandelbrot weights ``1 / (rank + q)^s`` for ranks 1..count."""
    return list(accumulate(1.0 / (rank + q) ** s for rank in range(1, count + 1)))


class NaturalCorpus:
    """Records and questions in plain language, the same for the same ``seed`` and ``domain``.

    ``domain`` fixes which words are frequent (the order of each word class): records
    and the questions asked about them share it. ``seed`` picks the texts and the
    questions, from independent streams, so asking for more questions never changes
    the records.
    """

    def __init__(self, seed: int = 7, *, domain: int = 7) -> None:
        order = random.Random(domain)
        self.nouns = order.sample(_NOUNS, len(_NOUNS))
        self.verbs = order.sample(_VERBS, len(_VERBS))
        self.adjectives = order.sample(_ADJECTIVES, len(_ADJECTIVES))
        self.people = order.sample(_PEOPLE, len(_PEOPLE))
        self._weights = {
            "N": _zipf_weights(len(self.nouns)),
            "V": _zipf_weights(len(self.verbs)),
            "A": _zipf_weights(len(self.adjectives)),
            "P": _zipf_weights(len(self.people)),
        }
        self._seed = seed
        # Paraphrases ask about nouns people have other words for, most frequent first.
        self.synonymous = [n for n in self.nouns if n in _SYNONYMS]

    # -- words ---------------------------------------------------------------

    def _pick(self, rng: random.Random, slot: str, head: int | None = None) -> str:
        classes = {"N": self.nouns, "V": self.verbs, "A": self.adjectives, "P": self.people}
        words: Sequence[str] = classes[slot]
        weights = self._weights[slot]
        if head is not None:
            words, weights = words[:head], weights[:head]
        return rng.choices(words, cum_weights=weights)[0]

    def _fill(self, rng: random.Random, template: str, *, head: int | None, synonyms: float) -> str:
        out: list[str] = []
        rest = template
        while "{" in rest:
            before, _, tail = rest.partition("{")
            slot, _, rest = tail.partition("}")
            out.append(before)
            if slot == "NUM":
                out.append(str(rng.choice((2, 3, 4, 5, 7, 10, 12, 20, 30, 48, 100, 250))))
            elif slot == "W":
                out.append(rng.choice(_WHEN))
            elif slot == "N" and synonyms >= 1.0:
                head_n = len(self.synonymous) if head is None else min(head, len(self.synonymous))
                weights = _zipf_weights(head_n)
                word = rng.choices(self.synonymous[:head_n], cum_weights=weights)[0]
                out.append(rng.choice(_SYNONYMS[word]))
            else:
                word = self._pick(rng, slot, head)
                if slot == "N" and word in _SYNONYMS and rng.random() < synonyms:
                    word = rng.choice(_SYNONYMS[word])
                out.append(word)
        out.append(rest)
        return _ARTICLE.sub(r"\1n ", "".join(out))

    # -- records -------------------------------------------------------------

    def texts(self, count: int, *, min_words: int = 10, max_words: int = 80) -> Iterator[str]:
        """``count`` notes of ``min_words``..``max_words`` words, sentences from the templates."""
        rng = random.Random(f"{self._seed}-texts")
        for _ in range(count):
            target = rng.randint(min_words, max_words)
            words: list[str] = []
            while len(words) < target:
                sentence = self._fill(rng, rng.choice(_SENTENCES), head=None, synonyms=0.3)
                words.extend((sentence[0].upper() + sentence[1:]).split())
            if len(words) > max_words:
                words = words[:max_words]
                words[-1] = words[-1].rstrip(".,") + "."
            yield " ".join(words)

    # -- questions -----------------------------------------------------------

    def questions(
        self, count: int, *, head: int = 25, against: Sequence[str] = (), min_hit: float = 0.2
    ) -> list[str]:
        """``count`` questions over the ``head`` most frequent words of each class; every fourth
        one a paraphrase, asking about nouns by another word for them (``_SYNONYMS``).

        With ``against`` (the texts the questions are asked of), a question whose terms occur
        in fewer than ``min_hit`` of them is drawn again, so ranking always has work to do.
        """
        rng = random.Random(f"{self._seed}-questions")
        terms = [frozenset(tokenize(text)) for text in against]
        out: list[str] = []
        for i in range(count):
            paraphrase = i % 4 == 3
            for _ in range(100):
                text = self._fill(rng, rng.choice(_QUESTIONS), head=head, synonyms=1.0 if paraphrase else 0.0)
                words = tokenize(text)
                asked = frozenset(words)
                if len(asked) < len(words):
                    continue  # "the refund for the refund": ask again
                if not terms or sum(1 for t in terms if t & asked) >= min_hit * len(terms):
                    break
            out.append(text[0].upper() + text[1:] + "?")
        return out
