"""Rule 3: a bare returned `to_hbm(ctx.tdma)` takes the return annotation's layout, and the
reference's DM -> HBM copy fills a destination axis the source lacks from the copies the
source holds (issue 36 item 2): a memset DM tensor whose Slice and Element are broadcasts
(64 x 2 copies of one value) returned as 128 values. A digit summed away and returned in a
layout that has it stays DMA-4 (tests/hardening/test_summed_axis.py)."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import *

axes(ScalarOutput=128, Big=256)


@device(chip=1)
def fill_value(ctx: Context) -> HbmTensor[i32, m("1"), m("ScalarOutput")]:
    t = DmTensor[i32, m("1"), m("1"), m("64"), m("2")].new()
    t.view_mut().memset(ctx.sub, 7)
    return t.to_hbm(ctx.tdma)


@device(chip=1)
def fill_too_few(ctx: Context) -> HbmTensor[i32, m("1"), m("Big")]:
    t = DmTensor[i32, m("1"), m("1"), m("64"), m("2")].new()
    t.view_mut().memset(ctx.sub, 7)
    return t.to_hbm(ctx.tdma)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_memset_broadcast_returns_one_value_per_position(backend):
    out = npu_opt.run(fill_value, backend=backend)
    assert out.shape == (128,) and out.dtype == np.int32
    assert np.array_equal(out, np.full(128, 7, np.int32))


def test_the_copies_the_source_holds_bound_the_returned_axis():
    """256 positions from 128 copies would invent data: still DMA-4 at the return."""
    (d, *_) = fill_too_few.trace().diagnostics
    assert d.code == "DMA-4", d
