"""Receipts: canonical JSON and SHA-256 digests of a recall (SPEC §3). Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from graphmem.model import DropReason, ReadContext, Receipt
from graphmem.model.canonical import canonical_json, canonical_json_with, float_list_json, sha256

__all__ = [
    "build_receipt",
    "candidates_digest",
    "decision_fragment",
    "decisions_digest",
    "digest_of_fragments",
    "json_string",
    "receipt_differences",
    "receipt_is_consistent",
    "receipt_problems",
]


def _context_digest(
    ctx: ReadContext,
    query: str,
    query_embedding: Sequence[float] | None,
    written: Mapping[str, str] | None = None,
) -> str:
    """The digest of the read's context, query and query embedding; ``written`` may hold the
    canonical JSON of the query embedding (``_embedding_json``)."""
    body = ctx.model_dump(mode="json")
    body["as_of"] = body["as_of"] or body["now"]  # a default as_of is now
    body["query"] = query
    body["query_embedding"] = None if query_embedding is None else list(query_embedding)
    return sha256(canonical_json_with(body, written or {}))


def _top_digest(parts: dict[str, Any], written: Mapping[str, str] | None = None) -> str:
    """The digest over a receipt's parts; an unnamed embedding model is left out, so the
    digests of receipts from before the field are unchanged."""
    if parts.get("embedding_model") is None:
        parts = {k: v for k, v in parts.items() if k != "embedding_model"}
    return sha256(canonical_json_with(parts, written or {}))


def _embedding_json(query_embedding: Sequence[float] | None) -> dict[str, str]:
    """The canonical JSON of a query embedding of plain floats, by its key in the digests'
    bodies, to write it once for both (a receipt keeps floats as they are); else nothing."""
    if query_embedding is None or set(map(type, query_embedding)) != {float}:
        return {}
    return {"query_embedding": float_list_json(query_embedding)}


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
    *,
    embedding_model: str | None = None,
) -> Receipt:
    """Assemble a recall's receipt from the digests of its candidates and decisions; the
    query's ``embedding_model`` is in its digest only when named."""
    written = _embedding_json(query_embedding)
    parts: dict[str, Any] = {
        "selector_version": selector_version,
        "now": ctx.now,
        "as_of": ctx.known_at,
        "query": query,
        "query_embedding": None if query_embedding is None else list(query_embedding),
        "embedding_model": embedding_model,
        "context_digest": _context_digest(ctx, query, query_embedding, written),
        "candidates_digest": candidates,
        "selection_digest": sha256(canonical_json(list(selected_ids))),
        "decisions_digest": decisions,
        "selected_ids": list(selected_ids),
    }
    draft = Receipt(**parts, digest="")
    body = draft.model_dump(mode="json")
    del body["digest"]
    return draft.model_copy(update={"digest": _top_digest(body, written)})


def receipt_problems(receipt: Receipt, ctx: ReadContext) -> list[str]:
    """What is wrong with the receipt before any replay: parts that do not match its digest
    or its selection, or a context other than the one it was made for."""
    parts = receipt.model_dump(mode="json")
    digest = parts.pop("digest")
    problems: list[str] = []
    if digest != _top_digest(parts):
        problems.append("receipt: its parts do not match its digest")
    if receipt.selection_digest != sha256(canonical_json(list(receipt.selected_ids))):
        problems.append("order: the selected ids do not match the selection digest")
    if receipt.context_digest != _context_digest(ctx, receipt.query, receipt.query_embedding) or (
        receipt.as_of is not None and (receipt.now, receipt.as_of) != (ctx.now, ctx.known_at)
    ):
        problems.append("context: the receipt was made for another read context (or its times differ)")
    return problems


def receipt_is_consistent(receipt: Receipt, ctx: ReadContext) -> bool:
    """Whether the receipt's parts match its digest, its selection and the given context."""
    return not receipt_problems(receipt, ctx)


def receipt_differences(receipt: Receipt, again: Receipt, gone: Sequence[str]) -> list[str]:
    """What differs between a receipt and its replay ``again``; ``gone`` are selected ids
    the store no longer holds as candidates."""
    differences = [f"candidate gone without a forget: {rid}" for rid in gone]
    if receipt.candidates_digest != again.candidates_digest:
        differences.append("candidates: a record's content or fingerprint, or the set of candidates, differs")
    if receipt.selected_ids != again.selected_ids:
        if sorted(receipt.selected_ids) == sorted(again.selected_ids):
            differences.append("order: the same records are selected in another order")
        else:
            differences.append(
                f"selection: {list(receipt.selected_ids)!r} then, {list(again.selected_ids)!r} now"
            )
    if receipt.decisions_digest != again.decisions_digest:
        differences.append("decisions: a candidate's drop reason or score differs")
    if receipt.selector_version != again.selector_version:
        differences.append(f"selector: version {receipt.selector_version} then, {again.selector_version} now")
    return differences or ["receipt: its digest differs from the replay's"]
