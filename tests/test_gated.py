"""The embedded backend's cached gate views give exactly what the reference gate, ranking and digests give.

``RowGate`` is the general form (the gate's rows ranked and hashed from
scratch); ``ViewGate`` reuses each scope group's verdicts between writes and
validity boundaries. Any difference would change receipts between backends.
"""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
import threading
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem import (
    ForgetMode,
    ForgetRequest,
    Kind,
    MemoryRecord,
    MemoryStore,
    Outcome,
    ReadContext,
    Source,
    Status,
)
from graphmem.backends.embedded import EmbeddedBackend
from graphmem.errors import GraphmemError
from graphmem.gated import LIMITED, RankedOutcomes, RowGate, Verdicts, ViewGate
from graphmem.model import DropReason
from graphmem.model.canonical import canonical_json
from graphmem.model.gate import run_gate
from graphmem.ranking import Document, Prepared, Ranked, cosine, rank, rank_prepared, rounded_column
from graphmem.receipts import candidates_digest, decision_fragment, decisions_digest, json_string
from tests.conftest import KNOWN, T0, Clock

H = timedelta(hours=1)
WORDS = ["gateway", "retry", "timeout", "refund", "ledger", "queue", "ünïcode", 'quote"d', "back\\slash"]

texts = st.lists(st.sampled_from(WORDS), min_size=0, max_size=8).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(
    docs=st.lists(st.tuples(texts, st.integers(0, 5)), min_size=0, max_size=30),
    query=texts,
    cuts=st.lists(st.integers(0, 30), max_size=3),
)
def test_rank_prepared_equals_rank_for_any_split(
    docs: list[tuple[str, int]], query: str, cuts: list[int]
) -> None:
    documents = [(f"d{i:02d}", content, float(age), None) for i, (content, age) in enumerate(docs)]
    bounds = sorted({0, len(documents), *(min(c, len(documents)) for c in cuts)})
    parts = [Prepared(documents[a:b]) for a, b in itertools.pairwise(bounds)] or [Prepared([])]
    assert rank_prepared(parts, query) == rank(documents, query)


_halves = st.builds(
    lambda n, e, d: (n + 0.5) / 10**9 + d * 2.0**e,
    st.integers(-(10**9), 10**9),
    st.integers(-80, -30),
    st.sampled_from([-3, -2, -1, 0, 1, 2, 3]),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.floats(allow_nan=False, allow_infinity=False, min_value=-4.0, max_value=4.0),
            st.floats(allow_nan=False, allow_infinity=False),
            _halves,
        ),
        max_size=40,
    )
)
def test_rounded_column_rounds_as_python_does(values: list[float]) -> None:
    rounded = rounded_column(np.array(values, dtype=np.float64)).tolist()
    assert [repr(v) for v in rounded] == [repr(round(v, 9)) for v in values]


def _reference_hybrid(
    documents: list[tuple[str, str, float, tuple[float, ...] | None]], query: str, q: tuple[float, ...]
) -> list[tuple[str, float]]:
    """The blend as documented, one document at a time in plain Python (``cosine``)."""
    lexical = dict(rank([(rid, text, age, None) for rid, text, age, _ in documents], query))
    keyed = []
    for rid, _, age, emb in documents:
        score = lexical[rid]
        if emb is not None:
            score = 0.5 * score + 0.5 * max(0.0, cosine(q, emb))
        keyed.append((-round(score, 9), -age, rid))
    return [(rid, -s) for s, _, rid in sorted(keyed)]


vectors = st.one_of(
    st.none(),
    st.lists(st.floats(-1.0, 1.0, allow_nan=False, width=32), min_size=3, max_size=3).map(tuple),
    st.just((0.0, 0.0, 0.0)),
    st.just((1.0, 0.0)),  # another dimension than the query's: similarity 0
)


