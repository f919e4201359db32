"""Digits of a padded axis: a stream may split `R # 16` (|R| = 10 or 13) into `R # 16 / 8` and
`R # 16 % 8` although neither is a digit range of R's own factors (10 = 2 x 5). The sequencer
places each like a digit of the padded run, the fetch reads the padding past |R| as padding,
a VRF or commit element `R # 16` (one run) takes the split stream, and cpu, the artifact and a
numpy oracle agree."""

from __future__ import annotations

import runpy

import numpy as np
import pytest

import npu_opt
from ir.mapping.api import m
from ir.mapping.sequence import sequence
from visa.interp import execute
from visa.parser import parse_visa


@pytest.mark.parametrize("r", [10, 13, 16])
def test_sequencer_places_both_digits_of_the_padded_run(r):
    axes = {"R": r}
    found = sequence(m("R # 16", axes=axes), [m("R # 16 / 8", axes=axes), m("R # 16 % 8", axes=axes)])
    assert found, found
    assert [(e.size, e.stride) for lvl in found.coalesced() for e in lvl] == [(2, 8), (8, 1)]


def test_a_digit_past_the_padded_run_is_still_refused():
    axes = {"R": 10}
    found = sequence(m("R # 12", axes=axes), [m("R # 16 / 8", axes=axes), m("R # 16 % 8", axes=axes)])
    assert not found


KERNEL = '''
from npu_opt import *
axes(A={a}, R={r})
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")

@device(chip=1)
def padded_split(ctx: Context, x: HbmTensor[i32, Chip, m("A, R")],
                 b: HbmTensor[i32, Chip, m("R")]) -> HbmTensor[i32, Chip, m("A, R")]:
    b = b.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("{dm}")])
    bv = (ctx.sub.begin(b.view()).fetch(m("R # 16 / 8"), m("R # 16 % 8"))
          .collect(m("R # 16 / 8"), m("R # 16 % 8")).to_vrf(m("{vrf}")))
    x = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("A, {dm}")])
    y = (ctx.main.begin(x.view()).fetch(m("A, R # 16 / 8"), m("R # 16 % 8"))
         .collect(m("A, R # 16 / 8"), m("R # 16 % 8")).vector_init().vector_intra_slice_tag(TagMode.ZERO)
         .vector_fxp(FxpBinaryOp.ADD_FXP, bv).vector_final().commit_trim(m("R # 16 % 8")).commit({commit}))
    return y.to_hbm(ctx.tdma)
'''


@pytest.mark.parametrize("a, r, dm, vrf, commit", [
    (3, 10, "R # 16", "R # 16 / 8, R # 16 % 8", ""),
    (5, 12, "R # 16", "R # 16", 'm("A, R # 16")'),          # the element read jointly as one run
    (2, 10, "R # 16 / 8, R # 16 % 8", "R # 16", 'm("A, R # 16 / 8, R # 16 % 8")'),
])
def test_fetch_of_a_padded_split_runs_on_both_backends(tmp_path, a, r, dm, vrf, commit):
    path = tmp_path / "padded_split.py"
    path.write_text(KERNEL.format(a=a, r=r, dm=dm, vrf=vrf, commit=commit))
    kernel = runpy.run_path(str(path))["padded_split"]
    rng = np.random.default_rng(r)
    x = rng.integers(-1000, 1000, (a, r), dtype=np.int32)
    b = rng.integers(-1000, 1000, (r,), dtype=np.int32)
    cpu = np.asarray(npu_opt.run(kernel, x, b))
    np.testing.assert_array_equal(cpu, x + b[None, :])
    visa = np.asarray(execute(parse_visa(npu_opt.compile(kernel).text), [x, b]))
    np.testing.assert_array_equal(visa, cpu)
