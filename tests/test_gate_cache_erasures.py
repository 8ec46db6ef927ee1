"""An erase through another backend object (another process, on a file or a server) purges
this one's caches: the backends count erasing writes per tenant in the erase's transaction,
the probe reports the count, and the store's gate cache (and the Neo4j document cache) drop
the tenant when it grows. Two stores over two backend objects stand for two processes; one
test runs a real second process on the store file."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import closing
from datetime import timedelta
from pathlib import Path

import neo4j
import pytest

from graphmem import (
    ForgetMode,
    ForgetRequest,
    Kind,
    MemoryRecord,
    MemoryStore,
    Outcome,
    ReadContext,
    Source,
)
from graphmem.backends.embedded import EmbeddedBackend
from graphmem.backends.neo4j import Neo4jBackend
from graphmem.backends.neo4j_cache import DocCache
from graphmem.backends.sqlite_engine import DB_NAME
from graphmem.gate_cache import GateCache
from graphmem.gated import Verdicts
from graphmem.model import GateProbe, GateRows
from graphmem.testing.neo4j_server import Neo4jTarget
from tests.conftest import KNOWN, T0

H = timedelta(hours=1)
SECRET = "the vault code is 4417 gateway"


def _episode(tenant: str, rid: str, content: str, scope: str = "case:a") -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        tenant=tenant,
        kind=Kind.EPISODIC,
        scope=scope,
        content=content,
        event_time=T0 - H,
        outcome=Outcome.UNKNOWN,
        sources=(Source(id="s"),),
    )


def _ctx(tenant: str, scope: str = "case:a") -> ReadContext:
    return ReadContext(as_of=KNOWN, tenant=tenant, scopes=(scope,), now=T0)


def _erase(tenant: str, rid: str) -> ForgetRequest:
    return ForgetRequest(tenant=tenant, target=rid, mode=ForgetMode.ERASE, reason="r", requested_by="u")


def _held(store: MemoryStore, tenant: str) -> list[str]:
    """Every text the store's caches hold of ``tenant``: its gate cache's, and on Neo4j the
    backend's document cache's."""
    texts = store._gate_cache.texts(tenant)
    docs = getattr(store.backend, "_docs", None)
    if isinstance(docs, DocCache):
        texts += docs.texts(tenant)
    return texts


@pytest.fixture(params=["persisted", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[MemoryStore, MemoryStore]]:
    """Two stores over one store file or one server, each on a backend object of its own
    (separate caches, as in two processes)."""
    if request.param == "persisted":
        stores = [MemoryStore.embedded(tmp_path / "memdir", audit_recalls=False) for _ in range(2)]
    else:
        driver: neo4j.Driver = request.getfixturevalue("neo4j_driver")
        target: Neo4jTarget = request.getfixturevalue("neo4j_target")
        stores = [
            MemoryStore(Neo4jBackend(driver, uri=target.uri or ""), audit_recalls=False) for _ in range(2)
        ]
    assert stores[0]._gate_cache is not stores[1]._gate_cache
    try:
        yield stores[0], stores[1]
    finally:
        for store in stores:
            store.close()


def test_the_probe_counts_committed_erasing_writes(
    pair: tuple[MemoryStore, MemoryStore], tenant: str
) -> None:
    """Each erasing write counts once for its tenant, whichever backend object wrote it; a
    revoke or an add does not count, nor does another tenant's erase."""
    a, b = pair
    b.add_many([_episode(tenant, f"r{i}", f"note {i}") for i in range(3)])
    b.add(_episode(tenant + "-x", "r0", "elsewhere"))
    assert a.backend.gate_probe(_ctx(tenant)).erasures == 0
    b.forget(_erase(tenant, "r0"))
    assert a.backend.gate_probe(_ctx(tenant)).erasures == 1
    b.forget(ForgetRequest(tenant=tenant, target="r1", mode=ForgetMode.REVOKE, reason="r", requested_by="u"))
    b.add(_episode(tenant, "r9", "later"))
    b.forget(_erase(tenant + "-x", "r0"))
    assert a.backend.gate_probe(_ctx(tenant)).erasures == 1
    a.forget(_erase(tenant, "r2"))
    assert b.backend.gate_probe(_ctx(tenant, "case:none")).erasures == 2  # no candidate: counted all the same
    assert a.backend.gate_probe(_ctx(tenant + "-x")).erasures == 1


