"""Erasure field rules (issue 16): every text-bearing field of every model says whether a
tombstone keeps or clears it, and the tombstone keeps nothing the rules clear."""

from __future__ import annotations

import types
import typing
from datetime import UTC, datetime
from enum import Enum
from typing import Any

import pytest

import graphmem
from graphmem import ContractViolation, Kind, MemoryRecord, ReadContext, Source, Status, Tombstone
from graphmem.model import GraphmemModel
from graphmem.model.erasure import ERASURE_RULES, FieldRule, erase_record, is_tombstone

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _models() -> list[type[GraphmemModel]]:
    assert graphmem.__name__  # every model module is imported
    found: list[type[GraphmemModel]] = []
    todo = list(GraphmemModel.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls.__module__.startswith("graphmem.model"):
            found.append(cls)
    return sorted(set(found), key=lambda c: c.__qualname__)


def _text_bearing(annotation: Any) -> bool:
    """Whether values of this type can carry free text: str, Any, dicts, nested models."""
    if annotation is str or annotation is Any:
        return True
    if isinstance(annotation, type):
        if issubclass(annotation, Enum):
            return False
        return issubclass(annotation, (GraphmemModel, dict))
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _text_bearing(typing.get_args(annotation)[0])
    if origin is typing.Literal:
        return False
    if origin is dict:
        return True
    if origin is not None or isinstance(annotation, types.UnionType):
        return any(_text_bearing(a) for a in typing.get_args(annotation))
    return False


def test_the_walk_finds_the_models_and_text_fields() -> None:
    models = _models()
    assert {MemoryRecord, Source, Tombstone, ReadContext} <= set(models)
    assert _text_bearing(MemoryRecord.model_fields["content"].annotation)
    assert _text_bearing(MemoryRecord.model_fields["tags"].annotation)
    assert _text_bearing(MemoryRecord.model_fields["sources"].annotation)
    assert not _text_bearing(MemoryRecord.model_fields["kind"].annotation)
    assert not _text_bearing(MemoryRecord.model_fields["created_at"].annotation)


@pytest.mark.parametrize("model", _models(), ids=lambda m: m.__qualname__)
def test_every_text_bearing_field_has_an_erasure_rule(model: type[GraphmemModel]) -> None:
    rules = ERASURE_RULES.get(model)
    assert rules is not None, f"{model.__qualname__} has no erasure rules (graphmem/model/erasure.py)"
    missing = [
        name
        for name, field in model.model_fields.items()
        if _text_bearing(field.annotation) and name not in rules
    ]
    assert missing == [], f"{model.__qualname__}: no erasure rule for {missing}"
    assert set(rules) <= set(model.model_fields), "a rule names a field the model does not have"


@pytest.mark.parametrize("model", [MemoryRecord, Source, Tombstone])
def test_stored_models_have_a_rule_for_every_field(model: type[GraphmemModel]) -> None:
    assert set(ERASURE_RULES[model]) == set(model.model_fields)
    assert FieldRule.NOT_STORED not in ERASURE_RULES[model].values()


def _marked(tag: str) -> MemoryRecord:
    return MemoryRecord(
        id="p1",
        tenant="t1",
        kind=Kind.PROCEDURAL,
        scope="workspace:w1",
        content=f"content-{tag}",
        valid_from=T0,
        outcome=f"outcome-{tag}",
        writer=f"writer-{tag}",
        procedure_name=f"proc-{tag}",
        procedure_version=f"v-{tag}",
        preconditions=(f"pre-{tag}",),
        tags=(f"tag-{tag}", f"subject:user:u1/{tag}"),
        embedding=(0.5, 0.5),
        embedding_model=f"model-{tag}",
        sources=(
            Source(id="s1", locator=f"mailto:loc-{tag}", quote=f"quote-{tag}", digest=f"dig-{tag}"),
            Source(id="s2", locator=f"keep-loc-{tag}", quote=f"quote2-{tag}", digest="d2"),
        ),
        derived_from=("e1",),
    )


def test_a_tombstone_keeps_only_what_the_rules_keep() -> None:
    record = _marked("MK")
    stone = Tombstone(at=T0, reason="GDPR", requested_by="dpo")
    erased = erase_record(record, stone, gone_sources={"s1"}, erased_sources={"s1"})
    assert is_tombstone(erased)
    assert not is_tombstone(record)
    dump = erased.model_dump_json()
    assert "MK" not in dump.replace("keep-loc-MK", "")
    assert "keep-loc-MK" in dump  # s2 is still cited by a live record: its locator stays
    assert (erased.id, erased.kind, erased.tenant, erased.scope, erased.derived_from) == (
        "p1",
        Kind.PROCEDURAL,
        "t1",
        "workspace:w1",
        ("e1",),
    )
    assert erased.status is Status.ERASED
    assert erased.tombstone == stone
    assert [(s.id, s.status) for s in erased.sources] == [("s1", "erased"), ("s2", "active")]
    assert MemoryRecord.model_validate_json(dump) == erased


@pytest.mark.parametrize(
    "scope",
    [
        "user:alice@example.com",
        "case:ticket/bob.smith@mail.example.org",
        "case:c1/+4915123456789",
        "user:49-151-23456789",
        "user:555-123-4567",
        "contact:1-555-123-4567",
    ],
)
def test_scope_keys_holding_personal_data_are_refused(scope: str) -> None:
    with pytest.raises(ContractViolation) as err:
        MemoryRecord(tenant="t1", kind=Kind.SEMANTIC, scope=scope, content="x", valid_from=T0)
    assert err.value.code == "personal_data_in_scope"
    assert "user:u-1842" in err.value.message  # says what to do instead
    assert scope.split(":", 1)[1] not in err.value.message
    with pytest.raises(ContractViolation) as err:
        ReadContext(tenant="t1", scopes=(scope,))
    assert err.value.code == "personal_data_in_scope"


@pytest.mark.parametrize(
    "scope", ["case:2026-01-01", "order:12345678", "release:v1.2.3", "host:10.0.0.1", "user:u-1842"]
)
def test_ids_that_merely_have_digits_are_scope_keys(scope: str) -> None:
    assert (
        MemoryRecord(tenant="t1", kind=Kind.SEMANTIC, scope=scope, content="x", valid_from=T0).scope == scope
    )
