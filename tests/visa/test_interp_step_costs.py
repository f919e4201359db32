"""Costs the interpreter paid on every run of a kernel and no longer does (issue 61 item 2,
the kernels without the Transpose Engine): each test pins that the cost is gone (a spy on
the step that paid it) and that the kernel still equals a numpy oracle on the cpu backend
and the interpreter, bit for bit.

- An integer contraction whose weight rows are padded (`D # 128` of 64 features, the
  layout of examples/interop/mlp_kernels.py's `mlp_down`) zeroes the padded products in the
  weights: the product mask is cut to the axes it varies along, so the zeroed weights are
  no larger than the TRF operand (they were broadcast along the time digit `M % 8`: 8x
  the operand, 24 ms of `np.where` a run of `mlp_down`).
"""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt.compile_api import compile_kernel
from tests.kernel_files import load_source
from visa import parse_visa
from visa.interp import contract, execute_inout

_PADDED_ROWS = '''
from npu_opt import *

axes(M=16, D=64, H=64)
Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M / 8, D # 128 / 128, 1 # 128")


@device(chip=1)
def padded_rows(ctx: Context,
                h: HbmTensor[i8, Chip, m("M, H")],
                w: HbmTensor[i8, Chip, m("D, H")],
                y: Mut[HbmTensor[i32, Chip, m("M, D")]]) -> None:
    h_dm = h.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("M % 8, H")])
    w_dm = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("D # 128, H")])
    w_trf = (ctx.sub.begin(w_dm.view())
             .fetch(m("D # 128 % 8, D # 128 / 8 % 16"), m("H"))
             .collect(m("D # 128 % 8, D # 128 / 8 % 16, H / 32"), m("H % 32"))
             .to_trf(m("D # 128 % 8"), m("D # 128 / 8 % 16, H")))
    out = (ctx.main.begin(h_dm.view())
           .fetch(m("M % 8, D # 128 / 8 % 16"), m("H"))
           .collect(m("M % 8, D # 128 / 8 % 16, H / 32"), m("H % 32"))
           .contract_outer(w_trf, m("M % 8, D # 128 / 8 % 16, H / 32"), m("H % 32"))
           .contract_packet(m("1"))
           .contract_time(m("M % 8, D # 128 / 8 % 16"))
           .contract_lane(m("M % 8, D # 128 / 8 % 16"), m("D # 128 % 8"), LaneMode.INTERLEAVED)
           .commit_trim(m("D # 128 % 8"))
           .commit(m("M % 8, D # 128")))
    out.view().to_hbm_view(ctx.tdma, y.view_mut())
'''


def test_padded_weight_rows_are_zeroed_at_the_operands_size(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = load_source(_PADDED_ROWS, "interp_step_costs_padded").padded_rows
    rng = np.random.default_rng(3)
    h = rng.integers(-128, 128, (16, 64), dtype=np.int8)
    w = rng.integers(-128, 128, (64, 64), dtype=np.int8)
    want = h.astype(np.int32) @ w.astype(np.int32).T
    read, sizes = contract.Weights.read, []

    def spy(self, which):
        out = read(self, which)
        sizes.append((out.size, self.mask is not None))
        return out

    monkeypatch.setattr(contract.Weights, "read", spy)
    _, finals = execute_inout(parse_visa(compile_kernel(kernel).text), [h, w, np.zeros((16, 64), np.int32)])
    np.testing.assert_array_equal(finals[-1], want)
    # each row's weights: 8 lanes x 16 rows x 64 elements of H, no copy per step of M % 8
    assert sizes and all(masked for _, masked in sizes)
    assert all(size <= 2 * 8 * 16 * 64 for size, _ in sizes), sizes
    y = np.zeros((16, 64), np.int32)
    npu_opt.run(kernel, h, w, y)
    np.testing.assert_array_equal(y, want)
