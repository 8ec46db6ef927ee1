"""Lineage and forgetting on ``MemoryStore``: supersede, invalidate, consolidate, trace,
precedents, forget, release_run, export and import (SPEC §5).

Every change is one backend batch, so a change and its cascade land together
or not at all.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from graphmem._args import (
    check_aware,
    check_flag,
    check_id,
    check_ids,
    check_instance,
    check_int,
    check_rel_type,
    check_scope,
    check_tenant,
    check_text,
)
from graphmem._core import StoreCore, bulk, transactional
from graphmem.backends.base import AddEdge, AppendAudit, Dependent, Op, PriorVersion, UpdateRecord
from graphmem.errors import ContractViolation, LineageError, NotFound
from graphmem.importing import plan_import
from graphmem.lineage import FORGOTTEN, lost_support, support_count, support_runs_out
from graphmem.model import (
    AuditEvent,
    ForgetEntry,
    ForgetMode,
    ForgetReport,
    ForgetRequest,
    Kind,
    Lineage,
    LineageEdge,
    LineageNode,
    MemoryRecord,
    Outcome,
    ReadContext,
    Selection,
    Source,
    Status,
    Tombstone,
)
from graphmem.model.erasure import erase_record, erase_sources
from graphmem.model.records import new_id
from graphmem.model.write import WriteReason
from graphmem.policy.merge import untrusted_promotion
from graphmem.ranking import forget_cached_terms

if TYPE_CHECKING:
    from graphmem.model.lineage import TargetType

__all__ = ["LineageOps", "invalidation_edges"]

_OPS: TypeAdapter[Op] = TypeAdapter(Op)
_STATUS_BY_MODE = {ForgetMode.RELEASE: Status.RELEASED, ForgetMode.REVOKE: Status.REVOKED}


def _label(record: MemoryRecord) -> str:
    text = record.content if len(record.content) <= 60 else record.content[:57] + "…"
    return text.replace("\n", " ")


class LineageOps(StoreCore):
    """Mixed into ``MemoryStore``: lineage, forgetting, export and import."""

    # -- supersession and invalidation ------------------------------------

    def _require(self, tenant: str, record_id: str, verb: str) -> MemoryRecord:
        record = self.backend.get(tenant, record_id)
        if record is None:
            raise NotFound(f"cannot {verb} {record_id!r}: no such record in tenant {tenant!r}")
        return record

    def _cascade_invalidation(
        self, tenant: str, ends: dict[str, datetime], origin: str, dead: frozenset[str] = frozenset()
    ) -> list[Op]:
        """INVALIDATED_BY edges for every record derived from the records of ``ends`` whose support
        runs out earlier than it is invalidated now, once those stop holding at their times."""
        if not ends:
            return []
        fallen = support_runs_out(
            self.backend.downstream(tenant, sorted(ends)), ends, self._needed_support, dead
        )
        return invalidation_edges(tenant, fallen, origin)

    def _superseded_by(self, tenant: str, record_id: str) -> str | None:
        """A record superseding ``record_id``, if any: one seek where the backend has it
        (``superseded_by``), else from the record's lineage (``trace`` at depth 0)."""
        seek = getattr(self.backend, "superseded_by", None)
        if seek is not None:
            found: str | None = seek(tenant, record_id)
            return found
        _, _, edges = self.backend.trace(tenant, record_id, 0)
        return min((e.src for e in edges if e.type == "SUPERSEDES" and e.dst == record_id), default=None)

    @transactional
    def supersede(self, tenant: str, old_id: str, new_record: MemoryRecord, reason: str) -> MemoryRecord:
        """Write ``new_record`` as the replacement of ``old_id``; the old one stays for history.

        Takes effect at the replacement's valid_from (else event time, else now).
        The replacement must be new and share the old record's tenant, kind and
        scope. Records derived from the old one that lose their support are
        invalidated at the same time. Raises ``NotFound`` or ``LineageError``.
        """
        tenant = check_tenant(tenant)
        old_id = check_id(old_id)
        new_record = check_instance(new_record, MemoryRecord, "not_a_record", "the replacement")
        reason = str(check_text(reason, "reason", max_chars=2000))
        old = self._require(tenant, old_id, "supersede")
        if new_record.id == old_id:
            raise LineageError(f"record {old_id!r} cannot supersede itself", code="self_supersession")
        if new_record.tenant != tenant:
            raise LineageError(
                f"replacement {new_record.id!r} belongs to tenant {new_record.tenant!r}, not {tenant!r}; "
                "no edge crosses tenants",
                code="cross_tenant",
            )
        if (new_record.kind, new_record.scope) != (old.kind, old.scope):
            raise LineageError(
                f"replacement {new_record.id!r} must share the kind and scope of {old_id!r} "
                f"({old.kind.value}, {old.scope}); got ({new_record.kind.value}, {new_record.scope})",
                code="replacement_mismatch",
            )
        if old.status in FORGOTTEN:
            raise LineageError(
                f"record {old_id!r} is {old.status.value}; a forgotten record cannot be superseded",
                code="forgotten_record",
            )
        newer = self._superseded_by(tenant, old_id)
        if newer is not None:
            raise LineageError(
                f"record {old_id!r} was already superseded by {newer!r}; supersede {newer!r} instead "
                "so that one line of versions stays current",
                code="already_superseded",
            )
        at = new_record.valid_from or new_record.event_time or self.clock()
        edge = AddEdge(tenant=tenant, label="SUPERSEDES", src=new_record.id, dst=old_id, at=at, reason=reason)
        cascade = self._cascade_invalidation(tenant, {old_id: at}, f"{old_id} superseded by {new_record.id}")
        self._write_new(
            [new_record],
            extra=[edge, *cascade],
            action="superseded",
            reason=reason,
            record_ids=(new_record.id, old_id, *(e.src for e in cascade if isinstance(e, AddEdge))),
        )
        return new_record

    @transactional
    def invalidate(
        self, tenant: str, record_id: str, by: str, reason: str, at: datetime | None = None
    ) -> None:
        """Record that ``record_id`` stopped holding at ``at`` (default: the store's clock) because of ``by``.

        ``by`` is a record id or a source id of the same tenant. Records derived
        from it that lose their support are invalidated at the same time.
        """
        tenant = check_tenant(tenant)
        record_id = check_id(record_id)
        by = check_id(by, "by (a record or source id)")
        reason = str(check_text(reason, "reason", max_chars=2000))
        at = None if at is None else check_aware(at, "at")
        self._require(tenant, record_id, "invalidate")
        if by == record_id:
            raise LineageError(f"record {record_id!r} cannot invalidate itself", code="self_invalidation")
        by_source = self.backend.get(tenant, by) is None
        if by_source and not self.backend.source_exists(tenant, by):
            raise NotFound(f"{by!r} is neither a record nor a source of tenant {tenant!r}")
        when = self.clock() if at is None else at
        edge = AddEdge(
            tenant=tenant,
            label="INVALIDATED_BY",
            src=record_id,
            dst=by,
            dst_is_source=by_source,
            at=when,
            reason=reason,
        )
        cascade = self._cascade_invalidation(tenant, {record_id: when}, f"{record_id} invalidated by {by}")
        ids = (record_id, *(e.src for e in cascade if isinstance(e, AddEdge)))
        event = AuditEvent(
            tenant=tenant, action="invalidated", record_ids=ids, reason=reason, at=self.clock()
        )
        self._apply([edge, *cascade, AppendAudit(event=event)])

    # -- consolidation ----------------------------------------------------

    @transactional
    def consolidate(
        self,
        tenant: str,
        from_ids: Sequence[str],
        into: MemoryRecord,
        rule: str,
        *,
        min_support: int | None = None,
    ) -> MemoryRecord:
        """Promote episodes (or claims) into a semantic claim or a procedure, with DERIVED_FROM edges.

        A procedure may only be promoted from episodes whose outcome is
        verified success; any other outcome raises ``LineageError`` naming the
        episode. At least ``min_support`` (default: the store's) distinct
        records are required.

        A record derived only from tainted records is tainted too
        (``untrusted_lineage``); promoted to a procedure or a broad scope (see
        ``graphmem.policy.merge.untrusted_promotion``) it is written
        ``pending_approval`` with reason ``needs_approval_untrusted``, and
        ``approve(tenant, record.proposal_id, approver)`` makes it active.
        """
        tenant = check_tenant(tenant)
        ids = list(dict.fromkeys(check_ids(from_ids, "from_ids")))
        into = check_instance(into, MemoryRecord, "not_a_record", "into")
        rule = str(check_text(rule, "rule", max_chars=2000))
        if min_support is not None:
            check_int(min_support, "min_support", low=0, high=1_000_000)
        needed = self.min_support if min_support is None else min_support
        if into.kind not in (Kind.SEMANTIC, Kind.PROCEDURAL):
            raise ContractViolation(
                f"consolidate() creates semantic or procedural records, not {into.kind.value}",
                code="consolidate_kind",
            )
        if len(ids) < needed:
            raise LineageError(
                f"consolidating into {into.id!r} needs at least {needed} supporting "
                f"record(s); got {len(ids)}",
                code="insufficient_support",
            )
        found = {r.id: r for r in self.backend.get_many(tenant, ids)}
        missing = [i for i in ids if i not in found]
        if missing:
            raise NotFound(f"cannot consolidate from {missing!r}: no such record(s) in tenant {tenant!r}")
        for rid in ids:
            source = found[rid]
            if source.status in FORGOTTEN:
                raise LineageError(
                    f"record {rid!r} is {source.status.value} and cannot support a consolidation",
                    code="forgotten_record",
                )
            if into.kind is Kind.PROCEDURAL and not (source.kind is Kind.EPISODIC and source.succeeded):
                raise LineageError(
                    f"cannot promote a procedure from {rid!r}: its outcome is {source.outcome!r} "
                    f"({source.kind.value}); only episodes with outcome 'verified-success' can",
                    code="unverified_episode",
                )
        if into.derived_from and set(into.derived_from) != set(ids):
            raise ContractViolation(
                "into.derived_from must be empty or name exactly the consolidated records",
                code="derived_from_mismatch",
            )
        supports = [found[i] for i in ids]
        update: dict[str, Any] = {
            "derived_from": tuple(ids),
            "untrusted_lineage": all(s.tainted for s in supports),
        }
        if into.kind is Kind.PROCEDURAL and into.outcome is None:
            update["outcome"] = Outcome.VERIFIED_SUCCESS.value
        record = MemoryRecord.model_validate({**into.model_dump(), **update})
        held = untrusted_promotion(record, supports, self.write_policy)
        extra: list[Op] = []
        if held is not None:
            record = record.model_copy(
                update={
                    "status": Status.PENDING_APPROVAL,
                    "proposal_id": record.proposal_id or new_id("prop"),
                }
            )
            event = AuditEvent(
                tenant=tenant,
                action="pending_approval",
                record_ids=(record.id,),
                reason=WriteReason.NEEDS_APPROVAL_UNTRUSTED.value,
                at=self.clock(),
                details={"proposal_id": record.proposal_id, "message": held},
            )
            extra.append(AppendAudit(event=event))
        self._write_new(
            [record], extra=extra, action="consolidated", reason=rule, record_ids=(record.id, *ids)
        )
        return record

    # -- trace and precedents ---------------------------------------------

    def trace(self, tenant: str, record_id: str, depth: int = 50) -> Lineage:
        """The lineage DAG of a record: what it derives from, cites, superseded or was superseded by,
        and what invalidated it. Raises ``NotFound``."""
        tenant = check_tenant(tenant)
        record_id = check_id(record_id)
        depth = check_int(depth, "depth", low=0, high=1000, code="invalid_depth")
        memories, sources, edges = self.backend.trace(tenant, record_id, depth)
        if not memories:
            raise NotFound(f"no record {record_id!r} in tenant {tenant!r}")
        nodes = [
            LineageNode(
                id=m.id,
                type="memory",
                kind=m.kind.value,
                status=m.status.value,
                label=_label(m),
                tainted=m.tainted,
            )
            for m in memories
        ]
        # A source's state is what the records citing it say (the copies forget updates),
        # read in id order so every backend reports the same.
        copies: dict[str, list[Source]] = {}
        for m in sorted(memories, key=lambda r: r.id):
            for cited in m.sources:
                copies.setdefault(cited.id, []).append(cited)
        for s in sources:
            seen = copies.get(s.id, [s])
            statuses = {c.status for c in seen}
            status = "erased" if "erased" in statuses else "revoked" if "revoked" in statuses else "active"
            nodes.append(
                LineageNode(
                    id=s.id, type="source", kind=seen[0].type, status=status, label=seen[0].locator or ""
                )
            )
        return Lineage(
            root=record_id,
            nodes=tuple(nodes),
            edges=tuple(
                LineageEdge(src=e.src, dst=e.dst, type=e.type, at=e.at, reason=e.reason, recorded=e.recorded)
                for e in edges
            ),
        )

    def precedents(
        self,
        ctx: ReadContext,
        anchor_scope: str,
        via: Sequence[str],
        hops: int = 2,
        query: str = "",
        *,
        query_embedding: Sequence[float] | None = None,
        query_embedding_model: str | None = None,
        actor: str | None = None,
    ) -> Selection:
        """Episodes whose scope is reachable from ``anchor_scope`` over RELATED edges of the types in
        ``via`` (either direction, at most ``hops``), gated and ranked like any recall.

        Only relations recorded by the context's knowledge time (``ctx.known_at``) are followed,
        so a replay at an earlier ``now`` / ``as_of`` does not reach scopes related later. The
        relations are walked and the episodes recalled in one read, and the recall is audited
        like ``recall``. The receipt is made for ``precedents_context(ctx, anchor_scope, via,
        hops)`` (the episodes of the reached scopes): verify it with
        ``verify(receipt, store.precedents_context(ctx, anchor_scope, via, hops))``, with the
        ``ctx`` passed here. Raises ``ContractViolation`` like ``recall``, and for a bad anchor
        (``invalid_scope``), relation type (``invalid_relation_type``) or ``hops``
        (``invalid_hops``). ``query_embedding`` and ``query_embedding_model`` rank and check
        embeddings as in ``recall`` (``embedding_model_mismatch``).
        """
        ctx, query, _ = self._read_args("precedents", ctx, query)
        anchor, types, hops = self._precedents_args(anchor_scope, via, hops)
        return self._recall(
            ctx,
            query,
            False,
            query_embedding,
            query_embedding_model=query_embedding_model,
            audit=self.audit_recalls is not False,
            actor=actor,
            narrow=lambda asked: self._related_context(asked, anchor, types, hops),
        )

    def precedents_context(
        self, ctx: ReadContext, anchor_scope: str, via: Sequence[str], hops: int = 2
    ) -> ReadContext:
        """The context ``precedents(ctx, anchor_scope, via, hops)`` recalls with: ``ctx`` limited
        to episodes, its scopes those reachable from the anchor through relations recorded by
        ``ctx.known_at``. A relation recorded later does not change it, so it rebuilds the
        context of an earlier precedents call to ``verify`` its receipt. Raises as ``precedents``.
        """
        ctx, _, _ = self._read_args("precedents_context", ctx, "")
        anchor, types, hops = self._precedents_args(anchor_scope, via, hops)
        with self.backend.reading():
            return self._related_context(ctx, anchor, types, hops)

    @staticmethod
    def _precedents_args(anchor_scope: str, via: Sequence[str], hops: int) -> tuple[str, list[str], int]:
        anchor = check_scope(anchor_scope)
        if isinstance(via, str | bytes) or not isinstance(via, Iterable):
            raise ContractViolation(
                f"via must be a list of relation types such as ['USES'], got {type(via).__name__}",
                code="bad_argument",
            )
        types = [check_rel_type(t) for t in via]
        return anchor, types, check_int(hops, "hops", low=0, high=10, code="invalid_hops")

    def _related_context(self, ctx: ReadContext, anchor: str, types: list[str], hops: int) -> ReadContext:
        reachable = self.backend.related_scopes(ctx.tenant, anchor, types, hops, as_of=ctx.known_at)
        return ReadContext.model_validate(
            {**ctx.model_dump(), "scopes": sorted(reachable), "kinds": [Kind.EPISODIC]}
        )

    # -- forgetting -------------------------------------------------------

    def _resolve_target(self, req: ForgetRequest) -> TargetType:
        if req.target_type is not None:
            return req.target_type
        matches: list[TargetType] = []
        if self.backend.get(req.tenant, req.target) is not None:
            matches.append("record")
        if self.backend.source_exists(req.tenant, req.target):
            matches.append("source")
        if ":" in req.target and self.backend.scope_exists(req.tenant, req.target):
            matches.append("scope")
        if not matches:
            raise NotFound(f"{req.target!r} is no record, source or scope of tenant {req.tenant!r}")
        if len(matches) > 1:
            raise ContractViolation(
                f"{req.target!r} names a {' and a '.join(matches)}; set target_type to choose",
                code="ambiguous_target",
            )
        return matches[0]

    @transactional
    def forget(self, request: ForgetRequest) -> ForgetReport:
        """Release, revoke or erase a record, a source, or everything applying to a scope, and
        (with ``cascade``) every record that loses its support, in one transaction.

        Erase replaces the record with its tombstone (``graphmem.model.erasure``): id, kind,
        tenant, scope, times, lineage ids and who asked, when and why; content, embedding,
        tags, outcome, procedure fields, writer and its sources' quotes are cleared, and the
        locators and digests of sources no live record cites. The text is then gone from the
        store's nodes, indexes and files.
        """
        request = check_instance(request, ForgetRequest, "not_a_request", "forget()'s request")
        with bulk():
            return self._forget(request)

    def _forget(self, request: ForgetRequest) -> ForgetReport:
        req = request
        target_type = self._resolve_target(req)
        now = self.clock()
        dead_sources: frozenset[str] = frozenset()
        entries: dict[str, tuple[MemoryRecord, str]] = {}
        kept: list[MemoryRecord] = []
        survivors: list[Dependent] = []
        if target_type == "record":
            record = self._require(req.tenant, req.target, "forget")
            entries[record.id] = (record, "target")
        elif target_type == "scope":
            scopes = sorted(self.backend.scope_descendants(req.tenant, check_scope(req.target)))
            for record in self.backend.records_applying(req.tenant, scopes):
                entries[record.id] = (record, f"applies to {record.scope}")
        else:
            dead_sources = frozenset({req.target})
            citing = self.backend.citing_ids(req.tenant, req.target)  # support_of loads the records
            for dep in self.backend.support_of(req.tenant, citing):
                if support_count(dep.record, dep.parents, set(), None, dead_sources) < self._needed_support:
                    entries[dep.record.id] = (dep.record, f"lost support: source {req.target}")
                else:
                    kept.append(dep.record)
                    survivors.append(dep)
        if req.mode is ForgetMode.RELEASE:
            wrong = [r.id for r, _ in entries.values() if r.kind is not Kind.WORKING]
            if target_type == "scope":
                entries = {i: e for i, e in entries.items() if e[0].kind is Kind.WORKING}
            elif wrong:
                raise ContractViolation(
                    f"release applies to working memory; {wrong!r} are not working records; "
                    "use revoke or erase",
                    code="release_not_working",
                )
        entries = {
            i: e for i, e in entries.items() if e[0].status not in FORGOTTEN or req.mode is ForgetMode.ERASE
        }
        cascaded: list[tuple[MemoryRecord, str]] = []
        minimum = self._needed_support
        if req.cascade and entries:
            dependents = self.backend.downstream(req.tenant, sorted(entries))
            fallen = lost_support(dependents, entries, at=None, min_support=minimum)
            cascaded = [(r, f"lost support: {cause}") for r, cause in fallen]
            gone = {r.id for r, _ in fallen}
            survivors += [d for d in dependents if d.record.id not in gone and d.record.id not in entries]
        dead = frozenset(entries) | {r.id for r, _ in cascaded}
        # A survivor whose remaining support is only superseded or invalidated parents stops
        # holding when the last of them did: it is invalidated from then on. The survivors are
        # settled together, as one may derive from another whose end moves now; then what derives
        # from them.
        origin = f"{req.target} forgotten"
        fallen_at = support_runs_out(survivors, {}, minimum, dead, dead_sources)
        timed = invalidation_edges(req.tenant, fallen_at, origin)
        ends_at = {record.id: at for record, at, _ in fallen_at}
        timed += self._cascade_invalidation(req.tenant, ends_at, origin, dead)
        return self._apply_forget(req, target_type, now, entries, cascaded, kept, dead_sources, timed)

    def _apply_forget(
        self,
        req: ForgetRequest,
        target_type: TargetType,
        now: datetime,
        entries: dict[str, tuple[MemoryRecord, str]],
        cascaded: list[tuple[MemoryRecord, str]],
        kept: list[MemoryRecord],
        dead_sources: frozenset[str],
        timed: list[Op],
    ) -> ForgetReport:
        erase = req.mode is ForgetMode.ERASE
        tombstone = Tombstone(at=now, reason=req.reason, requested_by=req.requested_by)
        ops: list[Op] = []
        report: list[ForgetEntry] = []
        plan = [
            *((r, w, req.mode) for r, w in entries.values()),
            *((r, w, ForgetMode.ERASE if erase else ForgetMode.REVOKE) for r, w in cascaded),
        ]
        gone, orphans = (
            self._gone_sources(req.tenant, [r for r, _, m in plan if m is ForgetMode.ERASE], dead_sources)
            if erase
            else (set(), [])
        )

        revoked: dict[Source, Source] = {}  # one revoked copy of each distinct cited copy

        def revoke(source: Source) -> Source:
            copy = revoked.get(source)
            if copy is None:
                copy = revoked[source] = source.model_copy(update={"status": "revoked"})
            return copy

        def mark_sources(record: MemoryRecord) -> tuple[Any, ...]:
            if erase:
                return tuple(
                    erase_sources((s,), gone=gone, erased=dead_sources)[0] if s.id in dead_sources else s
                    for s in record.sources
                )
            if not dead_sources:
                return record.sources
            return tuple(revoke(s) if s.id in dead_sources else s for s in record.sources)

        # Without the body, a kept version is its status and the change's time; where the
        # backend copies each stored fingerprint, one such version serves every record.
        shared = getattr(self.backend, "copies_fingerprints", False)
        priors: dict[Status, PriorVersion] = {}

        def prior_of(record: MemoryRecord) -> PriorVersion:
            if not shared:
                return self._prior(record, whole=False)
            found = priors.get(record.status)
            if found is None:
                found = priors[record.status] = self._prior(record, whole=False)
            return found

        for record, why, mode in plan:
            if mode is ForgetMode.ERASE:
                # The update holds only values of the fields' own types, built here: copying is
                # enough, and re-validating every record made big cascades slow.
                erased = erase_record(record, tombstone, gone_sources=gone, erased_sources=dead_sources)
                ops.append(UpdateRecord(record=erased, erase=True))
                action = "erased"
            else:
                # Revoke and release keep the text, and the fingerprint of the version they
                # replace: a verify of an earlier receipt can then still compare every candidate.
                update = {"status": _STATUS_BY_MODE[mode], "sources": mark_sources(record)}
                prior = prior_of(record)
                ops.append(
                    UpdateRecord(record=record.model_copy(update=update), prior=prior, status_only=True)
                )
                action = "released" if mode is ForgetMode.RELEASE else "revoked"
            report.append(ForgetEntry(record_id=record.id, action=action, reason=why))
        for record in orphans:
            # Erased earlier while another record still cited these sources: now none does.
            sources = erase_sources(record.sources, gone=gone, erased=dead_sources)
            ops.append(UpdateRecord(record=record.model_copy(update={"sources": sources}), erase=True))
        for record in kept:
            # Still supported, its cited source marked: after a revoke the version it replaces
            # is kept (as for any overwrite); an erase keeps none (it would hold erased data).
            ops.append(
                UpdateRecord(
                    record=record.model_copy(update={"sources": mark_sources(record)}),
                    erase=erase,
                    prior=None if erase else self._prior(record),
                    status_only=not erase,
                )
            )
            report.append(
                ForgetEntry(
                    record_id=record.id, action="kept", reason=f"still supported without {req.target}"
                )
            )
        touched = tuple(e.record_id for e in report)
        event = AuditEvent(
            tenant=req.tenant,
            action="forgotten",
            actor=req.requested_by,
            record_ids=touched,
            reason=req.reason,
            at=now,
            details={"mode": req.mode.value, "target_type": target_type, "target": req.target},
        )
        ops += timed
        ops.append(AppendAudit(event=event))
        self._apply(ops)
        if erase:
            forget_cached_terms()
        return ForgetReport(
            tenant=req.tenant,
            target=req.target,
            target_type=target_type,
            mode=req.mode,
            at=now,
            entries=tuple(report),
            erased_sources=tuple(sorted(dead_sources)) if erase else (),
        )

    def _gone_sources(
        self, tenant: str, erased: list[MemoryRecord], dead_sources: frozenset[str]
    ) -> tuple[set[str], list[MemoryRecord]]:
        """The sources of ``erased`` that no live record cites once they are erased (their
        locators and digests go too), and the records erased earlier that cite them."""
        ids = {r.id for r in erased}
        gone = set(dead_sources)
        orphans: dict[str, MemoryRecord] = {}
        for sid in sorted({s.id for r in erased for s in r.sources} - gone):
            citers = self.backend.citing(tenant, sid)
            if all(c.id in ids or c.status is Status.ERASED for c in citers):
                gone.add(sid)
                orphans.update((c.id, c) for c in citers if c.id not in ids)
        return gone, sorted(orphans.values(), key=lambda r: r.id)

    @transactional
    def release_run(
        self,
        tenant: str,
        run_id: str,
        *,
        requested_by: str = "graphmem",
        final_episode: MemoryRecord | None = None,
    ) -> ForgetReport:
        """Take a finished run's working records out of active use; optionally first write the run's
        final trace as an episode (the only way working state becomes durable)."""
        tenant = check_tenant(tenant)
        scope = check_scope(f"run:{check_id(run_id, 'run_id')}")
        requested_by = str(check_text(requested_by, "requested_by", max_chars=256))
        if final_episode is not None:
            check_instance(final_episode, MemoryRecord, "not_a_record", "final_episode")
            if final_episode.kind is not Kind.EPISODIC:
                raise ContractViolation(
                    "a run's final trace is written as an episodic record", code="final_trace_kind"
                )
            self._write_new([final_episode], action="final_trace", reason=f"final trace of run {run_id}")
        request = ForgetRequest(
            tenant=tenant,
            target=scope,
            target_type="scope",
            mode=ForgetMode.RELEASE,
            reason=f"run {run_id} finished",
            requested_by=requested_by,
        )
        if not self.backend.scope_exists(tenant, scope):
            return ForgetReport(
                tenant=tenant, target=scope, target_type="scope", mode=ForgetMode.RELEASE, at=self.clock()
            )
        return self.forget(request)

    # -- export and import ------------------------------------------------

    def export(self, tenant: str) -> Iterator[str]:
        """The tenant as JSON Lines (records, tombstones, scope and lineage edges, audit), canonical order.

        Raises ``ContractViolation`` for a bad tenant at the call, not at the first line."""
        ops = self.backend.export_ops(check_tenant(tenant))
        return (json.dumps(op.model_dump(mode="json"), sort_keys=True, ensure_ascii=False) for op in ops)

    @transactional
    def import_(self, stream: Iterable[str | bytes], *, replace: bool = False) -> int:
        """Load JSON Lines written by ``export`` (from either backend) in one all-or-nothing batch.

        Imported records meet the same contracts as ``add`` and the write policy's secret
        rule (``secret_detected``, or redacted under ``secrets="redact"``); an erased record
        must be a bare tombstone. Every edge needs both ends in the store or the import, in
        one tenant (``dangling_edge``, ``cross_tenant``), and no lineage or WITHIN cycle or
        second successor may appear. A stored record is overwritten only with
        ``replace=True``, and never to bring back erased content or to rewrite its lineage.
        Raises ``ContractViolation``, ``ConflictError`` or ``LineageError``; returns the
        number of lines read.
        """
        if isinstance(stream, str | bytes) or not isinstance(stream, Iterable):
            raise ContractViolation(
                f"import_() takes an iterable of JSON lines (e.g. an open file or text.splitlines()), "
                f"got {type(stream).__name__}",
                code="bad_argument",
            )
        check_flag(replace, "replace")
        ops: list[Op] = []
        for number, line in enumerate(stream, 1):
            if not isinstance(line, str | bytes):
                raise ContractViolation(
                    f"line {number} is {type(line).__name__}, not text", code="bad_import"
                )
            if not line.strip():
                continue
            try:
                ops.append(_OPS.validate_json(line))
            except ValueError as err:
                raise ContractViolation(
                    f"line {number} is not a graphmem export line: {err}", code="bad_import"
                ) from None
        with bulk():
            plan = plan_import(self, ops, replace=replace)
            self._send(plan.ops)
        if plan.erases:
            forget_cached_terms()
            compact = getattr(self.backend, "compact", None)
            if compact is not None:
                compact()
        return len(ops)


def invalidation_edges(
    tenant: str, fallen: Iterable[tuple[MemoryRecord, datetime, str]], origin: str | None = None
) -> list[Op]:
    """An INVALIDATED_BY edge for each record whose support runs out: from when, to the parent
    whose end ends it, with the change that caused it (``origin``) in its reason."""
    why = f" ({origin})" if origin else ""
    return [
        AddEdge(
            tenant=tenant,
            label="INVALIDATED_BY",
            src=record.id,
            dst=cause,
            at=at,
            reason=f"lost support: {cause}{why}",
        )
        for record, at, cause in fallen
    ]