def test_an_erase_elsewhere_leaves_its_text_in_no_cache_after_the_next_read(
    pair: tuple[MemoryStore, MemoryStore], tenant: str
) -> None:
    """A caches the text (gate cache; on Neo4j, the document cache too); B erases it. A's
    next recall of the tenant, in a context the erased record is no candidate of, leaves it
    in neither: the count grew, so the tenant was purged."""
    a, b = pair
    a.add_many(
        [
            _episode(tenant, "gone", SECRET),
            _episode(tenant, "keep", "gateway kept"),
            _episode(tenant, "other", "gateway elsewhere", scope="case:b"),
        ]
    )
    assert sorted(a.recall(_ctx(tenant), "gateway").ids) == ["gone", "keep"]
    assert SECRET in a._gate_cache.texts(tenant)
    if isinstance(a.backend, Neo4jBackend):
        assert SECRET in a.backend._docs.texts(tenant)
    b.forget(_erase(tenant, "gone"))
    assert SECRET in _held(a, tenant)  # nothing reached A yet: it has not read since
    assert a.recall(_ctx(tenant, "case:b"), "gateway").ids == ["other"]
    assert SECRET not in _held(a, tenant)
    assert a.recall(_ctx(tenant), "gateway").ids == ["keep"]
    assert SECRET not in _held(a, tenant)
    assert "gateway kept" in a._gate_cache.texts(tenant)  # the reads after the purge are kept


def test_the_same_context_read_after_an_erase_elsewhere_holds_no_erased_text(
    pair: tuple[MemoryStore, MemoryStore], tenant: str
) -> None:
    a, b = pair
    a.add_many([_episode(tenant, "gone", SECRET), _episode(tenant, "keep", "gateway kept")])
    a.recall(_ctx(tenant), "gateway")
    b.forget(_erase(tenant, "gone"))
    assert a.recall(_ctx(tenant), "gateway").ids == ["keep"]
    assert SECRET not in _held(a, tenant)
    assert a._gate_cache.held == 2  # the new entry only


def test_an_erase_in_another_process_purges_this_ones_gate_cache(tmp_path: Path) -> None:
    """A real second process erases from the store file: this process's next read of the
    tenant drops what it held, whatever context it reads."""
    a = MemoryStore.embedded(tmp_path, audit_recalls=False)
    a.add_many([_episode("t", "gone", SECRET), _episode("t", "other", "gateway b", scope="case:b")])
    a.add(_episode("u", "gone", SECRET))
    assert a.recall(_ctx("t"), "gateway").ids == ["gone"]
    a.recall(_ctx("u"), "gateway")
    assert a._gate_cache.texts("t") == [SECRET]
    code = (
        "import sys\n"
        "from graphmem import MemoryStore, ForgetRequest, ForgetMode\n"
        "store = MemoryStore.embedded(sys.argv[1], audit_recalls=False)\n"
        "store.forget(ForgetRequest(tenant='t', target='gone', mode=ForgetMode.ERASE, reason='r', "
        "requested_by='u'))\n"
        "store.close()\n"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True)
    assert a.recall(_ctx("t", "case:b"), "gateway").ids == ["other"]
    assert SECRET not in a._gate_cache.texts("t")
    assert a._gate_cache.texts("u") == [SECRET]  # another tenant's entry stays
    assert a.recall(_ctx("t"), "gateway").ids == []
    a.close()


def test_a_file_written_before_the_erasure_count_opens_and_gets_it(tmp_path: Path) -> None:
    with MemoryStore.embedded(tmp_path, audit_recalls=False) as store:
        store.add(_episode("t", "gone", SECRET))
    with closing(sqlite3.connect(tmp_path / DB_NAME)) as conn:  # the file as an earlier store left it
        conn.execute("DROP TABLE erasures")
        conn.commit()
        version = conn.execute("PRAGMA user_version").fetchone()[0]
    with MemoryStore.embedded(tmp_path, audit_recalls=False) as store:
        assert store.backend.gate_probe(_ctx("t")).erasures == 0
        store.forget(_erase("t", "gone"))
        assert store.backend.gate_probe(_ctx("t")).erasures == 1
        assert isinstance(store.backend, EmbeddedBackend)
        assert store.backend.check() == []
    with closing(sqlite3.connect(tmp_path / DB_NAME)) as conn:
        assert conn.execute("SELECT tenant, count FROM erasures").fetchall() == [("t", 1)]
        assert conn.execute("PRAGMA user_version").fetchone()[0] == version  # no format change


