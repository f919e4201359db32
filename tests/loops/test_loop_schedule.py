"""The schedule model of a rolled loop (visa/schedule/loops.py): one body schedule repeated
once per iteration, with no overlap between iterations, so the makespan grows by the same
body span for every iteration; the unrolled kernel, which may overlap iterations, is never
slower."""

from __future__ import annotations

import npu_opt
from tests.loops import kernels as K
from visa import parse_visa
from visa.schedule import schedule_artifact


def makespan(kernel) -> int:
    return schedule_artifact(parse_visa(npu_opt.compile(kernel).text)).makespan


def test_the_makespan_is_linear_in_the_trip_count():
    one, two, eight = (makespan(K.copy_pages(n)) for n in (1, 2, 8))
    body = two - one
    assert body > 0
    assert eight == one + 7 * body


def test_a_loop_is_fenced_from_the_steps_around_it():
    s = schedule_artifact(parse_visa(npu_opt.compile(K.copy_pages(3)).text))
    begin = next(slot for slot in s.slots if slot.step.label.startswith("%") and "loop_begin" in
                 " ".join(r.mnemonic for r in slot.step.records))
    before = [slot for slot in s.slots if slot.step.index < begin.step.index]
    assert all(slot.end <= begin.start for slot in before)


def test_unrolling_is_never_slower_than_the_rolled_loop():
    assert makespan(K.gemm_i8_unrolled) <= makespan(K.gemm_i8_rolled)
    assert makespan(K.copy_unrolled) <= makespan(K.copy_rolled)


def _bounds(kernel) -> dict[str, int]:
    return {b.name: b.cycles for b in schedule_artifact(parse_visa(npu_opt.compile(kernel).text)).bounds}


def test_the_lower_bounds_count_every_iteration_of_a_rolled_loop():
    # the same work rolled and unrolled: the bytes, MACs and busiest-context bounds agree, so a
    # rolled kernel's bounds stay below its makespan by what the schedule loses, not by the trip count
    for rolled, unrolled in ((K.copy_rolled, K.copy_unrolled), (K.gemm_i8_rolled, K.gemm_i8_unrolled)):
        r, u = _bounds(rolled), _bounds(unrolled)
        for name in ("hbm", "dm", "dm_slice", "mac", "context"):
            assert r[name] == u[name], (rolled.name, name)
        assert r["chain"] <= makespan(rolled)


def test_the_binding_bound_of_a_rolled_kernel_is_close_to_its_makespan():
    from tests.visa.schedule import double_buffering as db

    s = schedule_artifact(parse_visa(npu_opt.compile(db.rolled).text))
    assert s.binding.cycles <= s.makespan
    assert s.binding.cycles >= 0.9 * s.makespan   # the rolled body runs serially: the chain is the makespan
