"""How the Neo4j backend lays out what it writes: records as rows of parameters, each
operation as the statement file that applies it, and the sending of a batch of
operations inside one transaction.

Times are integer microseconds since the Unix epoch (UTC), so comparisons in the
database are exact. A record keeps its canonical JSON, so a read returns exactly
what was written.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import neo4j

from graphmem.backends.base import (
    AddEdge,
    AppendAudit,
    Op,
    PriorVersion,
    PutRecord,
    RelateScopes,
    ScopeWithin,
    UpdateRecord,
    erased_tenants,
)
from graphmem.backends.cypher import cypher, statements
from graphmem.backends.neo4j_cache import stored_tokens
from graphmem.backends.neo4j_crypt import Crypt, SealedRecord, record_of
from graphmem.errors import GraphmemError, LineageError
from graphmem.model import Kind, MemoryRecord, Source, Status, scope_type
from graphmem.model.canonical import sha256
from graphmem.model.gate import validity_window

__all__ = [
    "KINDS",
    "RECORD_ROW",
    "STATUSES",
    "Tx",
    "done_name",
    "erasures_name",
    "from_micros",
    "lock_names",
    "micros",
    "op_row",
    "record_of",
    "send_ops",
    "source_of",
]

Tx = neo4j.Transaction | neo4j.ManagedTransaction
_PARAM = re.compile(r"\$([A-Za-z_]\w*)")

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICRO = timedelta(microseconds=1)
_last_ord = 0
_BATCH = 2500
#: Kinds in the order of their code in the gate list (``$kind_mask`` follows it).
KINDS = (Kind.WORKING, Kind.EPISODIC, Kind.SEMANTIC, Kind.PROCEDURAL)
_KIND_CODE = {kind: i for i, kind in enumerate(KINDS)}
#: Stand-ins for absent times in the gate list (a stored list cannot hold null).
_ALWAYS = -(2**63 - 1)
_NEVER = 2**63 - 1
#: The layout of a record row in create_records.cypher and put_records.cypher.
RECORD_ROW = (
    "id",
    "kind",
    "scope",
    "content",
    "content_hash",
    "status",
    "policy",
    "sensitivity",
    "confidence",
    "outcome",
    "writer",
    "procedure_name",
    "procedure_version",
    "preconditions",
    "tags",
    "embedding",
    "created_at",
    "event_time",
    "valid_from",
    "valid_to",
    "expires_at",
    "fingerprint",
    "json",
    "tombstone",
    "gate",
    "sources",
    "sealed",
    "embedding_model",
)
#: Statuses by the code the gate list holds for them (0 = active).
STATUSES = [status.value for status in Status]
_STATUS_CODE = {status: code for code, status in enumerate(Status)}
#: Kept out of the stored JSON: their own properties are the truth, so a status
#: change rewrites a few small properties, not the JSON.
_MUTABLE = {"status", "tombstone"}


def micros(value: datetime | None) -> int | None:
    """Integer microseconds since the epoch, or None."""
    return None if value is None else (value - _EPOCH) // _MICRO


def from_micros(value: int | None) -> datetime | None:
    return None if value is None else _EPOCH + value * _MICRO


def source_of(props: dict[str, Any]) -> Source:
    return Source.model_validate({k: v for k, v in props.items() if v is not None})


def _next_ord() -> int:
    """A strictly increasing number that orders audit events written within one microsecond."""
    global _last_ord
    _last_ord = max(_last_ord + 1, time.time_ns())
    return _last_ord


def _gate_list(record: MemoryRecord, stored: str) -> list[int]:
    """The record's gate inputs as gate.cypher reads them, without the two edge times
    (the fingerprint's tokens are of its stored, sealed form: ``stored_tokens``)."""
    start, end = validity_window(record)
    recency = record.valid_from or record.event_time or record.created_at
    return [
        _KIND_CODE[record.kind],
        _STATUS_CODE[record.status],
        _ALWAYS if start is None else (start - _EPOCH) // _MICRO,
        _NEVER if end is None else (end - _EPOCH) // _MICRO,
        record.sensitivity.rank,
        1 if record.succeeded else 0,
        (recency - _EPOCH) // _MICRO,
        0 if record.embedding is None else 1,
        *stored_tokens(stored),
    ]


def _stored(record: MemoryRecord) -> tuple[str, str, str | None]:
    """(JSON without status and tombstone, fingerprint, tombstone JSON or None).

    The fingerprint is ``MemoryRecord.fingerprint`` (over the whole record), the
    same on every backend.
    """
    tombstone = None if record.tombstone is None else record.tombstone.model_dump_json()
    return record.model_dump_json(exclude=_MUTABLE), sha256(record.model_dump_json()), tombstone


def _record_row(record: MemoryRecord, sealed: SealedRecord) -> list[Any]:
    """A record as the list ``RECORD_ROW`` lays out. Text-bearing values are sealed
    (``graphmem.backends.neo4j_crypt``); outcome, writer and procedure name and version are
    only in the sealed JSON, so their node properties are null."""
    tombstone = None if record.tombstone is None else record.tombstone.model_dump_json()
    return [
        record.id,
        record.kind.value,
        record.scope,
        sealed.content,
        sealed.content_hash,
        record.status.value,
        record.policy,
        record.sensitivity.value,
        record.confidence,
        None,
        None,
        None,
        None,
        sealed.preconditions,
        sealed.tags,
        sealed.embedding,
        micros(record.created_at),
        micros(record.event_time),
        micros(record.valid_from),
        micros(record.valid_to),
        micros(record.expires_at),
        sealed.fingerprint,
        sealed.json,
        tombstone,
        _gate_list(record, sealed.fingerprint),
        sealed.sources,
        sealed.sealed,
        sealed.embedding_model,
    ]


def _prior_row(record: MemoryRecord, prior: PriorVersion | None, crypt: Crypt) -> list[Any] | None:
    """The version an overwrite keeps, as the statements read it: [until in µs, status code,
    fingerprint sealed, the two tokens of that, the whole version sealed ("" when the caller
    kept no record)]; None when it keeps none (or nothing changed)."""
    if prior is None or record.status is Status.ERASED:
        return None
    if prior.fingerprint is None:  # this backend does not copy stored fingerprints
        raise ValueError(f"the version {record.id!r} replaces needs its fingerprint")
    fingerprint = _stored(record)[1]
    if prior.fingerprint == fingerprint:
        return None
    until = (prior.until - _EPOCH) // _MICRO
    sealed = crypt.seal_version_fingerprint(record.tenant, record.id, prior.fingerprint, until)
    return [
        until,
        _STATUS_CODE[prior.status],
        sealed,
        *stored_tokens(sealed),
        "" if prior.record is None else crypt.seal_version(prior.record, until),
    ]


def _update_row(record: MemoryRecord, sealed: SealedRecord) -> list[Any]:
    """What an UpdateRecord may change: status, and what an erase clears (update_records.cypher)."""
    tombstone = None if record.tombstone is None else record.tombstone.model_dump_json()
    return [
        record.id,
        record.status.value,
        tombstone,
        sealed.content,
        sealed.content_hash,
        sealed.embedding,
        sealed.tags,
        sealed.fingerprint,
        sealed.json,
        _gate_list(record, sealed.fingerprint),
        None,
        None,
        None,
        None,
        sealed.preconditions,
        sealed.sealed,
        sealed.embedding_model,
    ]


def op_row(op: Op) -> tuple[str, str, Any]:
    """(statement file, tenant, row) of one operation."""
    if isinstance(op, PutRecord):
        return ("put_records" if op.replace else "create_records"), op.record.tenant, (op.record, op.prior)
    if isinstance(op, UpdateRecord):
        return "update_records", op.record.tenant, (op.record, op.prior)
    if isinstance(op, ScopeWithin):
        row: dict[str, Any] = {
            "child": op.child,
            "parent": op.parent,
            "child_type": scope_type(op.child),
            "parent_type": scope_type(op.parent),
            "recorded": micros(op.recorded),
        }
        return "scope_within", op.tenant, row
    if isinstance(op, RelateScopes):
        row = {
            "a": op.a,
            "b": op.b,
            "rel_type": op.rel_type,
            "a_type": scope_type(op.a),
            "b_type": scope_type(op.b),
            "recorded": micros(op.recorded),
        }
        return "relate_scopes", op.tenant, row
    if isinstance(op, AddEdge):
        row = {
            "src": op.src,
            "dst": op.dst,
            "dst_is_source": op.dst_is_source,
            "at": micros(op.at),
            "reason": op.reason,
            "recorded": micros(op.recorded),
        }
        return ("add_supersedes" if op.label == "SUPERSEDES" else "add_invalidated_by"), op.tenant, row
    if isinstance(op, AppendAudit):
        event = op.event
        row = {
            "id": event.id,
            "action": event.action,
            "at": micros(event.at),
            "ord": _next_ord(),
            "record_ids": list(event.record_ids),
            "json": event.model_dump_json(),
        }
        return "append_audit", event.tenant, row
    raise GraphmemError(f"unknown operation {op!r}", code="unknown_operation")


def _chunk_params(name: str, tenant: str, rows: list[Any], crypt: Crypt) -> Iterator[dict[str, Any]]:
    """The parameters of each chunk of one statement group, at most ``_BATCH`` rows each."""
    for i in range(0, len(rows), _BATCH):
        chunk = rows[i : i + _BATCH]
        if name in ("create_records", "put_records"):
            groups: dict[str, list[Any]] = {}
            records = [record for record, _ in chunk]
            for (record, prior), sealed in zip(chunk, crypt.seal_records(tenant, records), strict=True):
                group = groups.get(record.scope)
                if group is None:
                    group = groups[record.scope] = [record.scope, scope_type(record.scope), []]
                group[2].append([*_record_row(record, sealed), _prior_row(record, prior, crypt)])
            lineage = [[r.id, parent] for r in records for parent in r.derived_from]
            yield {"groups": list(groups.values()), "lineage": lineage}
        elif name == "update_records":
            sealed_rows = crypt.seal_records(tenant, [record for record, _ in chunk])
            yield {
                "rows": [
                    [*_update_row(record, sealed), _prior_row(record, prior, crypt)]
                    for (record, prior), sealed in zip(chunk, sealed_rows, strict=True)
                ],
                # One update per source: records citing the same source carry the same state.
                "sources": list({p["id"]: p for sealed in sealed_rows for p in sealed.sources}.values()),
            }
        else:
            yield {"rows": chunk}


def lock_names(tenants: Iterable[str]) -> list[str]:
    """The lock nodes (lock_tenants.cypher) of ``tenants``, in the one order every
    transaction takes them in."""
    return [f"tenant-lock:{tenant}" for tenant in sorted(set(tenants))]


def done_name(tenant: str) -> str:
    """The name of the node holding ``tenant``'s count of finished writes (writes_done.cypher,
    gate_state.cypher)."""
    return f"tenant-done:{tenant}"


def erasures_name(tenant: str) -> str:
    """The name of ``tenant``'s erasure counter node (count_erasures.cypher, gate.cypher)."""
    return f"tenant-erasures:{tenant}"


#: Statements that return the rows they refused (each with a ``refused`` code), and what
#: a refusal means.
_REFUSALS = {
    "add_supersedes": "SUPERSEDES {src} -> {dst}: {refused}",
    "add_invalidated_by": "INVALIDATED_BY {src} -> {dst}: {refused}",
    "scope_within": "{child} WITHIN {parent}: {refused}",
}
_REFUSED = {
    "already_superseded": "the older record already has a successor; one line of versions stays current",
    "unknown_record": "a record or source it names does not exist in the tenant; no edge crosses tenants",
    "scope_cycle": "it would make a cycle of scopes",
}


def _refuse(name: str, tenant: str, rows: list[neo4j.Record]) -> None:
    first = rows[0].data()
    code = str(first["refused"])
    raise LineageError(
        f"refused in tenant {tenant!r}: " + _REFUSALS[name].format(**first) + f" ({_REFUSED[code]})",
        code=code,
    )


def send_ops(tx: Tx, ops: Sequence[Op], crypt: Crypt) -> dict[str, int]:
    """Run ``ops`` in ``tx``, in order, consecutive ops of one statement file and tenant as
    one group in chunks of ``_BATCH`` rows, text sealed by ``crypt``; then count an erasing
    write of each tenant whose text they erase (count_erasures.cypher), and return those
    tenants' counts as this transaction leaves them. Raises ``LineageError`` for an edge
    the database refuses (its transaction must then be rolled back)."""
    groups: list[tuple[str, str, list[Any]]] = []
    for op in ops:
        name, tenant, row = op_row(op)
        if groups and groups[-1][:2] == (name, tenant):
            groups[-1][2].append(row)
        else:
            groups.append((name, tenant, [row]))
    pending: tuple[str, str, neo4j.Result] | None = None

    def settle() -> None:
        if pending is None:
            return
        name, tenant, result = pending
        if name in _REFUSALS:
            refused = list(result)
            if refused:
                _refuse(name, tenant, refused)
        else:
            result.consume()

    def send(name: str, query: str, tenant: str, params: dict[str, Any]) -> None:
        # Pipelined: the next chunk's rows are built while the server runs this one.
        nonlocal pending
        used = {k: params[k] for k in _PARAM.findall(query) if k in params}
        result = tx.run(query, {"tenant": tenant, **used})
        settle()
        pending = (name, tenant, result)

    for name, tenant, rows in groups:
        # Statement by statement over every chunk: a file's later statement (lineage
        # edges) may need nodes from any chunk of its first.
        first, *rest = statements(name)
        built = []
        for params in _chunk_params(name, tenant, rows, crypt):
            built.append(params)
            send(name, first, tenant, params)
        for query in rest:
            for params in built:
                send(name, query, tenant, params)
    settle()
    erased = sorted(erased_tenants(ops))
    if not erased:
        return {}
    names = {erasures_name(t): t for t in erased}
    counted = tx.run(cypher("count_erasures"), {"names": list(names)})
    return {names[row["name"]]: int(row["erasures"]) for row in counted}
