"""SPEC §9's invariants, checked against what concurrent operations acknowledged and what they left.

A ``Ledger`` is what the clients were told (each acknowledged write, each
forget report with when it returned, each recall with when it started);
``check`` compares it with the store's final records, export and audit log.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field

from pydantic import TypeAdapter

from graphmem.backends.base import AddEdge, Op, PutRecord, ScopeWithin
from graphmem.model import (
    AuditEvent,
    ForgetReport,
    MemoryRecord,
    Status,
    WriteDecision,
    WriteOutcome,
    WriteProposal,
)
from graphmem.store import MemoryStore

__all__ = ["INVARIANTS", "Forgotten", "Ledger", "Recalled", "Violation", "check", "within_cycles"]

INVARIANTS = {
    "crashed": "a public call raised something other than a GraphmemError, or hung",
    "write_lost": "an acknowledged write (record, edge, status or audit event) is missing",
    "forget_undone": "a record an acknowledged forget took out of use is back in use (e.g. an erase undone)",
    "erased_content": "an erased record still holds content, embedding, tags or quotes, or has no tombstone",
    "forgotten_selected": "a recall selected a record forgotten before it started, or one not active",
    "two_current_versions": "a record has more than one SUPERSEDES successor",
    "within_cycle": "the scopes' WITHIN edges form a cycle",
    "merged_sources": "a proposed record's sources are not the union of its acknowledged proposals'",
}

_OPS: TypeAdapter[Op] = TypeAdapter(Op)

# What each forget action leaves: later forgets may only take a record further out of use.
_STILL_FORGOTTEN = {
    "released": {Status.RELEASED, Status.REVOKED, Status.ERASED},
    "revoked": {Status.REVOKED, Status.ERASED},
    "erased": {Status.ERASED},
}
_NOT_PENDING = set(Status) - {Status.PENDING_APPROVAL}
_STILL_CONTESTED = {Status.CONTESTED, Status.REVOKED, Status.RELEASED, Status.ERASED}


@dataclass(frozen=True)
class Violation:
    invariant: str
    """A key of ``INVARIANTS``."""
    detail: str


@dataclass(frozen=True)
class Recalled:
    started: float
    """``time.perf_counter()`` just before the call."""
    ids: tuple[str, ...]
    statuses: tuple[Status, ...]
    """The statuses of the records the selection returned."""


@dataclass(frozen=True)
class Forgotten:
    acknowledged: float
    """``time.perf_counter()`` just after the call returned."""
    report: ForgetReport


@dataclass
class Ledger:
    """Everything the clients of one tenant were told; lists are appended from many threads."""

    tenant: str
    acknowledged: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)
    crashes: list[str] = field(default_factory=list)
    proposals: list[tuple[WriteProposal, WriteDecision]] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    """Proposal ids held for approval."""
    claims: list[str] = field(default_factory=list)
    episodes: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    approved: list[str] = field(default_factory=list)
    contested: list[str] = field(default_factory=list)
    superseded: list[tuple[str, str]] = field(default_factory=list)
    """(new, old)."""
    invalidated: list[tuple[str, str]] = field(default_factory=list)
    """(record, by)."""
    consolidated: list[tuple[str, frozenset[str]]] = field(default_factory=list)
    nested: list[tuple[str, str]] = field(default_factory=list)
    """(child, parent)."""
    forgotten: list[Forgotten] = field(default_factory=list)
    recalls: list[Recalled] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def acknowledged_one(self, op: str) -> None:
        with self._lock:
            self.acknowledged[op] += 1

    def refused_one(self, op_code: str) -> None:
        with self._lock:
            self.refused[op_code] += 1

    def crashed(self, what: str) -> None:
        with self._lock:
            self.crashes.append(what)


def check(store: MemoryStore, ledger: Ledger) -> list[Violation]:
    """Every violation of the invariants in ``ledger``'s tenant, once its operations have finished."""
    tenant = ledger.tenant
    records = {r.id: r for r in store.backend.all_records(tenant)}
    exported = [_OPS.validate_json(line) for line in store.export(tenant)]
    out = [Violation("crashed", c) for c in ledger.crashes]
    out += _writes_present(ledger, records, exported, store.audit(tenant))
    out += _forgets_hold(ledger, records)
    out += _erased_hold_nothing(
        [*records.values(), *(op.record for op in exported if isinstance(op, PutRecord))]
    )
    out += _recalls_clean(ledger)
    out += _one_successor(exported)
    out += [Violation("within_cycle", c) for c in within_cycles(exported)]
    out += _merged_sources(ledger, records)
    return out


