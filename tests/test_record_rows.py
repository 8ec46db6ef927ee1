"""The embedded store's record rows: the fast paths of row building give exactly what the
reference definitions give (content hash, timestamps, JSON body and fingerprint), and the
scope and content-hash indexes keyed by era, to which an earlier store is upgraded."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import unicodedata
from contextlib import closing
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphmem import Kind, MemoryRecord, MemoryStore, Source
from graphmem.backends.embedded import _BY_CONTENT_HASH, _GATE_COLUMNS, ERA_SHIFT, rows_in_scopes
from graphmem.backends.sqlite_engine import DB_NAME, FORMAT, RECORD_ROW, record_row, ts
from graphmem.model import content_hash
from tests.conftest import T0

_COLUMNS = [c.strip() for c in RECORD_ROW.split(",")]


def _reference_hash(content: str) -> str:
    normal = " ".join(unicodedata.normalize("NFKC", content).casefold().split())
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()


@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_ascii_content_hash_is_the_normalised_hash(content: str) -> None:
    assert content_hash(content) == _reference_hash(content)


@given(st.text())
def test_any_content_hash_is_the_normalised_hash(content: str) -> None:
    assert content_hash(content) == _reference_hash(content)


def test_content_hash_still_normalises_what_is_not_ascii() -> None:
    # Full-width letters, a ligature and a capital sharp s fold to their ASCII spellings.
    fullwidth = "".join(chr(0xFF00 + ord(c) - 0x20) for c in "Payment")
    assert content_hash(f"{fullwidth}  \ufb01led\u00a0STRASSE") == content_hash("payment filed strasse")
    assert content_hash("Straße") == content_hash("STRASSE")
    assert content_hash("payment") != content_hash("payments")


@given(
    st.datetimes(
        min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.sampled_from([UTC])
    )
    | st.datetimes(
        min_value=datetime(2, 1, 1),
        max_value=datetime(9998, 12, 31),
        timezones=st.builds(lambda m: timezone(timedelta(minutes=m)), st.integers(-1439, 1439)),
    )
)
def test_timestamps_are_iso_utc_to_the_microsecond(value: datetime) -> None:
    assert ts(value) == value.astimezone(UTC).isoformat(timespec="microseconds")
    assert ts(None) is None


def test_timestamps_keep_text_order_as_time_order() -> None:
    times = [T0 - timedelta(days=700_000), T0, T0 + timedelta(microseconds=1), T0 + timedelta(days=1)]
    assert sorted(times, key=ts) == times


def _records() -> list[MemoryRecord]:
    plain = MemoryRecord(
        id="r1",
        tenant="t1",
        kind=Kind.EPISODIC,
        scope="case:c1",
        content="Payment 42 failed — the gateway timed out",
        created_at=T0,
        event_time=T0 - timedelta(hours=1),
        outcome="unknown",
        sources=(Source(id="s1", quote="the quote"),),
    )
    full = MemoryRecord(
        id="r2",
        tenant="t1",
        kind=Kind.PROCEDURAL,
        scope="case:c1",
        content="restart the gateway",
        created_at=T0 + timedelta(microseconds=7),
        valid_from=T0,
        valid_to=T0 + timedelta(days=3),
        procedure_name="restart",
        procedure_version="2",
        preconditions=("cap-b", "cap-a", "cap-b"),
        outcome="verified-success",
        tags=("subject:gw",),
        embedding=(0.25, -1.5e-07, 3.0),
        embedding_model="all-MiniLM-L6-v2",
        untrusted_lineage=True,
        sources=(Source(id="s2", type="test"),),
    )
    return [plain, full]


def test_a_row_holds_the_record_json_and_its_fingerprint() -> None:
    for record in _records():
        row = dict(zip(_COLUMNS, record_row(record), strict=True))
        assert row["body"] == record.model_dump_json()
        assert row["fingerprint"] == record.fingerprint()
        assert row["content_hash"] == record.content_hash
        assert (row["kind"], row["status"]) == (record.kind.value, record.status.value)
        assert type(row["kind"]) is str
        assert type(row["status"]) is str
        assert row["known_from"] == record.created_at.isoformat(timespec="microseconds")
    full = dict(zip(_COLUMNS, record_row(_records()[1]), strict=True))
    assert full["preconditions"] == '["cap-a", "cap-b"]'
    assert '"embedding_model":"all-MiniLM-L6-v2"' in full["body"]
    assert '"untrusted_lineage":true' in full["body"]
    assert (full["start"], full["stop"]) == (ts(T0), ts(T0 + timedelta(days=3)))


def _plan(path: Path, statement: str, params: tuple[str, ...]) -> str:
    with closing(sqlite3.connect(path / DB_NAME)) as conn:
        return " ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {statement}", params))


def test_a_content_hash_lookup_seeks_the_hash_key_in_each_era(tmp_path: Path) -> None:
    MemoryStore.embedded(tmp_path).close()
    plan = _plan(tmp_path, _BY_CONTENT_HASH, ("t1", "0" * 16, "0" * 64))
    assert "USING INDEX records_hash_era (tenant=? AND era=? AND <expr>=?)" in plan
    assert "USING COVERING INDEX records_hash_era (tenant=? AND era>?)" in plan  # the next era
    assert "SCAN records" not in plan


def test_a_read_by_scope_seeks_each_scope_in_each_era(tmp_path: Path) -> None:
    MemoryStore.embedded(tmp_path).close()
    for statement in (
        rows_in_scopes("body, fingerprint", 2) + " ORDER BY +id",
        rows_in_scopes(_GATE_COLUMNS, 2),
    ):
        plan = _plan(tmp_path, statement, ("t1", "case:a", "case:b"))
        assert "USING INDEX records_scope_era (tenant=? AND era=? AND scope=?)" in plan
        assert "(tenant=? AND era>?)" in plan  # the next era
        assert "SCAN records" not in plan
        assert "sqlite_autoindex_records_1" not in plan  # never the tenant's records in id order


_EARLIER = {
    # The content-hash index before eras (on the whole hash, then on its first 16 hex digits),
    # beside the scope index on (tenant, scope).
    "whole-hash": ("CREATE INDEX records_hash ON records (tenant, content_hash)",),
    "hash-key": ("CREATE INDEX records_hash_key ON records (tenant, substr(content_hash, 1, 16))",),
    # The era column and the era-keyed content-hash index, beside the scope index on (tenant, scope).
    "hash-era": (
        "ALTER TABLE records ADD COLUMN era INTEGER NOT NULL DEFAULT 0",
        "CREATE INDEX records_hash_era ON records (tenant, era, substr(content_hash, 1, 16))",
    ),
}


def _as_earlier(path: Path, form: str) -> None:
    """Turn the store's file into one written with an earlier form of its indexes."""
    with closing(sqlite3.connect(path / DB_NAME)) as conn:
        conn.execute("DROP INDEX records_hash_era")
        conn.execute("DROP INDEX records_scope_era")
        conn.execute("ALTER TABLE records DROP COLUMN era")
        conn.execute("CREATE INDEX records_scope ON records (tenant, scope)")
        for statement in _EARLIER[form]:
            conn.execute(statement)
        conn.commit()


