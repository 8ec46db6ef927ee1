"""Workloads of stores seen from other processes and of the embedded engine's files: open time and
memory, a reader beside a writing process, recall throughput from several processes (over one
file, or one Neo4j database), and the floor of a recall (a bare index seek returning the same
candidate rows).

Open and memory are measured in a fresh Python process, so nothing this process
loaded counts; the writer is another process writing batches to its own tenant.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from graphmem.backends.embedded import rows_in_scopes
from graphmem.backends.sql import sql
from graphmem.backends.sqlite_engine import configure
from graphmem.bench.core import Latency, measure, ratios_to_first
from graphmem.model import MemoryRecord
from graphmem.store import MemoryStore

__all__ = [
    "ingest_floor",
    "open_workload",
    "propose_processes",
    "reader_beside_writer",
    "recall_floor",
    "recall_processes",
    "sqlite_key_floors",
]

_OPEN_PROBE = r"""
import json, sys, time
spec = json.loads(sys.argv[1])
def rss_mb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0
from graphmem import MemoryStore, ReadContext
from graphmem.backends import embedded  # imported before the clock starts: open, not import, is timed
from graphmem.bench.core import KNOWN, NOW
before = rss_mb()
t0 = time.perf_counter()
store = MemoryStore.embedded(spec["path"], audit_recalls=False)
opened = time.perf_counter() - t0
after_open = rss_mb()
contexts = [ReadContext(tenant=spec["tenant"], scopes=(s,), now=NOW, as_of=KNOWN, environment=("cap-a",),
                        limit=10)
            for s in spec["scopes"]]
t1 = time.perf_counter()
for i in range(100):
    store.recall(contexts[i % len(contexts)], spec["queries"][i % len(spec["queries"])])
recalls = time.perf_counter() - t1
print(json.dumps({"open_s": opened, "rss_before_mb": before, "rss_open_mb": after_open,
                  "rss_100_recalls_mb": rss_mb(), "recalls_s": recalls}))
store.close()
"""

_WRITER = r"""
import sys
from graphmem import MemoryStore
from graphmem.bench.core import synthetic_records
path, tenant = sys.argv[1], sys.argv[2]
store = MemoryStore.embedded(path, audit_recalls=False)
print("ready", flush=True)
i = 0
while True:
    batch = synthetic_records(tenant, 100, 10, seed=i, prefix=f"case:w{i}-")
    store.add_many([r.model_copy(update={"id": f"w{i}-{r.id}"}) for r in batch])
    i += 1
"""


# One recalling process: its own store over the file (or the Neo4j database: credentials from
# NEO4J_USER / NEO4J_PASSWORD, as the command line takes them), each caller recalled once untimed, then
# "ready"; on a line "<start> <seconds>" (wall-clock times shared by every process) it recalls
# round-robin from its offset from start until start + seconds, and prints its latencies and
# how many selections differed from the oracle's.
# A benchmark process's start: its spec from stdin, its own store over the file or database.
_OPEN_FROM_SPEC = r"""
import json, os, sys, time
from graphmem import MemoryStore
spec = json.loads(sys.stdin.readline())
options = spec["options"]
if spec["uri"].startswith(("bolt", "neo4j")):
    password = os.environ.get("NEO4J_PASSWORD", "")
    options["auth"] = (os.environ.get("NEO4J_USER", "neo4j"), password) if password else None
store = MemoryStore.open(spec["uri"], **options)
"""
# Then, warmed up: "ready", and wait for the wall-clock start every process shares.
_WAIT_FOR_START = r"""
print("ready", flush=True)
start, seconds = map(float, sys.stdin.readline().split())
while time.time() < start:
    time.sleep(0.0005)
"""
_RECALLER = (
    _OPEN_FROM_SPEC
    + r"""
from graphmem import ReadContext
contexts = [ReadContext.model_validate_json(c) for c in spec["contexts"]]
queries, expected = spec["queries"], spec["expected"]
for ctx, query in zip(contexts, queries):
    store.recall(ctx, query)
"""
    + _WAIT_FOR_START
    + r"""
samples, wrong, k = [], 0, spec["offset"]
while time.time() < start + seconds:
    at = k % len(contexts)
    t0 = time.perf_counter()
    ids = store.recall(contexts[at], queries[at]).ids
    samples.append((time.perf_counter() - t0) * 1000.0)
    wrong += ids != expected[at]
    k += spec["step"]