def _audit_key(event: AuditEvent) -> tuple[str, str]:
    if event.action == "proposed":
        return event.action, str(event.details.get("proposal_id"))
    if event.action == "forgotten":
        return event.action, str(event.details.get("target"))
    return event.action, event.record_ids[0] if event.record_ids else ""


def _writes_present(
    ledger: Ledger, records: dict[str, MemoryRecord], exported: list[Op], events: list[AuditEvent]
) -> list[Violation]:
    out: list[Violation] = []

    def lost(what: str) -> None:
        out.append(Violation("write_lost", what))

    edges = {(op.label, op.src, op.dst) for op in exported if isinstance(op, AddEdge)}
    within = {(op.child, op.parent) for op in exported if isinstance(op, ScopeWithin)}
    expected: Counter[tuple[str, str]] = Counter()
    for proposal, decision in ledger.proposals:
        expected["proposed", proposal.proposal_id] += 1
        if decision.record_id is not None and decision.record_id not in records:
            lost(f"record {decision.record_id} of proposal {proposal.proposal_id} ({decision.reason.value})")
    for rid in ledger.approved:
        expected["approved", rid] += 1
        record = records.get(rid)
        if record is None or record.status not in _NOT_PENDING:
            lost(f"approval of {rid}: it is {record.status.value if record else 'missing'}")
    for rid in ledger.contested:
        expected["contested", rid] += 1
        record = records.get(rid)
        if record is None or record.status not in _STILL_CONTESTED:
            lost(f"contest of {rid}: it is {record.status.value if record else 'missing'}")
    for new, old in ledger.superseded:
        expected["superseded", new] += 1
        if new not in records or ("SUPERSEDES", new, old) not in edges:
            lost(f"supersession of {old} by {new}")
    for rid, by in ledger.invalidated:
        expected["invalidated", rid] += 1
        if ("INVALIDATED_BY", rid, by) not in edges:
            lost(f"invalidation of {rid} by {by}")
    for rid, parents in ledger.consolidated:
        expected["consolidated", rid] += 1
        record = records.get(rid)
        if record is None or set(record.derived_from) != parents:
            lost(f"consolidation {rid} from {sorted(parents)}")
    for child, parent in ledger.nested:
        if (child, parent) not in within:
            lost(f"{child} WITHIN {parent}")
    for forgotten in ledger.forgotten:
        if forgotten.report.entries:  # release_run of a run with no records writes no event
            expected["forgotten", forgotten.report.target] += 1
    found = Counter(_audit_key(e) for e in events)
    for key, count in expected.items():
        if found[key] < count or (key[0] == "proposed" and found[key] != count):
            lost(f"audit: {found[key]} {key[0]!r} event(s) for {key[1]}, {count} acknowledged")
    return out


def _forgets_hold(ledger: Ledger, records: dict[str, MemoryRecord]) -> list[Violation]:
    out: list[Violation] = []
    for forgotten in ledger.forgotten:
        for entry in forgotten.report.entries:
            allowed = _STILL_FORGOTTEN.get(entry.action)
            record = records.get(entry.record_id)
            if allowed is None:
                continue
            if record is None:
                out.append(Violation("write_lost", f"{entry.action} record {entry.record_id}"))
            elif record.status not in allowed:
                out.append(
                    Violation(
                        "forget_undone", f"{entry.record_id} was {entry.action}, is {record.status.value}"
                    )
                )
    return out


