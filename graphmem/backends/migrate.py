"""``graphmem migrate``: a graphmem 0.1 store directory (snapshot + journal) into the SQLite engine.

The old files are only read. The new database is written beside them under a
temporary name, committed, then renamed into place; only then are the old
files removed. A crash at any point leaves either the old store (migrate again)
or the new one with the old files still there (migrate again finishes the job).
A damaged old store is refused, never half-converted.
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from graphmem.backends.base import Op
from graphmem.backends.sqlite_engine import DB_NAME
from graphmem.errors import BackendUnavailable, GraphmemError

__all__ = ["MigrationReport", "migrate_directory"]

_SNAPSHOT = "snapshot.json"
_JOURNAL = "journal.log"
_OLD_FILES = (_SNAPSHOT, _JOURNAL, "lock", _SNAPSHOT + ".tmp")
_OPS: TypeAdapter[list[Op]] = TypeAdapter(list[Op])


@dataclass(frozen=True)
class MigrationReport:
    directory: Path
    batches: int
    ops: int
    already_done: bool


def _damaged(path: Path, what: str) -> BackendUnavailable:
    return BackendUnavailable(
        f"the 0.1 store file {str(path)!r} is damaged ({what}); nothing was migrated and the old "
        "files are untouched — restore them from a backup",
        code="store_corrupt",
    )


def _journal_batches(path: Path, after_seq: int) -> list[dict[str, Any]]:
    """Intact frames past the snapshot; only a frame cut short at the very end is a torn write."""
    data = path.read_bytes() if path.exists() else b""
    batches: list[dict[str, Any]] = []
    pos = 0
    while pos < len(data):
        header = data[pos : pos + 18]
        try:
            length, crc = int(header[:8], 16), int(header[9:17], 16)
        except ValueError:
            raise _damaged(path, f"unreadable frame header at byte {pos}") from None
        end = pos + 18 + length + 1
        body = data[pos + 18 : end - 1]
        if end > len(data):
            break  # the tail of a write a crash cut short: it was never acknowledged
        if data[end - 1 : end] != b"\n" or zlib.crc32(body) != crc:
            raise _damaged(path, f"checksum mismatch in the frame at byte {pos}")
        entry = json.loads(body)
        if int(entry["seq"]) > after_seq:
            batches.append(entry["batch"])
        pos = end
    return batches


def _read_old(directory: Path) -> list[list[Op]]:
    snapshot_path = directory / _SNAPSHOT
    after_seq = 0
    batches: list[dict[str, Any]] = []
    if snapshot_path.exists():
        try:
            snapshot = json.loads(snapshot_path.read_bytes())
            after_seq = int(snapshot["seq"])
        except (ValueError, KeyError, TypeError) as err:
            raise _damaged(snapshot_path, str(err)) from None
        if snapshot.get("format") != 1:
            raise _damaged(snapshot_path, f"format {snapshot.get('format')!r}, expected 1")
        batches.append(snapshot)
    batches += _journal_batches(directory / _JOURNAL, after_seq)
    try:
        return [_OPS.validate_python(batch["ops"]) for batch in batches]
    except (GraphmemError, ValueError, KeyError, TypeError) as err:
        raise _damaged(directory, f"an operation does not validate: {str(err)[:200]}") from None


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def migrate_directory(directory: str | Path) -> MigrationReport:
    """Convert the 0.1 store in ``directory``; raises ``BackendUnavailable`` (``store_corrupt``,
    ``not_a_store``) and leaves the old files as they were on any failure."""
    from graphmem.backends.embedded import EmbeddedBackend

    directory = Path(directory)
    old = [directory / name for name in _OLD_FILES if (directory / name).exists()]
    final = directory / DB_NAME
    if final.exists():
        # A committed migration whose old files were not yet removed: finish it.
        for path in old:
            path.unlink()
        _fsync_dir(directory)
        return MigrationReport(directory, 0, 0, already_done=True)
    if not any(p.name in (_SNAPSHOT, _JOURNAL) for p in old):
        raise BackendUnavailable(
            f"{str(directory)!r} holds no graphmem 0.1 store (no {_SNAPSHOT} or {_JOURNAL})",
            code="not_a_store",
        )
    batches = _read_old(directory)
    staging = directory / "migrating"
    if staging.exists():
        for leftover in staging.iterdir():
            leftover.unlink()
    backend = EmbeddedBackend(staging)
    try:
        with backend.write():
            for ops in batches:
                backend.apply(ops)
    finally:
        backend.close()
    os.replace(staging / DB_NAME, final)
    for leftover in staging.iterdir():
        leftover.unlink()
    staging.rmdir()
    _fsync_dir(directory)
    for path in old:
        path.unlink()
    _fsync_dir(directory)
    return MigrationReport(directory, len(batches), sum(len(b) for b in batches), already_done=False)