store.close()
print(json.dumps({"samples": samples, "wrong": wrong}), flush=True)
"""
)


def recall_processes(
    store: MemoryStore,
    contexts: Sequence[Any],
    queries: Sequence[str],
    expected: Sequence[list[str]],
    counts: Sequence[int],
    seconds: float,
) -> list[dict[str, Any]]:
    """A ``recall_processes`` row per count in ``counts``: that many processes, each with its own
    store over ``store``'s file or Neo4j database, recalling the callers (``contexts[k]`` asking
    ``queries[k]``) round-robin for ``seconds`` at once; recalls per second in all,
    ``ratio_to_one`` against the first count's, and whether every selection equalled
    ``expected``. What threads of one process cannot overlap (the interpreter runs one at a
    time), processes can."""
    uri, options = _address(store)
    rows: list[dict[str, Any]] = []
    for n in counts:
        specs = [
            {
                "uri": uri,
                "options": options,
                "contexts": [c.model_dump_json() for c in contexts],
                "queries": list(queries),
                "expected": [list(e) for e in expected],
                "offset": i,
                "step": n,
            }
            for i in range(n)
        ]
        reports = _process_reports(_RECALLER, specs, seconds)
        samples = [ms for r in reports for ms in r["samples"]]
        rows.append(
            {
                "workload": "recall_processes",
                "clients": n,
                "recalls": len(samples),
                "seconds": seconds,
                "per_s": round(len(samples) / seconds, 1),
                "latency": Latency(samples).summary(),
                "recall_equals_oracle": sum(r["wrong"] for r in reports) == 0,
                "cpus": os.cpu_count(),
            }
        )
    return ratios_to_first(rows)


def _address(store: MemoryStore) -> tuple[str, dict[str, Any]]:
    """The URI (and options) another process opens ``store``'s file or Neo4j database with."""
    directory = getattr(store.backend, "directory", None)
    uri: str = getattr(store.backend, "uri", "")
    if directory is not None:
        return Path(directory).resolve().as_uri(), {}
    if uri:
        return uri, {"database": getattr(store.backend, "database", None)}
    raise ValueError("the processes workload needs a store on disk, or on Neo4j with its URI")


def _process_reports(script: str, specs: Sequence[dict[str, Any]], seconds: float) -> list[dict[str, Any]]:
    """Start one process running ``script`` per spec (a JSON line on its stdin), wait until each
    is ``ready``, let all of them work together for ``seconds`` from one wall-clock start, and
    return each one's JSON report."""
    procs = [
        subprocess.Popen(_python(script), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in specs
    ]
    try:
        for spec, proc in zip(specs, procs, strict=True):
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(spec) + "\n")
            proc.stdin.flush()
        for proc in procs:
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                raise RuntimeError("a benchmark process failed before it was ready")
        start = time.time() + 0.5
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write(f"{start!r} {seconds!r}\n")
            proc.stdin.flush()
        reports = []
        for proc in procs:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError("a benchmark process ended without its report")
            reports.append(json.loads(line))
        return reports
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    pipe.close()


# One proposing process: its own store over the file (or the Neo4j database), a few proposals
# untimed, then "ready"; from the shared start it proposes untrusted 2 KB texts of its own (the
# gate's latency texts, every layer on) to its tenant until start + seconds, and prints its
# latencies and how many proposals were not accepted or quarantined as the gate alone decides.
_PROPOSER = (
    _OPEN_FROM_SPEC
    + r"""
from graphmem import Trust
from graphmem.eval.gate import _latency_text, _proposal
from graphmem.model import WritePolicy
from graphmem.policy import decide
def proposal(k):
    return _proposal(_latency_text(k), Trust.UNTRUSTED).model_copy(update={"tenant": spec["tenant"]})
for k in range(5):
    store.propose(proposal(10**7 + 10 * spec["offset"] + k), source_trust=Trust.UNTRUSTED)
"""
    + _WAIT_FOR_START
    + r"""
samples, outcomes, k = [], [], spec["offset"]
while time.time() < start + seconds:
    p = proposal(k)
    t0 = time.perf_counter()
    outcomes.append((p, store.propose(p, source_trust=Trust.UNTRUSTED).outcome))
    samples.append((time.perf_counter() - t0) * 1000.0)
    k += spec["step"]
store.close()
wrong = sum(outcome is not decide(p, WritePolicy(), Trust.UNTRUSTED).outcome for p, outcome in outcomes)
print(json.dumps({"samples": samples, "wrong": wrong}), flush=True)
"""
)


