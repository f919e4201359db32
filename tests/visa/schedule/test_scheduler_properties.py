"""Invariants of the list scheduler on random steps, against a brute-force oracle.

The oracle knows only the definitions: two steps conflict when they touch overlapping
ranges of one memory and one of them writes; a later conflicting step must start after
the earlier one ends (directly or through a chain of hazards). Steps sharing a claimed
resource never overlap, and every step starts at 0 or at the end of the step it waited for.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from visa.schedule.model import lower_bounds
from visa.schedule.scheduler import schedule_steps
from visa.schedule.steps import Access, Step
from tests.visa.schedule.handmade import RATES

access = st.builds(lambda space, lo, n, w: Access(space, lo, lo + n, w, "%x"),
                   st.sampled_from(["dm", "trf", "hbm:%1"]), st.integers(0, 12), st.integers(1, 6), st.booleans())
step_parts = st.tuples(st.sampled_from(["main", "sub", "tdma"]), st.integers(0, 40),
                       st.lists(access, max_size=3), st.sets(st.sampled_from(["vector", "bank0", "tdma"]), max_size=2))


def build(parts):
    return [Step(index=i, label=f"s{i}", context=c, duration=d, records=(), accesses=tuple(a),
                 claims=tuple(dict.fromkeys([c, *sorted(extra)])))
            for i, (c, d, a, extra) in enumerate(parts)]


def conflict(a: Step, b: Step) -> bool:
    return any(x.space == y.space and x.lo < y.hi and y.lo < x.hi and (x.write or y.write)
               for x in a.accesses for y in b.accesses)


@settings(max_examples=60, deadline=None)
@given(st.lists(step_parts, max_size=12))
def test_the_schedule_respects_every_conflict_and_resource(parts):
    steps = build(parts)
    slots, found = schedule_steps(steps)
    edges: dict[int, set[int]] = {}
    for h in found:
        assert h.before < h.after
        edges.setdefault(h.after, set()).add(h.before)
    for j, b in enumerate(steps):
        reach, todo = set(), list(edges.get(j, ()))
        while todo:
            i = todo.pop()
            if i not in reach:
                reach.add(i)
                todo += edges.get(i, ())
        for i in range(j):
            if conflict(steps[i], b):
                assert i in reach, (i, j)
                assert slots[j].start >= slots[i].end
            if set(steps[i].claims) & set(b.claims):
                assert slots[j].start >= slots[i].end or slots[i].start >= slots[j].end
        w = slots[j].wait
        assert slots[j].start == (0 if w.on is None else slots[w.on].end)
    span = max((s.end for s in slots), default=0)
    assert all(bound.cycles <= span for bound in lower_bounds(slots, found, RATES))