@settings(max_examples=300, deadline=None)
@given(
    docs=st.lists(st.tuples(texts, st.integers(0, 5), vectors), min_size=0, max_size=30),
    query=texts,
    q=st.lists(st.floats(-1.0, 1.0, allow_nan=False, width=32), min_size=3, max_size=3).map(tuple),
    cuts=st.lists(st.integers(0, 30), max_size=3),
)
def test_hybrid_ranking_is_one_matrix_pass_equal_to_the_plain_blend_for_any_split(
    docs: list[tuple[str, int, tuple[float, ...] | None]],
    query: str,
    q: tuple[float, ...],
    cuts: list[int],
) -> None:
    documents = [(f"d{i:02d}", content, float(age), emb) for i, (content, age, emb) in enumerate(docs)]
    bounds = sorted({0, len(documents), *(min(c, len(documents)) for c in cuts)})
    parts = [Prepared(documents[a:b]) for a, b in itertools.pairwise(bounds)] or [Prepared([])]
    ranked = rank(documents, query, q)
    assert rank_prepared(parts, query, q) == ranked
    # The reference blends the rounded BM25 score, so scores agree to rounding, not bits.
    reference = dict(_reference_hybrid(documents, query, q))
    assert sorted(reference) == sorted(rid for rid, _ in ranked)
    assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)
    assert [s for _, s in ranked] == pytest.approx([reference[rid] for rid, _ in ranked], abs=1e-8)


def test_rank_prepared_with_embeddings_blends_like_rank() -> None:
    documents = [("a", "gateway retry", 1.0, (1.0, 0.0)), ("b", "gateway retry", 1.0, (0.0, 1.0))]
    assert rank_prepared([Prepared(documents)], "gateway", (1.0, 0.0)) == rank(
        documents, "gateway", (1.0, 0.0)
    )


@settings(max_examples=200, deadline=None)
@given(
    record_id=st.text(min_size=1, max_size=12),
    selected=st.booleans(),
    reason=st.none() | st.sampled_from(list(DropReason)),
    score=st.none() | st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
)
def test_decision_fragment_is_canonical_json(
    record_id: str, selected: bool, reason: DropReason | None, score: float | None
) -> None:
    fragment = decision_fragment(json_string(record_id), selected, reason, score)
    assert fragment == canonical_json([record_id, selected, reason, score])


