"""The recall audit queue (graphmem.backends.recall_log): a flush returns only once every
event queued before it is written, even those a concurrent flush had already taken."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest

from graphmem.backends.recall_log import RecallLog
from graphmem.model import AuditEvent


def _event(n: int) -> AuditEvent:
    return AuditEvent(tenant="t", action="recalled", record_ids=(f"r{n}",))


def test_a_flush_waits_for_the_append_another_flush_is_making() -> None:
    written: list[str] = []
    appending = threading.Event()

    def slow_append(events: Sequence[AuditEvent]) -> None:
        appending.set()
        time.sleep(0.3)
        written.extend(e.record_ids[0] for e in events)

    log = RecallLog(slow_append, delay=0.0)
    log.add(_event(1))  # the background thread takes it and starts appending
    assert appending.wait(5)
    log.flush()  # finds the queue empty, but must not return before that append ended
    assert written == ["r1"]
    log.close()


def test_events_stay_queued_in_order_when_an_append_fails() -> None:
    attempts: list[list[str]] = []

    def failing(events: Sequence[AuditEvent]) -> None:
        attempts.append([e.record_ids[0] for e in events])
        if len(attempts) == 1:
            raise OSError("disk full")

    log = RecallLog(failing, delay=3600.0)  # the background thread never gets to it
    log.add(_event(1))
    log.add(_event(2))
    with pytest.raises(OSError, match="disk full"):
        log.flush()
    log.add(_event(3))
    log.flush()
    assert attempts == [["r1", "r2"], ["r1", "r2", "r3"]]


def test_a_flush_inside_a_read_never_waits_for_one_that_waits_for_the_read() -> None:
    """The in-memory store has one connection, held by a read from its start to its end. A
    flush on another thread must wait for the store first and for the queue second: had it
    taken the queue's lock first, a flush inside the read (an export reads the audit log)
    would wait for it while it waits for the read — forever."""
    from graphmem import MemoryStore, ReadContext
    from tests.conftest import KNOWN, T0
    from tests.test_transactions import fact

    store = MemoryStore.embedded()
    store.add(fact("t1", "f1", "refund rule"))
    store.recall(ReadContext(tenant="t1", scopes=("case:c1",), now=T0, as_of=KNOWN), "refund")
    backend = store.backend
    seen: list[int] = []

    def read_then_audit() -> None:
        with backend.reading():
            other = threading.Thread(target=store.backend.flush_audit, daemon=True)
            other.start()
            time.sleep(0.2)  # the other flush now waits for this read
            seen.append(sum(e.action == "recalled" for e in store.audit("t1")))
        other.join(10)

    reader = threading.Thread(target=read_then_audit, daemon=True)
    reader.start()
    reader.join(20)
    assert not reader.is_alive(), "the two flushes waited for each other"
    assert seen == [1]
