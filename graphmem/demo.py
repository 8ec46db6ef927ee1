"""The payment-incident walk-through: typed, gated recall versus untyped similarity.

A merchant's payment captures time out on gateway-v2. The agent asks how to
retry them. Plain similarity search surfaces the episode where a blind retry
charged a customer twice; typed recall returns the verified procedure for the
caller's environment, abstains when the environment cannot run it, and still
recalls the failed episode when history is what is asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from graphmem.baselines import similarity_search
from graphmem.model import Kind, MemoryRecord, Outcome, ReadContext, Selection, Source, Trust
from graphmem.store import MemoryStore

__all__ = ["QUESTION", "TENANT", "DemoResult", "build_store", "run_demo"]

TENANT = "acme"
QUESTION = "how do we retry a failed payment capture on the gateway"
NOW = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
RUN = "incident-7"
SCOPE = "case:merchant-demo"
DOMAIN = "domain:payments"


def _records(tenant: str) -> list[MemoryRecord]:
    day = timedelta(days=1)
    ticket = Source(id="src-ticket-4411", type="message", trust=Trust.UNTRUSTED, locator="support://4411")
    postmortem = Source(id="src-postmortem-12", type="document", trust=Trust.TRUSTED, locator="wiki://pm-12")
    gateway_doc = Source(id="src-gateway-policy", type="document", trust=Trust.TRUSTED, locator="docs://gw")
    common: dict[str, Any] = {"tenant": tenant, "created_at": NOW - 30 * day}
    return [
        MemoryRecord(
            id="obs-current",
            kind=Kind.WORKING,
            scope=f"run:{RUN}",
            content="Merchant demo: payment capture requests time out on gateway-v2 since 09:40.",
            **{**common, "created_at": NOW - timedelta(minutes=15)},
        ),
        MemoryRecord(
            id="ep-retry-failed",
            kind=Kind.EPISODIC,
            scope=SCOPE,
            content=(
                "We retried the failed payment capture on the gateway right away, without an "
                "idempotency key; the retry of the capture charged the customer twice."
            ),
            event_time=NOW - 20 * day,
            outcome="duplicate-charge",
            sources=(ticket,),
            **common,
        ),
        MemoryRecord(
            id="ep-retry-ok",
            kind=Kind.EPISODIC,
            scope=SCOPE,
            content=(
                "Capture timed out; read the status back from gateway-v2 first, then re-sent it "
                "with the original idempotency key. Settled once."
            ),
            event_time=NOW - 10 * day,
            outcome=Outcome.VERIFIED_SUCCESS,
            sources=(postmortem,),
            **common,
        ),
        MemoryRecord(
            id="rule-gateway-2025",
            kind=Kind.SEMANTIC,
            scope=DOMAIN,
            content="Gateway rule: up to 5 capture retries within 10 minutes are allowed.",
            valid_from=NOW - 400 * day,
            valid_to=NOW - 60 * day,
            sources=(gateway_doc,),
            **common,
        ),
        MemoryRecord(
            id="rule-gateway-2026",
            kind=Kind.SEMANTIC,
            scope=DOMAIN,
            content="Gateway rule: at most 3 capture attempts per hour, all with the same idempotency key.",
            valid_from=NOW - 60 * day,
            sources=(gateway_doc,),
            **common,
        ),
        MemoryRecord(
            id="proc-capture-retry-v1",
            kind=Kind.PROCEDURAL,
            scope=DOMAIN,
            content="Resubmit the capture request to gateway-v1 until it succeeds.",
            procedure_name="capture-retry",
            procedure_version="1",
            preconditions=("gateway-v1",),
            outcome=Outcome.VERIFIED_SUCCESS,
            valid_from=NOW - 400 * day,
            sources=(gateway_doc,),
            **common,
        ),
    ]


def _procedure_v2(tenant: str) -> MemoryRecord:
    return MemoryRecord(
        id="proc-capture-retry-v2",
        tenant=tenant,
        kind=Kind.PROCEDURAL,
        scope=DOMAIN,
        content=(
            "Read the payment status back from the gateway; only if it is not captured, send "
            "the capture once more with the original idempotency key; read the status back again."
        ),
        procedure_name="capture-retry",
        procedure_version="2",
        preconditions=("gateway-v2", "status-readback"),
        outcome=Outcome.VERIFIED_SUCCESS,
        valid_from=NOW - 45 * timedelta(days=1),
        created_at=NOW - 45 * timedelta(days=1),
        sources=(Source(id="src-test-retry-v2", type="test", trust=Trust.TRUSTED, locator="ci://retry-v2"),),
    )


def build_store(store: MemoryStore, tenant: str = TENANT) -> MemoryStore:
    """Write the scenario into ``store`` under ``tenant``, as recorded by ``NOW``: a recall at
    ``NOW`` knows all of it, and the walk-through is the same on every run."""
    at_now = MemoryStore(store.backend, clock=lambda: NOW, min_support=store.min_support)
    at_now.scope_within(tenant, f"run:{RUN}", SCOPE)
    at_now.scope_within(tenant, SCOPE, DOMAIN)
    at_now.add_many(_records(tenant))
    v2 = _procedure_v2(tenant)
    at_now.supersede(tenant, "proc-capture-retry-v1", v2, reason="v2 reads status back first")
    return store


def context(tenant: str, kinds: tuple[Kind, ...], environment: tuple[str, ...] = ()) -> ReadContext:
    return ReadContext(
        tenant=tenant, scopes=(SCOPE,), run_id=RUN, now=NOW, kinds=kinds, environment=environment
    )


@dataclass(frozen=True)
class DemoResult:
    """Everything the walk-through shows, as data (tests assert on it)."""

    untyped: list[tuple[MemoryRecord, float]]
    procedure_v2_env: Selection
    procedure_v1_env: Selection
    history: Selection
    receipt_verified: bool

    def to_json(self) -> dict[str, Any]:
        def sel(s: Selection) -> dict[str, Any]:
            return {
                "selected": s.ids,
                "decisions": [d.model_dump(mode="json") for d in s.decisions],
                "receipt": s.receipt.model_dump(mode="json"),
            }

        return {
            "question": QUESTION,
            "untyped_similarity": [{"id": r.id, "kind": r.kind.value, "score": s} for r, s in self.untyped],
            "typed_procedure_gateway_v2": sel(self.procedure_v2_env),
            "typed_procedure_gateway_v1": sel(self.procedure_v1_env),
            "typed_history": sel(self.history),
            "receipt_verified": self.receipt_verified,
        }


def run_demo(store: MemoryStore | None = None, tenant: str = TENANT) -> DemoResult:
    """Run the walk-through on ``store`` (default: a fresh embedded store)."""
    store = build_store(store or MemoryStore.embedded(), tenant)
    v2 = context(tenant, (Kind.PROCEDURAL,), ("gateway-v2", "status-readback"))
    procedure_v2 = store.recall(v2, QUESTION, explain=True)
    v1 = context(tenant, (Kind.PROCEDURAL,), ("gateway-v1",))
    procedure_v1 = store.recall(v1, QUESTION, explain=True)
    history = store.recall(context(tenant, (Kind.EPISODIC,)), QUESTION, explain=True)
    return DemoResult(
        untyped=similarity_search(store, tenant, QUESTION, k=5),
        procedure_v2_env=procedure_v2,
        procedure_v1_env=procedure_v1,
        history=history,
        receipt_verified=bool(store.verify(procedure_v2.receipt, v2)),
    )
