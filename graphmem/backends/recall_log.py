"""Recall audit events, appended in batches off the read path (both backends).

A recall is a read. Appending its audit event in the same transaction makes
every recall a write: on the embedded store it takes the writer lock and pays
a durable commit; on Neo4j it sends every recall to a cluster's leader. So the
event is queued and a background thread appends the queue within ``delay``
seconds, in one write; reading the audit log, exporting and closing append the
queue first. A crash loses at most the events of the last ``delay`` seconds; a
clean close loses none. Callers who need the event durable before recall
returns ask for it (``audit_recalls="sync"``) and the backend appends it itself.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext, suppress

from graphmem.model import AuditEvent

__all__ = ["RecallLog"]


class RecallLog:
    """Queued recall events and the thread that appends them with ``append``."""

    def __init__(
        self,
        append: Callable[[Sequence[AuditEvent]], None],
        delay: float,
        transaction: Callable[[], AbstractContextManager[object]] = nullcontext,
    ) -> None:
        """``transaction`` opens (or joins) the write ``append`` runs in. A flush enters it
        before taking the queue, so a flush called inside a transaction and one on another
        thread take their locks in one order (the store's first, then the queue's)."""
        self._append = append
        self._delay = delay
        self._transaction = transaction
        self._in_flight = False
        self._lock = threading.Lock()
        # One flush at a time: a flush that finds the queue empty because another one took
        # it must still wait for that one's append, or a reader could miss those events.
        self._flushing = threading.Lock()
        self._queue: list[AuditEvent] = []
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None

    def add(self, event: AuditEvent) -> None:
        with self._lock:
            self._queue.append(event)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="graphmem-recall-audit", daemon=True)
                self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait()
            self._wake.clear()
            time.sleep(self._delay)
            # Busy, unreachable or closed: the events stay queued, and the next flush (an
            # audit read, an export, close) takes them or raises to its caller.
            with suppress(Exception):
                self.flush()

    def flush(self) -> None:
        """Append every event queued so far, and return once they are written (also those
        another thread's flush had taken); on failure they stay queued, in order."""
        with self._lock:
            if not self._queue and not self._in_flight:
                return
        with self._transaction(), self._flushing:
            with self._lock:
                events, self._queue = self._queue, []
                self._in_flight = bool(events)
            try:
                if events:
                    self._append(events)
            except BaseException:
                with self._lock:
                    self._queue[:0] = events
                raise
            finally:
                with self._lock:
                    self._in_flight = False

    def close(self) -> None:
        self._closed = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.flush()