def _indexes(path: Path) -> set[str]:
    with closing(sqlite3.connect(path / DB_NAME)) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}


@pytest.mark.parametrize("earlier", sorted(_EARLIER))
def test_a_store_with_earlier_indexes_is_upgraded_when_opened(tmp_path: Path, earlier: str) -> None:
    records = _records()
    twin = records[0].model_copy(update={"id": "r3", "content": "PAYMENT 42  failed — the gateway timed out"})
    with MemoryStore.embedded(tmp_path) as store:
        store.add_many([*records, MemoryRecord.model_validate(twin.model_dump())])
    _as_earlier(tmp_path, earlier)
    with MemoryStore.embedded(tmp_path) as store:
        assert [r.id for r in store.backend.by_content_hash("t1", records[0].content_hash)] == ["r1", "r3"]
        assert store.backend.by_content_hash("t1", records[1].content_hash) == [records[1]]
        assert store.backend.by_content_hash("t1", "0" * 64) == []
        assert [r.id for r in store.backend.records_applying("t1", [records[0].scope])] == [
            r.id for r in sorted([*records, twin], key=lambda r: r.id) if r.scope == records[0].scope
        ]
        assert store.backend.check() == []
    with closing(sqlite3.connect(tmp_path / DB_NAME)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == FORMAT
        assert {era for (era,) in conn.execute("SELECT era FROM records")} == {0}
    names = _indexes(tmp_path)
    assert {"records_hash_era", "records_scope_era"} <= names
    assert not names & {"records_hash", "records_hash_key", "records_scope"}
    assert "USING INDEX records_hash_era" in _plan(tmp_path, _BY_CONTENT_HASH, ("t1", "0" * 16, "0" * 64))
    assert "USING INDEX records_scope_era" in _plan(tmp_path, rows_in_scopes("id", 1), ("t1", "case:a"))


def test_a_new_row_takes_the_era_of_the_tables_end_and_reads_reach_every_era(tmp_path: Path) -> None:
    """Rows are inserted in the era where the table ends (its largest rowid over 2^ERA_SHIFT),
    and content-hash and scope reads find a tenant's rows in every era it has, in id order."""
    first, second = _records()[:2]
    with MemoryStore.embedded(tmp_path) as store:
        store.add(first)
        with closing(sqlite3.connect(tmp_path / DB_NAME)) as conn:  # the table as if that many rows long
            conn.execute("UPDATE records SET rowid = ? WHERE id = ?", ((5 << ERA_SHIFT) - 1, first.id))
            conn.commit()
        later = [
            MemoryRecord.model_validate(
                first.model_copy(update={"id": f"r{n}", "content": first.content.upper()}).model_dump()
            )
            for n in (7, 8)
        ]
        store.add(later[0])  # the table ends one row before era 5: era 4
        store.add_many([second, later[1]])  # now at the first row of era 5
        with closing(sqlite3.connect(tmp_path / DB_NAME)) as conn:
            eras = dict(conn.execute("SELECT id, era FROM records"))
        assert eras == {first.id: 0, "r7": 4, second.id: 5, "r8": 5}
        found = store.backend.by_content_hash("t1", first.content_hash)
        assert [r.id for r in found] == [first.id, "r7", "r8"]
        assert store.backend.by_content_hash("t1", second.content_hash) == [second]
        assert store.backend.by_content_hash("t2", first.content_hash) == []
        in_scope = sorted(r.id for r in [first, second, *later] if r.scope == first.scope)
        assert len(in_scope) == 4  # one row in each of the three eras, at least
        assert [r.id for r in store.backend.records_applying("t1", [first.scope])] == in_scope
        assert store.backend.records_applying("t2", [first.scope]) == []


def test_openers_in_many_threads_upgrade_an_earlier_file_once_and_all_succeed(tmp_path: Path) -> None:
    """Six threads open a file with the earlier indexes at one instant, each with its own
    store (its own connections): every open succeeds, the file ends with one content-hash
    index, one scope index and the era column, and each store finds the duplicates."""
    records = _records()
    twin = records[0].model_copy(update={"id": "r3", "content": "PAYMENT 42  failed — the gateway timed out"})
    with MemoryStore.embedded(tmp_path) as store:
        store.add_many([*records, MemoryRecord.model_validate(twin.model_dump())])
    _as_earlier(tmp_path, "hash-key")
    start = threading.Barrier(6)
    found: list[list[str]] = []
    failures: list[BaseException] = []

    def opener() -> None:
        try:
            start.wait()
            with MemoryStore.embedded(tmp_path) as store:
                found.append([r.id for r in store.backend.by_content_hash("t1", records[0].content_hash)])
        except BaseException as err:  # reported below, with the thread's error
            failures.append(err)

    threads = [threading.Thread(target=opener) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert found == [["r1", "r3"]] * 6
    with closing(sqlite3.connect(tmp_path / DB_NAME)) as conn:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(records)")}
    names = _indexes(tmp_path)
    assert names & {"records_hash", "records_hash_key", "records_hash_era"} == {"records_hash_era"}
    assert names & {"records_scope", "records_scope_era"} == {"records_scope_era"}
    assert "era" in columns