def test_the_write_ahead_log_is_emptied_after_exactly_the_erasing_writes(tmp_path: Path) -> None:
    """One definition of an erasing write (``erased_tenants``) decides both the count and the
    checkpoint that takes erased text out of the log: an erase of a source that a record still
    cites through another source empties the log and counts once; a later revoke of that
    record (its erased source still marked erased) is no erase: it counts nothing and leaves
    its frames in the log for the next ordinary checkpoint."""
    wal = tmp_path / f"{DB_NAME}-wal"
    with MemoryStore.embedded(tmp_path, audit_recalls=False) as store:
        kept = _episode("t", "kept", "the gateway note")
        store.add(kept.model_copy(update={"sources": (Source(id="s", quote=SECRET), Source(id="s2"))}))
        store.add(_episode("t", "other", "another note"))
        assert wal.stat().st_size > 0
        store.forget(
            ForgetRequest(
                tenant="t",
                target="s",
                target_type="source",
                mode=ForgetMode.ERASE,
                reason="r",
                requested_by="u",
            )
        )
        assert wal.stat().st_size == 0
        assert store.backend.gate_probe(_ctx("t")).erasures == 1
        assert [s.status for s in store.get("t", "kept").sources] == ["erased", "active"]
        store.forget(
            ForgetRequest(tenant="t", target="kept", mode=ForgetMode.REVOKE, reason="r", requested_by="u")
        )
        assert store.backend.gate_probe(_ctx("t")).erasures == 1
        assert wal.stat().st_size > 0
    assert SECRET.encode() not in (tmp_path / DB_NAME).read_bytes()


def test_readers_never_serve_and_do_not_keep_text_erased_elsewhere(
    pair: tuple[MemoryStore, MemoryStore], tenant: str
) -> None:
    """Readers in A while B erases one record after another: no recall returns a record
    erased before it began, and once B is done A's next read of each context holds none of
    the erased texts."""
    a, b = pair
    secrets = {f"s{i}": f"gateway secret {i} {tenant}" for i in range(8)}
    a.add_many(
        [_episode(tenant, rid, text) for rid, text in secrets.items()]
        + [_episode(tenant, "keep", "gateway kept"), _episode(tenant, "other", "gateway b", scope="case:b")]
    )
    erased: set[str] = set()  # the texts of erases that have committed
    lock = threading.Lock()
    done = threading.Event()
    failures: list[BaseException] = []

    def erase() -> None:
        try:
            for rid, text in secrets.items():
                b.forget(_erase(tenant, rid))
                with lock:
                    erased.add(text)
        except BaseException as err:  # collected and asserted below
            failures.append(err)
        finally:
            done.set()

    def read(scope: str) -> None:
        try:
            while not done.is_set():
                with lock:
                    before = set(erased)
                selection = a.recall(_ctx(tenant, scope), "gateway secret", explain=True)
                served = {r.content for r in selection.records}
                assert not served & before, served & before
        except BaseException as err:  # collected and asserted below
            failures.append(err)

    readers = [threading.Thread(target=read, args=(s,)) for s in ("case:a", "case:a", "case:b")]
    writer = threading.Thread(target=erase)
    for thread in [*readers, writer]:
        thread.start()
    for thread in [writer, *readers]:
        thread.join(timeout=120)
    assert not failures, failures
    assert erased == set(secrets.values())
    assert a.recall(_ctx(tenant, "case:b"), "gateway").ids == ["other"]
    assert not set(_held(a, tenant)) & erased
    assert a.recall(_ctx(tenant), "gateway").ids == ["keep"]
    assert not set(_held(a, tenant)) & erased


# -- the gate cache's rules, on its own --------------------------------------------------