def _records(tenant: str, rng: random.Random, n: int) -> list[MemoryRecord]:
    out = []
    for i in range(n):
        kind = rng.choice([Kind.SEMANTIC, Kind.EPISODIC, Kind.PROCEDURAL])
        fields: dict[str, Any] = {
            "id": f"r{i:03d}",
            "tenant": tenant,
            "kind": kind,
            "scope": rng.choice(["case:a", "case:b", "workspace:w"]),
            "content": " ".join(rng.choices(WORDS, k=rng.randint(1, 6))),
            "created_at": T0 - 100 * H,
            "sources": (Source(id=f"s{i}"),),
            "status": rng.choice([Status.ACTIVE, Status.ACTIVE, Status.ACTIVE, Status.REVOKED]),
        }
        if kind is Kind.SEMANTIC:
            fields["valid_from"] = T0 - rng.randint(-5, 50) * H
            if rng.random() < 0.4:
                fields["valid_to"] = fields["valid_from"] + rng.randint(1, 30) * H
        elif kind is Kind.EPISODIC:
            fields |= {"event_time": T0 - rng.randint(-5, 50) * H, "outcome": Outcome.UNKNOWN}
        else:
            fields |= {
                "procedure_name": f"p{i}",
                "procedure_version": "1",
                "preconditions": tuple(rng.sample(["cap-a", "cap-b"], rng.randint(1, 2))),
                "outcome": rng.choice([Outcome.VERIFIED_SUCCESS, Outcome.UNKNOWN]),
            }
        out.append(MemoryRecord(**fields))
    return out


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_views_equal_the_reference_gate_at_every_now(seed: int) -> None:
    """Cached views across many ``now`` values (crossing boundaries and not) and across writes
    (new records, invalidations, revocations) match a fresh gate each time."""
    rng = random.Random(seed)
    store = MemoryStore.embedded(audit_recalls=False)
    store.scope_within("t", "case:a", "workspace:w")
    store.add_many(_records("t", rng, 40))
    for _ in range(30):
        ctx = ReadContext(
            as_of=KNOWN,
            tenant="t",
            scopes=(rng.choice(["case:a", "case:b", "workspace:w"]),),
            now=T0 + rng.randint(-60, 10) * H + rng.randint(0, 59) * timedelta(minutes=1),
            environment=tuple(rng.sample(["cap-a", "cap-b"], rng.randint(0, 2))),
            limit=rng.randint(1, 5),
        )
        query = " ".join(rng.choices(WORDS, k=2))
        view = store._gate_view(ctx)
        assert isinstance(view, ViewGate)
        reference = run_gate(store.backend.candidates(ctx), ctx)
        rows = RowGate(reference.verdicts, reference.survivors)
        ranked = rows.ranked(query, None)
        assert view.ranked(query, None) == ranked
        assert sorted(view.survivors) == sorted(rows.survivors)
        assert list(view.dropped()) == list(rows.dropped())
        assert view.candidates_digest() == rows.candidates_digest()
        outcomes = {
            rid: (i < ctx.limit, None if i < ctx.limit else DropReason.SELECTION_LIMIT, s)
            for i, (rid, s) in enumerate(ranked)
        }
        assert view.decisions_digest(outcomes) == rows.decisions_digest(outcomes)
        implicit = {rid: outcome for rid, outcome in outcomes.items() if outcome != LIMITED}
        assert view.decisions_digest(implicit) == rows.decisions_digest(implicit)
        assert rows.decisions_digest(implicit) == rows.decisions_digest(outcomes)
        # the Neo4j backend's form: verdicts made once from the server's rows
        reported = ViewGate(Verdicts.of_rows(reversed(reference.verdicts), reference.survivors))
        assert reported.ranked(query, None) == ranked
        assert list(reported.dropped()) == list(rows.dropped())
        assert reported.candidates_digest() == rows.candidates_digest()
        assert reported.decisions_digest(implicit) == rows.decisions_digest(outcomes)
        if rng.random() < 0.4:  # writes between reads: the touched groups' views must follow them
            target = f"r{rng.randrange(40):03d}"
            if rng.random() < 0.3:
                (fresh,) = _records("t", rng, 1)
                store.add(fresh.model_copy(update={"id": f"new{rng.randrange(10**9)}"}))
            elif rng.random() < 0.5:
                store.invalidate("t", target, by="s0", reason="disproved", at=ctx.now - rng.randint(0, 3) * H)
            else:
                store.forget(
                    ForgetRequest(
                        tenant="t", target=target, mode=ForgetMode.REVOKE, reason="r", requested_by="u"
                    )
                )


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_survivors_equal_the_gate_survivors_at_every_time(seed: int) -> None:
    """``MemoryStore._survivors`` (the embedded backend's ``survivor_rows``: what passes,
    without reading rows out of use, held in the store's gate cache) gives the
    reference gate's survivors across writes (supersessions, invalidations, revocations, new
    records) and across valid and knowledge times moving either way, before and after the
    writes' own times — also when its held result is asked again."""
    rng = random.Random(seed)
    clock = Clock(T0 - 100 * H)  # the records' creation: known from then
    store = MemoryStore.embedded(audit_recalls=False, clock=clock)
    store.scope_within("t", "case:a", "workspace:w")
    store.add_many(_records("t", rng, 40))
    backend = store.backend
    assert isinstance(backend, EmbeddedBackend)
    writes: list[datetime] = [clock.at]
    for step in range(40):
        clock.at += rng.randint(1, 4) * H
        at = rng.choice([*writes, KNOWN]) + rng.choice([-H, timedelta(0), H])  # around a write
        ctx = ReadContext(
            as_of=at,
            tenant="t",
            scopes=(rng.choice(["case:a", "case:b", "workspace:w"]),),
            now=T0 + rng.randint(-60, 60) * H,
            environment=tuple(rng.sample(["cap-a", "cap-b"], rng.randint(0, 2))),
        )
        reference = sorted(run_gate(backend.candidates(ctx), ctx).survivors)
        assert sorted(store._survivors(ctx)) == reference
        assert sorted(store._survivors(ctx)) == reference  # held
        if rng.random() < 0.3:
            assert sorted(store._gate_view(ctx).survivors) == reference
        if rng.random() < 0.5:
            target = f"r{rng.randrange(40):03d}"
            roll = rng.random()
            try:
                if roll < 0.2:
                    (fresh,) = _records("t", rng, 1)
                    store.add(fresh.model_copy(update={"id": f"new{step}"}))
                elif roll < 0.55:
                    old = backend.get("t", target)
                    assert old is not None
                    successor = old.model_copy(
                        update={"id": f"{target}-v{step}", "content": old.content + " again"}
                    )
                    store.supersede("t", target, successor, reason="newer")
                elif roll < 0.8:
                    store.invalidate("t", target, by="s0", reason="disproved", at=ctx.now - H)
                else:
                    store.forget(
                        ForgetRequest(
                            tenant="t", target=target, mode=ForgetMode.REVOKE, reason="r", requested_by="u"
                        )
                    )
            except GraphmemError:
                pass  # e.g. a second supersession of one record, or of a revoked one
            writes.append(clock.at)


