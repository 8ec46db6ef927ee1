"""Crash-safe persistence for the embedded store: a snapshot plus a write-ahead journal.

Each committed batch is one framed journal entry (length, CRC32, sequence
number, JSON), fsynced before the call returns. On open, entries are replayed
in order; a torn or corrupt entry at the tail — a write cut short by a crash —
is discarded, so every batch is wholly present or wholly absent. ``compact()``
writes a fresh snapshot beside the old one, renames it into place and only
then empties the journal; entries the snapshot already holds are skipped on
replay, so a crash at any point of compaction loses nothing and doubles
nothing. Erasure compacts, so erased text leaves the files.
"""

from __future__ import annotations

import fcntl
import json
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from graphmem.errors import BackendUnavailable

__all__ = ["Journal"]

_SNAPSHOT = "snapshot.json"
_JOURNAL = "journal.log"
_LOCK = "lock"
_FORMAT = 1


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _frame(seq: int, payload: dict[str, Any]) -> bytes:
    body = json.dumps({"seq": seq, "batch": payload}, separators=(",", ":"), ensure_ascii=False).encode()
    return b"%08x %08x " % (len(body), zlib.crc32(body)) + body + b"\n"


def _read_frames(data: bytes) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """Yield (end offset, seq, batch) for each intact frame; stop at the first torn one."""
    pos = 0
    while pos < len(data):
        header = data[pos : pos + 18]
        if len(header) < 18 or header[8:9] != b" " or header[17:18] != b" ":
            return
        try:
            length, crc = int(header[:8], 16), int(header[9:17], 16)
        except ValueError:
            return
        body = data[pos + 18 : pos + 18 + length]
        end = pos + 18 + length + 1
        if len(body) != length or data[end - 1 : end] != b"\n" or zlib.crc32(body) != crc:
            return
        entry = json.loads(body)
        yield end, int(entry["seq"]), entry["batch"]
        pos = end


class Journal:
    """The files of one persisted embedded store, held under an exclusive lock."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._lock_file: IO[bytes] | None = None
        self._journal: IO[bytes] | None = None
        self.seq = 0
        self.journal_bytes = 0

    def open(self) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """Lock the directory and return (snapshot state, batches to replay after it)."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._lock_file = open(self.directory / _LOCK, "ab")  # noqa: SIM115 - held open
        except OSError as err:
            raise BackendUnavailable(
                f"cannot open the store directory {str(self.directory)!r}: {err.strerror}; "
                "check the path and its permissions"
            ) from err
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_file.close()
            self._lock_file = None
            raise BackendUnavailable(
                f"the store at {str(self.directory)!r} is open in another process; "
                "close it there first (one writer at a time)",
                code="store_locked",
            ) from None
        # A snapshot cut short by a crash was never renamed into place: drop it.
        (self.directory / (_SNAPSHOT + ".tmp")).unlink(missing_ok=True)
        snapshot: dict[str, Any] | None = None
        snapshot_seq = 0
        path = self.directory / _SNAPSHOT
        if path.exists():
            snapshot = json.loads(path.read_bytes())
            if snapshot.get("format") != _FORMAT:
                raise BackendUnavailable(
                    f"{str(path)!r} has format {snapshot.get('format')!r}; this graphmem reads {_FORMAT}",
                    code="unsupported_format",
                )
            snapshot_seq = int(snapshot["seq"])
        self.seq = snapshot_seq
        journal_path = self.directory / _JOURNAL
        data = journal_path.read_bytes() if journal_path.exists() else b""
        batches: list[dict[str, Any]] = []
        good = 0
        for end, seq, batch in _read_frames(data):
            good = end
            if seq > snapshot_seq:
                batches.append(batch)
                self.seq = seq
        self._journal = open(journal_path, "ab")  # noqa: SIM115 - held open
        if good < len(data):
            self._journal.truncate(good)
            os.fsync(self._journal.fileno())
        self.journal_bytes = good
        return snapshot, batches

    def append(self, batch: dict[str, Any]) -> None:
        """Durably append one batch; when this returns, the batch survives a crash."""
        assert self._journal is not None, "journal is not open"
        frame = _frame(self.seq + 1, batch)
        self._journal.write(frame)
        self._journal.flush()
        os.fsync(self._journal.fileno())
        self.seq += 1
        self.journal_bytes += len(frame)

    def compact(self, state: dict[str, Any]) -> None:
        """Replace snapshot and journal by one snapshot of ``state``."""
        assert self._journal is not None, "journal is not open"
        body = dict(state, format=_FORMAT, seq=self.seq)
        tmp = self.directory / (_SNAPSHOT + ".tmp")
        with open(tmp, "wb") as out:
            out.write(json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode())
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.directory / _SNAPSHOT)
        _fsync_dir(self.directory)
        self._journal.truncate(0)
        os.fsync(self._journal.fileno())
        self.journal_bytes = 0

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None
        if self._lock_file is not None:
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None
