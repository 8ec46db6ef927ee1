"""What a read declares, and what it returns: decisions, receipts, selections."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator, model_validator

from graphmem.model.base import (
    AwareDatetime,
    EmbeddingModel,
    GraphmemModel,
    Identifier,
    ScopeKey,
    Tenant,
    utcnow,
)
from graphmem.model.enums import DropReason, Kind, Sensitivity
from graphmem.model.records import MemoryRecord

if TYPE_CHECKING:
    from graphmem.render import RenderedContext

__all__ = ["Decision", "ReadContext", "Receipt", "Selection", "VerifyResult"]


class ReadContext(GraphmemModel):
    """Who is asking, for what, as of when. Every recall is gated against it.

    ``now`` is valid time (what was true then); ``as_of`` is knowledge time (what the
    store had recorded by then) and defaults to ``now``: a context with only ``now`` set
    replays what could have been recalled at that time.
    """

    tenant: Tenant
    policy: str = Field(default="default", min_length=1, max_length=64)
    scopes: tuple[ScopeKey, ...] = ()
    now: AwareDatetime = Field(default_factory=utcnow)
    as_of: AwareDatetime | None = None
    run_id: Identifier | None = None
    kinds: tuple[Kind, ...] = tuple(Kind)
    environment: tuple[str, ...] = ()
    clearance: Sensitivity = Sensitivity.INTERNAL
    limit: int = Field(default=10, ge=1, le=10_000)
    min_score: float = Field(default=0.0, ge=0.0)

    @field_validator("kinds", mode="after")
    @classmethod
    def _kinds_canonical(cls, value: tuple[Kind, ...]) -> tuple[Kind, ...]:
        if not value:
            raise ValueError("ask for at least one kind")
        return tuple(sorted(set(value), key=list(Kind).index))

    @field_validator("environment", "scopes", mode="after")
    @classmethod
    def _set_canonical(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted(set(value)))

    @model_validator(mode="after")
    def _some_scope(self) -> ReadContext:
        if not self.scopes and self.run_id is None:
            raise ValueError("a read needs at least one scope or a run_id")
        return self

    @property
    def known_at(self) -> datetime:
        """The knowledge time: ``as_of`` (which defaults to ``now``)."""
        return self.now if self.as_of is None else self.as_of

    @property
    def run_scope(self) -> str | None:
        return None if self.run_id is None else f"run:{self.run_id}"

    @property
    def own_runs(self) -> tuple[str, ...]:
        """The run scopes whose records this context may see: its run, else the runs it names."""
        if self.run_id is not None:
            return (f"run:{self.run_id}",)
        return tuple(s for s in self.scopes if s.startswith("run:"))

    @property
    def entry_scopes(self) -> tuple[str, ...]:
        """The scopes a scope traversal starts from: the context's scopes plus its run."""
        run = self.run_scope
        return self.scopes if run is None or run in self.scopes else (*self.scopes, run)


class Decision(GraphmemModel):
    """The gate's verdict on one candidate."""

    record_id: str
    selected: bool
    reason: DropReason | None = None
    score: float | None = None


class Receipt(GraphmemModel):
    """SHA-256 digests that pin down exactly what a recall saw and chose, and the
    context's times: ``now`` (valid time) and ``as_of`` (knowledge time) it was replayed at.

    ``embedding_model`` is the model the query embedding was made by, when the recall named
    one; the digest covers it only then, so receipts from before the field verify unchanged."""

    selector_version: str
    now: AwareDatetime | None = None
    as_of: AwareDatetime | None = None
    query: str
    query_embedding: tuple[float, ...] | None = None
    embedding_model: EmbeddingModel | None = None
    context_digest: str
    candidates_digest: str
    selection_digest: str
    decisions_digest: str
    selected_ids: tuple[str, ...]
    digest: str


class VerifyResult(GraphmemModel):
    """What ``verify`` found when it replayed a receipt as of its knowledge time.

    ``verified``: the store still gives exactly this recall. ``changed_since``: records
    the recall saw were forgotten since (``forgotten``; a record a forget changed, e.g.
    by erasing a source it cites, counts too), which legitimately changes a replay —
    forgetting holds at every time — and nothing else differs that the replay could
    check; ``unchecked`` says what it could not (the order and the decisions, ranked
    again without the forgotten records; the candidates' fingerprints when an erase
    took a forgotten record's). ``mismatch``: something else differs (``differences``
    says what: the receipt's own digests, the context, a record's content or
    fingerprint, the order, a candidate gone without a forget). Only ``verified`` is
    true.
    """

    status: Literal["verified", "changed_since", "mismatch"]
    forgotten: tuple[str, ...] = ()
    differences: tuple[str, ...] = ()
    unchecked: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.status == "verified"


class Selection(GraphmemModel):
    """What a recall returns: the chosen records, decisions and the receipt."""

    records: tuple[MemoryRecord, ...]
    decisions: tuple[Decision, ...]
    receipt: Receipt

    @property
    def ids(self) -> list[str]:
        return [r.id for r in self.records]

    def render(self, budget_tokens: int, **options: Any) -> RenderedContext:
        """These records as delimited, untrusted LLM context within ``budget_tokens``, in
        selection order, reporting what was omitted (options: ``tokens=``, ``fill=``)."""
        from graphmem.render import render_selection

        return render_selection(self, budget_tokens, **options)

    def reason_for(self, record_id: str) -> DropReason | None:
        """The drop reason recorded for ``record_id`` (needs ``explain=True`` for dropped ones)."""
        for decision in self.decisions:
            if decision.record_id == record_id:
                return decision.reason
        raise KeyError(record_id)
