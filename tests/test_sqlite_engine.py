"""The embedded engine's files: corruption refused, `graphmem check`, 0.1 migration, erasure on disk,
readers in other processes."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import sqlite3
import struct
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import TypeAdapter

from graphmem import (
    AuditEvent,
    BackendUnavailable,
    ForgetMode,
    ForgetRequest,
    Kind,
    MemoryRecord,
    MemoryStore,
    ReadContext,
    Source,
)
from graphmem.backends import sqlite_engine
from graphmem.backends.base import AppendAudit, Op, PutRecord, ScopeWithin
from graphmem.backends.embedded import EmbeddedBackend
from graphmem.backends.sqlite_engine import DB_NAME, WAL_CHECKPOINT_BYTES
from graphmem.cli import cli
from tests.conftest import KNOWN, T0

_OPS: TypeAdapter[list[Op]] = TypeAdapter(list[Op])


def _episode(tenant: str, rid: str, text: str, **extra: object) -> MemoryRecord:
    fields: dict[str, object] = {
        "id": rid,
        "tenant": tenant,
        "kind": Kind.EPISODIC,
        "scope": "case:c1",
        "content": text,
        "event_time": T0,
        "outcome": "unknown",
        "sources": (Source(id=f"src-{rid}", quote=f"quote of {text}", locator=f"doc://{rid}"),),
    }
    fields.update(extra)
    return MemoryRecord(**fields)  # type: ignore[arg-type]


def _filled(path: Path, tenant: str, n: int = 50) -> None:
    with MemoryStore.embedded(path) as store:
        store.add_many([_episode(tenant, f"r{i}", f"payment {i} " + "padding " * 60) for i in range(n)])


# -- corruption -----------------------------------------------------------------


def _read_everything(path: Path, tenant: str) -> None:
    with MemoryStore.embedded(path) as store:
        # The check reads every page, those of tables only replays read (kept versions) too.
        store.backend.check()
        store.backend.all_records(tenant)
        store.recall(
            ReadContext(as_of=KNOWN, tenant=tenant, scopes=["case:c1"], now=T0.replace(day=2)), "payment"
        )


def test_a_garbled_header_is_refused_at_open(tmp_path: Path, tenant: str) -> None:
    path = tmp_path / "memdir"
    _filled(path, tenant)
    db = path / DB_NAME
    data = bytearray(db.read_bytes())
    data[0:16] = b"not a database!!"
    db.write_bytes(bytes(data))
    with pytest.raises(BackendUnavailable) as err:
        MemoryStore.embedded(path)
    assert err.value.code == "store_corrupt"
    assert str(db) in str(err.value)
    assert "graphmem check" in str(err.value)


def _read_outcome(path: Path, tenant: str) -> str | None:
    try:
        _read_everything(path, tenant)
    except BackendUnavailable as err:
        return err.code
    return None


@pytest.mark.parametrize("seed", range(6))
def test_flipped_bytes_in_the_pages_are_refused_never_absorbed(
    tmp_path: Path, tenant: str, seed: int
) -> None:
    path = tmp_path / "memdir"
    _filled(path, tenant)
    db = path / DB_NAME
    data = bytearray(db.read_bytes())
    rng = random.Random(seed)
    page = 4096
    # a b-tree page past the schema page: flip bytes in its header and cell pointers
    target = rng.randrange(1, len(data) // page) * page
    for offset in rng.sample(range(target, target + 64), 8):
        data[offset] ^= 0xFF
    db.write_bytes(bytes(data))
    code = _read_outcome(path, tenant)
    if code is not None:
        assert code == "store_corrupt"
        return
    # Every read succeeded: then it must have returned exactly what was written (the flips landed in
    # bytes no read interprets, e.g. a page's unallocated space), and the check says what it found.
    with MemoryStore.embedded(path) as store:
        records = store.backend.all_records(tenant)
        store.backend.check()
    assert [r.content for r in records] == [
        f"payment {i} " + "padding " * 60 for i in sorted(range(50), key=str)
    ]


def test_a_truncated_file_is_refused(tmp_path: Path, tenant: str) -> None:
    path = tmp_path / "memdir"
    _filled(path, tenant)
    db = path / DB_NAME
    db.write_bytes(db.read_bytes()[: db.stat().st_size // 2])
    with pytest.raises(BackendUnavailable) as err:
        _read_everything(path, tenant)
    assert err.value.code == "store_corrupt"


def test_a_deleted_database_beside_its_log_is_refused(tmp_path: Path, tenant: str) -> None:
    path = tmp_path / "memdir"
    _filled(path, tenant)
    (path / DB_NAME).unlink()
    (path / (DB_NAME + "-wal")).write_bytes(b"\0" * 32)
    with pytest.raises(BackendUnavailable) as err:
        MemoryStore.embedded(path)
    assert err.value.code == "store_corrupt"


def test_the_cli_reports_corruption_in_one_line(tmp_path: Path, tenant: str) -> None:
    path = tmp_path / "memdir"
    _filled(path, tenant)
    (path / DB_NAME).write_bytes(b"\x00garbage" * 100)
    result = CliRunner().invoke(cli, ["--store", f"file://{path}", "check"], standalone_mode=False)
    assert isinstance(result.exception, BackendUnavailable)
    assert result.exception.code == "store_corrupt"


def test_a_body_damaged_after_a_recall_parsed_it_is_refused(tmp_path: Path, tenant: str) -> None:
    """A recall reuses the record it parsed before only for the very body it parsed: a stored
    body changed since (its fingerprint left alone) is refused as before."""
    path = tmp_path / "memdir"
    _filled(path, tenant, 5)
    ctx = ReadContext(as_of=KNOWN, tenant=tenant, scopes=["case:c1"], now=T0.replace(day=2))
    with MemoryStore.embedded(path, audit_recalls=False) as store:
        # The first read of the tenant purges what its erasure count may not cover: it keeps nothing.
        store.recall(ctx, "payment 3")
        first = store.recall(ctx, "payment 3")
        again = store.recall(ctx, "payment 3")
        assert "r3" in first.ids
        assert again.records == first.records
        assert again.records[0] is first.records[0]  # parsed once, reused
        conn = sqlite3.connect(path / DB_NAME)
        with conn:
            conn.execute("UPDATE records SET body = replace(body, 'payment 3', 'payment 8') WHERE id = 'r3'")
        conn.close()
        with pytest.raises(BackendUnavailable) as err:
            store.recall(ctx, "payment 3")
        assert err.value.code == "store_corrupt"


AWKWARD = [
    'quote " backslash \\ slash / end',
    "lines\nand\ttabs\rand \x1e record \x1f unit \x00 nul separators",
    "snowman \u2603, emoji \U0001f600, line separator \u2028, bom \ufeff, right-to-left \u202e",
    '{"a json": ["looking", "text"]} , ; | || char(30)',
]


@pytest.mark.parametrize("in_memory", [False, True], ids=["file", "memory"])
def test_a_recall_returns_every_selected_record_exactly_as_written(
    tmp_path: Path, tenant: str, in_memory: bool
) -> None:
    """A recall fetches its selected records in one row: text holding quotes, control and
    separator characters, non-ASCII and JSON comes back equal, in the recall's order, as `get`."""
    store = MemoryStore.embedded(None if in_memory else tmp_path / "memdir", audit_recalls=False)
    with store:
        written = [_episode(tenant, f"r{i}", f"payment {i} {text}") for i, text in enumerate(AWKWARD)]
        store.add_many(written)
        ctx = ReadContext(as_of=KNOWN, tenant=tenant, scopes=["case:c1"], now=T0.replace(day=2), limit=10)
        for _ in range(2):  # parsed, then reused
            selection = store.recall(ctx, "payment")
            assert sorted(selection.ids) == sorted(r.id for r in written)
            assert [r.id for r in selection.records] == list(selection.ids)
            by_id = {r.id: r for r in written}
            for record in selection.records:
                assert record.content == by_id[record.id].content
                assert record == store.get(tenant, record.id)


