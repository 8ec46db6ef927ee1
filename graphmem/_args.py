"""Validation of plain arguments to the public API: every failure is a ``ContractViolation``
with a stable code, never a bare ``TypeError`` or ``AttributeError`` from deep inside."""

from __future__ import annotations

import numbers
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TypeVar

from graphmem.errors import ContractViolation
from graphmem.model import GraphmemModel
from graphmem.model.base import AwareDatetime, EmbeddingModel, Identifier, ScopeKey, Tenant, all_finite

__all__ = [
    "MAX_QUERY_CHARS",
    "check_aware",
    "check_embedding",
    "check_embedding_model",
    "check_flag",
    "check_id",
    "check_ids",
    "check_instance",
    "check_int",
    "check_query",
    "check_rel_type",
    "check_scope",
    "check_tenant",
    "check_text",
]

T = TypeVar("T")

MAX_QUERY_CHARS = 10_000
"""The default cap on query text (``MemoryStore(max_query_chars=...)``)."""

_MAX_EMBEDDING_DIMENSIONS = 65_536
_REL_TYPE = re.compile(r"[A-Z][A-Z0-9_]{0,31}")


class _TenantArg(GraphmemModel):
    error_code = "invalid_tenant"
    tenant: Tenant


class _ScopeArg(GraphmemModel):
    error_code = "invalid_scope"
    scope: ScopeKey


class _IdArg(GraphmemModel):
    error_code = "invalid_id"
    id: Identifier


class _EmbeddingModelArg(GraphmemModel):
    error_code = "invalid_embedding_model"
    model: EmbeddingModel


class _TimeArg(GraphmemModel):
    error_code = "invalid_time"
    at: AwareDatetime


def _kind(value: object) -> str:
    return type(value).__name__


def check_tenant(tenant: str) -> str:
    return str(_TenantArg(tenant=tenant).tenant)


def check_scope(scope: str) -> str:
    return str(_ScopeArg(scope=scope).scope)


def check_id(value: object, what: str = "record id") -> str:
    """A record, source or run id: 1-128 letters, digits and ``. _ : @ + -``."""
    if not isinstance(value, str):
        raise ContractViolation(f"{what} must be a string id, got {_kind(value)}", code="invalid_id")
    return str(_IdArg(id=value).id)


def check_ids(values: object, what: str = "record ids") -> tuple[str, ...]:
    """A list of ids; a bare string is refused rather than read as its characters."""
    if isinstance(values, str | bytes) or not isinstance(values, Iterable) or isinstance(values, Mapping):
        raise ContractViolation(f"{what} must be a list of ids, got {_kind(values)}", code="bad_argument")
    return tuple(check_id(v, what[:-1] if what.endswith("s") else what) for v in values)


def check_aware(at: object, what: str = "time") -> datetime:
    """A timezone-aware ``datetime`` (strings and naive datetimes are refused)."""
    if not isinstance(at, datetime):
        raise ContractViolation(
            f"{what} must be a timezone-aware datetime, got {_kind(at)}", code="invalid_time"
        )
    return _TimeArg(at=at).at


def check_text(value: object, what: str, *, max_chars: int, optional: bool = False) -> str | None:
    """Free text (a reason, an actor, a rule) of at most ``max_chars`` characters."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ContractViolation(f"{what} must be a string, got {_kind(value)}", code="bad_argument")
    if len(value) > max_chars:
        raise ContractViolation(
            f"{what} is {len(value):,} characters; at most {max_chars:,} are allowed", code="bad_argument"
        )
    return value


def check_int(value: object, what: str, *, low: int, high: int, code: str = "bad_argument") -> int:
    """An ``int`` (not a bool, not a float) with ``low <= value <= high``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ContractViolation(f"{what} must be an integer, got {_kind(value)}", code=code)
    if not low <= value <= high:
        raise ContractViolation(f"{what} must be between {low} and {high}, got {value}", code=code)
    return value


def check_flag(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise ContractViolation(f"{what} must be True or False, got {_kind(value)}", code="bad_argument")
    return value


def check_instance(value: object, cls: type[T], code: str, what: str) -> T:
    """``value`` if it is a ``cls``; else a ``ContractViolation`` with ``code``."""
    if not isinstance(value, cls):
        raise ContractViolation(f"{what} must be a {cls.__name__}, got {_kind(value)}", code=code)
    return value


def check_query(query: object, max_chars: int) -> str:
    """Query text, capped so that one request cannot make ranking arbitrarily slow."""
    if not isinstance(query, str):
        raise ContractViolation(f"query must be a string, got {_kind(query)}", code="bad_argument")
    if len(query) > max_chars:
        raise ContractViolation(
            f"query is {len(query):,} characters; this store accepts at most {max_chars:,} "
            "(MemoryStore(max_query_chars=...))",
            code="query_too_long",
        )
    return query


def check_embedding(values: object, what: str = "query_embedding") -> tuple[float, ...] | None:
    """``None`` or a non-empty sequence of finite numbers, as floats."""
    if values is None:
        return None
    if (
        isinstance(values, tuple | list)
        and type(values) in (tuple, list)
        and 0 < len(values) <= _MAX_EMBEDDING_DIMENSIONS
        and set(map(type, values)) == {float}
    ):
        # The usual case, plain floats, checked in C loops rather than element by element.
        if not all_finite(values):
            raise ContractViolation(
                f"{what} holds NaN or infinite values; embeddings must be finite", code="embedding_not_finite"
            )
        return tuple(values)
    if isinstance(values, str | bytes) or not isinstance(values, Iterable) or isinstance(values, Mapping):
        raise ContractViolation(f"{what} must be a list of numbers, got {_kind(values)}", code="bad_argument")
    floats: list[float] = []
    for x in values:
        if isinstance(x, bool) or not isinstance(x, numbers.Real):
            raise ContractViolation(f"{what} must hold numbers, got {_kind(x)}", code="bad_argument")
        if len(floats) == _MAX_EMBEDDING_DIMENSIONS:
            raise ContractViolation(
                f"{what} has more than {_MAX_EMBEDDING_DIMENSIONS:,} dimensions", code="bad_argument"
            )
        floats.append(float(x))
    if not floats:
        raise ContractViolation(
            f"{what} must have at least one dimension, or be None", code="empty_embedding"
        )
    if not all_finite(floats):
        raise ContractViolation(
            f"{what} holds NaN or infinite values; embeddings must be finite", code="embedding_not_finite"
        )
    return tuple(floats)


def check_embedding_model(
    value: object, embedding: tuple[float, ...] | None, what: str = "query_embedding_model"
) -> str | None:
    """``None`` or the id of the model that made ``embedding`` (``invalid_embedding_model``);
    naming a model without an embedding is ``embedding_model_without_embedding``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ContractViolation(
            f"{what} must be a model id string, got {_kind(value)}", code="invalid_embedding_model"
        )
    model = str(_EmbeddingModelArg(model=value).model)
    if embedding is None:
        raise ContractViolation(
            f"{what} names {model!r} but no query embedding was given; pass the query's embedding "
            "made by that model too, or leave the model out",
            code="embedding_model_without_embedding",
        )
    return model


def check_rel_type(rel_type: str) -> str:
    if not isinstance(rel_type, str) or not _REL_TYPE.fullmatch(rel_type):
        raise ContractViolation(
            f"relation type {rel_type!r} must be upper-case letters, digits and _, e.g. USES",
            code="invalid_relation_type",
        )
    return rel_type
