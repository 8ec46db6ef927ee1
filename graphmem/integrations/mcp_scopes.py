"""Which scopes one MCP server's agent may read and write (``--scope``), and the checks that hold it there.

A limit is a list of scopes (``user:alice``) and name prefixes (``run:*``,
``case:acme-*``). With a limit, the agent

* writes (``remember``, ``forget``) only records applying to an allowed scope,
  never citing a source or claiming a subject that records outside the limit
  also cite or claim (that would change them: a source's stored state, a
  conflict that contests them);
* reads (``recall``, ``explain``, ``precedents``) only with contexts whose
  scopes and run are allowed, so it sees what the gate lets into those scopes:
  their records and those of every scope they are ``WITHIN`` (a record of
  ``tenant:acme`` applies inside ``user:alice``) — such a record is *readable*.
  Every scope a read's scopes lie WITHIN must be allowed too, or enclose an
  exact allowed scope: a prefix never widens a read (with ``run:*``, a run
  WITHIN ``user:bob`` would otherwise read Bob's records);
* traces only readable records, and sees the content labels of readable
  lineage nodes only.

Everything else is refused with ``ContractViolation`` code ``scope_not_allowed``
before the store is asked. A forget's cascade is not limited: a record derived
from what the agent may forget loses its support wherever it applies.
Without a limit (no ``--scope``) every scope of the tenant is allowed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from graphmem._args import check_rel_type, check_scope
from graphmem.errors import ContractViolation
from graphmem.model import MemoryRecord, Status, WriteProposal, content_hash
from graphmem.model.write import SUBJECT_TAG_PREFIX, subject_tag
from graphmem.store import MemoryStore

__all__ = ["ScopeLimit", "check_scope_patterns"]

_PREFIX_RE = re.compile(r"[a-z][a-z0-9_-]{0,31}:(?:[A-Za-z0-9][A-Za-z0-9._@/+-]{0,198})?\*")
_CODE = "scope_not_allowed"
_LIVE = (Status.ACTIVE, Status.PENDING_APPROVAL, Status.CONTESTED)


def _is_scope(value: str) -> bool:
    try:
        check_scope(value)
    except ContractViolation:
        return False
    return True


def check_scope_patterns(patterns: Iterable[str]) -> tuple[str, ...]:
    """The patterns, checked: each a scope ``type:name`` or a prefix ``type:*`` / ``type:name-*``.

    Raises ``ContractViolation`` (``invalid_scope``) for anything else, e.g. a bare ``*``.
    """
    checked = []
    for pattern in patterns:
        if isinstance(pattern, str) and pattern.endswith("*"):
            if not _PREFIX_RE.fullmatch(pattern):
                raise ContractViolation(
                    f"scope pattern {pattern!r} must be 'type:*' or 'type:prefix*', e.g. 'run:*'",
                    code="invalid_scope",
                )
            checked.append(pattern)
        else:
            checked.append(check_scope(pattern))
    return tuple(dict.fromkeys(checked))


class ScopeLimit:
    """The scopes an agent may use in one tenant of ``store``; ``patterns=None`` allows every scope."""

    def __init__(self, store: MemoryStore, tenant: str, patterns: Sequence[str] | None) -> None:
        self.store = store
        self.tenant = tenant
        self.patterns = None if patterns is None else check_scope_patterns(patterns)
        if self.patterns == ():
            raise ContractViolation("a scope limit needs at least one scope", code="invalid_scope")

    @property
    def limited(self) -> bool:
        return self.patterns is not None

    @property
    def exact(self) -> tuple[str, ...]:
        """The allowed scopes that are not prefixes: what a read naming no scope uses."""
        return tuple(p for p in self.patterns or () if not p.endswith("*"))

    def allows(self, scope: str) -> bool:
        if self.patterns is None:
            return True
        return any(scope.startswith(p[:-1]) if p.endswith("*") else scope == p for p in self.patterns)

    def _refuse(self, what: str) -> ContractViolation:
        allowed = ", ".join(self.patterns or ())
        return ContractViolation(f"{what}; this server allows only: {allowed}", code=_CODE)

    def inherited(self) -> set[str]:
        """The scopes the exact allowed scopes lie (transitively) WITHIN, themselves included:
        their records apply inside the allowed scopes, so the agent reads them."""
        exact = self.exact
        return self.store.backend.scope_ancestors(self.tenant, exact) if exact else set()

    def _permitted(self, scope: str, inherited: set[str]) -> bool:
        return self.allows(scope) or scope in inherited

    def check_read(self, scopes: Iterable[str], run_id: str | None, *, closure: bool = True) -> None:
        """A read context's scopes and run must be allowed (``run:<run_id>`` for the run), and so
        must every scope they lie WITHIN — unless an exact allowed scope lies within it too. A
        prefix cannot widen a read: with ``run:*``, a run WITHIN ``user:bob`` would read Bob's
        records. ``closure=False`` checks only the scopes named (no store access)."""
        if self.patterns is None:
            return
        wanted = [check_scope(s) for s in scopes]
        if run_id is not None:
            wanted.append(f"run:{run_id}")
        refused = [s for s in wanted if not self.allows(s)]
        if refused:
            raise self._refuse(f"reading {', '.join(refused)} is not allowed")
        if closure and wanted:
            self._check_closure(wanted, f"reading {', '.join(wanted)}")

    def _check_closure(self, scopes: Sequence[str], what: str) -> None:
        inherited = self.inherited()
        beyond = [
            s
            for s in self.store.backend.scope_ancestors(self.tenant, scopes)
            if not self._permitted(s, inherited)
        ]
        if beyond:
            # Counted, not named: the names of other scopes are not the agent's to learn.
            raise self._refuse(
                f"{what} would also read {len(beyond)} enclosing scope(s) that are not allowed"
            )

    def check_write(self, scope: str) -> None:
        if not self.allows(check_scope(scope)):
            raise self._refuse(f"writing to {scope} is not allowed")

    def readable(self, record: MemoryRecord, inherited: set[str] | None = None) -> bool:
        """Whether the agent may see ``record``: it applies to an allowed scope or to one an exact
        allowed scope lies (transitively) WITHIN (``inherited``, computed if not given)."""
        if self.patterns is None or self.allows(record.scope):
            return True
        return record.scope in (self.inherited() if inherited is None else inherited)

    def check_record(self, record_id: str, verb: str) -> None:
        """``record_id`` (if it exists: a missing one is the store's ``not_found``) must be readable."""
        if self.patterns is None:
            return
        record = self.store.get(self.tenant, record_id)
        if record is not None and not self.readable(record):
            raise self._refuse(f"{verb} {record_id}: it applies to {record.scope}, which is not allowed")

    def check_derived_from(self, record_ids: Iterable[str]) -> None:
        for record_id in record_ids:
            self.check_record(record_id, "deriving from")

    def _cited_outside(self, source_id: str) -> int:
        """How many scopes outside the limit hold records citing ``source_id``."""
        citing = self.store.backend.citing(self.tenant, source_id)
        return len({r.scope for r in citing if not self.allows(r.scope)})

    def check_sources(self, source_ids: Iterable[str]) -> None:
        """Citing a source that records outside the limit cite would rewrite what the store keeps
        about it (and tie the agent's record to their forgetting), so it is refused."""
        if self.patterns is None:
            return
        for source_id in source_ids:
            if self._cited_outside(source_id):
                raise self._refuse(f"source {source_id} is cited by records outside the allowed scopes")

    def check_rivals(self, proposal: WriteProposal) -> None:
        """A claim on a subject that a live record outside the limit also claims would make that
        record contested — a write to its scope — so it is refused."""
        if self.patterns is None:
            return
        tags = {t for t in proposal.tags if t.startswith(SUBJECT_TAG_PREFIX)}
        if proposal.subject is not None:
            tags.add(subject_tag(proposal.subject))
        mine = content_hash(proposal.content)
        for tag in sorted(tags):
            for other in self.store.backend.with_tag(self.tenant, tag):
                if (
                    other.kind == proposal.kind
                    and other.status in _LIVE
                    and content_hash(other.content) != mine
                    and not self.allows(other.scope)
                ):
                    raise self._refuse(
                        f"a different claim on {tag.removeprefix(SUBJECT_TAG_PREFIX)} applies outside "
                        "the allowed scopes; contesting it is not allowed"
                    )

    def check_precedents(self, anchor: str, via: Sequence[str], hops: int) -> None:
        """The anchor and every scope precedents would reach from it must be allowed."""
        if self.patterns is None:
            return
        self.check_read([anchor], None)
        if isinstance(via, str) or not 0 <= hops <= 10:
            return  # the store refuses these with its own code
        types = [check_rel_type(t) for t in via]
        # Every relation recorded so far, whatever the read's knowledge time: at least what
        # precedents can reach.
        reachable = sorted(self.store.backend.related_scopes(self.tenant, anchor, types, hops, as_of=None))
        outside = [s for s in reachable if not self.allows(s)]
        if outside:
            raise self._refuse(
                f"precedents from {anchor} would read {len(outside)} related scope(s) that are not allowed"
            )
        self._check_closure(reachable, f"precedents from {anchor}")

    def check_forget(self, target: str, target_type: str | None) -> None:
        """Whatever ``target`` names must lie in allowed scopes: the record; every record citing the
        source; the scope and every scope within it. Each meaning it may have is checked."""
        if self.patterns is None:
            return
        tenant, backend = self.tenant, self.store.backend
        if target_type in (None, "record"):
            record = self.store.get(tenant, target)
            if record is not None and not self.allows(record.scope):
                raise self._refuse(f"forgetting {target}: it applies to {record.scope}")
        if target_type in (None, "source") and backend.source_exists(tenant, target):
            count = self._cited_outside(target)
            if count:
                raise self._refuse(
                    f"forgetting source {target}: records citing it apply to {count} scope(s) "
                    "that are not allowed"
                )
        if target_type == "scope" or (target_type is None and _is_scope(target)):
            scope = check_scope(target)
            if target_type == "scope" or backend.scope_exists(tenant, scope):
                inside = backend.scope_descendants(tenant, scope) | {scope}
                outside = [s for s in inside if not self.allows(s)]
                if outside:
                    raise self._refuse(
                        f"forgetting scope {target}: it is or contains {len(outside)} scope(s) not allowed"
                    )