def test_a_body_damaged_with_a_separator_character_is_refused(tmp_path: Path, tenant: str) -> None:
    """A stored body changed to hold the characters a recall's one-row fetch joins records and
    fingerprints with is refused as damage, never split into other records."""
    path = tmp_path / "memdir"
    _filled(path, tenant, 5)
    ctx = ReadContext(as_of=KNOWN, tenant=tenant, scopes=["case:c1"], now=T0.replace(day=2))
    for damage in ("\x1f", "\x1e", "\x1e\x1f"):
        with MemoryStore.embedded(path, audit_recalls=False) as store:
            assert "r3" in store.recall(ctx, "payment 3").ids
        conn = sqlite3.connect(path / DB_NAME)
        with conn:
            before = conn.execute("SELECT body FROM records WHERE id = 'r3'").fetchone()[0]
            conn.execute("UPDATE records SET body = body || ? WHERE id = 'r3'", (damage,))
        conn.close()
        with MemoryStore.embedded(path, audit_recalls=False) as store:
            with pytest.raises(BackendUnavailable) as err:
                store.recall(ctx, "payment 3")
            assert err.value.code == "store_corrupt"
        conn = sqlite3.connect(path / DB_NAME)
        with conn:
            conn.execute("UPDATE records SET body = ? WHERE id = 'r3'", (before,))
        conn.close()