_ID_CHARS = "abcXYZ019._:@+-"


@settings(max_examples=60, deadline=None)
@given(
    rows=st.dictionaries(
        st.text(_ID_CHARS, min_size=1, max_size=8).map(lambda s: "r" + s),
        st.tuples(
            st.text("0123456789abcdef", min_size=64, max_size=64),
            st.one_of(st.none(), st.sampled_from(list(DropReason))),
            st.floats(0.0, 1.0),
        ),
        max_size=30,
    ),
    limit=st.integers(1, 5),
)
def test_row_digests_equal_the_canonical_json_digests(
    rows: dict[str, tuple[str, DropReason | None, float]], limit: int
) -> None:
    """Fragments written by hand hash exactly as canonical JSON of the same rows, for any id."""
    verdicts = [(rid, fp, reason) for rid, (fp, reason, _) in reversed(rows.items())]
    survivors = [rid for rid, (_, reason, _) in rows.items() if reason is None]
    gate = RowGate(list(verdicts), [(rid, "", 0.0, None) for rid in survivors])
    assert gate.candidates_digest() == candidates_digest((rid, fp) for rid, fp, _ in verdicts)
    outcomes = {rid: (True, None, rows[rid][2]) for rid in survivors[:limit]}
    outcomes.update({rid: (False, DropReason.BELOW_MIN_SCORE, 0.0) for rid in survivors[limit : limit + 1]})
    every = [
        (rid, False, reason, None) if reason is not None else (rid, *outcomes.get(rid, LIMITED))
        for rid, _, reason in verdicts
    ]
    assert gate.decisions_digest(outcomes) == decisions_digest(every)
    view = ViewGate(Verdicts.of_rows(verdicts, [(rid, "", 0.0, None) for rid in survivors]))
    assert view.decisions_digest(outcomes) == decisions_digest(every)
    # Every survivor scored (the view writes each one's fragment over the usual ones).
    scored = {rid: (False, DropReason.SELECTION_LIMIT, rows[rid][2]) for rid in survivors} | outcomes
    every = [
        (rid, False, reason, None) if reason is not None else (rid, *scored[rid])
        for rid, _, reason in verdicts
    ]
    assert view.decisions_digest(scored) == gate.decisions_digest(scored) == decisions_digest(every)


