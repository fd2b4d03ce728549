"""The one root decision (analyzer.causes.link) on hand-made drafts, without a trace.

(a) a cited cause that was reported explains a finding; (b) a root whose stuck wait blocks every
place a finding says made no progress explains it; (c) a finding whose evidence may lie in a gap
is a partial-trace note, never an error or warning root, whatever its severity was.
"""

from __future__ import annotations

from _drafts import draft, findings

from analyzer.causes import link


def by_code(linked):
    return {f.code: f for f in findings(linked)}


def test_a_gap_makes_a_partial_trace_note_whatever_the_severity():
    out = by_code(link([draft("MT201", 0, 0, gap="rank 3 lost 39 events on core 0")]))
    f = out["MT201"]
    assert (f.severity, f.confidence) == ("note", "partial-trace")
    assert f.message.endswith("[partial trace: rank 3 lost 39 events on core 0; the missing event may be in the gap]")
    assert f.extra["partial_trace"] == "rank 3 lost 39 events on core 0"
    assert not any(k.startswith("_") for k in f.extra)


def test_the_waiter_of_a_root_is_its_symptom():
    root = draft("MT204", 0, 0, blocks=((0, 0),))
    stop = draft("MT103", 0, None, key=(0, 1, 9), stalls=((0, None),))
    out = by_code(link([stop, root]))
    assert out["MT204"].is_root and not out["MT103"].is_root
    assert out["MT103"].caused_by == (out["MT204"].id,)
    assert out["MT103"].id in out["MT204"].explains


def test_a_rank_blocked_elsewhere_stays_a_root():
    root = draft("MT204", 1, 0, blocks=((1, 0),))
    stop = draft("MT103", 0, None, key=(0, 1, 9), stalls=((0, None),))
    out = by_code(link([stop, root]))
    assert out["MT103"].is_root and out["MT204"].is_root


def test_a_core_level_stall_needs_that_core_blocked():
    root = draft("MT204", 0, 0, blocks=((0, 0),))
    stop = draft("MT103", 0, 1, key=(0, 1, 9), stalls=((0, 1),))
    assert by_code(link([stop, root]))["MT103"].is_root


def test_an_error_never_hides_under_a_note():
    weak = draft("MT101", 0, 0, blocks=((0, 0),), gap="rank 0 lost 4 events on core 0")
    stop = draft("MT103", 0, None, key=(0, 1, 9), stalls=((0, None),))
    out = by_code(link([stop, weak]))
    assert out["MT101"].severity == "note" and out["MT103"].is_root


def test_a_cited_cause_still_explains_first():
    cause = draft("MT501", 2, 0)
    wait = draft("MT101", 2, 1, causes=[("MT501", (2, 0, 0))], blocks=((2, 1),))
    stop = draft("MT103", 2, None, key=(2, 1, 5), stalls=((2, None),))
    out = by_code(link([wait, stop, cause]))
    assert out["MT101"].caused_by == (out["MT501"].id,)
    # rank 2 core 1 spins in a symptom's wait: the stop is that wait's symptom, so the route's too
    assert out["MT103"].caused_by == (out["MT101"].id,)
    assert out["MT103"].id in out["MT501"].explains


def test_a_stall_never_explains_its_own_cause():
    stop = draft("MT103", 0, None, key=(0, 1, 9), stalls=((0, None),))
    wait = draft("MT101", 0, 0, causes=[("MT103", (0, 1, 9))], blocks=((0, 0),))
    out = by_code(link([stop, wait]))
    assert out["MT103"].is_root and out["MT101"].caused_by == (out["MT103"].id,)


def test_key_text_is_the_json_of_the_key():
    """The report order's tie-break: the fast path for tuples of ints writes what json.dumps writes."""
    import json
    import random

    from analyzer._cause_order import key_text
    from analyzer.finding import jsonable

    rng = random.Random(5)
    keys = [(), (0,), (-3, 7), (True, 1), (1, (2, 3)), ("a", 1), 5, "x", (1.5, 2), (2**70, -1)]
    keys += [tuple(rng.randint(-10**9, 10**9) for _ in range(rng.randint(0, 6))) for _ in range(2000)]
    for key in keys:
        assert key_text(key) == json.dumps(jsonable(key)), key


def test_order_ranks_are_the_order_keys_ranks():
    """The report order compares ranks from one numpy sort of the integer fields and, only where
    those tie, the key's text and the message: the same order, and the same ties, as the whole keys."""
    import random

    import numpy as np

    from _drafts import level, order_key

    from analyzer._cause_order import order_ranks
    from analyzer.causes import message
    from analyzer.draft_table import Drafts
    from analyzer.finding import normalize_key, severity_rank

    rng = random.Random(11)
    drafts = [draft(rng.choice(("MT101", "MT202", "MT502")), rng.randint(0, 2), rng.choice((0, 1, None)),
                    severity=rng.choice(("error", "note")),
                    key=tuple(rng.randint(8, 11) for _ in range(rng.randint(1, 2))),
                    message=rng.choice(("a", "b", "b ")), launch=rng.choice((None, 0, 1)),
                    gap=rng.choice((None, None, "rank 1 lost 3 events")))
              for _ in range(3000)]
    levels = [level(d) for d in drafts]
    keys = [normalize_key(d.hit.key) for d in drafts]
    full = [order_key(d, lv, k, message(d)) for d, lv, k in zip(drafts, levels, keys)]
    severity = np.array([-severity_rank(lv) for lv in levels], np.int64)
    ranks = order_ranks(Drafts.of(drafts), severity, keys, lambda i: message(drafts[i]))
    pairs = [(rng.randrange(3000), rng.randrange(3000)) for _ in range(20000)]
    assert any(full[a] == full[b] and a != b for a, b in pairs)  # the sample has whole ties
    for a, b in pairs:
        assert (ranks[a] < ranks[b]) == (full[a] < full[b]) and (ranks[a] == ranks[b]) == (full[a] == full[b])
    assert sorted(range(3000), key=ranks.__getitem__) == sorted(range(3000), key=full.__getitem__)
