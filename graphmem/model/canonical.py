"""Canonical JSON and SHA-256: the same value always gives the same digest."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import orjson

__all__ = ["canonical_json", "canonical_json_with", "float_list_json", "float_reprs", "sha256"]


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 as-is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json_with(value: Mapping[str, Any], written: Mapping[str, str]) -> str:
    """``canonical_json(value)`` of a mapping with string keys, where ``written`` holds the
    canonical JSON of some of its values already (by key): each is written once, not again
    (a query embedding's hundreds of floats, say, in two digests of one receipt)."""
    if not written:
        return canonical_json(value)
    return (
        "{"
        + ",".join(
            f"{canonical_json(key)}:{written[key] if key in written else canonical_json(value[key])}"
            for key in sorted(value)
        )
        + "}"
    )


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _orjson_floats(values: Sequence[float] | np.ndarray) -> tuple[np.ndarray, bytes, list[int]]:
    """(the floats, orjson's JSON array of them, the places of those ``repr`` writes with an
    exponent — below 10^-4 and from 10^16 on — where orjson writes them positionally).

    orjson writes each float as the shortest decimal that reads back as it, as ``repr`` does
    (the digits are unique); only the notation of those places differs."""
    floats = np.ascontiguousarray(values, dtype=np.float64)
    text = orjson.dumps(floats, option=orjson.OPT_SERIALIZE_NUMPY)
    size = np.abs(floats)
    return floats, text, np.flatnonzero(((size < 1e-4) & (size != 0.0)) | (size >= 1e16)).tolist()


def float_reprs(values: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``repr`` of each of ``values`` (finite floats) in ASCII, as JSON writes a float: (the
    bytes, where each one starts in them, its length); orjson's text, the few floats with an
    exponent (``_orjson_floats``) written by ``repr`` after it."""
    floats, json_text, odd = _orjson_floats(values)
    if not len(floats):
        return np.zeros(0, dtype=np.uint8), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    text = np.frombuffer(json_text, dtype=np.uint8)
    commas = np.flatnonzero(text == ord(","))
    starts = np.concatenate([[1], commas + 1])
    lengths = np.concatenate([commas, [len(text) - 1]]) - starts
    if not odd:
        return text, starts, lengths
    texts = [repr(v).encode("ascii") for v in floats[odd].tolist()]
    sizes = np.array([len(t) for t in texts], dtype=np.int64)
    starts[odd] = len(text) + np.cumsum(sizes) - sizes
    lengths[odd] = sizes
    return np.concatenate([text, np.frombuffer(b"".join(texts), dtype=np.uint8)]), starts, lengths


def float_list_json(values: Sequence[float]) -> str:
    """``canonical_json(list(values))`` of finite floats: orjson's text, the few floats with
    an exponent (``_orjson_floats``) spliced in as ``repr`` writes them."""
    floats, json_text, odd = _orjson_floats(values)
    text = json_text.decode("ascii")
    if not odd:
        return text
    commas = np.flatnonzero(np.frombuffer(json_text, dtype=np.uint8) == ord(",")).tolist()
    bounds = [0, *commas, len(text) - 1]
    pieces: list[str] = []
    done = 0
    for i in odd:
        pieces += (text[done : bounds[i] + 1], repr(float(floats[i])))
        done = bounds[i + 1]
    pieces.append(text[done:])
    return "".join(pieces)
