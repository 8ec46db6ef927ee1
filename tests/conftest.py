"""Shared fixtures: one ``store`` fixture parametrised over every backend.

Each test gets a fresh tenant instead of a wiped database, so tests never
interfere and never need a global delete.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from graphmem import MemoryStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)

BACKENDS = ["embedded", "persisted"]


@pytest.fixture
def tenant() -> str:
    """A tenant no other test uses."""
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore]:
    """A ``MemoryStore`` on each backend; the shared behavioural suite runs on all of them."""
    if request.param == "embedded":
        opened = MemoryStore.embedded()
    else:
        opened = MemoryStore.embedded(tmp_path / "memdir")
    with opened:
        yield opened
