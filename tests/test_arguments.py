"""Bad arguments get a ``GraphmemError`` with a stable code, never a bare exception.

``BAD`` names, for every public method of ``MemoryStore``, a valid call and the
wrong-typed or out-of-range values of each parameter with the code each one gets.
A public method or parameter the table does not cover fails
``test_every_public_method_and_parameter_is_covered``.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from graphmem import (
    ForgetMode,
    ForgetRequest,
    GraphmemError,
    Kind,
    MemoryRecord,
    MemoryStore,
    ReadContext,
    WritePolicy,
    WriteProposal,
)
from tests.conftest import KNOWN, T0


@dataclass(frozen=True)
class Slot:
    """A value only known once the test has a store: filled in by ``_fill``."""

    name: str


TENANT, CTX, E1, NEW, RECEIPT, POLICY, PROPOSAL, REQUEST, NAN_RECORD = (
    Slot(n) for n in ("tenant", "ctx", "e1", "new", "receipt", "policy", "proposal", "request", "nan_record")
)
NAIVE = datetime(2026, 1, 2)
LONG_QUERY = "x" * 10_001
TENANTS = [(None, "missing_tenant"), ("", "missing_tenant"), (5, "invalid_tenant"), ("a b", "invalid_tenant")]
IDS = [(None, "invalid_id"), (5, "invalid_id"), ("", "invalid_id"), ("a b", "invalid_id")]
TEXT = [(None, "bad_argument"), (5, "bad_argument"), ("x" * 3000, "bad_argument")]
ACTORS = [(None, "bad_argument"), (5, "bad_argument"), (" ", "bad_argument"), ("x" * 200, "bad_argument")]
CONTEXTS = [(None, "not_a_context"), ("ctx", "not_a_context"), ({"tenant": "t"}, "not_a_context")]
QUERIES = [(None, "bad_argument"), (5, "bad_argument"), (LONG_QUERY, "query_too_long")]
QUERY_EMBEDDINGS = [
    ([math.nan, 1.0], "embedding_not_finite"),
    ([math.inf], "embedding_not_finite"),
    ([-math.inf], "embedding_not_finite"),
    ([], "empty_embedding"),
    ("abc", "bad_argument"),
    (["a"], "bad_argument"),
    ([True], "bad_argument"),
    (5, "bad_argument"),
]
# The valid calls pass no query embedding: a well-formed model id without one is refused too.
QUERY_MODELS = [
    (5, "invalid_embedding_model"),
    ("", "invalid_embedding_model"),
    ("a b", "invalid_embedding_model"),
    ("x" * 129, "invalid_embedding_model"),
    ("m-a", "embedding_model_without_embedding"),
]
NEO4J_URI = "bolt://127.0.0.1:1"

# method -> (a valid call's arguments by name, {parameter: [(bad value, code), ...]}).
# A variadic ``**options`` parameter takes a dict of options merged into the call.
BAD: dict[str, tuple[dict[str, Any], dict[str, list[tuple[Any, str]]]]] = {
    "add": (
        {"record": NEW},
        {"record": [(None, "not_a_record"), ("x", "not_a_record"), (NAN_RECORD, "embedding_not_finite")]},
    ),
    "add_many": (
        {"records": [NEW]},
        {
            "records": [
                (None, "not_a_record"),
                (5, "not_a_record"),
                (NEW, "not_a_record"),
                ([None], "not_a_record"),
                ([NAN_RECORD], "embedding_not_finite"),
            ]
        },
    ),
    "approvals": ({"tenant": TENANT}, {"tenant": TENANTS}),
    "pending_reasons": ({"tenant": TENANT}, {"tenant": TENANTS}),
    "approve": (
        {"tenant": TENANT, "proposal_id": "prop-1", "approver": "lead"},
        {"tenant": TENANTS, "proposal_id": IDS, "approver": ACTORS},
    ),
    "audit": (
        {"tenant": TENANT},
        {
            "tenant": TENANTS,
            "record_id": IDS[1:],
            "since": [
                (NAIVE, "naive_datetime"),
                ("2026-01-01T00:00:00Z", "invalid_time"),
                (5, "invalid_time"),
            ],
        },
    ),
    "close": ({}, {}),
    "consolidate": (
        {"tenant": TENANT, "from_ids": [E1], "into": NEW, "rule": "r"},
        {
            "tenant": TENANTS,
            "from_ids": [("e1", "bad_argument"), (None, "bad_argument"), ([5], "invalid_id")],
            "into": [(None, "not_a_record"), ({"id": "x"}, "not_a_record")],
            "rule": TEXT,
            "min_support": [("2", "bad_argument"), (-1, "bad_argument"), (1.5, "bad_argument")],
        },
    ),
    "contest": (
        {"tenant": TENANT, "record_id": E1, "by": "lead", "reason": "r"},
        {"tenant": TENANTS, "record_id": IDS, "by": ACTORS, "reason": TEXT},
    ),
    "embedded": (
        {},
        {
            "path": [(5, "bad_argument"), (["dir"], "bad_argument")],
            "store_options": [
                ({"foo": 1}, "unknown_option"),
                ({"clock": 5}, "bad_argument"),
                ({"min_support": "1"}, "bad_argument"),
                ({"min_support": -1}, "bad_argument"),
                ({"write_policy": {}}, "not_a_policy"),
                ({"audit_recalls": "yes"}, "bad_argument"),
                ({"max_query_chars": 0}, "bad_argument"),
                ({"max_query_chars": 1.5}, "bad_argument"),
            ],
        },
    ),
    "explain": (
        {"ctx": CTX, "record_id": E1},
        {"ctx": CONTEXTS, "record_id": IDS, "query": QUERIES},
    ),
    "export": ({"tenant": TENANT}, {"tenant": TENANTS}),
    "forget": (
        {"request": REQUEST},
        {"request": [(None, "not_a_request"), ({"tenant": "t"}, "not_a_request")]},
    ),
    "get": ({"tenant": TENANT, "record_id": E1}, {"tenant": TENANTS, "record_id": IDS}),
    "import_": (
        {"stream": []},
        {
            "stream": [(None, "bad_argument"), (5, "bad_argument"), ('{"op": "x"}', "bad_argument")],
            "replace": [("yes", "bad_argument"), (None, "bad_argument")],
        },
    ),
    "invalidate": (
        {"tenant": TENANT, "record_id": E1, "by": "e2", "reason": "r"},
        {
            "tenant": TENANTS,
            "record_id": IDS,
            "by": IDS,
            "reason": TEXT,
            "at": [(NAIVE, "naive_datetime"), ("2026-01-02T00:00:00Z", "invalid_time"), (5, "invalid_time")],
        },
    ),
    "neo4j": (
        {"uri": NEO4J_URI},
        {
            "uri": [
                (5, "unsupported_uri"),
                ("http://x", "unsupported_uri"),
                ("memory://", "unsupported_uri"),
            ],
            "options": [
                ({"foo": 1}, "unknown_option"),
                ({"auth": "neo4j"}, "bad_argument"),
                ({"auth": ("neo4j",)}, "bad_argument"),
                ({"database": 5}, "bad_argument"),
                ({"connection_timeout": "10"}, "bad_argument"),
                ({"connection_timeout": -1}, "bad_argument"),
                ({"doc_cache": -1}, "bad_argument"),
                ({"driver": "d"}, "bad_argument"),
                ({"min_support": "1"}, "bad_argument"),
            ],
        },
    ),
    "open": (
        {"uri": "memory://"},
        {
            "uri": [(None, "unsupported_uri"), (5, "unsupported_uri"), ("ftp://x", "unsupported_uri")],
            "options": [({"foo": 1}, "unknown_option"), ({"min_support": None}, "bad_argument")],
        },
    ),
    "precedents": (
        {"ctx": CTX, "anchor_scope": "user:alice", "via": ["USES"]},
        {
            "ctx": CONTEXTS,
            "anchor_scope": [(None, "invalid_scope"), ("alice", "invalid_scope")],
            "via": [("USES", "bad_argument"), (None, "bad_argument"), (["uses"], "invalid_relation_type")],
            "hops": [
                (2.5, "invalid_hops"),
                ("2", "invalid_hops"),
                (True, "invalid_hops"),
                (-1, "invalid_hops"),
                (11, "invalid_hops"),
            ],
            "query": QUERIES,
            "query_embedding": QUERY_EMBEDDINGS,
            "query_embedding_model": QUERY_MODELS,
            "actor": [(5, "bad_argument"), ("x" * 300, "bad_argument")],
        },
    ),
    "precedents_context": (
        {"ctx": CTX, "anchor_scope": "user:alice", "via": ["USES"]},
        {
            "ctx": CONTEXTS,
            "anchor_scope": [(None, "invalid_scope"), ("alice", "invalid_scope")],
            "via": [("USES", "bad_argument"), (None, "bad_argument"), (["uses"], "invalid_relation_type")],
            "hops": [
                (2.5, "invalid_hops"),
                (True, "invalid_hops"),
                (-1, "invalid_hops"),
                (11, "invalid_hops"),
            ],
        },
    ),
    "propose": (
        {"proposal": PROPOSAL},
        {
            "proposal": [(None, "not_a_proposal"), (NEW, "not_a_proposal")],
            "source_trust": [("maybe", "bad_argument"), (5, "bad_argument")],
            "policy": [({}, "not_a_policy"), ("strict", "not_a_policy")],
        },
    ),
    "reauthorise": (
        {"tenant": TENANT, "record_ids": [E1], "policy": POLICY, "approver": "lead", "reason": "r"},
        {
            "tenant": TENANTS,
            "record_ids": [("e1", "bad_argument"), (None, "bad_argument"), ([None], "invalid_id")],
            "policy": [(None, "not_a_policy"), ({"version": "v2"}, "not_a_policy")],
            "approver": ACTORS,
            "reason": TEXT,
        },
    ),
    "recall": (
        {"ctx": CTX},
        {
            "ctx": CONTEXTS,
            "query": QUERIES,
            "explain": [("yes", "bad_argument"), (None, "bad_argument")],
            "query_embedding": QUERY_EMBEDDINGS,
            "query_embedding_model": QUERY_MODELS,
            "actor": [(5, "bad_argument"), ("x" * 300, "bad_argument")],
        },
    ),
    "reject": (
        {"tenant": TENANT, "proposal_id": "prop-1", "approver": "lead", "reason": "r"},
        {"tenant": TENANTS, "proposal_id": IDS, "approver": ACTORS, "reason": TEXT},
    ),
    "relate_scopes": (
        {"tenant": TENANT, "a": "user:alice", "rel_type": "USES", "b": "system:crm"},
        {
            "tenant": TENANTS,
            "a": [(None, "invalid_scope"), ("alice", "invalid_scope")],
            "rel_type": [(None, "invalid_relation_type"), ("uses", "invalid_relation_type")],
            "b": [(5, "invalid_scope")],
        },
    ),
    "release_run": (
        {"tenant": TENANT, "run_id": "r1"},
        {
            "tenant": TENANTS,
            "run_id": IDS,
            "requested_by": [(5, "bad_argument"), (None, "bad_argument")],
            "final_episode": [("trace", "not_a_record")],
        },
    ),
    "resolve": (
        {"tenant": TENANT, "record_id": E1, "winner_id": E1, "reason": "r"},
        {"tenant": TENANTS, "record_id": IDS, "winner_id": IDS, "reason": TEXT},
    ),
    "scope_within": (
        {"tenant": TENANT, "child": "user:alice", "parent": "tenant:acme"},
        {"tenant": TENANTS, "child": [(None, "invalid_scope")], "parent": [("acme", "invalid_scope")]},
    ),
    "setup": (
        {},
        {
            "embedding_dimensions": [
                ("384", "bad_argument"),
                (0, "bad_argument"),
                (2.5, "bad_argument"),
                (10**6, "bad_argument"),
            ]
        },
    ),
    "supersede": (
        {"tenant": TENANT, "old_id": E1, "new_record": NEW, "reason": "r"},
        {
            "tenant": TENANTS,
            "old_id": IDS,
            "new_record": [(None, "not_a_record"), ("x", "not_a_record")],
            "reason": TEXT,
        },
    ),
    "trace": (
        {"tenant": TENANT, "record_id": E1},
        {
            "tenant": TENANTS,
            "record_id": IDS,
            "depth": [
                ("5", "invalid_depth"),
                (-1, "invalid_depth"),
                (2.5, "invalid_depth"),
                (10**6, "invalid_depth"),
            ],
        },
    ),
    "verify": (
        {"receipt": RECEIPT, "ctx": CTX},
        {"receipt": [(None, "not_a_receipt"), ({}, "not_a_receipt")], "ctx": CONTEXTS},
    ),
}


def _public_methods() -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(getattr(MemoryStore, name))
        for name in dir(MemoryStore)
        if not name.startswith("_") and callable(getattr(MemoryStore, name))
    }


def _parameters(signature: inspect.Signature) -> set[str]:
    return {p for p in signature.parameters if p != "self"}


def test_every_public_method_and_parameter_is_covered() -> None:
    methods = _public_methods()
    assert sorted(BAD) == sorted(methods), "add the new public method's bad calls to BAD"
    for name, (valid, bad) in BAD.items():
        params = _parameters(methods[name])
        assert set(bad) == params, f"{name}: cover every parameter with bad values"
        assert set(valid) <= params, name
        assert all(bad[p] for p in params), f"{name}: each parameter needs at least one bad value"


@pytest.fixture
def env(store: MemoryStore, tenant: str) -> dict[str, Any]:
    episode = MemoryRecord(
        id="e1",
        tenant=tenant,
        kind=Kind.EPISODIC,
        scope="user:alice",
        content="Alice asked for email follow-up.",
        event_time=T0,
        outcome="verified-success",
    )
    store.add(episode)
    ctx = ReadContext(as_of=KNOWN, tenant=tenant, scopes=("user:alice",), now=T0 + timedelta(days=1))
    new = episode.model_copy(update={"id": "n1", "content": "Alice asked again."})
    return {
        "tenant": tenant,
        "ctx": ctx,
        "e1": "e1",
        "new": MemoryRecord.model_validate(new.model_dump()),
        "receipt": store.recall(ctx, "email").receipt,
        "policy": WritePolicy(version="v2"),
        "proposal": WriteProposal(
            tenant=tenant, kind=Kind.EPISODIC, scope="user:alice", content="x", proposed_by="a", event_time=T0
        ),
        "request": ForgetRequest(
            tenant=tenant, target="e1", mode=ForgetMode.REVOKE, reason="r", requested_by="u"
        ),
        "nan_record": MemoryRecord.model_construct(**{**new.model_dump(), "embedding": (math.nan, 1.0)}),
    }


def _fill(value: Any, env: dict[str, Any]) -> Any:
    if isinstance(value, Slot):
        return env[value.name]
    if isinstance(value, list):
        return [_fill(v, env) for v in value]
    return value


@pytest.mark.parametrize("method", sorted(BAD))
def test_bad_arguments_get_a_coded_error_and_write_nothing(
    store: MemoryStore, env: dict[str, Any], method: str
) -> None:
    before = list(store.export(env["tenant"]))
    valid, bad = BAD[method]
    signature = _public_methods()[method]
    target = getattr(MemoryStore if method in ("embedded", "open", "neo4j") else store, method)
    for param, cases in bad.items():
        variadic = signature.parameters[param].kind is inspect.Parameter.VAR_KEYWORD
        for value, code in cases:
            call = {k: _fill(v, env) for k, v in valid.items()}
            if variadic:
                call.update(value)
            else:
                call[param] = _fill(value, env)
            with pytest.raises(GraphmemError) as err:
                target(**call)
            assert err.value.code == code, f"{method}({param}={value!r:.40}): {err.value}"
    assert list(store.export(env["tenant"])) == before


def test_query_text_is_capped(store: MemoryStore, env: dict[str, Any]) -> None:
    ctx = env["ctx"]
    assert store.max_query_chars == 10_000
    store.recall(ctx, "email " * 1666)  # 9,996 characters: within the default cap
    ten_mb = "refund " * 1_500_000
    for call in (
        lambda: store.recall(ctx, ten_mb),
        lambda: store.explain(ctx, "e1", ten_mb),
        lambda: store.precedents(ctx, "user:alice", via=[], query=ten_mb),
    ):
        with pytest.raises(GraphmemError) as err:
            call()
        assert err.value.code == "query_too_long"
    small = MemoryStore(store.backend, max_query_chars=20)
    assert small.recall(ctx, "x" * 20).ids == ["e1"]
    with pytest.raises(GraphmemError) as err:
        small.recall(ctx, "x" * 21)
    assert err.value.code == "query_too_long"


def test_finite_embeddings_are_accepted_as_floats(store: MemoryStore, env: dict[str, Any]) -> None:
    """Integers are numbers too; the receipt records floats and verifies."""
    ctx = env["ctx"]
    selection = store.recall(ctx, "email", query_embedding=[1, 0])
    assert selection.receipt.query_embedding == (1.0, 0.0)
    assert store.verify(selection.receipt, ctx)


@pytest.mark.parametrize("kind", [tuple, list])
def test_plain_float_embeddings_are_checked_whole(kind: type) -> None:
    """Finite values whose sum overflows are accepted; one NaN or infinity anywhere is refused."""
    from graphmem._args import check_embedding

    assert check_embedding(kind([1e308, 1e308, -1.0])) == (1e308, 1e308, -1.0)
    for bad in ([1e308, 1e308, math.nan], [0.0] * 383 + [math.inf], [math.inf, -math.inf]):
        with pytest.raises(GraphmemError) as err:
            check_embedding(kind(bad))
        assert err.value.code == "embedding_not_finite"


def test_record_embeddings_overflowing_their_sum_are_finite(tenant: str) -> None:
    made = MemoryRecord(
        tenant=tenant, kind=Kind.WORKING, scope="run:r1", content="x", embedding=(1e308, 1e308)
    )
    assert made.embedding == (1e308, 1e308)
    with pytest.raises(GraphmemError) as err:
        MemoryRecord(
            tenant=tenant, kind=Kind.WORKING, scope="run:r1", content="x", embedding=(1e308, math.nan)
        )
    assert err.value.code == "embedding_not_finite"


def test_record_embeddings_must_be_finite(tenant: str) -> None:
    with pytest.raises(GraphmemError) as err:
        MemoryRecord(tenant=tenant, kind=Kind.WORKING, scope="run:r1", content="x", embedding=(1.0, math.inf))
    assert err.value.code == "embedding_not_finite"


def test_wrong_backend_is_refused() -> None:
    with pytest.raises(GraphmemError) as err:
        MemoryStore(None)  # type: ignore[arg-type]
    assert err.value.code == "not_a_backend"


def test_aware_times_from_any_zone_are_accepted(store: MemoryStore, env: dict[str, Any]) -> None:
    since = datetime(2000, 1, 1, tzinfo=UTC).astimezone(timezone(timedelta(hours=5)))
    assert [e.action for e in store.audit(env["tenant"], since=since)][:1] == ["added"]
