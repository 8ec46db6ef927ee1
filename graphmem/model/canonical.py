"""Canonical JSON and SHA-256: the same value always gives the same digest."""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical_json", "sha256"]


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 as-is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