def propose_processes(
    store: MemoryStore, tenant: str, counts: Sequence[int], seconds: float
) -> list[dict[str, Any]]:
    """A ``propose_processes`` row per count in ``counts``: that many processes, each with its own
    store over ``store``'s file or Neo4j database, proposing untrusted 2 KB texts (every layer of
    the gate on) to ``tenant`` for ``seconds`` at once; proposals per second in all,
    ``ratio_to_one`` against the first count's, whether each outcome was the pure gate's, and
    the floor: the pure gate (``decide``) alone on the same texts in this process, and the
    median proposal's ratio to it."""
    from graphmem.eval.gate import _latency_text, _proposal
    from graphmem.model import Trust, WritePolicy
    from graphmem.policy import decide

    uri, options = _address(store)
    # The floor times the gate alone: the proposals (texts never seen before) are made untimed.
    proposals = iter([_proposal(_latency_text(10**6 + k), Trust.UNTRUSTED) for k in range(210)])
    policy = WritePolicy()
    floor = measure(lambda: decide(next(proposals), policy, Trust.UNTRUSTED), 200, warmup=10)
    rows: list[dict[str, Any]] = []
    for n in counts:
        specs = [{"uri": uri, "options": options, "tenant": tenant, "offset": i, "step": n} for i in range(n)]
        reports = _process_reports(_PROPOSER, specs, seconds)
        samples = [ms for r in reports for ms in r["samples"]]
        latency = Latency(samples).summary()
        rows.append(
            {
                "workload": "propose_processes",
                "clients": n,
                "proposals": len(samples),
                "seconds": seconds,
                "per_s": round(len(samples) / seconds, 1),
                "latency": latency,
                "floor": {
                    "what": "decide alone, fresh texts of the same kind, this process",
                    **floor.summary(),
                },
                "ratio_p50_to_floor": round(latency["p50_ms"] / floor.summary()["p50_ms"], 2),
                "outcomes_equal_gate": sum(r["wrong"] for r in reports) == 0,
                "cpus": os.cpu_count(),
            }
        )
    return ratios_to_first(rows)


def _python(code: str, *args: str) -> list[str]:
    return [sys.executable, "-c", code, *args]


def open_workload(store: MemoryStore, tenant: str, scopes: list[str], queries: list[str]) -> dict[str, Any]:
    """Open the store's file in a fresh process (three times), then 100 recalls: seconds and RSS."""
    directory = getattr(store.backend, "directory", None)
    if directory is None:
        raise ValueError("the open workload needs a store on disk")
    spec = json.dumps({"path": str(directory), "tenant": tenant, "scopes": scopes, "queries": queries})
    probes = []
    for _ in range(3):
        done = subprocess.run(_python(_OPEN_PROBE, spec), capture_output=True, text=True, check=True)
        probes.append(json.loads(done.stdout))
    size = sum(p.stat().st_size for p in Path(directory).iterdir() if p.is_file())
    return {
        "workload": "open",
        "open_ms": Latency([p["open_s"] * 1000 for p in probes]).summary(),
        "latency": Latency([p["open_s"] * 1000 for p in probes]).summary(),
        "rss_open_mb": round(max(p["rss_open_mb"] for p in probes), 1),
        "rss_100_recalls_mb": round(max(p["rss_100_recalls_mb"] for p in probes), 1),
        "rss_interpreter_mb": round(max(p["rss_before_mb"] for p in probes), 1),
        "recall_ms_mean_first_100": round(min(p["recalls_s"] for p in probes) * 10, 3),
        "file_mb": round(size / 2**20, 1),
    }


def reader_beside_writer(
    store: MemoryStore, tenant: str, scopes: list[str], queries: list[str], repeats: int
) -> dict[str, Any]:
    """Recall latency in this process alone, then while another process writes continuously."""
    from graphmem import ReadContext
    from graphmem.bench.core import KNOWN, NOW

    directory = getattr(store.backend, "directory", None)
    if directory is None:
        raise ValueError("the two-process workload needs a store on disk")
    reader = MemoryStore.embedded(directory, audit_recalls=False)
    contexts = [
        ReadContext(tenant=tenant, scopes=(s,), now=NOW, as_of=KNOWN, environment=("cap-a",), limit=10)
        for s in scopes
    ]
    i = 0

    def one() -> None:
        nonlocal i
        reader.recall(contexts[i % len(contexts)], queries[i % len(queries)])
        i += 1

    try:
        alone = measure(one, repeats, warmup=len(contexts))
        writer_tenant = f"{tenant}-writer"
        with subprocess.Popen(
            _python(_WRITER, str(directory), writer_tenant), stdout=subprocess.PIPE, text=True
        ) as proc:
            try:
                assert proc.stdout is not None
                proc.stdout.readline()
                written_before = _count(reader, writer_tenant)
                samples: list[float] = []
                t0 = time.perf_counter()
                # At least `repeats` recalls and two seconds, so the writer's rate is measured too.
                while len(samples) < repeats or time.perf_counter() - t0 < 2.0:
                    start = time.perf_counter()
                    one()
                    samples.append((time.perf_counter() - start) * 1000.0)
                elapsed = time.perf_counter() - t0
                written = _count(reader, writer_tenant) - written_before
                beside = Latency(samples)
            finally:
                proc.kill()
    finally:
        reader.close()
    return {
        "workload": "recall_beside_writer",
        "latency": beside.summary(),
        "alone": alone.summary(),
        "ratio_p50": round(beside.summary()["p50_ms"] / max(alone.summary()["p50_ms"], 1e-9), 2),
        "writer_records_per_s": round(written / elapsed) if elapsed else 0,
        "cpus": os.cpu_count(),
    }


