"""A seeded mix of public operations on many threads, and SPEC §9's invariants checked after it.

``run_mixed(store, tenant, MixedConfig(threads=4, ops_per_thread=100))`` starts
the threads together; each runs a seeded sequence of proposals (identical ones
included), approvals, contests, supersessions, invalidations, consolidations,
forgets in every mode, scope nesting and reads (recall, explain, trace, export,
audit, approvals) on one tenant, and records every acknowledged operation in a
``Ledger``. ``check`` then reads the records, export and audit log the threads
left and lists each invariant violation. The shared test suite runs a bounded
mix on every backend; ``graphmem bench --workloads concurrency`` a long one.
"""

from __future__ import annotations

import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from graphmem.bench.invariants import Forgotten, Ledger, Recalled, Violation, check
from graphmem.errors import GraphmemError
from graphmem.model import (
    ForgetMode,
    ForgetReport,
    ForgetRequest,
    Kind,
    MemoryRecord,
    Outcome,
    ReadContext,
    Source,
    Trust,
    WriteDecision,
    WriteOutcome,
    WriteProposal,
    utcnow,
)
from graphmem.store import MemoryStore

__all__ = ["MixedConfig", "MixedReport", "run_mixed"]

_LIVE = datetime(9999, 1, 1, tzinfo=UTC)
"""The knowledge time of a read of the present: after every write."""
_USERS = 4
_RUNS = 3
_CHANNELS = ("email", "phone", "chat")
_HOT = 3
_SCOPES = (*(f"user:u{u}" for u in range(_USERS)), "workspace:w0", "workspace:w1", "team:t0", "team:t1")


@dataclass(frozen=True)
class MixedConfig:
    """How many threads run how many operations each; ``seed`` fixes each thread's sequence."""

    threads: int = 4
    ops_per_thread: int = 100
    readers: int = 4
    """Threads that only read (recall, explain, trace, export, audit, approvals) while the
    ``threads`` mixed ones run."""
    archived: int = 200
    """Records written first in a scope the mix never touches: reads that walk the tenant
    (export, approvals) take long enough to be interrupted by writes."""
    switch_interval_s: float | None = 1e-4
    """``sys.setswitchinterval`` during the run (restored after): Python threads switch every
    0.1 ms instead of 5 ms, so an operation is far more often interrupted mid-way."""
    seed: int = 7
    timeout_s: float = 600.0
    """A thread still running after this long is reported as a crash (a hang)."""


