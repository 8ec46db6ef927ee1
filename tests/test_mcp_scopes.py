"""The MCP server's scope limit (``--scope``) on every backend: what the agent may read and write, through the
official client's in-memory transport (the limit does not depend on the transport; the stdio
test of the default store checks it in a real server process too)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import CallToolResult
from test_mcp_server import (
    PRINCIPAL,
    T0,
    Target,
    data,
    error_code,
    text_of,
)

from graphmem import Kind, MemoryRecord, MemoryStore, Source, Status, Trust
from graphmem.errors import ContractViolation
from graphmem.integrations.mcp_server import build_server


@pytest.fixture
def file_target(tmp_path: Path) -> Target:
    path = tmp_path / "memdir"
    return Target(uri=path.as_uri(), open=lambda: MemoryStore.embedded(path))


# -- the scope limit ---------------------------------------------------------------------

LIMIT = ("user:alice", "run:*")


def seed_scopes(store: MemoryStore, tenant: str) -> None:
    """user:alice lies WITHIN tenant:acme and knows user:bob; run:r-1 lies WITHIN user:alice."""
    store.scope_within(tenant, "user:alice", "tenant:acme")
    store.scope_within(tenant, "run:r-1", "user:alice")
    store.scope_within(tenant, "run:r-9", "user:bob")  # a run of Bob's: run:* must not reach Bob
    store.relate_scopes(tenant, "user:alice", "KNOWS", "user:bob")
    shared = Source(id="msg-shared", trust=Trust.TRUSTED)
    store.add_many(
        [
            MemoryRecord(
                id="bob-note",
                tenant=tenant,
                kind=Kind.EPISODIC,
                scope="user:bob",
                content="Bob's account is under a fraud review.",
                event_time=T0,
                outcome="verified-success",
                sources=(shared,),
            ),
            MemoryRecord(
                id="bob-plan",
                tenant=tenant,
                kind=Kind.SEMANTIC,
                scope="user:bob",
                content="The household is on the family plan.",
                valid_from=T0,
                sources=(Source(id="msg-b", trust=Trust.TRUSTED),),
                tags=("subject:household/plan",),
            ),
            MemoryRecord(
                id="alice-pref",
                tenant=tenant,
                kind=Kind.SEMANTIC,
                scope="user:alice",
                content="Alice prefers email.",
                valid_from=T0,
                sources=(shared,),
            ),
            MemoryRecord(
                id="alice-from-bob",
                tenant=tenant,
                kind=Kind.SEMANTIC,
                scope="user:alice",
                content="Alice and Bob share a household account.",
                valid_from=T0,
                derived_from=("bob-note",),
            ),
            MemoryRecord(
                id="acme-policy",
                tenant=tenant,
                kind=Kind.SEMANTIC,
                scope="tenant:acme",
                content="Acme answers every customer within a day.",
                valid_from=T0,
                sources=(Source(id="handbook", type="document", trust=Trust.TRUSTED),),
            ),
        ]
    )


SCOPE_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    # reads outside the limit, or widening to other scopes
    "recall bob": ("recall", {"scopes": ["user:bob"]}),
    "recall the tenant": ("recall", {"scopes": ["tenant:acme"]}),
    "recall alice and bob": ("recall", {"scopes": ["user:alice", "user:bob"]}),
    "recall in a run of bob's": ("recall", {"scopes": ["user:alice"], "run_id": "r-9"}),
    "recall a run scope of bob's": ("recall", {"scopes": ["run:r-9"]}),
    "explain in a run of bob's": ("explain", {"record_id": "alice-pref", "run_id": "r-9"}),
    "explain bob": ("explain", {"record_id": "bob-note"}),
    "trace bob": ("trace", {"record_id": "bob-note"}),
    "precedents to bob": ("precedents", {"anchor_scope": "user:alice", "via": ["KNOWS"]}),
    "precedents of bob": ("precedents", {"anchor_scope": "user:bob"}),
    # writes outside the limit
    "remember for bob": (
        "remember",
        {"kind": "episodic", "scope": "user:bob", "content": "Bob called.", "outcome": "unknown"},
    ),
    "remember for the tenant": (
        "remember",
        {"kind": "episodic", "scope": "tenant:acme", "content": "A call.", "outcome": "unknown"},
    ),
    "derive from bob": (
        "remember",
        {
            "kind": "semantic",
            "scope": "user:alice",
            "content": "Alice may be affected by a fraud review.",
            "derived_from": ["bob-note"],
        },
    ),
    # a conflicting claim would make bob's record contested: a write to user:bob
    "contest bob's claim": (
        "remember",
        {
            "kind": "semantic",
            "scope": "user:alice",
            "content": "The household is on the single plan.",
            "sources": [{"id": "msg-c"}],
            "subject": "household/plan",
        },
    ),
    "contest through a tag": (
        "remember",
        {
            "kind": "semantic",
            "scope": "user:alice",
            "content": "The household is on the single plan.",
            "sources": [{"id": "msg-c"}],
            "tags": ["subject:household/plan"],
        },
    ),
    "cite bob's source": (
        "remember",
        {
            "kind": "semantic",
            "scope": "user:alice",
            "content": "Alice shares a message thread with Bob.",
            "sources": [{"id": "msg-shared", "locator": "https://evil.example/"}],
        },
    ),
    "forget bob": ("forget", {"target": "bob-note", "mode": "erase", "reason": "r"}),
    "forget the inherited policy": ("forget", {"target": "acme-policy", "mode": "revoke", "reason": "r"}),
    "forget a shared source": ("forget", {"target": "msg-shared", "mode": "erase", "reason": "r"}),
    "forget bob's scope": ("forget", {"target": "user:bob", "mode": "revoke", "reason": "r"}),
    "forget the tenant scope": ("forget", {"target": "tenant:acme", "mode": "revoke", "reason": "r"}),
}


def test_the_scope_limit_refuses_reads_and_writes_outside_it(store: MemoryStore, tenant: str) -> None:
    seed_scopes(store, tenant)
    before = store.backend.all_records(tenant)
    server = build_server(store, tenant, PRINCIPAL, allowed_scopes=LIMIT)

    async def main() -> tuple[dict[str, CallToolResult], dict[str, CallToolResult]]:
        with anyio.fail_after(60):
            async with Client(server) as client:
                refused = {name: await client.call_tool(t, a) for name, (t, a) in SCOPE_CALLS.items()}
                allowed = {
                    "recall": await client.call_tool("recall", {"query": "email", "explain": True}),
                    "recall in the run": await client.call_tool(
                        "recall", {"scopes": ["user:alice"], "run_id": "r-1"}
                    ),
                    "explain inherited": await client.call_tool("explain", {"record_id": "acme-policy"}),
                    "trace inherited": await client.call_tool("trace", {"record_id": "acme-policy"}),
                    "trace derived": await client.call_tool("trace", {"record_id": "alice-from-bob"}),
                    "precedents": await client.call_tool("precedents", {"anchor_scope": "user:alice"}),
                    "remember working": await client.call_tool(
                        "remember",
                        {"kind": "working", "scope": "run:r-1", "content": "Drafting a reply to Alice."},
                    ),
                    "recall other run": await client.call_tool("recall", {"run_id": "r-2"}),
                    "claim on an own subject": await client.call_tool(
                        "remember",
                        {
                            "kind": "semantic",
                            "scope": "user:alice",
                            "content": "Alice wants paper invoices.",
                            "sources": [{"id": "msg-d"}],
                            "subject": "alice/invoices",
                        },
                    ),
                }
                return refused, allowed

    refused, allowed = asyncio.run(main())
    after = store.backend.all_records(tenant)
    bob = store.get(tenant, "bob-note")
    assert bob is not None
    assert bob.status is Status.ACTIVE
    forgotten = [e for e in store.audit(tenant) if e.action == "forgotten"]

    for name, result in refused.items():
        assert error_code(result) == "scope_not_allowed", name
        assert "user:alice, run:*" in text_of(result), name
        assert "fraud" not in text_of(result), name
    # Related scopes are counted, not named.
    assert "user:bob" not in text_of(refused["precedents to bob"])
    assert "user:bob" not in text_of(refused["recall in a run of bob's"])
    assert "1 enclosing scope(s)" in text_of(refused["recall in a run of bob's"])
    assert forgotten == []
    # Nothing changed but the records the limit allows.
    added = {data(allowed[n])["record_id"] for n in ("remember working", "claim on an own subject")}
    assert [r for r in after if r.id not in added] == before

    recalled = {m["id"] for m in data(allowed["recall"])["memories"]}
    assert recalled == {"alice-pref", "alice-from-bob", "acme-policy"}  # the tenant's record applies inside
    assert "bob-note" not in {d["record_id"] for d in data(allowed["recall"])["decisions"]}
    assert "fraud" not in json.dumps(data(allowed["recall"]))
    assert data(allowed["recall in the run"])["memories"]
    assert data(allowed["explain inherited"])["selected"] is True
    assert data(allowed["trace inherited"])["root"] == "acme-policy"
    traced = allowed["trace derived"]
    assert "DERIVED_FROM → bob-note (episodic): [outside this server's scopes]" in text_of(traced)
    assert "fraud" not in text_of(traced)
    assert "fraud" not in json.dumps(data(traced))
    assert data(allowed["precedents"])["memories"] == []
    assert data(allowed["remember working"])["outcome"] == "accepted"
    assert data(allowed["claim on an own subject"])["outcome"] == "accepted"
    # run:* allows every run of the agent's; a run sees only its own working memory.
    assert {m["id"] for m in data(allowed["recall other run"])["memories"]} == recalled


def test_forget_inside_the_limit_cascades(store: MemoryStore, tenant: str) -> None:
    """A forget the limit allows still takes out what was derived from it, wherever that applies."""
    store.add(
        MemoryRecord(
            id="alice-call",
            tenant=tenant,
            kind=Kind.EPISODIC,
            scope="user:alice",
            content="Alice said she moved to Berlin.",
            event_time=T0,
            outcome="verified-success",
        )
    )
    store.add(
        MemoryRecord(
            id="city-stats",
            tenant=tenant,
            kind=Kind.SEMANTIC,
            scope="domain:customers",
            content="One customer lives in Berlin.",
            valid_from=T0,
            derived_from=("alice-call",),
        )
    )
    server = build_server(store, tenant, PRINCIPAL, allowed_scopes=("user:alice",))

    async def main() -> CallToolResult:
        async with Client(server) as client:
            return await client.call_tool(
                "forget", {"target": "alice-call", "mode": "erase", "reason": "asked to be forgotten"}
            )

    report = data(asyncio.run(main()))
    assert {(e["record_id"], e["action"]) for e in report["entries"]} == {
        ("alice-call", "erased"),
        ("city-stats", "erased"),
    }


def test_scope_limits_are_checked_when_the_server_is_built(tenant: str) -> None:
    with MemoryStore.embedded() as store:
        for bad in ((), ("*",), ("user",), ("user:al ice",), ("user:a*b",)):
            with pytest.raises(ContractViolation) as info:
                build_server(store, tenant, PRINCIPAL, allowed_scopes=bad)
            assert info.value.code == "invalid_scope", bad
        with pytest.raises(ContractViolation) as info:
            build_server(
                store, tenant, PRINCIPAL, allowed_scopes=("user:alice",), default_scopes=("user:bob",)
            )
        assert info.value.code == "scope_not_allowed"
        build_server(store, tenant, PRINCIPAL, allowed_scopes=("user:*", "case:acme-*"))


def test_a_prefix_reaches_enclosing_scopes_only_when_they_are_allowed(
    store: MemoryStore, tenant: str
) -> None:
    """With only prefixes, what their scopes lie WITHIN must be allowed by name or prefix."""
    store.scope_within(tenant, "case:acme-1", "tenant:acme")
    store.relate_scopes(tenant, "case:acme-1", "SAME_SYSTEM", "case:acme-2")
    store.scope_within(tenant, "case:acme-2", "user:bob")
    store.add(
        MemoryRecord(
            id="acme-2-incident",
            tenant=tenant,
            kind=Kind.EPISODIC,
            scope="case:acme-2",
            content="The gateway timed out twice.",
            event_time=T0,
            outcome="failure",
        )
    )

    async def calls(allowed: tuple[str, ...]) -> list[CallToolResult]:
        server = build_server(store, tenant, PRINCIPAL, allowed_scopes=allowed)
        async with Client(server) as client:
            return [
                await client.call_tool("recall", {"scopes": ["case:acme-1"]}),
                await client.call_tool("precedents", {"anchor_scope": "case:acme-1", "via": ["SAME_SYSTEM"]}),
            ]

    narrow = asyncio.run(calls(("case:acme-*",)))
    middle = asyncio.run(calls(("case:acme-*", "tenant:acme")))
    wide = asyncio.run(calls(("case:acme-*", "tenant:acme", "user:bob")))
    assert [error_code(r) for r in narrow] == ["scope_not_allowed", "scope_not_allowed"]
    assert "reading case:acme-1 would also read 1 enclosing scope(s)" in text_of(narrow[0])
    assert data(middle[0])["memories"] == []
    # case:acme-2 matches the prefix, but it lies WITHIN user:bob.
    assert error_code(middle[1]) == "scope_not_allowed"
    assert "precedents from case:acme-1 would also read 1 enclosing scope(s)" in text_of(middle[1])
    assert [m["id"] for m in data(wide[1])["memories"]] == ["acme-2-incident"]