# -- graphmem check ---------------------------------------------------------------


def test_check_lists_each_violation(tmp_path: Path, tenant: str) -> None:
    path = tmp_path / "memdir"
    _filled(path, tenant, 5)
    runner = CliRunner()
    sound = runner.invoke(cli, ["--store", f"file://{path}", "check"])
    assert sound.exit_code == 0, sound.output
    assert "store is sound" in sound.output
    conn = sqlite3.connect(path / DB_NAME)
    with conn:
        conn.execute("INSERT INTO derived VALUES (?, 'r0', 'ghost')", (tenant,))
        conn.execute("INSERT INTO derived VALUES (?, 'r1', 'r2'), (?, 'r2', 'r1')", (tenant, tenant))
        conn.execute("UPDATE records SET body = replace(body, 'payment 3', 'payment 9') WHERE id = 'r3'")
        conn.execute(
            "INSERT INTO within (tenant, child, parent, seq) VALUES (?, 'case:x', 'case:y', 99)", (tenant,)
        )
    conn.close()
    damaged = runner.invoke(cli, ["--store", f"file://{path}", "check"])
    assert damaged.exit_code == 1
    assert "DERIVED_FROM names a parent that does not exist" in damaged.output
    assert "DERIVED_FROM cycle" in damaged.output
    assert "fingerprint mismatch: tenant" in damaged.output
    assert "record 'r3'" in damaged.output
    assert "WITHIN names a scope that does not exist" in damaged.output


# -- migration from 0.1 -------------------------------------------------------------


def _frame(seq: int, ops: list[Op]) -> bytes:
    batch = {"ops": _OPS.dump_python(ops, mode="json")}
    body = json.dumps({"seq": seq, "batch": batch}, separators=(",", ":")).encode()
    return b"%08x %08x " % (len(body), zlib.crc32(body)) + body + b"\n"


def _old_store(path: Path, tenant: str) -> list[MemoryRecord]:
    """A 0.1 directory: a snapshot with two records and a journal with three more batches."""
    path.mkdir()
    records = [_episode(tenant, f"old{i}", f"old record {i}") for i in range(5)]
    snapshot_ops: list[Op] = [PutRecord(record=r) for r in records[:2]]
    snapshot = {"ops": _OPS.dump_python(snapshot_ops, mode="json"), "format": 1, "seq": 1}
    (path / "snapshot.json").write_text(json.dumps(snapshot))
    journal = _frame(1, [PutRecord(record=records[4])])  # already in the snapshot: skipped
    journal += _frame(2, [PutRecord(record=records[2])])
    journal += _frame(
        3, [PutRecord(record=records[3]), ScopeWithin(tenant=tenant, child="case:c1", parent="domain:d")]
    )
    (path / "journal.log").write_bytes(journal + b"0000ffff 1234")  # a torn tail
    (path / "lock").write_bytes(b"")
    return records[:4]


def test_opening_a_0_1_store_says_what_to_run(tmp_path: Path, tenant: str) -> None:
    path = tmp_path / "old"
    _old_store(path, tenant)
    with pytest.raises(BackendUnavailable) as err:
        MemoryStore.embedded(path)
    assert err.value.code == "store_needs_migration"
    assert f"graphmem migrate {path}" in str(err.value)