def _episode(record_id: str, content: str, event_time: datetime) -> MemoryRecord:
    return MemoryRecord(
        id=record_id,
        tenant="t",
        kind=Kind.EPISODIC,
        scope="case:a",
        content=content,
        event_time=event_time,
        outcome=Outcome.UNKNOWN,
        sources=(Source(id="s"),),
    )


def _erase(record_id: str) -> ForgetRequest:
    return ForgetRequest(tenant="t", target=record_id, mode=ForgetMode.ERASE, reason="r", requested_by="u")


def test_writes_to_a_group_reach_its_cached_views() -> None:
    store = MemoryStore.embedded(audit_recalls=False)
    ctx = ReadContext(as_of=KNOWN, tenant="t", scopes=("case:a",), now=T0)
    first = _episode("one", "gateway", T0 - H)
    store.add(first)
    assert store.recall(ctx, "gateway").ids == ["one"]
    store.add(first.model_copy(update={"id": "two", "event_time": T0 - 2 * H}))
    assert store.recall(ctx, "gateway").ids == ["one", "two"]
    store.invalidate("t", "one", by="s", reason="wrong", at=T0 - H / 2)
    assert store.recall(ctx, "gateway").ids == ["two"]
    store.forget(ForgetRequest(tenant="t", target="two", mode=ForgetMode.ERASE, reason="r", requested_by="u"))
    assert store.recall(ctx, "gateway").ids == []


def test_gate_cache_is_bounded_and_follows_writes() -> None:
    """Verdicts kept between recalls never exceed the bound and are never served after a write."""
    store = MemoryStore(EmbeddedBackend(), audit_recalls=False, gate_cache=12)
    store.add_many([_episode(f"e{i}", "gateway", T0 - H) for i in range(2)])
    ctx = ReadContext(as_of=KNOWN, tenant="t", scopes=("case:a",), now=T0)
    first = store._gate_view(ctx)
    assert store._gate_view(ctx).verdicts is first.verdicts  # a hit: nothing changed
    store.add(_episode("e9", "gateway", T0 - H))
    assert store._gate_view(ctx).verdicts is not first.verdicts
    for i in range(10):
        store._gate_view(
            ReadContext(as_of=KNOWN, tenant="t", scopes=("case:a",), now=T0, environment=(f"e{i}",))
        )
    assert 0 < store._gate_cache.held <= 12


def test_stores_over_one_backend_share_its_gate_cache() -> None:
    backend = EmbeddedBackend()
    one, two = MemoryStore(backend), MemoryStore(backend, gate_cache=8)
    assert one._gate_cache is two._gate_cache
    assert MemoryStore(EmbeddedBackend())._gate_cache is not one._gate_cache


def test_an_erase_leaves_no_erased_text_in_the_gate_cache() -> None:
    """The erasing op purges the tenant's cached verdicts: the text is not reachable from the
    cache object, and a recall after it neither serves nor caches it again."""
    store = MemoryStore.embedded(audit_recalls=False)
    secret = "the vault code is 4417 gateway"
    store.add_many([_episode("keep", "gateway kept", T0 - H), _episode("gone", secret, T0 - H)])
    store.add(_episode("other", secret, T0 - H).model_copy(update={"tenant": "u"}))
    ctx = ReadContext(as_of=KNOWN, tenant="t", scopes=("case:a",), now=T0)
    elsewhere = ctx.model_copy(update={"tenant": "u"})
    assert "gone" in store.recall(ctx, "gateway").ids
    store.recall(elsewhere, "gateway")
    assert secret in store._gate_cache.texts()
    purged: list[bool] = []
    purge = store._gate_cache.purge

    def watch(tenants: set[str]) -> None:
        purge(tenants)
        purged.append(bool(store.backend.engine._local.depth))  # type: ignore[attr-defined]

    store._gate_cache.purge = watch  # type: ignore[method-assign]
    store.forget(
        ForgetRequest(tenant="t", target="gone", mode=ForgetMode.ERASE, reason="r", requested_by="u")
    )
    assert purged == [True, False]  # inside the write, and again once it committed
    assert [doc for doc in store._gate_cache.texts() if doc == secret] == [secret]  # tenant u's own
    assert all(key[0] != "t" for key in store._gate_cache._entries)
    assert store.recall(ctx, "gateway").ids == ["keep"]
    assert store._gate_cache.texts().count(secret) == 1