def _rows(text: str) -> tuple[GateRows, Verdicts]:
    rows = GateRows(
        ids=["r"], fingerprints=["f"], reasons=[None], survivor_ids=["r"], texts=[text], recency=[0.0],
        embeddings=[None], models=[None], boundaries=([T0 + H], []),
    )  # fmt: skip
    return rows, Verdicts.of_columns(rows)


def test_a_greater_count_purges_the_tenant_and_a_smaller_one_is_never_kept() -> None:
    cache = GateCache()
    rows, verdicts = _rows(SECRET)
    first = GateProbe("k1", 1, erasures=3)
    cache.put("t", first, rows, T0, KNOWN, verdicts, cache.epoch("t"))
    cache.put("u", GateProbe("k1", 1, erasures=0), rows, T0, KNOWN, verdicts, cache.epoch("u"))
    assert cache.get("t", first, T0, KNOWN) is verdicts
    epoch = cache.epoch("t")
    # A read of the state after a fourth erase, through another key: the tenant is purged.
    assert cache.get("t", GateProbe("k2", 1, erasures=4), T0, KNOWN) is None
    assert cache.texts("t") == []
    assert cache.texts("u") == [SECRET]
    # One that began before that purge, of the state with three erasures: not kept.
    cache.put("t", first, rows, T0, KNOWN, verdicts, epoch)
    assert cache.texts("t") == []
    # One that began before the purge but read four: its state holds every erase counted.
    cache.put("t", GateProbe("k2", 1, erasures=4), rows, T0, KNOWN, verdicts, epoch)
    assert cache.texts("t") == [SECRET]
    # An older state begun after the purge (a stale snapshot) is not kept either.
    cache.put("t", GateProbe("k3", 1, erasures=3), rows, T0, KNOWN, verdicts, cache.epoch("t"))
    assert cache.get("t", GateProbe("k3", 1, erasures=3), T0, KNOWN) is None
    # A purge of this process's own (an erase here) in between: the read keeps nothing.
    epoch = cache.epoch("t")
    cache.get("t", GateProbe("k4", 1, erasures=5), T0, KNOWN)
    cache.purge({"t"})
    cache.put("t", GateProbe("k4", 1, erasures=5), rows, T0, KNOWN, verdicts, epoch)
    assert cache.get("t", GateProbe("k4", 1, erasures=5), T0, KNOWN) is None


def test_get_drops_an_entry_whose_token_changed() -> None:
    cache = GateCache()
    rows, verdicts = _rows(SECRET)
    cache.put("t", GateProbe("k", 1), rows, T0, KNOWN, verdicts, cache.epoch("t"))
    assert cache.held == 1
    assert cache.get("t", GateProbe("k", 1), T0 + 2 * H, KNOWN) is None  # another interval: kept
    assert cache.held == 1
    assert cache.get("t", GateProbe("k", 2), T0, KNOWN) is None
    assert cache.held == 0
    assert cache.texts() == []
    assert cache.get("t", GateProbe("k", 1), T0, KNOWN) is None


def test_the_document_cache_drops_a_tenant_whose_count_grew() -> None:
    docs = DocCache(100)
    epoch = docs.epoch("t")
    epoch = docs.erasures("t", 2, epoch)
    docs.put_many("t", [("r", "a" * 64, "f", SECRET, None, None)], epoch)
    docs.put_many("u", [("r", "a" * 64, "f", SECRET, None, None)], docs.epoch("u"))
    assert docs.texts("t") == [SECRET]
    assert docs.erasures("t", 2, docs.epoch("t")) == docs.epoch("t")  # the same count: nothing dropped
    assert docs.texts("t") == [SECRET]
    stale = docs.epoch("t")
    fresh = docs.erasures("t", 3, stale)
    assert docs.texts("t") == []
    assert docs.texts("u") == [SECRET]
    assert fresh == docs.epoch("t")  # the read that saw the count keeps what it fetches
    docs.put_many("t", [("r", "a" * 64, "f", SECRET, None, None)], stale)  # one begun before: not kept
    assert docs.texts("t") == []
    older = docs.erasures("t", 2, docs.epoch("t"))  # an older report: nothing it fetches is kept
    docs.put_many("t", [("r", "a" * 64, "f", SECRET, None, None)], older)
    assert docs.texts("t") == []