@dataclass(frozen=True)
class MixedReport:
    """What one mixed run did and every invariant it broke."""

    tenant: str
    threads: int
    readers: int
    operations: int
    seconds: float
    acknowledged: dict[str, int]
    refused: dict[str, int]
    """Operations refused with a ``GraphmemError``, by ``operation:code``."""
    recalls: int
    violations: list[Violation] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Violations per invariant."""
        return dict(sorted(Counter(v.invariant for v in self.violations).items()))

    def crashes(self) -> dict[str, int]:
        """Crashes per operation."""
        found = Counter(v.detail.split(":")[0] for v in self.violations if v.invariant == "crashed")
        return dict(sorted(found.items()))

    def describe(self, limit: int = 12) -> str:
        """The counts and the first ``limit`` violations, for a failure message."""
        lines = [f"{len(self.violations)} violation(s) in {self.operations} operations: {self.counts()}"]
        lines += [f"  {v.invariant}: {v.detail}" for v in self.violations[:limit]]
        return "\n".join(lines)


class _Worker:
    """One thread's seeded sequence of operations on the shared tenant."""

    def __init__(
        self,
        store: MemoryStore,
        ledger: Ledger,
        seed: int,
        name: str,
        since: datetime,
        tick: Callable[[int], None] | None = None,
    ) -> None:
        self.store = store
        self.tick = tick
        self.ledger = ledger
        self.rng = random.Random(seed)
        self.name = name
        self.since = since
        self.n = 0
        self.ops: dict[str, tuple[int, Callable[[], str]]] = {
            "propose_claim": (16, self.propose_claim),
            "propose_broad": (4, self.propose_broad),
            "propose_episode": (8, self.propose_episode),
            "propose_working": (4, self.propose_working),
            "approve": (5, self.approve),
            "contest": (3, self.contest),
            "supersede": (5, self.supersede),
            "invalidate": (3, self.invalidate),
            "consolidate": (5, self.consolidate),
            "forget": (8, self.forget),
            "release_run": (1, self.release_run),
            "scope_within": (4, self.scope_within),
            "recall": (18, self.recall),
            "explain": (4, self.explain),
            "trace": (4, self.trace),
            "export": (2, self.export),
            "audit": (3, self.audit),
            "approvals": (3, self.approvals),
        }

    @property
    def tenant(self) -> str:
        return self.ledger.tenant

    def run(self, count: int, barrier: threading.Barrier) -> None:
        names = list(self.ops)
        weights = [self.ops[n][0] for n in names]
        barrier.wait()
        for _ in range(count):
            self.call(self.ops[self.rng.choices(names, weights)[0]][1])

    def read_until(self, done: threading.Event, barrier: threading.Barrier) -> None:
        """Only reads, one after another, until ``done``: a read that is torn by a concurrent
        write shows up here."""
        reads = [self.recall, self.explain, self.trace, self.export, self.audit, self.approvals]
        barrier.wait()
        while not done.is_set():
            self.call(self.rng.choice(reads))

    def call(self, op: Callable[[], str]) -> None:
        self.n += 1
        name = op.__name__
        try:
            name = op()
        except GraphmemError as err:
            self.ledger.refused_one(f"{name}:{err.code}")
        except Exception as err:  # a public call must raise nothing else: recorded as a violation
            self.ledger.crashed(f"{name}: {type(err).__name__}: {err}")
        else:
            self.ledger.acknowledged_one(name)
        if self.tick is not None:
            self.tick(1)

    # -- helpers -------------------------------------------------------

    def _uid(self, prefix: str) -> str:
        return f"{prefix}-{self.name}-{self.n}"

    def _source(self) -> Source:
        sid = self._uid("src")
        return Source(id=sid, type="message", trust=Trust.TRUSTED, quote=f"message {sid}")

    def _user(self) -> int:
        return self.rng.randrange(_USERS)

    def _propose(self, **fields: object) -> WriteDecision:
        proposal = WriteProposal.model_validate(
            {"tenant": self.tenant, "proposed_by": self.name, "sources": (self._source(),), **fields}
        )
        decision = self.store.propose(proposal, source_trust=Trust.TRUSTED)
        self.ledger.proposals.append((proposal, decision))
        if decision.outcome is not WriteOutcome.REJECTED:
            self.ledger.sources.extend(s.id for s in proposal.sources)
        return decision

    def _recent(self, ids: list[str]) -> str | None:
        # The newest few: threads keep acting on the same records, so their operations collide.
        return self.rng.choice(ids[-_HOT:]) if ids else None

    def _claim_id(self) -> str | None:
        return self._recent(self.ledger.claims)

    def _context(self) -> ReadContext:
        u = self._user()
        run = self.rng.choice([None, *(f"r{r}" for r in range(_RUNS))])
        # A read of the present: it knows everything committed before its snapshot, however
        # recently (as_of = now would miss a change recorded while the call was starting).
        return ReadContext(
            tenant=self.tenant, scopes=(f"user:u{u}",), run_id=run, now=utcnow(), as_of=_LIVE, limit=20
        )

    # -- writes --------------------------------------------------------

    def propose_claim(self) -> str:
        u = self._user()
        decision = self._propose(
            kind=Kind.SEMANTIC,
            scope=f"user:u{u}",
            content=f"Customer u{u} prefers {self.rng.choice(_CHANNELS)} follow-ups.",
            valid_from=self.since,
            # Claims of u0 name their subject, so different ones contest each other.
            subject="user:u0/channel" if u == 0 else None,
        )
        if decision.record_id is not None:
            self.ledger.claims.append(decision.record_id)
        return "propose_claim"

    def propose_broad(self) -> str:
        channel, week = self.rng.choice(_CHANNELS), self.rng.randrange(40)
        decision = self._propose(
            kind=Kind.SEMANTIC,
            scope="tenant:acme",
            # Enough distinct texts that new proposals keep waiting for approval; some are identical.
            content=f"Every customer gets a {channel} survey in week {week}.",
            valid_from=self.since,
        )
        if decision.outcome is WriteOutcome.PENDING_APPROVAL:
            self.ledger.pending.append(decision.proposal_id)
        return "propose_broad"

    def propose_episode(self) -> str:
        u, channel, day = self._user(), self.rng.choice(_CHANNELS), self.rng.randrange(3)
        decision = self._propose(
            kind=Kind.EPISODIC,
            scope=f"user:u{u}",
            content=f"Customer u{u} was reached by {channel} on day {day}.",
            event_time=self.since,
            outcome=Outcome.VERIFIED_SUCCESS.value,
        )
        if decision.record_id is not None:
            self.ledger.episodes.append(decision.record_id)
        return "propose_episode"

    def propose_working(self) -> str:
        r = self.rng.randrange(_RUNS)
        self._propose(
            kind=Kind.WORKING,
            scope=f"run:r{r}",
            content=f"Run r{r} step {self.rng.randrange(3)}: check the {self.rng.choice(_CHANNELS)} queue.",
        )
        return "propose_working"

    def approve(self) -> str:
        if not self.ledger.pending:
            return self.propose_broad()
        # The newest proposals: most are still pending, and threads race to approve them.
        pid = self.rng.choice(self.ledger.pending[-3:])
        record = self.store.approve(self.tenant, pid, approver=self.name)
        self.ledger.approved.append(record.id)
        return "approve"

    def contest(self) -> str:
        rid = self._claim_id()
        if rid is None:
            return self.propose_claim()
        self.store.contest(self.tenant, rid, by=self.name, reason="disputed")
        self.ledger.contested.append(rid)
        return "contest"

    def supersede(self) -> str:
        rid = self._claim_id()
        old = None if rid is None else self.store.get(self.tenant, rid)
        if rid is None or old is None:
            return self.propose_claim()
        new = MemoryRecord(
            id=self._uid("v"),
            tenant=self.tenant,
            kind=old.kind,
            scope=old.scope,
            content=f"Revised claim {self._uid('v')} about {old.scope}.",
            valid_from=self.since + timedelta(minutes=self.n),
            sources=(self._source(),),
            writer=self.name,
        )
        self.store.supersede(self.tenant, rid, new, reason="revised")
        self.ledger.superseded.append((new.id, rid))
        self.ledger.claims.append(new.id)
        return "supersede"

    def invalidate(self) -> str:
        rid = self._claim_id()
        if rid is None or not self.ledger.sources:
            return self.propose_claim()
        by = self.rng.choice(self.ledger.sources[-_HOT:])
        self.store.invalidate(self.tenant, rid, by=by, reason="contradicted")
        self.ledger.invalidated.append((rid, by))
        return "invalidate"

    def consolidate(self) -> str:
        if not self.ledger.episodes:
            return self.propose_episode()
        parents = sorted(
            {self.rng.choice(self.ledger.episodes[-_HOT:]) for _ in range(self.rng.randint(1, 2))}
        )
        u = self._user()
        into = MemoryRecord(
            id=self._uid("c"),
            tenant=self.tenant,
            kind=Kind.SEMANTIC,
            scope=f"user:u{u}",
            content=f"Customer u{u} can be reached ({self._uid('c')}).",
            valid_from=self.since,
            writer=self.name,
        )
        self.store.consolidate(self.tenant, parents, into, rule="reachable")
        self.ledger.consolidated.append((into.id, frozenset(parents)))
        self.ledger.claims.append(into.id)
        return "consolidate"

    def _forgotten(self, report: ForgetReport) -> None:
        self.ledger.forgotten.append(Forgotten(time.perf_counter(), report))

    def forget(self) -> str:
        mode = self.rng.choice(list(ForgetMode))
        roll = self.rng.random()
        if mode is ForgetMode.RELEASE:
            target, kind = f"run:r{self.rng.randrange(_RUNS)}", "scope"
        elif roll < 0.1:
            target, kind = f"user:u{self._user()}", "scope"
        elif roll < 0.3 and self.ledger.sources:
            target, kind = self.rng.choice(self.ledger.sources[-_HOT:]), "source"
        else:
            rid = self._recent(self.ledger.episodes if roll < 0.45 else self.ledger.claims)
            if rid is None:
                return self.propose_claim()
            target, kind = rid, "record"
        request = ForgetRequest.model_validate(
            {
                "tenant": self.tenant,
                "target": target,
                "target_type": kind,
                "mode": mode,
                "reason": "user asked",
                "requested_by": self.name,
            }
        )
        self._forgotten(self.store.forget(request))
        return f"forget_{mode.value}"

    def release_run(self) -> str:
        self._forgotten(self.store.release_run(self.tenant, f"r{self.rng.randrange(_RUNS)}"))
        return "release_run"

    def scope_within(self) -> str:
        child, parent = self.rng.sample(_SCOPES, 2)
        self.store.scope_within(self.tenant, child, parent)
        self.ledger.nested.append((child, parent))
        return "scope_within"

    # -- reads ---------------------------------------------------------

    def recall(self) -> str:
        ctx = self._context()
        started = time.perf_counter()
        selection = self.store.recall(ctx, f"prefers {self.rng.choice(_CHANNELS)}", actor=self.name)
        self.ledger.recalls.append(
            Recalled(started, tuple(selection.ids), tuple(r.status for r in selection.records))
        )
        return "recall"

    def explain(self) -> str:
        rid = self._claim_id()
        if rid is None:
            return self.recall()
        self.store.explain(self._context(), rid)
        return "explain"

    def trace(self) -> str:
        rid = self._claim_id()
        if rid is None:
            return self.recall()
        self.store.trace(self.tenant, rid)
        return "trace"

    def export(self) -> str:
        for _ in self.store.export(self.tenant):
            pass
        return "export"

    def audit(self) -> str:
        self.store.audit(self.tenant)
        return "audit"

    def approvals(self) -> str:
        self.store.approvals(self.tenant)
        return "approvals"


