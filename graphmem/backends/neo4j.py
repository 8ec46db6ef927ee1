"""The Neo4j 5 backend: every statement is a parameterised file in ``cypher/``.

Times are stored as integer microseconds since the Unix epoch (UTC) so the
gate's comparisons are exact; each record also keeps its canonical JSON so a
read returns exactly what was written. The gate runs inside the database
(``gate.cypher``) and mirrors ``graphmem.gate.drop_reason``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import neo4j
from neo4j import exceptions as neo4j_errors

from graphmem.backends.base import (
    AddEdge,
    AppendAudit,
    Dependent,
    LineageEdgeRow,
    Op,
    ParentState,
    PutRecord,
    RelateScopes,
    ScopeWithin,
    UpdateRecord,
)
from graphmem.backends.cypher import cypher, statements
from graphmem.errors import BackendUnavailable, ConflictError, GraphmemError
from graphmem.gate import GateResult, validity_window
from graphmem.model import AuditEvent, DropReason, MemoryRecord, ReadContext, Source, Status, scope_type

__all__ = ["SCHEMA_VERSION", "Neo4jBackend"]

SCHEMA_VERSION = 1
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICRO = timedelta(microseconds=1)
_last_ord = 0
# What an UpdateRecord may change: status, and what erasure removes.
_UPDATABLE = ("status", "content", "content_hash", "embedding", "tags", "fingerprint", "json")
_BATCH = 2000
T = TypeVar("T")


def micros(value: datetime | None) -> int | None:
    """Integer microseconds since the epoch, or None."""
    return None if value is None else (value - _EPOCH) // _MICRO


def from_micros(value: int | None) -> datetime | None:
    return None if value is None else _EPOCH + value * _MICRO


def _source(props: dict[str, Any]) -> Source:
    return Source.model_validate({k: v for k, v in props.items() if v is not None})


def _next_ord() -> int:
    """A strictly increasing number that orders audit events written within one microsecond."""
    global _last_ord
    _last_ord = max(_last_ord + 1, time.time_ns())
    return _last_ord


def _record_row(record: MemoryRecord) -> dict[str, Any]:
    start, end = validity_window(record)
    recency = record.valid_from or record.event_time or record.created_at
    props: dict[str, Any] = {
        "kind": record.kind.value,
        "scope": record.scope,
        "content": record.content,
        "content_hash": record.content_hash,
        "status": record.status.value,
        "policy": record.policy,
        "sensitivity": record.sensitivity.value,
        "sensitivity_rank": record.sensitivity.rank,
        "confidence": record.confidence,
        "outcome": record.outcome,
        "writer": record.writer,
        "procedure_name": record.procedure_name,
        "procedure_version": record.procedure_version,
        "preconditions": list(record.preconditions),
        "tags": list(record.tags),
        "embedding": None if record.embedding is None else list(record.embedding),
        "created_at": micros(record.created_at),
        "event_time": micros(record.event_time),
        "valid_from": micros(record.valid_from),
        "valid_to": micros(record.valid_to),
        "expires_at": micros(record.expires_at),
        "start": micros(start),
        "end": micros(end),
        "recency": recency.timestamp(),
        "fingerprint": record.fingerprint(),
        "json": record.model_dump_json(),
    }
    return {
        "tenant": record.tenant,
        "id": record.id,
        "props": props,
        "scope_type": scope_type(record.scope),
        # Quotes live only in the records that carry them, so erasing a record erases its quotes.
        "sources": [s.model_dump(mode="json", exclude={"quote"}) for s in record.sources],
        "derived_from": list(record.derived_from),
    }


def _rows(op: Op) -> tuple[str, dict[str, Any]]:
    if isinstance(op, PutRecord):
        return ("put_records" if op.replace else "create_records"), _record_row(op.record)
    if isinstance(op, UpdateRecord):
        full = _record_row(op.record)
        full["props"] = {k: full["props"][k] for k in _UPDATABLE}
        return "update_records", full
    row: dict[str, Any]
    if isinstance(op, ScopeWithin):
        row = {
            "tenant": op.tenant,
            "child": op.child,
            "parent": op.parent,
            "child_type": scope_type(op.child),
            "parent_type": scope_type(op.parent),
        }
        return "scope_within", row
    if isinstance(op, RelateScopes):
        row = {
            "tenant": op.tenant,
            "a": op.a,
            "b": op.b,
            "rel_type": op.rel_type,
            "a_type": scope_type(op.a),
            "b_type": scope_type(op.b),
        }
        return "relate_scopes", row
    if isinstance(op, AddEdge):
        row = {
            "tenant": op.tenant,
            "src": op.src,
            "dst": op.dst,
            "dst_is_source": op.dst_is_source,
            "at": micros(op.at),
            "reason": op.reason,
        }
        return ("add_supersedes" if op.label == "SUPERSEDES" else "add_invalidated_by"), row
    if isinstance(op, AppendAudit):
        event = op.event
        row = {
            "tenant": event.tenant,
            "id": event.id,
            "action": event.action,
            "at": micros(event.at),
            "ord": _next_ord(),
            "record_ids": list(event.record_ids),
            "json": event.model_dump_json(),
        }
        return "append_audit", row
    raise GraphmemError(f"unknown operation {op!r}", code="unknown_operation")


class Neo4jBackend:
    """Graph I/O against Neo4j 5 through the official driver."""

    def __init__(self, driver: neo4j.Driver, *, database: str | None = None, uri: str = "") -> None:
        self.driver = driver
        self.database = database
        self.uri = uri
        self._owns_driver = False

    @classmethod
    def connect(
        cls,
        uri: str,
        *,
        auth: tuple[str, str] | None = None,
        database: str | None = None,
        driver: neo4j.Driver | None = None,
        connection_timeout: float = 10.0,
    ) -> Neo4jBackend:
        """Open a driver (unless one is given) and check the server answers."""
        owns = driver is None
        if driver is None:
            driver = neo4j.GraphDatabase.driver(
                uri,
                auth=auth,
                connection_timeout=connection_timeout,
                max_transaction_retry_time=15.0,
                notifications_min_severity="OFF",
            )
        try:
            driver.verify_connectivity()
        except (neo4j_errors.ServiceUnavailable, neo4j_errors.AuthError, OSError, ValueError) as err:
            if owns:
                driver.close()
            raise BackendUnavailable(
                f"cannot reach Neo4j at {uri}: {err}. Check that the server is running and "
                "that the URI, credentials and database are right (bolt://host:7687 or neo4j://host:7687)."
            ) from err
        backend = cls(driver, database=database, uri=uri)
        backend._owns_driver = owns
        try:
            backend._read("ping")
        except GraphmemError:
            if owns:
                driver.close()
            raise
        return backend

    # -- plumbing ---------------------------------------------------------

    def _session(self, write: bool) -> neo4j.Session:
        mode = neo4j.WRITE_ACCESS if write else neo4j.READ_ACCESS
        return self.driver.session(database=self.database, default_access_mode=mode)

    def _run(self, work: Callable[[neo4j.ManagedTransaction], T], *, write: bool) -> T:
        try:
            with self._session(write) as session:
                if write:
                    return session.execute_write(work)
                return session.execute_read(work)
        except (neo4j_errors.ServiceUnavailable, neo4j_errors.SessionExpired, OSError) as err:
            what = "the write was rolled back; nothing of it was stored" if write else "the read failed"
            raise BackendUnavailable(
                f"lost the connection to Neo4j at {self.uri}: {what}. Retry the same call once "
                f"the server is reachable again ({err})",
                code="connection_lost",
            ) from err
        except neo4j_errors.ConstraintError as err:
            raise ConflictError(f"the write conflicts with stored data: {err.message}") from err
        except neo4j_errors.ClientError as err:
            if err.code == "Neo.ClientError.Database.DatabaseNotFound":
                raise BackendUnavailable(
                    f"Neo4j at {self.uri} has no database {self.database!r}: create it, or pass "
                    "database=None for the server's default",
                    code="database_not_found",
                ) from err
            raise

    def _read(self, name: str, **params: Any) -> list[neo4j.Record]:
        query = cypher(name)

        def work(tx: neo4j.ManagedTransaction) -> list[neo4j.Record]:
            return list(tx.run(query, params))

        return self._run(work, write=False)

    # -- schema -----------------------------------------------------------

    def schema_version(self) -> int:
        rows = self._read("schema_version")
        version = rows[0]["version"] if rows else None
        return 0 if version is None else int(version)

    def setup(self, embedding_dimensions: int | None = None) -> int:
        """Apply schema migrations up to ``SCHEMA_VERSION``, and the vector index when
        ``embedding_dimensions`` is given; idempotent. Returns the version."""
        current = self.schema_version()
        for version in range(current + 1, SCHEMA_VERSION + 1):
            for statement in statements(f"schema_v{version}"):
                self._write_one(statement, {})
            self._write_one(
                cypher("schema_set_version"), {"version": version, "applied_at": micros(datetime.now(UTC))}
            )
        if embedding_dimensions is not None:
            self._vector_index(embedding_dimensions)
        self._read("await_indexes", timeout_seconds=300)
        return SCHEMA_VERSION

    def _write_one(self, query: str, params: dict[str, Any]) -> None:
        def work(tx: neo4j.ManagedTransaction) -> None:
            tx.run(query, params).consume()

        self._run(work, write=True)

    def _vector_index(self, dimensions: int) -> None:
        existing = self._read("vector_index_dimensions")
        if existing and existing[0]["dimensions"] != dimensions:
            raise ConflictError(
                f"the embedding index has {existing[0]['dimensions']} dimensions, not {dimensions}; "
                "drop graphmem_memory_embedding first to change the embedding model",
                code="embedding_dimensions",
            )
        if not existing:
            self._write_one(cypher("schema_vector_index"), {"dimensions": dimensions})

    # -- writes -----------------------------------------------------------

    def apply(self, ops: Sequence[Op]) -> None:
        groups: list[tuple[str, list[dict[str, Any]]]] = []
        for op in ops:
            name, row = _rows(op)
            if groups and groups[-1][0] == name:
                groups[-1][1].append(row)
            else:
                groups.append((name, [row]))

        def work(tx: neo4j.ManagedTransaction) -> None:
            for name, rows in groups:
                for query in statements(name):
                    for i in range(0, len(rows), _BATCH):
                        tx.run(query, {"rows": rows[i : i + _BATCH]}).consume()

        self._run(work, write=True)

    # -- reads ------------------------------------------------------------

    def get(self, tenant: str, record_id: str) -> MemoryRecord | None:
        found = self.get_many(tenant, [record_id])
        return found[0] if found else None

    def get_many(self, tenant: str, record_ids: Sequence[str]) -> list[MemoryRecord]:
        if not record_ids:
            return []
        rows = self._read("get_records", tenant=tenant, ids=list(record_ids))
        return [MemoryRecord.model_validate_json(r["json"]) for r in rows]

    def existing_ids(self, tenant: str, record_ids: Sequence[str]) -> set[str]:
        if not record_ids:
            return set()
        return {r["id"] for r in self._read("existing_ids", tenant=tenant, ids=list(record_ids))}

    def source_exists(self, tenant: str, source_id: str) -> bool:
        return bool(self._read("source_exists", tenant=tenant, id=source_id)[0]["found"])

    def scope_parents(self, tenant: str, scope: str) -> set[str]:
        return {r["key"] for r in self._read("scope_parents", tenant=tenant, scope=scope)}

    def scope_ancestors(self, tenant: str, scopes: Sequence[str]) -> set[str]:
        found = {r["key"] for r in self._read("scope_ancestors", tenant=tenant, scopes=list(scopes))}
        return found | set(scopes)

    def _gate_params(self, ctx: ReadContext, record_id: str | None) -> dict[str, Any]:
        return {
            "tenant": ctx.tenant,
            "record_id": record_id,
            "entry_scopes": list(ctx.entry_scopes),
            "own_runs": list(ctx.own_runs),
            "kinds": [k.value for k in ctx.kinds],
            "policy": ctx.policy,
            "now": micros(ctx.now),
            "clearance_rank": ctx.clearance.rank,
            "environment": list(ctx.environment),
            "with_embeddings": True,
        }

    def gate(self, ctx: ReadContext) -> GateResult:
        rows = self._read("gate", **self._gate_params(ctx, None))
        verdicts: list[tuple[str, str, DropReason | None]] = []
        survivors: list[tuple[str, str, float, tuple[float, ...] | None]] = []
        for row in rows:
            reason = None if row["reason"] is None else DropReason(row["reason"])
            verdicts.append((row["id"], row["fingerprint"], reason))
            if reason is None:
                embedding = row["embedding"]
                survivors.append(
                    (
                        row["id"],
                        row["content"],
                        row["recency"],
                        None if embedding is None else tuple(embedding),
                    )
                )
        return GateResult(verdicts, survivors)

    def gate_one(self, ctx: ReadContext, record_id: str) -> tuple[str, DropReason | None] | None:
        rows = self._read("gate", **self._gate_params(ctx, record_id))
        if not rows:
            return None
        reason = rows[0]["reason"]
        return rows[0]["fingerprint"], None if reason is None else DropReason(reason)

    def all_records(self, tenant: str) -> list[MemoryRecord]:
        return [MemoryRecord.model_validate_json(r["json"]) for r in self._read("all_records", tenant=tenant)]

    def _records(self, name: str, **params: Any) -> list[MemoryRecord]:
        return [MemoryRecord.model_validate_json(r["json"]) for r in self._read(name, **params)]

    def records_with_status(self, tenant: str, statuses: Sequence[Status]) -> list[MemoryRecord]:
        return self._records("records_with_status", tenant=tenant, statuses=[s.value for s in statuses])

    def by_content_hash(self, tenant: str, content_hash: str) -> list[MemoryRecord]:
        return self._records("by_content_hash", tenant=tenant, content_hash=content_hash)

    def with_tag(self, tenant: str, tag: str) -> list[MemoryRecord]:
        return self._records("with_tag", tenant=tenant, tag=tag)

    def scope_exists(self, tenant: str, scope: str) -> bool:
        return bool(self._read("scope_exists", tenant=tenant, scope=scope)[0]["found"])

    def scope_descendants(self, tenant: str, scope: str) -> set[str]:
        return {r["key"] for r in self._read("scope_descendants", tenant=tenant, scope=scope)} | {scope}

    def records_applying(self, tenant: str, scopes: Sequence[str]) -> list[MemoryRecord]:
        return self._records("records_applying", tenant=tenant, scopes=list(scopes))

    def citing(self, tenant: str, source_id: str) -> list[MemoryRecord]:
        return self._records("citing", tenant=tenant, id=source_id)

    def source(self, tenant: str, source_id: str) -> Source | None:
        rows = self._read("get_source", tenant=tenant, id=source_id)
        return _source(rows[0]["source"]) if rows else None

    def downstream(self, tenant: str, record_ids: Sequence[str]) -> list[Dependent]:
        return self._dependents("downstream", tenant, record_ids)

    def support_of(self, tenant: str, record_ids: Sequence[str]) -> list[Dependent]:
        return self._dependents("support_of", tenant, record_ids)

    def _dependents(self, name: str, tenant: str, record_ids: Sequence[str]) -> list[Dependent]:
        rows = self._read(name, tenant=tenant, ids=list(record_ids))
        return [
            Dependent(
                MemoryRecord.model_validate_json(row["json"]),
                tuple(
                    ParentState(pid, Status(status), from_micros(sup), from_micros(inv))
                    for pid, status, sup, inv in row["parents"]
                ),
            )
            for row in rows
        ]

    def related_scopes(self, tenant: str, anchor: str, via: Sequence[str], hops: int) -> set[str]:
        seen = {anchor}
        frontier = [anchor]
        for _ in range(hops):
            if not frontier:
                break
            step = self._read("related_step", tenant=tenant, keys=frontier, via=list(via))
            frontier = [r["key"] for r in step if r["key"] not in seen]
            seen.update(frontier)
        return seen

    def trace(
        self, tenant: str, record_id: str, depth: int
    ) -> tuple[list[MemoryRecord], list[Source], list[LineageEdgeRow]]:
        root = self.get(tenant, record_id)
        if root is None:
            return [], [], []
        upstream = {record_id}
        frontier = [record_id]
        for _ in range(depth):
            rows = self._read("parents", tenant=tenant, ids=frontier)
            frontier = [r["id"] for r in rows if r["id"] not in upstream]
            if not frontier:
                break
            upstream.update(frontier)
        memories: dict[str, MemoryRecord] = {}
        sources: dict[str, Source] = {}
        edges: set[LineageEdgeRow] = set()
        for row in self._read("trace_edges", tenant=tenant, ids=sorted(upstream)):
            if row["type"] == "DERIVED_FROM" and row["dst"] not in upstream:
                continue
            if row["memory"] is not None:
                other = MemoryRecord.model_validate_json(row["memory"])
                memories[other.id] = other
            if row["source"] is not None:
                source = _source(row["source"])
                sources[source.id] = source
            edges.add(
                LineageEdgeRow(row["src"], row["dst"], row["type"], from_micros(row["at"]), row["reason"])
            )
        for record in self.get_many(tenant, sorted(upstream)):
            memories[record.id] = record
        return (
            [memories[k] for k in sorted(memories)],
            [sources[k] for k in sorted(sources)],
            sorted(edges, key=lambda e: (e.src, e.type, e.dst)),
        )

    def export_ops(self, tenant: str) -> list[Op]:
        records: list[Op] = [PutRecord(record=r) for r in self.all_records(tenant)]
        edges: list[Op] = []
        for row in self._read("export_scope_edges", tenant=tenant):
            if row["label"] == "WITHIN":
                edges.append(ScopeWithin(tenant=tenant, child=row["a"], parent=row["b"]))
            else:
                edges.append(RelateScopes(tenant=tenant, a=row["a"], rel_type=row["rel_type"], b=row["b"]))
        for row in self._read("export_lineage_edges", tenant=tenant):
            edges.append(
                AddEdge(
                    tenant=tenant,
                    label=row["label"],
                    src=row["src"],
                    dst=row["dst"],
                    dst_is_source=row["dst_is_source"],
                    at=from_micros(row["at"]),
                    reason=row["reason"],
                )
            )
        edges.sort(key=lambda op: op.model_dump_json())
        audit: list[Op] = [AppendAudit(event=e) for e in self.audit(tenant, None, None)]
        return [*records, *edges, *audit]

    def audit(self, tenant: str, record_id: str | None, since: datetime | None) -> list[AuditEvent]:
        rows = self._read("audit_events", tenant=tenant, record_id=record_id, since=micros(since))
        return [AuditEvent.model_validate_json(r["json"]) for r in rows]

    def reading(self) -> AbstractContextManager[object]:
        return nullcontext()  # every read is its own transaction

    def close(self) -> None:
        if self._owns_driver:
            self.driver.close()