def test_a_read_overlapping_an_erase_keeps_nothing_in_the_gate_cache() -> None:
    """Verdicts derived by a read that began before an erase's purge are not kept."""
    store = MemoryStore.embedded(audit_recalls=False)
    store.add(_episode("gone", "the vault code is 4417", T0 - H))
    ctx = ReadContext(as_of=KNOWN, tenant="t", scopes=("case:a",), now=T0)
    cache = store._gate_cache
    epoch = cache.epoch("t")
    probe = store.backend.gate_probe(ctx)
    rows = store.backend.gate_rows(ctx, probe)
    store.forget(
        ForgetRequest(tenant="t", target="gone", mode=ForgetMode.ERASE, reason="r", requested_by="u")
    )
    cache.put("t", probe, rows, ctx.now, ctx.known_at, Verdicts.of_columns(rows), epoch)
    assert cache.held == 0
    assert cache.texts() == []


def test_another_process_write_invalidates_the_gate_cache(tmp_path: Path) -> None:
    """A write by another process (another backend on the same file) changes the probe's
    token: the verdicts cached before it are not served."""
    store = MemoryStore.embedded(tmp_path, audit_recalls=False)
    store.add(_episode("one", "gateway", T0 - H))
    ctx = ReadContext(as_of=KNOWN, tenant="t", scopes=("case:a",), now=T0)
    assert store.recall(ctx, "gateway").ids == ["one"]
    held = store._gate_view(ctx).verdicts
    assert store._gate_view(ctx).verdicts is held
    code = (
        "import sys; from datetime import datetime, timezone, timedelta\n"
        "from graphmem import MemoryStore\n"
        "from graphmem.model import MemoryRecord, Kind, Outcome, Source\n"
        "store = MemoryStore.embedded(sys.argv[1])\n"
        "store.add(MemoryRecord(id='two', tenant='t', kind=Kind.EPISODIC, content='gateway too', "
        "scope='case:a', outcome=Outcome.UNKNOWN, sources=(Source(id='s'),), "
        "event_time=datetime.fromisoformat(sys.argv[2])))\n"
        "store.close()\n"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path), (T0 - H).isoformat()], check=True)
    assert store._gate_view(ctx).verdicts is not held
    assert sorted(store.recall(ctx, "gateway").ids) == ["one", "two"]
    store.close()


