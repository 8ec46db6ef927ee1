"""Receipts: canonical JSON and SHA-256 digests of a recall (SPEC §3). Pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from graphmem.model import DropReason, ReadContext, Receipt
from graphmem.model.canonical import canonical_json, sha256

__all__ = [
    "build_receipt",
    "candidates_digest",
    "decision_fragment",
    "decisions_digest",
    "digest_of_fragments",
    "json_string",
    "receipt_is_consistent",
]


def _context_digest(ctx: ReadContext, query: str, query_embedding: Sequence[float] | None) -> str:
    body = ctx.model_dump(mode="json")
    body["query"] = query
    body["query_embedding"] = None if query_embedding is None else list(query_embedding)
    return sha256(canonical_json(body))


def _top_digest(parts: dict[str, Any]) -> str:
    return sha256(canonical_json(parts))


def candidates_digest(candidates: Iterable[tuple[str, str]]) -> str:
    """Digest of the candidate set: (record id, fingerprint) pairs in any order."""
    return sha256(canonical_json(sorted(candidates)))


def decisions_digest(decisions: Iterable[tuple[str, bool, DropReason | None, float | None]]) -> str:
    """Digest of every decision: (record id, selected, reason, score) tuples in any order."""
    rows = sorted(
        [record_id, selected, reason, score]  # a DropReason is a str: JSON writes its value
        for record_id, selected, reason, score in decisions
    )
    return sha256(canonical_json(rows))


def json_string(text: str) -> str:
    """``text`` as canonical JSON writes it."""
    return canonical_json(text)


def decision_fragment(id_json: str, selected: bool, reason: DropReason | None, score: float | None) -> str:
    """One decision's canonical JSON, given its id already as JSON (``json_string``).

    Joining fragments in id order (``digest_of_fragments``) gives exactly
    ``decisions_digest``; JSON writes floats as ``repr`` does.
    """
    reason_json = "null" if reason is None else _REASON_JSON[reason]
    score_json = "null" if score is None else repr(float(score))
    return f"[{id_json},{'true' if selected else 'false'},{reason_json},{score_json}]"


_REASON_JSON = {reason: f'"{reason.value}"' for reason in DropReason}


def digest_of_fragments(fragments: Iterable[str]) -> str:
    """SHA-256 of a JSON array whose canonical elements are given in order."""
    return sha256("[" + ",".join(fragments) + "]")


def build_receipt(
    ctx: ReadContext,
    query: str,
    query_embedding: Sequence[float] | None,
    candidates: str,
    decisions: str,
    selected_ids: Sequence[str],
    selector_version: str,
) -> Receipt:
    """Assemble a recall's receipt from the digests of its candidates and decisions."""
    parts: dict[str, Any] = {
        "selector_version": selector_version,
        "query": query,
        "query_embedding": None if query_embedding is None else list(query_embedding),
        "context_digest": _context_digest(ctx, query, query_embedding),
        "candidates_digest": candidates,
        "selection_digest": sha256(canonical_json(list(selected_ids))),
        "decisions_digest": decisions,
        "selected_ids": list(selected_ids),
    }
    return Receipt(**parts, digest=_top_digest(parts))


def receipt_is_consistent(receipt: Receipt, ctx: ReadContext) -> bool:
    """Whether the receipt's parts match its digest, its selection and the given context."""
    parts = receipt.model_dump(mode="json")
    digest = parts.pop("digest")
    return (
        digest == _top_digest(parts)
        and receipt.selection_digest == sha256(canonical_json(list(receipt.selected_ids)))
        and receipt.context_digest == _context_digest(ctx, receipt.query, receipt.query_embedding)
    )