def _count(store: MemoryStore, tenant: str) -> int:
    with store.backend.reading() as conn:
        return int(conn.execute("SELECT count(*) FROM records WHERE tenant = ?", (tenant,)).fetchone()[0])  # type: ignore[attr-defined]


def recall_floor(store: MemoryStore, tenant: str, scopes: list[str], repeats: int) -> Latency:
    """The floor of a selective recall: the index seeks returning every candidate's id and
    fingerprint (what its receipt digests), one in each era of the scope index."""
    with store.backend.reading() as conn:
        i = 0

        def seek() -> None:
            nonlocal i
            conn.execute(  # type: ignore[attr-defined]
                rows_in_scopes("id, fingerprint", 1),
                (tenant, scopes[i % len(scopes)]),
            ).fetchall()
            i += 1

        return measure(seek, repeats, warmup=3)


@contextlib.contextmanager
def _scratch_db(store: MemoryStore) -> Iterator[sqlite3.Connection]:
    """A scratch database with the bench's bare tables, in the store's directory, with
    the store's connection settings (WAL, ``synchronous=FULL``, secure delete); removed after."""
    engine = getattr(store.backend, "engine", None)
    where = str(engine.path.parent) if engine is not None and engine.path is not None else None
    directory = tempfile.mkdtemp(prefix="graphmem-floor-", dir=where)
    conn = sqlite3.connect(os.path.join(directory, "floor.sqlite3"), isolation_level=None)
    try:
        # The store's own connection settings (its page size, secure_delete zeroing what a
        # replace frees, as the store's writes do).
        configure(conn)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.executescript(sql("bench_floor"))
        yield conn
    finally:
        conn.close()
        for name in os.listdir(directory):
            os.remove(os.path.join(directory, name))
        os.rmdir(directory)


def sqlite_key_floors(store: MemoryStore, size: int, repeats: int) -> tuple[list[float], list[float]]:
    """Milliseconds of a bare SQLite key seek and of one durable commit of one row (WAL,
    ``synchronous=FULL`` and the store's other pragmas) over ``size`` keys, in a scratch
    database in the store's directory."""
    with _scratch_db(store) as conn:
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO kv VALUES (?, ?)", [(f"k{i}", "x" * 200) for i in range(size)])
        conn.execute("COMMIT")
        rng = random.Random(1)
        keys = [f"k{rng.randrange(size)}" for _ in range(repeats)]
        get_ms, put_ms = [], []
        for key in keys:
            start = time.perf_counter()
            conn.execute("SELECT v FROM kv WHERE k = ?", (key,)).fetchone()
            get_ms.append((time.perf_counter() - start) * 1000.0)
        for key in keys:
            start = time.perf_counter()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT OR REPLACE INTO kv VALUES (?, ?)", (key, "y" * 200))
            conn.execute("COMMIT")
            put_ms.append((time.perf_counter() - start) * 1000.0)
        return get_ms, put_ms


def ingest_floor(store: MemoryStore, records: Sequence[MemoryRecord], batch: int) -> float:
    """Seconds to write ``records``' ids and JSON bodies alone, in batches of ``batch`` (a durable
    transaction each, the store's pragmas) appended to a table with no index: what any store
    of these records pays to get their bytes to disk. The bodies are made outside the clock."""
    spent = 0.0
    with _scratch_db(store) as conn:
        for i in range(0, len(records), batch):
            rows = [(r.id, r.model_dump_json()) for r in records[i : i + batch]]
            start = time.perf_counter()
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("INSERT INTO bodies VALUES (?, ?)", rows)
            conn.execute("COMMIT")
            spent += time.perf_counter() - start
    return spent
