"""Receipts: canonical JSON and SHA-256 digests of a recall (SPEC §3). Pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from graphmem.model import DropReason, ReadContext, Receipt
from graphmem.model.canonical import canonical_json, sha256

__all__ = ["build_receipt", "receipt_is_consistent"]


def _context_digest(ctx: ReadContext, query: str, query_embedding: Sequence[float] | None) -> str:
    body = ctx.model_dump(mode="json")
    body["query"] = query
    body["query_embedding"] = None if query_embedding is None else list(query_embedding)
    return sha256(canonical_json(body))


def _top_digest(parts: dict[str, Any]) -> str:
    return sha256(canonical_json(parts))


def build_receipt(
    ctx: ReadContext,
    query: str,
    query_embedding: Sequence[float] | None,
    candidates: Iterable[tuple[str, str]],
    decisions: Iterable[tuple[str, bool, DropReason | None, float | None]],
    selected_ids: Sequence[str],
    selector_version: str,
) -> Receipt:
    """Digest a recall.

    ``candidates`` are (record id, fingerprint) pairs and ``decisions`` are
    (record id, selected, reason, score) tuples, each in any order.
    """
    parts: dict[str, Any] = {
        "selector_version": selector_version,
        "query": query,
        "query_embedding": None if query_embedding is None else list(query_embedding),
        "context_digest": _context_digest(ctx, query, query_embedding),
        "candidates_digest": sha256(canonical_json(sorted(candidates))),
        "selection_digest": sha256(canonical_json(list(selected_ids))),
        "decisions_digest": sha256(
            canonical_json(
                sorted(
                    [record_id, selected, reason, score]  # a DropReason is a str: JSON writes its value
                    for record_id, selected, reason, score in decisions
                )
            )
        ),
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
