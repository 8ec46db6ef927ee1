"""What a backend's gate reports to the store: plain columns, no ranking and no digests.

A read asks the backend twice at most. ``gate_probe`` is cheap and answers
what the verdicts of a context depend on (``GateProbe``: a key and a validity
token); the store looks the key up in its cache of derived verdicts and uses
what it holds while the token is equal. Only on a miss does it ask
``gate_rows`` for the candidates' columns (``GateRows``), from which the pure
modules build the ranking inputs and the receipt digests, once.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from datetime import datetime

from graphmem.model.enums import DropReason

__all__ = ["GateProbe", "GateRows"]


@dataclass(slots=True)
class GateProbe:
    """What a context's verdicts depend on, as a backend reports it cheaply.

    ``key`` names everything the verdicts are a function of besides the stored state
    (the scopes reached, the context's terms); ``token`` is that state's validity, compared
    with ``==``: verdicts derived under one (key, token) hold for another read with the
    same key while its token is equal (and its times stay within the rows'
    ``boundaries``). ``state`` is the backend's own, handed back to ``gate_rows``.

    ``erasures``: how many erasing writes of the context's tenant had committed, by any
    process, in the state the probe read (counted durably in each erase's transaction;
    None: the backend does not count them). A cache that sees the count grow drops what
    it holds of the tenant, so text another process erased is not kept in this one's
    memory; a smaller count than one already seen is an older state, kept nowhere.
    """

    key: Hashable
    token: object
    state: object = None
    erasures: int | None = None


@dataclass(slots=True)
class GateRows:
    """The gate's verdicts on every candidate of one read, as columns.

    ``ids``, ``fingerprints`` (as of the read's knowledge time) and ``reasons`` (None:
    the candidate survives) have one entry per candidate, in any order; the survivor
    columns (``survivor_ids``, ``texts``, ``recency`` as timestamps, ``embeddings`` and
    the ``models`` that made them) one per survivor. ``states``, when given, is per
    survivor what the backend re-checks when a recall fetches it (``Backend.recalled``).
    ``boundaries``: the sorted valid times and knowledge times at which a verdict may
    change; a read whose ``now`` and knowledge time fall in the same intervals gets the
    same verdicts (None: the probe's key already pins the times). ``keep`` False: the
    rows were read again after the probe (a record changed in between), so they are not
    the probe's and must not be cached under its key.
    """

    ids: list[str] = field(default_factory=list)
    fingerprints: list[str] = field(default_factory=list)
    reasons: list[DropReason | None] = field(default_factory=list)
    survivor_ids: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    recency: list[float] = field(default_factory=list)
    embeddings: list[tuple[float, ...] | None] = field(default_factory=list)
    models: list[str | None] = field(default_factory=list)
    states: list[str] | None = None
    boundaries: tuple[list[datetime], list[datetime]] | None = None
    keep: bool = True

    def __len__(self) -> int:
        return len(self.ids)
