"""The software-pipelined double-buffering kernel with its pair loop rolled, as the reference
writes it, and the unrolled kernel with the TRF halves alternated by the author
(tests/visa/schedule/double_buffering_forms.py): their values against numpy on cpu and visa,
and their modelled makespans against the reference's tuning chapter (20 weight groups:
software pipeline 15,477 cycles, unrolled 15,086).

- The rolled pair loop repeats one body schedule (stage two groups, contract both), so its
  pairs do not overlap, as in the reference: 15,970 cycles, +3.2 % (the Python `for` over the
  pairs, whose pairs overlap, models at 13,342, -13.8 %).
- The alternating kernel's groups sit in TRF rows [0, 4) and [4, 8) by parity, so staging
  group g + 1 overlaps contracting group g: 13,342 cycles, -11.6 % against the reference's
  15,086. The unrolled kernel, written without the alternation, gets the same rows from the
  lowering (a TRF tensor made outside a rolled loop keeps off the previous one's rows) and
  the same makespan; before the lowering alternated, its groups all took row 0 (18,890).
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from tests.visa.schedule import double_buffering as db
from tests.visa.schedule import double_buffering_forms as forms
from visa import parse_visa
from visa.schedule import schedule_artifact

REFERENCE = {"software_pipelined": 15_477, "unrolled": 15_086}


@pytest.fixture(scope="module")
def makespans():
    return {k.name: schedule_artifact(parse_visa(npu_opt.compile(k).text)).makespan
            for k in (forms.software_pipelined_rolled, forms.alternating, db.software_pipelined, db.unrolled,
                      db.rolled)}


def computes_the_contraction(kernel, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """cpu == visa == numpy on a double-buffering kernel of 4 groups (act 16 x 64, weight
    4 x 8 x 64); the visa result and the inputs. Small integers: every product and every sum
    of 64 is exact in f32 and in bf16."""
    rng = np.random.default_rng(seed)
    act = rng.integers(-2, 3, (16, 64)).astype(ml_dtypes.bfloat16)
    weight = rng.integers(-2, 3, (4, 8, 64)).astype(ml_dtypes.bfloat16)
    want = np.einsum("tr,gor->tgo", act.astype(np.int64), weight.astype(np.int64))
    cpu = npu_opt.run(kernel, act, weight, backend="cpu")
    visa = npu_opt.run(kernel, act, weight, backend="visa")
    assert np.array_equal(cpu.view(np.uint16), visa.view(np.uint16))
    assert np.array_equal(cpu.astype(np.int64), want)
    return visa, act, weight


@pytest.mark.parametrize("kernel", [forms.software_pipelined_rolled_few, forms.alternating_few])
def test_each_form_computes_the_contraction_on_cpu_and_visa(kernel):
    visa, act, weight = computes_the_contraction(kernel, 61)
    unrolled = npu_opt.run(db.software_pipelined_few, act, weight, backend="visa")
    assert np.array_equal(visa.view(np.uint16), unrolled.view(np.uint16))


def test_the_rolled_pair_loop_is_one_body_of_two_stages_and_two_contractions():
    text = npu_opt.compile(forms.software_pipelined_rolled).text
    assert text.count("loop_begin start=0 stop=10") == 1
    assert text.count("= trf_load ") == 2 and text.count("= commit ") == 2


def test_the_rolled_pair_loop_models_near_the_reference(makespans):
    got = makespans["software_pipelined_rolled"]
    assert abs(got / REFERENCE["software_pipelined"] - 1) < 0.04
    # its pairs run one after another: slower than the Python `for` over the pairs, faster than one group a body
    assert makespans["software_pipelined"] < got < makespans["rolled"]


def test_the_alternating_kernel_puts_groups_in_the_trf_halves_by_parity():
    text = npu_opt.compile(forms.alternating).text
    rows = [int(r) for r in re.findall(r"= trf_load .* base_row=(\d+) ", text)]
    assert rows == [0, 4] * 10


def test_the_alternating_kernel_overlaps_staging_with_contraction(makespans):
    got = makespans["alternating"]
    assert got == makespans["unrolled"] < makespans["rolled"]   # the lowering alternates the unrolled kernel alike
    assert abs(got / REFERENCE["unrolled"] - 1) < 0.15
