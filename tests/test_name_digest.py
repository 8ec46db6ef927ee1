"""Names derived from content are the backend's ``name_digest`` (issue 16), on every backend.

Tombstones keep proposal ids and scope keys, and the LangGraph adapter's hashed scopes and
item ids: an unkeyed SHA-256 of a guessable text would confirm the guess after an erase.
On Neo4j the digest is an HMAC under the tenant's naming key in the key store; the embedded
store keeps SHA-256 (a key in the same file would confirm a guess as well). Identical
proposals still get one id and merge, and what an earlier version named with SHA-256 is
still read, merged into and superseded.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime, timedelta

import pytest

from graphmem import Kind, MemoryRecord, MemoryStore, Source, Trust, WriteProposal
from graphmem.backends.neo4j import Neo4jBackend
from graphmem.integrations.langgraph import GraphmemStore, _version_prefix, namespace_scope
from graphmem.model import Status, WriteReason
from graphmem.policy import dedup_text, normalised_key

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _sha256(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _proposal(tenant: str, content: str, source: str) -> WriteProposal:
    return WriteProposal(
        tenant=tenant,
        kind=Kind.SEMANTIC,
        scope="user:u-1842",
        content=content,
        valid_from=T0,
        sources=(Source(id=source, type="message", trust=Trust.TRUSTED),),
        proposed_by="agent-7",
    )


def test_the_name_digest_is_keyed_on_neo4j_and_sha256_on_the_embedded_store(
    store: MemoryStore, tenant: str
) -> None:
    backend = store.backend
    digest = backend.name_digest(tenant, "users/alice@example.com")
    assert digest == backend.name_digest(tenant, "users/alice@example.com")
    assert len(digest) == 64
    assert set(digest) <= set("0123456789abcdef")
    assert digest != backend.name_digest(tenant, "users/bob@example.com")
    if isinstance(backend, Neo4jBackend):
        key = backend.keys.keys(tenant, "tenant", ["names"], create=False)["names"]
        assert digest == hmac.new(key, b"users/alice@example.com", hashlib.sha256).hexdigest()
        assert digest != _sha256("users/alice@example.com")
        assert digest != backend.name_digest(tenant + "-other", "users/alice@example.com")
        # A second client sharing the key store names it the same way.
        again = Neo4jBackend(backend.driver, uri=backend.uri, keys=backend.keys)
        assert again.name_digest(tenant, "users/alice@example.com") == digest
    else:
        assert digest == _sha256("users/alice@example.com")


def test_identical_proposals_get_one_id_from_the_name_digest_and_merge(
    store: MemoryStore, tenant: str
) -> None:
    first = store.propose(_proposal(tenant, "Prefers email follow-ups.", "msg-1"))
    second = store.propose(_proposal(tenant, "prefers  EMAIL follow-ups.", "msg-2"))
    text = dedup_text(tenant, "user:u-1842", Kind.SEMANTIC, "Prefers email follow-ups.")
    assert first.record_id == f"mem-{store.backend.name_digest(tenant, text)[:32]}"
    assert (second.record_id, second.reason) == (first.record_id, WriteReason.DUPLICATE_MERGED)
    merged = store.get(tenant, first.record_id)
    assert merged is not None
    assert [s.id for s in merged.sources] == ["msg-1", "msg-2"]
    old_name = f"mem-{normalised_key(tenant, 'user:u-1842', Kind.SEMANTIC, 'Prefers email follow-ups.')[:32]}"
    if isinstance(store.backend, Neo4jBackend):
        assert first.record_id != old_name
    else:
        assert first.record_id == old_name


def test_a_proposal_merges_into_a_record_an_earlier_version_named_with_sha256(
    store: MemoryStore, tenant: str
) -> None:
    content = "Works from the Lisbon office."
    old_id = f"mem-{normalised_key(tenant, 'user:u-1842', Kind.SEMANTIC, content)[:32]}"
    store.add(
        MemoryRecord(
            id=old_id,
            tenant=tenant,
            kind=Kind.SEMANTIC,
            scope="user:u-1842",
            content=content,
            valid_from=T0,
            sources=(Source(id="msg-old", type="message", trust=Trust.TRUSTED),),
        )
    )
    decision = store.propose(_proposal(tenant, content, "msg-new"))
    assert (decision.record_id, decision.reason) == (old_id, WriteReason.DUPLICATE_MERGED)
    live = [r for r in store.backend.all_records(tenant) if r.status is Status.ACTIVE]
    assert [r.id for r in live] == [old_id]
    assert [s.id for s in live[0].sources] == ["msg-old", "msg-new"]


def _old_way(lg: GraphmemStore) -> GraphmemStore:
    """An adapter naming hashed scopes and item ids with SHA-256, as before the name digest."""
    lg._digest = _sha256  # type: ignore[method-assign]
    return lg


@pytest.mark.parametrize("namespace", [("users", "+447946095812"), ("x" * 150, "y" * 60), ("plain",)])
def test_items_written_with_the_old_names_are_read_and_superseded(
    store: MemoryStore, tenant: str, namespace: tuple[str, ...]
) -> None:
    clock = [T0]
    old = _old_way(GraphmemStore(store, tenant, clock=lambda: clock[0]))
    old.put(namespace, "prefs", {"channel": "email"})
    old.put(namespace, "lang", {"code": "pt"})
    stored = store.backend.all_records(tenant)
    assert {r.scope for r in stored} == {namespace_scope(namespace)}  # the SHA-256 name
    clock[0] += timedelta(seconds=1)
    lg = GraphmemStore(store, tenant, clock=lambda: clock[0])
    keyed = lg.scope_of(namespace)
    assert (keyed != namespace_scope(namespace)) == (
        isinstance(store.backend, Neo4jBackend) and keyed.startswith("ns:langgraph.h/")
    )
    assert lg.get(namespace, "prefs").value == {"channel": "email"}  # type: ignore[union-attr]
    assert sorted(i.key for i in lg.search(namespace)) == ["lang", "prefs"]
    assert lg.list_namespaces() == [namespace]
    lg.put(namespace, "prefs", {"channel": "sms"})  # supersedes the old-named version
    assert lg.get(namespace, "prefs").value == {"channel": "sms"}  # type: ignore[union-attr]
    items = sorted((i.key, i.value) for i in lg.search(namespace))
    assert items == [("lang", {"code": "pt"}), ("prefs", {"channel": "sms"})]
    newest = max(
        (r for r in store.backend.all_records(tenant) if '"prefs"' in r.content), key=lambda r: r.created_at
    )
    assert newest.scope == namespace_scope(namespace)  # a supersession keeps the item's scope
    assert newest.id.startswith(_version_prefix(namespace, "prefs", lg._digest))
    lg.put(namespace, "city", {"name": "Porto"})  # a new item: this store's names
    (city,) = (r for r in store.backend.all_records(tenant) if '"city"' in r.content)
    assert city.scope == keyed
    assert city.id.startswith(_version_prefix(namespace, "city", lg._digest))
    assert lg.get(namespace, "city").value == {"name": "Porto"}  # type: ignore[union-attr]
    lg.delete(namespace, "lang")  # the old-named item is found and revoked
    assert lg.get(namespace, "lang") is None
    assert sorted(i.key for i in lg.search(namespace)) == ["city", "prefs"]
    assert sorted(i.key for i in GraphmemStore(store, tenant).search(namespace)) == ["city", "prefs"]
    if len(namespace) > 1:  # the parent's search reaches both scope names
        assert sorted(i.key for i in lg.search(namespace[:1])) == ["city", "prefs"]