def test_migrate_converts_everything_and_removes_the_old_files(tmp_path: Path, tenant: str) -> None:
    path = tmp_path / "old"
    expected = _old_store(path, tenant)
    result = CliRunner().invoke(cli, ["migrate", str(path)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in path.iterdir()) == [DB_NAME]
    with MemoryStore.embedded(path) as store:
        assert store.backend.all_records(tenant) == expected
        assert store.backend.scope_parents(tenant, "case:c1") == {"domain:d"}
        assert store.backend.check() == []


def test_a_damaged_0_1_journal_is_refused_and_left_alone(tmp_path: Path, tenant: str) -> None:
    path = tmp_path / "old"
    _old_store(path, tenant)
    journal = path / "journal.log"
    data = bytearray(journal.read_bytes())
    data[40] ^= 0x01  # inside the first frame's body: its checksum no longer matches
    journal.write_bytes(bytes(data))
    before = {p.name: p.read_bytes() for p in path.iterdir()}
    result = CliRunner().invoke(cli, ["migrate", str(path)], standalone_mode=False)
    assert isinstance(result.exception, BackendUnavailable)
    assert result.exception.code == "store_corrupt"
    assert {p.name: p.read_bytes() for p in path.iterdir()} == before


# -- erasure reaches the files ------------------------------------------------------


def _erase(tenant: str, rid: str) -> ForgetRequest:
    return ForgetRequest(tenant=tenant, target=rid, mode=ForgetMode.ERASE, reason="r", requested_by="u")


def _raw_hits(path: Path, marker: str) -> list[str]:
    return [p.name for p in path.iterdir() if p.is_file() and marker.encode() in p.read_bytes()]


def test_erased_text_is_in_no_page_and_no_wal_frame(tmp_path: Path, tenant: str) -> None:
    """Random writes and erases; after each erase returns, its markers (content, quotes, tags,
    subject tags, outcome label, locators, digests, procedure fields) are in no byte of any
    file — database, -wal, -shm — while a second store holds the database open (so the WAL is
    live, not deleted at close)."""
    path = tmp_path / "memdir"
    rng = random.Random(7)
    with MemoryStore.embedded(path) as store, MemoryStore.embedded(path) as reader:
        live: list[str] = []
        for step in range(40):
            rid = f"m{step:02d}"  # no id is a prefix of another
            text = f"secret-{rid}-{rng.randrange(10**9)} " + "filler words " * rng.randint(1, 400)
            store.add(
                _episode(
                    tenant,
                    rid,
                    text,
                    tags=(f"tag-{rid}", f"subject:case:c1/subj-{rid}"),
                    outcome=f"failure-{rid}-label",
                    procedure_name=f"pname-{rid}",
                    procedure_version=f"pver-{rid}",
                    preconditions=(f"precond-{rid}",),
                    sources=(
                        Source(
                            id=f"src-{rid}",
                            quote=f"quote of {text}",
                            locator=f"mailto:loc-{rid}@example.com?subject=divorce",
                            digest=f"digest-{rid}",
                        ),
                    ),
                )
            )
            live.append(rid)
            reader.backend.all_records(tenant)
            if rng.random() < 0.5:
                victim = live.pop(rng.randrange(len(live)))
                marker = store.get(tenant, victim).content.split()[0]  # type: ignore[union-attr]
                store.forget(
                    ForgetRequest(
                        tenant=tenant, target=victim, mode=ForgetMode.ERASE, reason="r", requested_by="u"
                    )
                )
                assert _raw_hits(path, marker) == [], f"step {step}: {marker} still on disk"
                assert _raw_hits(path, f"quote of {marker}") == []
                for field in ("tag", "subj", "pname", "pver", "precond", "loc", "digest", "failure"):
                    assert _raw_hits(path, f"{field}-{victim}") == [], f"{field} of {victim} on disk"


def _erase_then_die(path: Path, tenant: str, rid: str) -> None:
    store = MemoryStore.embedded(path)
    store.forget(
        ForgetRequest(tenant=tenant, target=rid, mode=ForgetMode.ERASE, reason="r", requested_by="u")
    )
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_kill_right_after_an_erase_leaves_no_erased_text(tmp_path: Path, tenant: str) -> None:
    path = tmp_path / "memdir"
    with MemoryStore.embedded(path) as store:
        store.add_many([_episode(tenant, f"k{i}", f"killmarker{i} " + "x " * 300) for i in range(10)])
    ctx = multiprocessing.get_context("fork")
    for i in range(0, 10, 2):
        proc = ctx.Process(target=_erase_then_die, args=(path, tenant, f"k{i}"))
        proc.start()
        proc.join()
        assert proc.exitcode == -signal.SIGKILL
        assert _raw_hits(path, f"killmarker{i} ") == []
        with MemoryStore.embedded(path) as store:
            assert store.get(tenant, f"k{i}").status.value == "erased"  # type: ignore[union-attr]
            assert store.get(tenant, f"k{i + 1}").content.startswith(f"killmarker{i + 1}")  # type: ignore[union-attr]


# -- processes ------------------------------------------------------------------------


def _write_forever(path: Path, tenant: str) -> None:
    store = MemoryStore.embedded(path)
    i = 0
    while True:
        store.add_many([_episode(tenant, f"w{i}-{j}", f"writer batch {i}") for j in range(5)])
        i += 1


def test_readers_in_this_process_never_fail_or_wait_while_another_process_writes(
    tmp_path: Path, tenant: str
) -> None:
    path = tmp_path / "memdir"
    _filled(path, tenant, 20)
    proc = multiprocessing.get_context("fork").Process(target=_write_forever, args=(path, tenant))
    proc.start()
    try:
        ctx = ReadContext(as_of=KNOWN, tenant=tenant, scopes=["case:c1"], now=T0.replace(day=2), limit=5)
        seen = 0
        slowest = 0.0
        with MemoryStore.embedded(path, audit_recalls=False) as store:
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:
                t0 = time.perf_counter()
                selection = store.recall(ctx, "writer batch")
                slowest = max(slowest, time.perf_counter() - t0)
                assert len(selection.ids) == 5
                seen = max(seen, len(store.backend.all_records(tenant)))
        assert seen > 20, "the writer never got a batch in"
        assert slowest < 2.0, f"a read waited {slowest:.2f} s for the writer"
    finally:
        proc.kill()
        proc.join()


def test_recall_audit_events_are_all_written_off_the_read_path(tmp_path: Path, tenant: str) -> None:
    """Recalls from many threads queue their audit events; reading the audit log, and closing,
    write every one of them."""
    path = tmp_path / "memdir"
    _filled(path, tenant, 5)
    ctx = ReadContext(as_of=KNOWN, tenant=tenant, scopes=["case:c1"], now=T0.replace(day=2))
    store = MemoryStore.embedded(path)
    digests: list[str] = []

    def recall_many() -> None:
        for _ in range(25):
            digests.append(store.recall(ctx, "payment").receipt.digest)

    threads = [threading.Thread(target=recall_many) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(e.details["receipt"] for e in store.audit(tenant) if e.action == "recalled") == sorted(
        digests
    )
    for _ in range(10):
        store.recall(ctx, "payment")
    store.close()  # the last ten are still queued: close writes them
    with MemoryStore.embedded(path) as reopened:
        assert sum(e.action == "recalled" for e in reopened.audit(tenant)) == 110


def test_a_batch_of_audit_events_is_written_in_a_constant_number_of_statements(
    tmp_path: Path, tenant: str
) -> None:
    """The recall audit flush runs beside busy reader threads: statement by statement (one per
    event or per selected id), each would wait for the interpreter lock again, and a batch of
    hundreds held every writer of the process for seconds. So the count stays flat."""
    path = tmp_path / "memdir"
    _filled(path, tenant, 5)
    with MemoryStore.embedded(path) as store:
        backend = store.backend
        assert isinstance(backend, EmbeddedBackend)

        def statements(events: int) -> int:
            ran: list[str] = []
            batch = [
                AuditEvent(tenant=tenant, action="recalled", record_ids=("a", "b", "c"), at=T0, details={})
                for _ in range(events)
            ]
            with backend.write() as conn:
                assert isinstance(conn, sqlite3.Connection)
                conn.set_trace_callback(ran.append)
                try:
                    backend.apply([AppendAudit(event=e) for e in batch])
                finally:
                    conn.set_trace_callback(None)
            return len(ran)

        assert statements(400) == statements(2)
        assert sum(e.action == "recalled" for e in store.audit(tenant)) == 402


def test_lineage_and_listing_lookups_seek_instead_of_walking_the_tenant(tmp_path: Path, tenant: str) -> None:
    """Counted in SQLite VM steps, not seconds: a lookup by edge costs the same in a tenant of
    3,000 records as it would in one of ten."""
    with MemoryStore.embedded(tmp_path / "memdir") as store:
        store.add_many(
            [
                _episode(tenant, f"bulk{i}", f"bulk {i}", tags=("t-bulk",) if i < 2 else ())
                for i in range(3000)
            ]
        )
        claim = MemoryRecord(
            id="claim",
            tenant=tenant,
            kind=Kind.SEMANTIC,
            scope="case:c1",
            content="derived",
            valid_from=T0,
            derived_from=("bulk7",),
            tags=("t-claim",),
        )
        store.add(claim)
        backend = store.backend
        steps = 0

        def count() -> int:
            nonlocal steps
            steps += 1
            return 0

        with backend.reading() as conn:
            assert isinstance(conn, sqlite3.Connection)
            conn.set_progress_handler(count, 100)
            try:
                lookups = {
                    "support_of": lambda: backend.support_of(tenant, ["claim"]),
                    "downstream": lambda: backend.downstream(tenant, ["bulk7"]),
                    "with_tag": lambda: backend.with_tag(tenant, "t-claim"),
                    "citing": lambda: backend.citing(tenant, "src-bulk9"),
                    "citing_ids": lambda: backend.citing_ids(tenant, "src-bulk9"),
                    "trace": lambda: backend.trace(tenant, "claim", 5),
                }
                for name, lookup in lookups.items():
                    steps = 0
                    assert lookup(), name
                    assert steps < 20, f"{name} ran {steps * 100} VM steps: it walks the tenant"
            finally:
                conn.set_progress_handler(None, 0)


# -- revisions ------------------------------------------------------------------


@pytest.mark.parametrize("persisted", [True, False], ids=["persisted", "memory"])
def test_revisions_tell_what_changed_or_that_it_is_unknown(
    tmp_path: Path, tenant: str, persisted: bool
) -> None:
    """``revision()`` moves with every committed write, the same on every thread's
    connection; ``changed_since`` names the records this backend's writes touched, and
    says "unknown" (None) after a scope relation, a rolled-back write transaction, or a
    write by another connection to the file."""
    backend = EmbeddedBackend(tmp_path / "s" if persisted else None)
    try:
        start = backend.revision()
        backend.apply([PutRecord(record=_episode(tenant, "a", "one"))])
        backend.apply([PutRecord(record=_episode(tenant, "b", "two"))])
        now = backend.revision()
        assert now != start
        assert backend.changed_since(start, now) == {"a", "b"}
        assert backend.changed_since(now, now) == frozenset()
        seen: list[tuple[int, int]] = []
        thread = threading.Thread(target=lambda: seen.append(backend.revision()))
        thread.start()
        thread.join()
        assert seen == [now]  # another thread's connection: the same revision

        backend.apply([ScopeWithin(tenant=tenant, child="case:c1", parent="team:t")])
        assert backend.changed_since(now, backend.revision()) is None

        before = backend.revision()

        class Abort(Exception):
            pass

        with pytest.raises(Abort), backend.write():  # noqa: PT012
            backend.apply([PutRecord(record=_episode(tenant, "c", "three"))])
            raise Abort
        assert backend.changed_since(before, backend.revision()) is None  # rolled back
        assert backend.get_many(tenant, ["c"]) == []

        if persisted:
            before = backend.revision()
            other = EmbeddedBackend(tmp_path / "s")
            try:
                other.apply([PutRecord(record=_episode(tenant, "d", "four"))])
            finally:
                other.close()
            after = backend.revision()
            assert after != before
            assert backend.changed_since(before, after) is None  # not this backend's write
    finally:
        backend.close()


def _in_another_process(db: Path, script: str) -> None:
    """Run SQL against the file from a process of its own (plain sqlite3, no graphmem)."""
    code = (
        "import sqlite3, sys\n"
        "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "conn.execute('PRAGMA busy_timeout = 5000')\n"
        "conn.executescript(sys.argv[2])\n"
        "conn.close()\n"
    )
    subprocess.run([sys.executable, "-c", code, str(db), script], check=True, timeout=60)


def test_the_write_generation_is_read_again_after_any_commit_by_any_process(
    tmp_path: Path, tenant: str
) -> None:
    """While nothing commits, the generation comes from the wal-index header without a
    statement (on Linux); a commit by another process, a checkpoint that truncates the WAL
    and the write that then restarts it are each seen at the next read, whoever wrote."""
    backend = EmbeddedBackend(tmp_path / "s")
    engine = backend.engine
    db = tmp_path / "s" / DB_NAME
    try:
        backend.apply([PutRecord(record=_episode(tenant, "a", "one"))])
        first = engine.generation()
        statements: list[str] = []
        engine._connect().set_trace_callback(statements.append)
        assert [engine.generation() for _ in range(3)] == [first] * 3
        assert (statements == []) is sys.platform.startswith("linux")

        bump = "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation';"
        _in_another_process(db, bump)
        assert engine.generation() == first + 1
        _in_another_process(db, "PRAGMA wal_checkpoint(TRUNCATE);")
        assert engine.generation() == first + 1
        _in_another_process(db, bump)  # the first write after the truncation resets the WAL
        assert engine.generation() == first + 2
        _in_another_process(db, bump + bump)
        assert engine.generation() == first + 4
        backend.apply([PutRecord(record=_episode(tenant, "b", "two"))])  # this process's own write
        assert engine.generation() == first + 5
        seen: list[int] = []
        thread = threading.Thread(target=lambda: seen.append(engine.generation()))
        thread.start()
        thread.join()
        assert seen == [first + 5]

        statements.clear()
        with engine.transaction(write=False):  # inside a transaction its snapshot answers
            assert engine.generation() == first + 5
        assert "SELECT value FROM meta WHERE key = 'generation'" in statements
    finally:
        backend.close()
    with pytest.raises(BackendUnavailable):
        engine.generation()


def test_every_connection_to_a_file_checkpoints_at_40_mib_of_wal_not_every_commit(
    tmp_path: Path, tenant: str
) -> None:
    """A bulk batch writes more than SQLite's default 1,000 pages; the store's connections,
    read and write, in every thread, let the WAL reach 40 MiB (5,120 of a new file's 8 KiB
    pages) before a checkpoint."""
    path = tmp_path / "memdir"
    with MemoryStore.embedded(path) as store:
        backend = store.backend
        assert isinstance(backend, EmbeddedBackend)
        seen: list[tuple[int, int, int]] = []

        def probe() -> None:
            with backend.engine.transaction(write=False) as conn:
                reading = conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
                page = conn.execute("PRAGMA page_size").fetchone()[0]
            with backend.engine.transaction(write=True) as conn:
                writing = conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
            seen.append((page, reading, writing))

        probe()
        worker = threading.Thread(target=probe)
        worker.start()
        worker.join()
        assert seen == [(8192, 5120, 5120)] * 2
        assert WAL_CHECKPOINT_BYTES == 5120 * 8192
        _filled(path, tenant, 3000)  # about 1,700 pages in one commit
        # The wal-index header (-shm): frames in the WAL (mxFrame, at byte 16) and frames copied
        # to the database (nBackfill, at byte 96). SQLite's default copies all at this commit.
        shm = (path / f"{DB_NAME}-shm").read_bytes()
        frames, backfilled = struct.unpack_from("=I", shm, 16)[0], struct.unpack_from("=I", shm, 96)[0]
        assert frames > 1000, frames
        assert backfilled == 0, f"{backfilled} of {frames} frames were checkpointed at commit"


def test_a_file_made_with_4_kib_pages_keeps_them_and_checkpoints_at_the_same_bytes(
    tmp_path: Path, tenant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store's page size is set when its file is made: a file written with SQLite's 4 KiB
    pages (as every store was before) opens, keeps them and reads and writes as before, with
    the WAL bound in bytes."""
    path = tmp_path / "memdir"
    earlier = tuple(p for p in sqlite_engine.CONNECTION_PRAGMAS if "page_size" not in p)
    with monkeypatch.context() as patch:
        patch.setattr(sqlite_engine, "CONNECTION_PRAGMAS", earlier)
        _filled(path, tenant, 40)
    with MemoryStore.embedded(path) as store:
        store.add_many([_episode(tenant, f"later{i}", f"payment {i}") for i in range(10)])
        backend = store.backend
        assert isinstance(backend, EmbeddedBackend)
        with backend.engine.transaction(write=False) as conn:
            page = conn.execute("PRAGMA page_size").fetchone()[0]
            threshold = conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        assert (page, threshold) == (4096, 10240)
        assert len(backend.all_records(tenant)) == 50
        assert backend.check() == []
