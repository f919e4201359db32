"""The reference's double-buffering kernels (tests/visa/schedule/double_buffering.py): their
values on cpu and visa against numpy, and their modelled makespans against the reference's
tuning chapter ("Double buffering", 20 weight groups): rolled 19,106 cycles, two-stage
software pipeline 15,477, fully unrolled 15,086.

What the model can match and what it cannot, today:
- `rolled` is a `ctx.loop`: one body (stage, contract, commit into the group's tile at the
  loop index) scheduled once and repeated for every group, the reference's rolled schedule.
  It is pinned within 2 % of 19,106: the constants the fit rests on (the command start-up,
  the launch) are read off the book's MNIST timeline, not fitted to this table.
- `unrolled` stages each group while the previous one is contracted: the lowering keeps a TRF
  tensor made outside a rolled loop off the previous TRF tensor's rows (rows [0, 4) and
  [4, 8) by parity), as the reference's scheduler alternates the TRF halves (`FirstHalf` /
  `SecondHalf`). A stage beside a contraction waits for the contraction's TRF reads that miss
  the read cache (the reference's register-files chapter: the halves share banks, a read
  wins): 2 cycles a group here. It models 11.6 % below the reference's 15,086, pinned within
  12 %: the contention, as the book states it, is small; what else the reference keeps
  serial is not in its book (docs/tuning.md). (With every group at row 0 it modelled at the
  rolled figure, +25 %.)
- `software_pipelined` keeps two groups live, so they sit in rows [0, 4) and [4, 8) and the
  staging of the second overlaps the contraction of the first. Its pair loop is a Python
  `for`, so its pairs overlap too, which the reference's rolled pair loop does not: it models
  below the reference's 15,477 (-13.8 %), pinned within 20 %. As the reference writes it, the
  pair loop a `ctx.loop` (tests/visa/schedule/double_buffering_forms.py), it models at
  +3.2 %, pinned within 4 %.
- The three forms as the reference writes them model in its order: unrolled <= pipelined <
  rolled.
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from tests.visa.schedule import double_buffering as db
from tests.visa.schedule import double_buffering_forms as forms
from visa import parse_visa
from visa.schedule import builtin_rates, schedule_artifact
from visa.schedule.steps import trf_read_blocks

REFERENCE = {"rolled": 19_106, "software_pipelined": 15_477, "software_pipelined_rolled": 15_477, "unrolled": 15_086}
RATES = builtin_rates("rngd")


@pytest.fixture(scope="module")
def schedules():
    return {k.name: schedule_artifact(parse_visa(npu_opt.compile(k).text))
            for k in (db.rolled, db.software_pipelined, db.unrolled, forms.software_pipelined_rolled)}


def _error(schedules, name):
    return schedules[name].makespan / REFERENCE[name] - 1


@pytest.mark.parametrize("kernel", [db.rolled_few, db.software_pipelined_few, db.unrolled_few])
def test_each_form_computes_the_contraction_on_cpu_and_visa(kernel):
    rng = np.random.default_rng(60)
    # small integers: every product and every sum of 64 is exact in f32 and in bf16 (|sum| <= 256)
    act = rng.integers(-2, 3, (16, 64)).astype(ml_dtypes.bfloat16)
    weight = rng.integers(-2, 3, (4, 8, 64)).astype(ml_dtypes.bfloat16)
    want = np.einsum("tr,gor->tgo", act.astype(np.int64), weight.astype(np.int64))
    cpu = npu_opt.run(kernel, act, weight, backend="cpu")
    visa = npu_opt.run(kernel, act, weight, backend="visa")
    assert np.array_equal(cpu.view(np.uint16), visa.view(np.uint16))
    assert cpu.shape == (16, 4, 8) and np.array_equal(cpu.astype(np.int64), want)


def test_the_rolled_form_models_within_two_percent_of_the_reference(schedules):
    assert abs(_error(schedules, "rolled")) < 0.02


def test_the_rolled_form_is_one_body_schedule_after_another(schedules):
    # launch, the two loads, one body (stage + contract) scheduled once and repeated for the 20
    # groups with no overlap, the store
    s = schedules["rolled"]
    programs = [slot for slot in s.slots if slot.step.context in ("main", "sub")]
    assert len(programs) == 2
    assert programs[1].start == programs[0].end
    stage, contract = programs[0].step.duration, programs[1].step.duration
    start = RATES("tensor_unit", "command_startup_cycles")
    assert stage == start + 32 and contract == start + 4  # 32 flits into the TRF; 4 fetch beats
    dmas = [slot.step.duration for slot in s.slots if slot.step.dma is not None]
    assert len(dmas) == 3   # the loads and the store: the commit writes the group's tile itself
    assert s.makespan == RATES("kernel", "launch_cycles") + sum(dmas) + 20 * (stage + contract)


def test_the_rolled_form_is_one_rolled_loop_of_one_body():
    text = npu_opt.compile(db.rolled).text
    assert text.count("loop_begin start=0 stop=20") == 1
    assert text.count("= trf_load ") == 1 and text.count("= commit ") == 1
    assert "start=%" in next(line for line in text.splitlines() if "= commit " in line)


def test_the_unrolled_form_alternates_the_trf_regions_and_overlaps(schedules):
    # the reference stages alternate groups into the TRF's halves; here the lowering keeps each
    # group off the previous group's rows (0 and 4 by parity), so staging group g + 1 runs
    # while group g is contracted: no stage waits for a contraction (WAR)
    text = npu_opt.compile(db.unrolled).text
    assert [int(r) for r in re.findall(r"= trf_load .* base_row=(\d+) ", text)] == [0, 4] * 10
    s = schedules["unrolled"]
    stages = [slot for slot in s.slots if slot.step.context == "sub"][1:]
    assert not any(slot.wait.kind == "dependency" and slot.wait.what.startswith("WAR on trf") for slot in stages)
    assert s.makespan < schedules["rolled"].makespan
    assert abs(_error(schedules, "unrolled")) < 0.12


def test_the_pipelined_form_overlaps_staging_with_contraction(schedules):
    assert schedules["software_pipelined"].makespan < schedules["rolled"].makespan
    assert -0.2 < _error(schedules, "software_pipelined") < 0
    # the second group's staging runs while the first group's contraction does
    slots = schedules["software_pipelined"].slots
    first_contract = next(slot for slot in slots if slot.step.context == "main")
    second_stage = [slot for slot in slots if slot.step.context == "sub"][1]
    assert second_stage.start < first_contract.end


def test_the_three_forms_model_in_the_references_order_near_its_figures(schedules):
    # the reference: unrolled 15,086 <= two-stage pipeline 15,477 < rolled 19,106; the pipeline
    # as the reference writes it, its pair loop rolled (`ctx.loop`)
    unrolled, pipelined, rolled = (schedules[k].makespan for k in ("unrolled", "software_pipelined_rolled", "rolled"))
    assert unrolled <= pipelined < rolled
    assert abs(_error(schedules, "rolled")) < 0.02
    assert abs(_error(schedules, "software_pipelined_rolled")) < 0.04
    assert abs(_error(schedules, "unrolled")) < 0.12


def test_the_tuning_guide_quotes_these_makespans(schedules):
    # docs/tuning.md, "How close the model is": the model column is what the model gives
    page = (Path(__file__).parents[3] / "docs" / "tuning.md").read_text()
    for form, name in (("rolled loop", "rolled"), ("two-stage software pipeline", "software_pipelined_rolled"),
                       ("two-stage software pipeline, pair loop unrolled", "software_pipelined"),
                       ("fully unrolled", "unrolled")):
        s = schedules[name]
        row = f"| {form} | {REFERENCE[name]:,} | {s.makespan:,} | {100 * _error(schedules, name):+.1f} % |"
        assert row.replace("+-", "-") in page, row


def test_a_store_beside_a_contraction_yields_the_banks_to_its_missed_reads(schedules):
    # the reference's register-files chapter ("Double Buffering"): both TRF halves share the
    # banks, a read wins a bank over a store, a read that hits the 4-row read cache leaves the
    # bank free, and a wide (64-byte) read holds both banks. A group is 64 bf16 = 128 bytes a
    # lane: 2 wide reads, each of a row the cache does not hold yet, so 2 cycles the store waits
    s = schedules["unrolled"]
    contractions = [slot for slot in s.slots if slot.step.context == "main"]
    assert {slot.step.trf_blocks for slot in contractions} == {2}
    stages = [slot for slot in s.slots if slot.step.context == "sub"]
    beside = [slot for slot in stages if any(c.start < slot.end and slot.start < c.end for c in contractions)]
    assert len(beside) == 19
    assert all(slot.end - slot.start == slot.step.duration + 2 for slot in beside)
    assert stages[0].end - stages[0].start == stages[0].step.duration   # no contraction beside the first


@pytest.mark.parametrize("width, reads, rows, blocked", [
    ("wide", 2, 4, 2),     # the case above: each wide read a new row pair, all missed once
    ("wide", 16, 4, 2),    # reads again of rows the cache holds: hits, the store proceeds
    ("narrow", 4, 4, 2),   # narrow misses alternate the banks: the store keeps half its rate
    ("narrow", 3, 4, 2),   # half a cycle each, rounded up
    ("wide", 16, 12, 16),  # more rows than the cache holds (8 a lane): every read misses
])
def test_the_blocked_cycles_follow_the_books_bank_rules(width, reads, rows, blocked):
    op = SimpleNamespace(output_type=SimpleNamespace(time=SimpleNamespace(size=reads)),
                         trf_read=SimpleNamespace(width=SimpleNamespace(value=width)))
    assert trf_read_blocks(op, rows) == blocked
