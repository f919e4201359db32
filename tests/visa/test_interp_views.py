"""The interpreter's strided shortcuts for copies and interleaved reads (issue 38 item 2).

A redistribution's commands (`dma_relayout`, `dma_redistribute`) and an interleaved feed's
two reads walk affine byte patterns; with the speed machinery on they run as strided
views instead of index arrays. Each test checks the shortcut is taken with it on, not with
it off (so test_interp_plain.py, which compares the two, compares the shortcut with the
index path), and that the bits are the cpu backend's either way.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from npu_opt.run import run
from tests.kernel_files import EXAMPLES_DIR, _kernels, load_source
from tests.visa.test_interp import artifact, assert_same_bits, host_inputs
from visa.interp import execute_inout, feed, gather


def _spy(monkeypatch, module, name) -> list:
    seen: list = []
    real = getattr(module, name)

    def counted(*args, **kw):
        seen.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(module, name, counted)
    return seen


def _agrees(kernel, fast: bool) -> None:
    """The interpreter (fast or plain) gives the cpu backend's bits."""
    arrays = host_inputs(kernel, np.random.default_rng(zlib.crc32(kernel.name.encode())))
    results, finals = execute_inout(artifact(kernel), arrays, fast=fast)
    out = results + finals
    assert_same_bits(out[0] if len(out) == 1 else out, run(kernel, *arrays, backend="cpu"))


def _topology(file: str, name: str):
    return _kernels(EXAMPLES_DIR / "topology" / f"{file}.py")[name]


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("name", ["cluster_all_gather", "chip_all_gather"])
def test_a_relayout_copies_through_views(name, fast, monkeypatch):
    indexed = _spy(monkeypatch, gather, "copy_walk")
    _agrees(_topology("cluster_collectives" if name.startswith("cluster") else "chip_collectives", name), fast)
    assert (not indexed) if fast else indexed


SWAPPED = '''
from npu_opt import *

axes(S=2048, H=64, I=2)

Slice = m("S / 8")


@device(chip=1)
def swapped_pair(ctx: Context, x: HbmTensor[f32, m("1"), m("S, H")],
                 y: HbmTensor[f32, m("1"), m("S, H")]) -> HbmTensor[f32, m("1"), m("I, S, H")]:
    x = x.to_dm(ctx.tdma, DmTensor[f32, m("1"), m("1 # 2"), Slice, m("S % 8, H")])
    y = y.to_dm(ctx.tdma, DmTensor[f32, m("1"), m("1 # 2"), Slice, m("S % 8, H")])
    out = (ctx.main.begin_interleaved(y.view(), x.view(), m("I"))
           .fetch(m("I, S % 8, H / 8"), m("H % 8"))
           .collect(m("I, S % 8, H / 8"), m("H % 8"))
           .commit_trim(m("H % 8"))
           .commit(m("I, S % 8, H")))
    return out.to_hbm(ctx.tdma, HbmTensor[f32, m("1"), m("I, S, H")])
'''


def _interleaved():
    yield pytest.param(lambda: _topology("two_chip_add", "two_chip_add"), id="tensor-loop-outermost")
    yield pytest.param(lambda: _kernels(EXAMPLES_DIR / "residual_add.py")["residual_add_kernel"],
                       id="tensor-loop-innermost")
    yield pytest.param(lambda: load_source(SWAPPED, "interp_views_swapped").swapped_pair, id="second-below-first")


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("factory", list(_interleaved()))
def test_an_interleaved_feed_reads_both_tensors_through_one_view(factory, fast, monkeypatch):
    indexed = _spy(monkeypatch, feed, "gather")
    _agrees(factory(), fast)
    assert (not indexed) if fast else indexed


def test_the_second_tensor_below_the_first_keeps_the_order():
    """`swapped_pair` streams y then x (y lies above x in DM) and commits the stream as is."""
    kernel = load_source(SWAPPED, "interp_views_swapped").swapped_pair
    rng = np.random.default_rng(7)
    x, y = (rng.standard_normal((2048, 64)).astype(np.float32) for _ in range(2))
    results, _ = execute_inout(artifact(kernel), [x, y], fast=True)
    np.testing.assert_array_equal(results[0].view(np.uint32), np.stack([y, x]).view(np.uint32))