def test_reads_and_writes_from_many_threads_stay_consistent() -> None:
    """Views are kept in step with writes in place: a read never sees a half-applied write."""
    store = MemoryStore.embedded(audit_recalls=False)
    store.scope_within("t", "case:a", "workspace:w")
    store.add_many(_records("t", random.Random(1), 60))
    ctx = ReadContext(as_of=KNOWN, tenant="t", scopes=("case:a",), now=T0, environment=("cap-a", "cap-b"))
    failures: list[BaseException] = []

    def write(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for i in range(40):
                (fresh,) = _records("t", rng, 1)
                store.add(fresh.model_copy(update={"id": f"w{seed}-{i}", "scope": "case:a"}))
        except BaseException as err:  # collected and asserted below
            failures.append(err)

    def read() -> None:
        try:
            for _ in range(60):
                selection = store.recall(ctx, "gateway retry", explain=True)
                assert selection.receipt.selected_ids == tuple(selection.ids)
                ids = [d.record_id for d in selection.decisions]
                assert len(set(ids)) == len(ids)
                # Writes only add records, so the decisions' records pin down the candidate
                # set the receipt must have seen: ranking and digests saw one state.
                records = [store.get("t", i) for i in ids]
                pairs = [(r.id, r.fingerprint()) for r in records if r is not None]
                assert candidates_digest(pairs) == selection.receipt.candidates_digest
        except BaseException as err:  # collected and asserted below
            failures.append(err)

    threads = [threading.Thread(target=write, args=(s,)) for s in range(3)]
    threads += [threading.Thread(target=read) for _ in range(3)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, so unguarded reads would collide with writes
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert failures == []
    # after the dust settles, the cached views equal a fresh gate
    view = store._gate_view(ctx)
    reference = run_gate(store.backend.candidates(ctx), ctx)
    assert view.candidates_digest() == RowGate(reference.verdicts, reference.survivors).candidates_digest()


@settings(max_examples=80, deadline=None)
@given(
    scores=st.lists(
        st.one_of(
            st.just(0.0), st.sampled_from([1e-05, 3e-09, 1.0]), st.floats(0.0, 1.0).map(lambda s: round(s, 9))
        ),
        min_size=0,
        max_size=60,
    ),
    dropped=st.integers(0, 10),
    limit=st.integers(1, 12),
    min_score=st.one_of(st.just(0.0), st.floats(0.0, 1.0)),
    every=st.booleans(),
)
def test_ranked_outcomes_equal_the_decisions_they_stand_for(
    scores: list[float], dropped: int, limit: int, min_score: float, every: bool
) -> None:
    """The ranking's parts give each survivor the decision SPEC §3 gives it, and the view's
    digest straight from them is the canonical JSON digest of every decision."""
    ranked = sorted(((f"r{i:03d}", s) for i, s in enumerate(scores)), key=lambda x: (-x[1], x[0]))
    eligible = sum(1 for _, s in ranked if s >= min_score)
    chosen = min(limit, eligible)
    expected: dict[str, tuple[bool, DropReason | None, float]] = {}
    for i, (rid, s) in enumerate(ranked):
        if s < min_score:
            expected[rid] = (False, DropReason.BELOW_MIN_SCORE, s)
        elif i < chosen:
            expected[rid] = (True, None, s)
        elif s != 0.0:
            expected[rid] = (False, DropReason.SELECTION_LIMIT, s)
        elif every:
            expected[rid] = LIMITED
    outcomes = RankedOutcomes(ranked, limit, min_score, every)
    assert dict(outcomes) == expected
    assert len(outcomes) == len(expected)
    assert outcomes.selected() == [(rid, s) for rid, s in ranked if expected.get(rid, LIMITED)[0]]
    verdicts = [(rid, "ab" * 32, None) for rid, _ in ranked]
    verdicts += [(f"d{i}", "cd" * 32, DropReason.EXPIRED) for i in range(dropped)]
    survivors: list[Document] = [(rid, "", 0.0, None) for rid, _ in ranked]
    view = ViewGate(Verdicts.of_rows(verdicts, survivors))
    every_decision = [
        (rid, False, reason, None) if reason is not None else (rid, *expected.get(rid, LIMITED))
        for rid, _, reason in verdicts
    ]
    digest = decisions_digest(every_decision)
    assert view.decisions_digest(outcomes) == digest
    assert view.decisions_digest(expected) == digest
    assert RowGate(list(verdicts), survivors).decisions_digest(outcomes) == digest
    # The same ranking as the columns ``rank_prepared`` keeps (positions of the positive
    # scores in the view's corpus): the digest written column by column is the same.
    ids, position, _ = view.verdicts.corpus.index()
    positive = [(rid, s) for rid, s in ranked if s > 0.0]
    columns = Ranked(
        ids,
        np.array([position[rid] for rid, _ in positive], dtype=np.intp),
        np.array([s for _, s in positive], dtype=np.float64),
    )
    columns += ranked[len(positive) :]
    assert list(columns) == ranked
    assert view.decisions_digest(RankedOutcomes(columns, limit, min_score, every)) == digest
