"""The benchmark as one PNG (matplotlib, imported only here: the core package does not need it)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["plot"]

_LATENCY_ORDER = ("recall_selective", "recall_broad", "explain_recall", "explain_one", "trace")
_TARGET_MS = {"trace": 20.0, "forget_cascade_10000": 2000.0, "forget_source_10000": 2000.0}
_BASELINES = (
    ("graphmem\n(cap-a)", "recall_selective", "latency"),
    ("naive top-k\nthen filter", "naive_topk_filter", "latency"),
    ("graphmem\n(cap-a, cap-b)", "langgraph_filter_bm25", "graphmem_latency"),
    ("InMemoryStore\nfilter", "langgraph_filter", "latency"),
    ("InMemoryStore\nfilter + BM25", "langgraph_filter_bm25", "latency"),
)


def _series(rows: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return sorted({(r["backend"], r["records"]) for r in rows})


def plot(rows: Iterable[dict[str, Any]], path: str | Path) -> Path:
    """Write p50/p95 latency per workload, graphmem against its baselines, and ingest rates.

    Bars are one per (backend, store size); whiskers reach from p50 to p95;
    red ticks are the issue's targets. Raises ``ImportError`` without matplotlib.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    plain = FuncFormatter(lambda value, _: f"{value:g}")

    rows = list(rows)
    series = _series(rows)
    fig, axes = plt.subplots(1, 3, figsize=(17, 5.5), gridspec_kw={"width_ratios": [3.2, 1.6, 1]})
    width = 0.8 / max(1, len(series))

    lat_ax = axes[0]
    forgets = sorted({r["dependents"] for r in rows if r["workload"].startswith("forget_")})
    order = [*_LATENCY_ORDER, *(f"forget_{what}_{n}" for what in ("cascade", "source") for n in forgets)]
    names = [w for w in order if any(r["workload"] == w for r in rows)]
    for s, (backend, size) in enumerate(series):
        p50, p95, xs = [], [], []
        for x, name in enumerate(names):
            row = next(
                (r for r in rows if (r["workload"], r["backend"], r["records"]) == (name, backend, size)),
                None,
            )
            if row is not None:
                xs.append(x + (s - (len(series) - 1) / 2) * width)
                p50.append(row["latency"]["p50_ms"])
                p95.append(row["latency"]["p95_ms"])
        lat_ax.bar(xs, p95, width, label=f"{backend} {size:,}", alpha=0.85)
        lat_ax.scatter(xs, p50, color="black", s=8, zorder=3)
    for x, name in enumerate(names):
        bounds = [_TARGET_MS[name]] if name in _TARGET_MS else []
        if name.startswith("recall_"):
            bounds = [{"embedded": 5.0, "neo4j": 15.0}[b] for b in sorted({b for b, _ in series})]
        for bound in bounds:
            lat_ax.hlines(bound, x - 0.45, x + 0.45, colors="red", linewidth=2, zorder=4)
    lat_ax.set_xticks(range(len(names)), [n.replace("_", "\n", 1) for n in names], fontsize=8)
    lat_ax.set_yscale("log")
    lat_ax.yaxis.set_major_formatter(plain)
    lat_ax.set_ylabel("latency, ms (bar p95, dot p50; log)")
    lat_ax.set_title("graphmem workloads (red: target)")
    lat_ax.legend(fontsize=8, loc="upper left")

    base_ax = axes[1]
    present = [b for b in _BASELINES if any(r["workload"] == b[1] for r in rows)]
    for s, (backend, size) in enumerate(series):
        xs, ys = [], []
        for x, (_, name, field) in enumerate(present):
            found = [r for r in rows if (r["workload"], r["backend"], r["records"]) == (name, backend, size)]
            if name == "naive_topk_filter":
                found = [r for r in found if r["compared"]]
            if found:
                xs.append(x + (s - (len(series) - 1) / 2) * width)
                ys.append(found[0][field]["p95_ms"])
        base_ax.bar(xs, ys, width, label=f"{backend} {size:,}", alpha=0.85)
    base_ax.set_xticks(range(len(present)), [label for label, _, _ in present], fontsize=7)
    base_ax.set_yscale("log")
    base_ax.yaxis.set_major_formatter(plain)
    base_ax.yaxis.set_minor_formatter(plain)
    base_ax.set_ylabel("selective recall p95, ms (log)")
    base_ax.set_title("against the baselines")

    ingest_ax = axes[2]
    labels, rates = [], []
    for backend, size in series:
        row = next(
            (r for r in rows if (r["workload"], r["backend"], r["records"]) == ("ingest", backend, size)),
            None,
        )
        if row is not None:
            labels.append(f"{backend}\n{size:,}")
            rates.append(row["records_per_s"])
    ingest_ax.bar(range(len(rates)), rates, color="tab:green", alpha=0.85)
    if any(b == "neo4j" for b, _ in series):
        ingest_ax.axhline(5000, color="red", linewidth=2)
    ingest_ax.set_xticks(range(len(labels)), labels, fontsize=8)
    ingest_ax.set_ylabel("records/s")
    ingest_ax.set_title("bulk ingest")

    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