def run_mixed(
    store: MemoryStore,
    tenant: str,
    cfg: MixedConfig | None = None,
    tick: Callable[[int], None] | None = None,
) -> MixedReport:
    """Run the mix on ``tenant`` (which should be fresh), then check every invariant.

    A few records are written first so every operation has something to act on;
    then ``cfg.threads`` threads start together, ``cfg.ops_per_thread`` operations each
    (``tick(1)`` after each), with ``cfg.readers`` reading threads beside them.
    """
    cfg = cfg or MixedConfig()
    interval = sys.getswitchinterval()
    if cfg.switch_interval_s is not None:
        sys.setswitchinterval(cfg.switch_interval_s)
    try:
        return _run(store, tenant, cfg, tick)
    finally:
        sys.setswitchinterval(interval)


def _run(
    store: MemoryStore, tenant: str, cfg: MixedConfig, tick: Callable[[int], None] | None
) -> MixedReport:
    ledger = Ledger(tenant)
    since = utcnow() - timedelta(days=1)
    seeder = _Worker(store, ledger, cfg.seed, "seed", since)
    archived = [
        MemoryRecord(
            id=f"archived-{i}",
            tenant=tenant,
            kind=Kind.EPISODIC,
            scope="workspace:archive",
            content=f"Archived ticket {i} was closed.",
            event_time=since,
            outcome=Outcome.UNKNOWN.value,
        )
        for i in range(cfg.archived)
    ]
    store.add_many(archived)
    for op in (*[seeder.propose_claim] * _USERS, seeder.propose_episode, seeder.propose_broad):
        seeder.call(op)
    workers = [_Worker(store, ledger, cfg.seed * 1000 + i, f"w{i}", since, tick) for i in range(cfg.threads)]
    readers = [
        _Worker(store, ledger, cfg.seed * 1000 + cfg.threads + i, f"r{i}", since) for i in range(cfg.readers)
    ]
    barrier = threading.Barrier(cfg.threads + cfg.readers)
    done = threading.Event()
    threads = [
        threading.Thread(target=w.run, args=(cfg.ops_per_thread, barrier), daemon=True) for w in workers
    ]
    reading = [threading.Thread(target=r.read_until, args=(done, barrier), daemon=True) for r in readers]
    started = time.perf_counter()
    for t in threads + reading:
        t.start()
    for group in (threads, reading):
        for t in group:
            t.join(max(0.0, cfg.timeout_s - (time.perf_counter() - started)))
            if t.is_alive():
                ledger.crashed(f"a thread was still running after {cfg.timeout_s:g} s (a hang)")
        done.set()
    seconds = time.perf_counter() - started
    violations = check(store, ledger)
    return MixedReport(
        tenant=tenant,
        threads=cfg.threads,
        readers=cfg.readers,
        operations=seeder.n + sum(w.n for w in workers + readers),
        seconds=round(seconds, 3),
        acknowledged=dict(sorted(ledger.acknowledged.items())),
        refused=dict(sorted(ledger.refused.items())),
        recalls=len(ledger.recalls),
        violations=violations,
    )
