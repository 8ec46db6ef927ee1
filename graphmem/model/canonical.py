"""Canonical JSON and SHA-256: the same value always gives the same digest."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["canonical_json", "canonical_json_with", "sha256"]


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
