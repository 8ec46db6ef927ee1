"""The embedded backend's batched write and lineage paths: updates in place, a batch's sources,
the cascade's closure read in one statement."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmem import Kind, MemoryRecord, Source, Status
from graphmem.backends.base import AddEdge, PutRecord, UpdateRecord
from graphmem.backends.embedded import EmbeddedBackend
from tests.conftest import T0


@pytest.fixture(params=["persisted", "memory"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EmbeddedBackend]:
    made = EmbeddedBackend(tmp_path / "memdir" if request.param == "persisted" else None)
    yield made
    made.close()


def _claim(tenant: str, rid: str, *, parents: tuple[str, ...] = (), **extra: object) -> MemoryRecord:
    fields: dict[str, object] = {
        "id": rid,
        "tenant": tenant,
        "kind": Kind.SEMANTIC,
        "scope": "case:c1",
        "content": f"claim {rid}",
        "valid_from": T0,
        "derived_from": parents,
        "sources": () if parents else (Source(id=f"src-{rid}"),),
    }
    fields.update(extra)
    return MemoryRecord(**fields)  # type: ignore[arg-type]


def test_an_update_in_place_keeps_every_index_in_step(backend: EmbeddedBackend, tenant: str) -> None:
    a, b = _claim(tenant, "a"), _claim(tenant, "b")
    backend.apply([PutRecord(record=a), PutRecord(record=b)])
    revoked = a.model_copy(update={"status": Status.REVOKED})
    rewritten = b.model_copy(update={"content": "claim b, rewritten"})
    backend.apply([UpdateRecord(record=revoked), UpdateRecord(record=rewritten)])
    assert backend.get_many(tenant, ["a", "b"]) == [revoked, rewritten]
    assert [r.id for r in backend.records_with_status(tenant, [Status.REVOKED])] == ["a"]
    assert backend.by_content_hash(tenant, b.content_hash) == []
    assert backend.by_content_hash(tenant, rewritten.content_hash) == [rewritten]
    assert backend.by_content_hash(tenant, a.content_hash) == [revoked]
    assert backend.check() == []


def test_an_update_of_a_missing_or_moved_record_is_written_as_a_replacement(
    backend: EmbeddedBackend, tenant: str
) -> None:
    kept = _claim(tenant, "kept")
    backend.apply([PutRecord(record=kept)])
    moved = kept.model_copy(update={"scope": "case:c2", "status": Status.REVOKED})
    missing = _claim(tenant, "missing")
    backend.apply([UpdateRecord(record=moved), UpdateRecord(record=missing)])
    assert backend.get_many(tenant, ["kept", "missing"]) == [moved, missing]
    assert [r.id for r in backend.records_applying(tenant, ["case:c2"])] == ["kept"]
    assert [r.id for r in backend.records_applying(tenant, ["case:c1"])] == ["missing"]
    assert backend.citing_ids(tenant, "src-missing") == ["missing"]


def test_a_source_cited_twice_in_a_batch_keeps_the_last_copy(backend: EmbeddedBackend, tenant: str) -> None:
    first = _claim(tenant, "x", sources=(Source(id="shared", locator="doc://1"),))
    second = _claim(tenant, "y", sources=(Source(id="shared", locator="doc://2"),))
    backend.apply([PutRecord(record=first), PutRecord(record=second)])
    stored = backend.source(tenant, "shared")
    assert stored is not None
    assert stored.locator == "doc://2"
    backend.apply([UpdateRecord(record=second), UpdateRecord(record=first)])
    stored = backend.source(tenant, "shared")
    assert stored is not None
    assert stored.locator == "doc://1"
    assert backend.citing_ids(tenant, "shared") == ["x", "y"]


def test_downstream_walks_the_closure_depth_first_with_each_parents_state(
    backend: EmbeddedBackend, tenant: str
) -> None:
    """root → m1, m2; m1 → d (also from m2, a diamond); m2 → e; other → e. Each dependent once,
    children by id, depth first; the parents' states as stored."""
    records = [
        _claim(tenant, "root"),
        _claim(tenant, "other"),
        _claim(tenant, "m2", parents=("root",)),
        _claim(tenant, "m1", parents=("root",)),
        _claim(tenant, "d", parents=("m1", "m2")),
        _claim(tenant, "e", parents=("m2", "other")),
        _claim(tenant, "unrelated"),
    ]
    backend.apply([PutRecord(record=r) for r in records])
    backend.apply(
        [
            AddEdge(tenant=tenant, label="INVALIDATED_BY", src="other", dst="unrelated", at=T0),
            UpdateRecord(record=records[2].model_copy(update={"status": Status.REVOKED})),
        ]
    )
    found = backend.downstream(tenant, ["root", "no-such-record"])
    # From root: m1 and m2 are pushed in id order, so m2 (popped first) leads: m2's children
    # d and e, then e's and d's (none), then m1, whose child d was seen.
    assert [d.record.id for d in found] == ["m1", "m2", "d", "e"]
    by_id = {d.record.id: d for d in found}
    assert [(p.id, p.status) for p in by_id["d"].parents] == [("m1", Status.ACTIVE), ("m2", Status.REVOKED)]
    assert [(p.id, p.invalidated_at) for p in by_id["e"].parents] == [("m2", None), ("other", T0)]
    assert by_id["m2"].record.status is Status.REVOKED
    assert backend.downstream(tenant, ["no-such-record"]) == []
    assert [d.record.id for d in backend.support_of(tenant, ["e", "gone", "d"])] == ["e", "d"]
