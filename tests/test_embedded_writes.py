"""The embedded backend's batched write and lineage paths: updates in place, a batch's sources,
the cascade's closure read in one statement."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmem import ForgetMode, ForgetRequest, Kind, MemoryRecord, MemoryStore, Source, Status
from graphmem.backends.base import AddEdge, PutRecord, UpdateRecord
from graphmem.backends.embedded import EmbeddedBackend
from graphmem.backends.sqlite_engine import RECORD_ROW, record_row
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


_ROWS = f"SELECT {RECORD_ROW} FROM records WHERE tenant = ? AND id IN (SELECT value FROM json_each(?))"  # noqa: S608 - a constant column list


def _rows(backend: EmbeddedBackend, tenant: str, ids: list[str]) -> dict[str, tuple[object, ...]]:
    """The stored ``records`` columns (``RECORD_ROW``) of ``ids``."""
    with backend.reading() as conn:
        return {row[1]: tuple(row) for row in conn.execute(_ROWS, (tenant, json.dumps(ids)))}  # type: ignore[attr-defined]


def _tags(backend: EmbeddedBackend, tenant: str) -> list[tuple[str, str]]:
    with backend.reading() as conn:
        return list(conn.execute("SELECT tag, id FROM tags WHERE tenant = ? ORDER BY id, tag", (tenant,)))  # type: ignore[attr-defined]


def test_a_status_only_update_stores_what_a_whole_write_would(backend: EmbeddedBackend, tenant: str) -> None:
    """Every column, the fingerprint graphmem.model computes, the tags and the source's row are
    those a whole write of the changed record leaves; a missing or moved record is written whole."""
    cited = Source(id="shared", quote="quoted", locator="doc://1")
    a = _claim(tenant, "a", sources=(cited, Source(id="other")), tags=("t1", "t2"), expires_at=T0)
    b = _claim(tenant, "b", sources=(cited,), embedding=(0.1, 1e-7, -3.25), embedding_model="m-1")
    kept = _claim(tenant, "kept")
    backend.apply([PutRecord(record=r) for r in (a, b, kept)])
    revoked = cited.model_copy(update={"status": "revoked"})
    new_a = a.model_copy(update={"status": Status.REVOKED, "sources": (revoked, a.sources[1])})
    new_b = b.model_copy(update={"status": Status.RELEASED, "sources": (revoked,)})
    moved = kept.model_copy(update={"scope": "case:c2", "status": Status.REVOKED})
    missing = _claim(tenant, "missing")
    backend.apply([UpdateRecord(record=r, status_only=True) for r in (new_a, new_b)])
    rows = _rows(backend, tenant, ["a", "b"])
    assert rows == {"a": record_row(new_a), "b": record_row(new_b)}
    assert [rows[r.id][7] for r in (new_a, new_b)] == [new_a.fingerprint(), new_b.fingerprint()]
    assert backend.get_many(tenant, ["a", "b"]) == [new_a, new_b]
    assert _tags(backend, tenant) == [("t1", "a"), ("t2", "a")]
    assert backend.source(tenant, "shared") == revoked.model_copy(update={"quote": None})
    assert [r.id for r in backend.records_with_status(tenant, [Status.REVOKED, Status.RELEASED])] == [
        "a",
        "b",
    ]
    backend.apply([UpdateRecord(record=r, status_only=True) for r in (moved, missing)])
    assert backend.get_many(tenant, ["kept", "missing"]) == [moved, missing]
    assert [r.id for r in backend.records_applying(tenant, ["case:c2"])] == ["kept"]
    assert backend.citing_ids(tenant, "src-missing") == ["missing"]
    assert backend.check() == []


def test_forgetting_a_source_stores_each_claim_as_a_whole_write_would(tmp_path: Path, tenant: str) -> None:
    """Revoke and release write only the statuses (``status_only``): the rows they leave are
    those of the records read back, fingerprints included, and ``graphmem check`` is clean."""
    store = MemoryStore.embedded(tmp_path / "store")
    try:
        cited = Source(id="doc-1", quote="quoted from doc-1")
        claims = [
            _claim(
                tenant, f"c{i}", sources=(cited, Source(id=f"own-{i}")) if i % 2 else (cited,), tags=("x",)
            )
            for i in range(6)
        ]
        derived = _claim(tenant, "d", parents=("c0",))
        store.add_many([*claims, derived])
        report = store.forget(
            ForgetRequest(
                tenant=tenant,
                target="doc-1",
                target_type="source",
                mode=ForgetMode.REVOKE,
                reason="r",
                requested_by="tests",
                cascade=True,
            )
        )
        actions = {e.record_id: e.action for e in report.entries}
        assert actions == {
            "c0": "revoked",
            "c1": "kept",
            "c2": "revoked",
            "c3": "kept",
            "c4": "revoked",
            "c5": "kept",
            "d": "revoked",
        }
        backend = store.backend
        assert isinstance(backend, EmbeddedBackend)
        ids = sorted(actions)
        stored = backend.get_many(tenant, ids)
        assert _rows(backend, tenant, ids) == {r.id: record_row(r) for r in stored}
        for r in stored:
            assert _rows(backend, tenant, [r.id])[r.id][7] == r.fingerprint()
            assert [s.status for s in r.sources if s.id == "doc-1"] == ([] if r.id == "d" else ["revoked"])
        assert [r.status for r in stored] == [
            Status.REVOKED if actions[r.id] == "revoked" else Status.ACTIVE for r in stored
        ]
        assert backend.check() == []
    finally:
        store.close()


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
