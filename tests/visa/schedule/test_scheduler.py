"""The list scheduler on hand-written artifacts whose schedules are computed by hand.

Cycle counts with `handmade.RATES` (see that module): dma_in 356, dma_out 104, a program 16.
"""

from __future__ import annotations

import pytest

from tests.visa.schedule.handmade import RATES, artifact, dma_in, dma_out, program
from visa.schedule import schedule_artifact
from visa.schedule.scheduler import hazards, schedule_steps
from visa.schedule.steps import Access, Step


def spans(schedule):
    return [(s.step.label, s.start, s.end) for s in schedule.slots]


def test_a_dependency_chain_runs_back_to_back():
    # load [0, 356) -> program reads it (RAW) [356, 372) -> store reads the commit (RAW) [372, 476)
    s = schedule_artifact(artifact(dma_in(1), program(0, 2, 1), dma_out(4, 3), result=4), rates=RATES)
    assert spans(s) == [("%1", 0, 356), ("program 0", 356, 372), ("%4", 372, 476)]
    assert s.makespan == 476
    assert [(s.wait.kind, s.wait.on) for s in s.slots] == [("none", None), ("dependency", 0), ("dependency", 1)]
    assert s.slots[1].wait.what == "RAW on dm[0, 128) (%1)"
    assert [c.step.label for c in s.critical_path()] == ["%1", "program 0", "%4"]


def test_two_dmas_share_one_context_while_main_overlaps():
    # %1 [0, 356); %2 waits for the DMA context [356, 712); the program needs only %1 and
    # overlaps %2 at [356, 372); the store is ready at 372 but the DMA context is busy to 712.
    s = schedule_artifact(artifact(dma_in(1), dma_in(2, 1024), program(0, 3, 1), dma_out(5, 4), result=5),
                          rates=RATES)
    assert spans(s) == [("%1", 0, 356), ("%2", 356, 712), ("program 0", 356, 372), ("%5", 712, 816)]
    assert s.makespan == 816
    assert s.slots[3].wait.kind == "resource" and s.slots[3].wait.what == "context tdma"
    assert [c.step.label for c in s.critical_path()] == ["%1", "%2", "%5"]
    assert s.utilisation()["tdma"] == pytest.approx((356 * 2 + 104) / 816)
    assert s.utilisation()["main"] == pytest.approx(16 / 816)


def test_write_after_read_waits_for_the_reader():
    # %4 overwrites DM [0, 128), which the program reads: it may start only at 372, not 356;
    # the store then waits for the DMA context
    s = schedule_artifact(artifact(dma_in(1), program(0, 2, 1), dma_in(4, 0), dma_out(5, 3), result=5),
                          rates=RATES)
    assert spans(s) == [("%1", 0, 356), ("program 0", 356, 372), ("%4", 372, 728), ("%5", 728, 832)]
    assert s.slots[2].wait.kind == "dependency"
    assert s.slots[2].wait.what.startswith("WAR on dm[0, 128)")
    kinds = {(h.before, h.after, h.kind) for h in s.hazards}
    assert (1, 2, "WAR") in kinds and (0, 2, "WAW") in kinds


def test_the_64_same_bank_rule_makes_a_program_occupy_dma():
    # packet 64:128 with 1-byte reads: 64 accesses 128 bytes apart, all in bank 0 -> the program
    # is scheduled as if it occupied DMA: it waits for %2 (tdma to 712), and the store for it.
    steps = (dma_in(1), dma_in(2, 1024), program(0, 3, 1, packet="64:128", read_elems=1), dma_out(5, 4))
    s = schedule_artifact(artifact(*steps, result=5), rates=RATES)
    assert s.slots[2].step.bank_run.length == 64 and "tdma" in s.slots[2].step.claims
    assert spans(s) == [("%1", 0, 356), ("%2", 356, 712), ("program 0", 712, 728), ("%5", 728, 832)]
    assert s.slots[2].wait.kind == "resource" and s.slots[2].wait.on == 1
    # 63 accesses to one bank stays under the limit: the program overlaps %2 again
    steps = (dma_in(1), dma_in(2, 1024), program(0, 3, 1, packet="63:128", read_elems=1), dma_out(5, 4))
    s = schedule_artifact(artifact(*steps, result=5), rates=RATES)
    assert "tdma" not in s.slots[2].step.claims
    assert spans(s)[2] == ("program 0", 356, 372) and s.makespan == 816