def _erased_hold_nothing(records: list[MemoryRecord]) -> list[Violation]:
    """Each erased record, as stored or as exported, holds nothing of what it said."""
    out: list[Violation] = []
    seen: set[str] = set()
    for r in records:
        if r.status is not Status.ERASED or r.id in seen:
            continue
        seen.add(r.id)
        kept = [
            name
            for name, holds in (
                ("content", bool(r.content)),
                ("embedding", r.embedding is not None),
                ("tags", bool(r.tags)),
                ("quotes", any(s.quote for s in r.sources)),
                ("no tombstone", r.tombstone is None),
            )
            if holds
        ]
        if kept:
            out.append(Violation("erased_content", f"{r.id}: {', '.join(kept)}"))
    return out


def _recalls_clean(ledger: Ledger) -> list[Violation]:
    out: list[Violation] = []
    acks = sorted(
        (f.acknowledged, e.record_id)
        for f in ledger.forgotten
        for e in f.report.entries
        if e.action != "kept"
    )
    gone: set[str] = set()
    i = 0
    for seen in sorted(ledger.recalls, key=lambda r: r.started):
        while i < len(acks) and acks[i][0] < seen.started:
            gone.add(acks[i][1])
            i += 1
        for rid, status in zip(seen.ids, seen.statuses, strict=False):
            if rid in gone:
                out.append(Violation("forgotten_selected", f"{rid} selected after its forget returned"))
            elif status is not Status.ACTIVE:
                out.append(Violation("forgotten_selected", f"{rid} selected while {status.value}"))
    return out


def _one_successor(exported: list[Op]) -> list[Violation]:
    successors: dict[str, list[str]] = {}
    for op in exported:
        if isinstance(op, AddEdge) and op.label == "SUPERSEDES":
            successors.setdefault(op.dst, []).append(op.src)
    return [
        Violation("two_current_versions", f"{old} superseded by {sorted(new)}")
        for old, new in sorted(successors.items())
        if len(new) > 1
    ]


def within_cycles(exported: list[Op]) -> list[str]:
    """Each WITHIN edge that closes a cycle among the exported scope edges, as ``child -> parent``."""
    parents: dict[str, list[str]] = {}
    for op in exported:
        if isinstance(op, ScopeWithin):
            parents.setdefault(op.child, []).append(op.parent)
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    closing: list[str] = []
    for start in sorted(parents):
        if start in state:
            continue
        state[start] = 1
        stack = [(start, iter(parents.get(start, ())))]
        while stack:
            node, todo = stack[-1]
            parent = next(todo, None)
            if parent is None:
                state[node] = 2
                stack.pop()
            elif state.get(parent) == 1:
                closing.append(f"{node} -> {parent}")
            elif parent not in state:
                state[parent] = 1
                stack.append((parent, iter(parents.get(parent, ()))))
    return closing


def _merged_sources(ledger: Ledger, records: dict[str, MemoryRecord]) -> list[Violation]:
    wanted: dict[str, set[str]] = {}
    for proposal, decision in ledger.proposals:
        if decision.record_id is not None and decision.outcome is not WriteOutcome.REJECTED:
            wanted.setdefault(decision.record_id, set()).update(s.id for s in proposal.sources)
    out: list[Violation] = []
    for rid, want in sorted(wanted.items()):
        record = records.get(rid)
        if record is None:
            continue  # reported as write_lost
        have = {s.id for s in record.sources if s.type != "human_approval"}
        if have != want:
            out.append(
                Violation(
                    "merged_sources",
                    f"{rid}: {len(want - have)} acknowledged source(s) missing, "
                    f"{len(have - want)} unexpected",
                )
            )
    return out
