"""The pydantic base every graphmem value derives from, and shared field types."""

from __future__ import annotations

import functools
import math
import re
import weakref
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Self, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError
from pydantic_core import PydanticCustomError, SchemaValidator

from graphmem.errors import ContractViolation

__all__ = [
    "AwareDatetime",
    "EmbeddingModel",
    "GraphmemModel",
    "Identifier",
    "ScopeKey",
    "Tenant",
    "all_finite",
    "holds_personal_data",
    "json_reader",
    "scope_type",
    "utcnow",
]


def all_finite(values: Sequence[float]) -> bool:
    """Whether every one of ``values`` (floats) is finite: their sum is, unless one is NaN or
    infinite (or finite ones overflow, when each is looked at). One C loop for the usual case."""
    return math.isfinite(sum(values)) or all(map(math.isfinite, values))


_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}")
_TENANT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# An e-mail address anywhere in the key; a phone number as a whole part of it: E.164
# (``+4915123456789``) or 9-15 digits in separated groups (``555-123-4567``). Bare digit
# runs (order numbers) and dates (``2026-01-01``) are ids and stay allowed.
_EMAIL_RE = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_PHONE_RE = re.compile(r"\+\d{7,15}|\+?\d{1,5}(?:[.-]\d{2,8}){1,4}")
_EMBEDDING_MODEL_RE = re.compile(r"[A-Za-z0-9._:@/+=-]{1,128}")
_SCOPE_RE = re.compile(r"([a-z][a-z0-9_-]{0,31}):([A-Za-z0-9][A-Za-z0-9._@/+-]{0,199})")


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


def _aware(value: datetime) -> datetime:
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        raise PydanticCustomError(
            "naive_datetime",
            "timestamps must be timezone-aware; pass e.g. datetime(..., tzinfo=UTC)",
        )
    # One canonical form: UTC, microsecond precision, so round-trips are exact.
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise PydanticCustomError(
            "invalid_datetime", "timestamp is out of range once converted to UTC"
        ) from None


def _identifier(value: str) -> str:
    if not _ID_RE.fullmatch(value):
        raise PydanticCustomError(
            "invalid_id",
            "ids are 1-128 characters: letters, digits and . _ : @ + -, "
            "starting with a letter or digit (got '{value}')",
            {"value": value[:80]},
        )
    return value


def _embedding_model(value: str) -> str:
    if not _EMBEDDING_MODEL_RE.fullmatch(value):
        raise PydanticCustomError(
            "invalid_embedding_model",
            "an embedding model id is 1-128 characters: letters, digits and . _ : @ / + = -, "
            "e.g. 'openai:text-embedding-3-small' (got '{value}')",
            {"value": value[:80]},
        )
    return value


def _tenant(value: str) -> str:
    if not value:
        raise PydanticCustomError(
            "missing_tenant",
            "a tenant is required; graphmem never reads or writes 'all tenants'",
        )
    if not _TENANT_RE.fullmatch(value):
        raise PydanticCustomError(
            "invalid_tenant",
            "tenants are 1-64 characters: letters, digits and . _ - (got '{value}')",
            {"value": value[:80]},
        )
    return value


def _phone(part: str) -> bool:
    return bool(_PHONE_RE.fullmatch(part)) and 9 <= sum(c.isdigit() for c in part) <= 15


def holds_personal_data(scope: str) -> bool:
    """Whether a scope key looks like it holds an e-mail address or a phone number (such keys
    are refused: ``personal_data_in_scope``)."""
    return bool(_EMAIL_RE.search(scope)) or any(_phone(part) for part in re.split(r"[:/]", scope))


@functools.lru_cache(maxsize=4096)
def _scope(value: str) -> str:
    # Remembered (a few thousand keys): a store reads the records of one scope by the
    # thousand, and the personal-data patterns cost more than the rest of a key's checks.
    # A refused key raises every time.
    if not _SCOPE_RE.fullmatch(value):
        raise PydanticCustomError(
            "invalid_scope",
            "scopes are written 'type:name', e.g. 'workspace:repo-1' or 'run:r-42' "
            "(lower-case type; name of letters, digits and . _ @ / + -) (got '{value}')",
            {"value": value[:80]},
        )
    if holds_personal_data(value):
        # The value is not repeated: it is the personal data the message is about.
        raise PydanticCustomError(
            "personal_data_in_scope",
            "scope keys are identifiers kept on every tombstone, so they must not hold personal "
            "data; this one looks like an e-mail address or a phone number. Key the scope by "
            "your application's own id (e.g. 'user:u-1842') and keep the address in the system "
            "of record",
        )
    return value