def test_main_and_sub_holding_one_bank_serialize():
    # both programs read 32 times in a row from bank 0 (>= bank_hold_run 16): the MAIN one
    # waits for the SUB one (the book's worst case main + sub), then the store follows
    held = dict(packet="32:128", read_elems=1)
    steps = (dma_in(1), program(0, 2, 1, context="SUB", **held), program(1, 4, 1, dest=640, **held), dma_out(6, 5))
    s = schedule_artifact(artifact(*steps, result=6), rates=RATES)
    assert spans(s) == [("%1", 0, 356), ("program 0", 356, 372), ("program 1", 372, 388), ("%6", 388, 492)]
    assert s.slots[2].wait.what == "DM bank 0"
    # sequential reads spread over the banks: the two contexts overlap
    steps = (dma_in(1), program(0, 2, 1, context="SUB"), program(1, 4, 1, dest=640), dma_out(6, 5))
    s = schedule_artifact(artifact(*steps, result=6), rates=RATES)
    assert spans(s)[1:] == [("program 0", 356, 372), ("program 1", 356, 372), ("%6", 372, 476)]


def step(index, context, duration, *accesses, claims=None):
    return Step(index=index, label=f"s{index}", context=context, duration=duration, records=(),
                accesses=tuple(accesses), claims=tuple(claims or (context,)))


def test_the_vector_engine_is_one_resource_for_both_contexts():
    # no VISA 1 record runs on the Vector Engine yet, so the steps are built directly
    steps = [step(0, "main", 10, claims=("main", "vector")), step(1, "sub", 5, claims=("sub", "vector")),
             step(2, "sub", 7)]
    slots, _ = schedule_steps(steps)
    assert [(s.start, s.end) for s in slots] == [(0, 10), (10, 15), (15, 22)]
    assert slots[1].wait.what == "vector engine"


def test_trf_halves_let_a_load_overlap_the_contraction_reading_the_other_half():
    load = lambda i, lo, hi: step(i, "sub", 100, Access("trf", lo, hi, True, f"%{i}"))  # noqa: E731
    use = lambda i, lo, hi: step(i, "main", 300, Access("trf", lo, hi, False, f"%{i}"))  # noqa: E731
    # full-file loads: the second load must wait for the first contraction (WAR): 100 + 300 + 100 + 300
    slots, _ = schedule_steps([load(0, 0, 128), use(1, 0, 128), load(2, 0, 128), use(3, 0, 128)])
    assert [(s.start, s.end) for s in slots] == [(0, 100), (100, 400), (400, 500), (500, 800)]
    # halves: the second load fills rows 64-127 while the first contraction reads rows 0-63
    slots, _ = schedule_steps([load(0, 0, 64), use(1, 0, 64), load(2, 64, 128), use(3, 64, 128)])
    assert [(s.start, s.end) for s in slots] == [(0, 100), (100, 400), (100, 200), (400, 700)]
    assert slots[3].wait.kind == "resource" and slots[3].wait.what == "context main"


def test_hazard_kinds_on_overlapping_ranges():
    w = lambda i, lo, hi: step(i, "tdma", 1, Access("dm", lo, hi, True, "w"))  # noqa: E731
    r = lambda i, lo, hi: step(i, "main", 1, Access("dm", lo, hi, False, "r"))  # noqa: E731
    found = {(h.before, h.after, h.kind) for h in hazards([w(0, 0, 64), r(1, 32, 40), r(2, 64, 128),
                                                             w(3, 0, 128), w(4, 100, 200)])}
    # step 4 overlaps step 2's read too, but step 3's write covered it: 4 waits for 2 through 3
    assert found == {(0, 1, "RAW"), (1, 3, "WAR"), (2, 3, "WAR"), (0, 3, "WAW"), (3, 4, "WAW")}
