"""Opening an older store file upgrades it in place (format 3 → 4, the narrow content-hash
index, the erasure counts); a process killed at any point of those upgrades leaves a file
that is one of the states between them, never a mix, and opens with every record as it was."""

from __future__ import annotations

import os
import random
import select
import shutil
import signal
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest

from graphmem import Kind, MemoryRecord, MemoryStore, Outcome, Source
from graphmem.backends.embedded import EmbeddedBackend
from graphmem.backends.sqlite_engine import DB_NAME, FORMAT
from tests.conftest import T0

RECORDS = 2_000


def _records(tenant: str) -> list[MemoryRecord]:
    return [
        MemoryRecord(
            id=f"r{i:05d}",
            tenant=tenant,
            kind=Kind.EPISODIC,
            scope=f"case:c{i % 20}",
            content=f"note {i}: the gateway {i * 7919 % 10007} timed out on capture",
            event_time=T0,
            outcome=Outcome.UNKNOWN,
            sources=(Source(id=f"s{i}", quote=f"quote {i}"),),
        )
        for i in range(RECORDS)
    ]


def _regress(db: Path) -> None:
    """Make ``db`` a file as a format 3 store with the whole-hash and (tenant, scope) indexes and
    no erasure counts left it."""
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("DROP TABLE erasures")
        conn.execute("DROP INDEX records_hash_era")
        conn.execute("DROP INDEX records_scope_era")
        conn.execute("ALTER TABLE records DROP COLUMN era")
        conn.execute("CREATE INDEX records_hash ON records (tenant, content_hash)")
        conn.execute("CREATE INDEX records_scope ON records (tenant, scope)")
        conn.execute("ALTER TABLE versions DROP COLUMN body")
        conn.execute("ALTER TABLE related DROP COLUMN recorded")
        conn.execute("ALTER TABLE records DROP COLUMN embedding_model")
        conn.execute("PRAGMA user_version = 3")
        conn.commit()


def _state(db: Path) -> tuple[int, bool, bool, bool]:
    """The file's format, whether it has the embedding model column, the era-keyed scope and
    content-hash indexes (with their column) and the erasure counts; raises if SQLite finds
    the file damaged."""
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        columns = {row[1] for row in conn.execute("PRAGMA table_info(records)")}
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    hash_indexes = names & {"records_hash", "records_hash_key", "records_hash_era"}
    assert len(hash_indexes) == 1, f"one content-hash index, never two or none: {hash_indexes}"
    scope_indexes = names & {"records_scope", "records_scope_era"}
    assert len(scope_indexes) == 1, f"one scope index, never two or none: {scope_indexes}"
    era = "records_hash_era" in names
    assert era == ("era" in columns) == ("records_scope_era" in names), (
        "the era column and its indexes come together"
    )
    return version, "embedding_model" in columns, era, "erasures" in names


@pytest.mark.slow
def test_a_kill_during_the_upgrades_on_open_leaves_a_whole_state_and_every_record(
    tmp_path: Path, tenant: str
) -> None:
    original = tmp_path / "original"
    records = _records(tenant)
    with MemoryStore.embedded(original) as store:
        store.add_many(records)
    _regress(original / DB_NAME)
    assert _state(original / DB_NAME) == (3, False, False, False)

    def opener(path: Path) -> tuple[int, int]:
        """A forked process opening a copy of the old file at ``path``: its pid, once it is about to open."""
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(original, path)
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the opener: upgrades the file, then exits (or is killed first)
            try:
                os.close(read_end)
                os.write(write_end, b"go")
                MemoryStore.embedded(path).close()
            finally:
                os._exit(0)
        os.close(write_end)
        ready, _, _ = select.select([read_end], [], [], 60.0)
        assert ready, "the opener did not start within 60 s"
        assert os.read(read_end, 2) == b"go"
        os.close(read_end)
        return pid, time.monotonic()

    # How long the upgrades take here: kills are spread over that window.
    pid, began = opener(tmp_path / "timed")
    _, status = os.waitpid(pid, 0)
    window = time.monotonic() - began
    assert os.WIFEXITED(status)
    assert os.WEXITSTATUS(status) == 0
    assert _state(tmp_path / "timed" / DB_NAME) == (FORMAT, True, True, True)

    rng = random.Random(20261203)
    seen: set[tuple[int, bool, bool, bool]] = set()
    for attempt in range(40):
        path = tmp_path / "killed"
        pid, _ = opener(path)
        time.sleep(rng.uniform(0.0, window))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        state = _state(path / DB_NAME)
        version, model_column, era, counts = state
        # The upgrades run in order, each in one transaction: format first, then the index, then the table.
        assert version in (3, FORMAT), f"attempt {attempt}: format {version}"
        assert model_column == (version == FORMAT), f"attempt {attempt}: {state}"
        assert not era or version == FORMAT, f"attempt {attempt}: {state}"
        assert not counts or era, f"attempt {attempt}: {state}"
        seen.add(state)
        with MemoryStore.embedded(path) as store:
            backend = store.backend
            assert isinstance(backend, EmbeddedBackend)
            assert backend.check() == [], f"attempt {attempt}"
            got = {r.id: r for r in backend.all_records(tenant)}
            assert [got[r.id].content for r in records] == [r.content for r in records]
            assert len(got) == RECORDS
            assert backend.by_content_hash(tenant, records[7].content_hash) == [got[records[7].id]]
        assert _state(path / DB_NAME) == (FORMAT, True, True, True), f"attempt {attempt}"
    # Kills fell before, between and after the upgrades, not all at one point.
    assert len(seen) >= 2, f"every kill left the same state {seen}: the window ({window:.3f} s) was missed"