def scope_type(scope: str) -> str:
    """The type part of a ``type:name`` scope key."""
    return scope.split(":", 1)[0]


AwareDatetime = Annotated[datetime, AfterValidator(_aware)]
Identifier = Annotated[str, AfterValidator(_identifier)]
Tenant = Annotated[str, AfterValidator(_tenant)]
ScopeKey = Annotated[str, AfterValidator(_scope)]
EmbeddingModel = Annotated[str, AfterValidator(_embedding_model)]
"""The id of the model that made an embedding, e.g. ``all-MiniLM-L6-v2``."""


def _as_contract_violation(err: ValidationError, model: str, error_code: str) -> ContractViolation:
    problems = err.errors(include_url=False)
    first = problems[0]
    custom = first["type"] in {
        "naive_datetime",
        "invalid_datetime",
        "invalid_id",
        "missing_tenant",
        "invalid_tenant",
        "invalid_scope",
        "personal_data_in_scope",
        "embedding_not_finite",
        "invalid_embedding_model",
        "embedding_model_without_embedding",
    }
    code = first["type"] if custom else error_code
    if first["loc"] == ("tenant",) and (first["type"] == "missing" or first.get("input", "") is None):
        code = "missing_tenant"
    details = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in problems)
    what = "argument" if model.startswith("_") else model
    return ContractViolation(f"{what} is invalid: {details}", code=code)


_VALIDATED: weakref.WeakValueDictionary[int, GraphmemModel] = weakref.WeakValueDictionary()
"""Instances of tracked models that passed validation, by ``id``; see ``validated``."""


def validated(instance: GraphmemModel) -> bool:
    """Whether ``instance`` came out of validation (its constructor, ``model_validate`` or
    ``model_validate_json``), as opposed to ``model_copy(update=...)`` or ``model_construct``,
    which skip it. Only models with ``_track_validated`` are tracked; models are frozen, so
    a validated instance stays valid."""
    return _VALIDATED.get(id(instance)) is instance


class GraphmemModel(BaseModel):
    """Strict base: unknown fields are rejected; errors become ``ContractViolation``."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)
    #: Remember validated instances (``validated``), so a store need not validate them again.
    _track_validated: ClassVar[bool] = False
    #: The code of a ContractViolation for invalid input, unless a field's own code applies.
    error_code: ClassVar[str] = ""

    @classmethod
    def _code(cls) -> str:
        return cls.error_code or f"invalid_{cls.__name__.lower()}"

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as err:
            raise _as_contract_violation(err, type(self).__name__, self._code()) from None
        if self._track_validated:
            _VALIDATED[id(self)] = self

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Self:
        try:
            made = super().model_validate(obj, *args, **kwargs)
        except ValidationError as err:
            raise _as_contract_violation(err, cls.__name__, cls._code()) from None
        if cls._track_validated and made is not obj:  # an instance passed in is returned unchecked
            _VALIDATED[id(made)] = made
        return made

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray, *args: Any, **kwargs: Any) -> Self:
        try:
            made = super().model_validate_json(json_data, *args, **kwargs)
            if cls._track_validated:
                _VALIDATED[id(made)] = made
            return made
        except ValidationError as err:
            raise _as_contract_violation(err, cls.__name__, cls._code()) from None


_M = TypeVar("_M", bound=GraphmemModel)


def _without_custom_init(node: Any) -> Any:
    if isinstance(node, dict):
        out = {k: _without_custom_init(v) for k, v in node.items()}
        if out.get("type") == "model":
            out["custom_init"] = False
        return out
    if isinstance(node, list):
        return [_without_custom_init(v) for v in node]
    return node


@functools.cache
def json_reader(cls: type[_M]) -> Callable[[str | bytes], _M]:
    """``cls.model_validate_json`` at about half the cost, for the JSON a store reads back.

    The same schema and validators, but pydantic no longer routes every model in it
    (the record, each source, the tombstone) through its Python ``__init__``, which
    ``GraphmemModel`` overrides only to map errors and track validated instances;
    here both are done once, for the whole value."""
    validator = SchemaValidator(_without_custom_init(cls.__pydantic_core_schema__))
    track = cls._track_validated

    def read(data: str | bytes) -> _M:
        try:
            made: _M = validator.validate_json(data)
        except ValidationError as err:
            raise _as_contract_violation(err, cls.__name__, cls._code()) from None
        if track:
            _VALIDATED[id(made)] = made
        return made

    return read
