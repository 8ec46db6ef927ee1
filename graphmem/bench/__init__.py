"""Benchmarks behind ``graphmem bench``: medians and tails, never asserted in unit tests.

``run_bench(MemoryStore.embedded, "embedded", [10_000], BenchConfig())`` runs
every workload (see ``docs/bench.md``) and returns the JSON document the CLI
writes; ``to_markdown`` and ``graphmem.bench.plot.plot`` render it.
"""

from graphmem.bench.core import NOW, Latency, load, measure, oracle, synthetic_records
from graphmem.bench.runner import WORKLOADS, attach_target, run_bench, run_size, tables, to_markdown
from graphmem.bench.workloads import BenchConfig, recall_workload

__all__ = [
    "NOW",
    "WORKLOADS",
    "BenchConfig",
    "Latency",
    "attach_target",
    "load",
    "measure",
    "oracle",
    "recall_workload",
    "run_bench",
    "run_size",
    "synthetic_records",
    "tables",
    "to_markdown",
]
