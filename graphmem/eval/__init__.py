"""``graphmem eval``: seeded synthetic workloads that score a store capability by capability.

Capabilities: working-memory interference, episodic fidelity, semantic
update, procedural transfer, cross-type contamination, and cascade /
absence / deletion. Systems: graphmem's gated recall, the same ranking with
the gate removed (and then restored), and an untyped similarity baseline.
Start with ``run_eval(MemoryStore.embedded, seed=7, sizes=(10,))``.
"""

from graphmem.eval.metrics import UNSAFE_CATEGORIES, CapabilityResult, reaches_source, unsafe_reason
from graphmem.eval.runner import (
    EVAL_VERSION,
    SYSTEMS,
    EvalReport,
    EvalRun,
    recall_without_gate,
    run_eval,
    strip_timing,
)
from graphmem.eval.workloads import CAPABILITIES, EvalQuery, Truth, Workload, build_workloads

__all__ = [
    "CAPABILITIES",
    "EVAL_VERSION",
    "SYSTEMS",
    "UNSAFE_CATEGORIES",
    "CapabilityResult",
    "EvalQuery",
    "EvalReport",
    "EvalRun",
    "Truth",
    "Workload",
    "build_workloads",
    "reaches_source",
    "recall_without_gate",
    "run_eval",
    "strip_timing",
    "unsafe_reason",
]
