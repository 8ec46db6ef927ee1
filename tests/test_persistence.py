"""The embedded store on disk: exact reopen, one writer, and crash safety under SIGKILL."""

from __future__ import annotations

import itertools
import os
import random
import select
import signal
import time
from pathlib import Path

import pytest

from graphmem import BackendUnavailable, Kind, MemoryRecord, MemoryStore, ReadContext, Source
from graphmem.backends.embedded import EmbeddedBackend
from tests.conftest import KNOWN, T0

BATCH = 5


def _batch(tenant: str, i: int) -> list[MemoryRecord]:
    return [
        MemoryRecord(
            id=f"w{i}-{j}",
            tenant=tenant,
            kind=Kind.EPISODIC,
            scope="case:c1",
            content=f"write {i} record {j} " + "x" * random.Random(i * 31 + j).randint(0, 400),
            event_time=T0,
            outcome="unknown",
            sources=(Source(id=f"s{i}-{j}", quote=f"quote {i}.{j}"),),
        )
        for j in range(BATCH)
    ]


def test_reopen_returns_exactly_what_was_written(tmp_path: Path, tenant: str) -> None:
    path = tmp_path / "memdir"
    with MemoryStore.embedded(path) as store:
        store.scope_within(tenant, "case:c1", "domain:payments")
        store.relate_scopes(tenant, "case:c1", "USES", "system:gw-2")
        written = store.add_many(_batch(tenant, 0))
        replacement = written[0].model_copy(update={"id": "w0-new", "event_time": T0.replace(day=2)})
        store.supersede(tenant, "w0-0", replacement, reason="corrected")
        ctx = ReadContext(as_of=KNOWN, tenant=tenant, scopes=["case:c1"], now=T0.replace(day=3))
        before = store.recall(ctx, "write record", explain=True)
        audit_before = store.audit(tenant)
    with MemoryStore.embedded(path) as store:
        assert {r.id: r for r in store.backend.all_records(tenant)} == {
            r.id: r for r in [*written, replacement]
        }
        assert store.audit(tenant) == audit_before
        assert store.recall(ctx, "write record", explain=True) == before
        assert store.backend.scope_parents(tenant, "case:c1") == {"domain:payments"}


def test_two_stores_on_one_directory_see_each_others_writes(tmp_path: Path, tenant: str) -> None:
    path = tmp_path / "memdir"
    with MemoryStore.embedded(path) as first, MemoryStore.embedded(path) as second:
        first.add_many(_batch(tenant, 0))
        assert {r.id for r in second.backend.all_records(tenant)} == {f"w0-{j}" for j in range(BATCH)}
        second.add_many(_batch(tenant, 1))
        ctx = ReadContext(as_of=KNOWN, tenant=tenant, scopes=["case:c1"], now=T0.replace(day=3), limit=50)
        assert len(first.recall(ctx, "write record").ids) == 2 * BATCH


def test_a_busy_writer_waits_then_gets_store_busy(tmp_path: Path, tenant: str) -> None:
    path = tmp_path / "memdir"
    holder = MemoryStore.embedded(path)
    waiter = MemoryStore(EmbeddedBackend(path, busy_timeout=0.2))
    try:
        with holder.backend.write():
            holder.backend.apply([])
            t0 = time.monotonic()
            with pytest.raises(BackendUnavailable) as err:
                waiter.add_many(_batch(tenant, 0))
            assert err.value.code == "store_busy"
            assert time.monotonic() - t0 >= 0.15
            # readers never wait for the writer
            assert waiter.backend.all_records(tenant) == []
        waiter.add_many(_batch(tenant, 0))
    finally:
        holder.close()
        waiter.close()


def _writer(path: Path, tenant: str, ready: int | None = None) -> None:
    store = MemoryStore(EmbeddedBackend(path))
    i = len(store.backend.all_records(tenant)) // BATCH
    if ready is not None:  # tell the parent that writing starts now
        os.write(ready, b"1")
    while True:
        store.add_many(_batch(tenant, i))
        i += 1


@pytest.mark.slow
def test_sigkill_at_random_points_never_leaves_a_partial_write(tmp_path: Path, tenant: str) -> None:
    """Kill the writing process hundreds of times; every batch is wholly present or wholly absent."""
    path = tmp_path / "memdir"
    rng = random.Random(20260101)
    kills = 0
    count = 0
    # 300 kills at least, and on until 30 batches were written: a loaded machine writes fewer
    # batches between a writer's start and its kill, so it takes more kills, never a weaker test.
    for attempt in itertools.count():
        if attempt >= 300 and count >= 30:
            break
        assert attempt < 3000, f"only {count} batches were written in {attempt} attempts"
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the writer: never returns, it is killed
            try:
                os.close(read_end)
                _writer(path, tenant, write_end)
            finally:
                os._exit(1)
        os.close(write_end)
        # Most kills fall at a random point of the writing, however long a loaded machine
        # takes to start the process and open the store; every tenth may fall in the opening.
        if attempt % 10:
            ready, _, _ = select.select([read_end], [], [], 30.0)
            assert ready, f"attempt {attempt}: the writer did not start within 30 s"
        os.close(read_end)
        time.sleep(rng.uniform(0.002, 0.06))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        kills += os.WIFSIGNALED(status)
        with MemoryStore.embedded(path) as store:
            records = {r.id: r for r in store.backend.all_records(tenant)}
        batches = {rid.split("-")[0] for rid in records}
        count = len(batches)
        assert batches == {f"w{i}" for i in range(count)}, f"attempt {attempt}: not a prefix"
        for i in range(count):
            expected = _batch(tenant, i)
            got = [records.get(r.id) for r in expected]
            assert all(g is not None for g in got), f"attempt {attempt}: batch {i} is partial"
            assert [g.content if g else None for g in got] == [r.content for r in expected]
    assert kills >= 250
