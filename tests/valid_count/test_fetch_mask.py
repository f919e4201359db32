"""`fetch_mask`: the configurations it derives (hand-computed), cpu against numpy, cpu == visa
bit for bit, FEED-14 on edited records, and its refusals at the user's line."""

from __future__ import annotations

import runpy

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from ir.fetch_mask import MaskDim, derive_mask
from ir.mapping.api import m
from tu_ops import rngd
from visa.verify import verify_text

from tests.agree import both_backends
from tests.valid_count.test_pack import _first

AXES = {"A": 3, "H": 5, "R": 10}
RNG = np.random.default_rng(31)


@pytest.mark.parametrize("time, packet, last_axis, dim, counts", [
    ("A", "R # 16", 1, MaskDim.RIGHTMOST, (10,)),                      # the packet is the cell
    ("A, R # 16 / 8", "R # 16 % 8", 1, MaskDim.RIGHTMOST, (2,)),        # the last of two flits keeps 2
    ("R # 16 / 4", "R # 16 % 4", 0, MaskDim.RIGHTMOST_TWO, (0, 2)),     # ... 4, 4, 2, 0
    ("H", "R # 16 % 4 # 8", 1, MaskDim.RIGHTMOST, (4,)),                # trailing flit padding of R
])
def test_mask_configurations(time, packet, last_axis, dim, counts):
    got = derive_mask(m(time, axes=AXES), m(packet, axes=AXES), {"R"})
    assert (got.last_axis, got.dim, got.counts) == (last_axis, dim, counts)


@pytest.mark.parametrize("axes, time, packet, last_axis, iterator, counts", [
    ({"R": 5}, "R # 16 / 4", "R # 16 % 4", 1, 0, (4, 1, 0, 0)),             # three cells hold padding
    ({"R": 11, "A": 3}, "R # 32 / 8, A", "R # 32 % 8", 2, 0, (8, 3, 0, 0)),  # A between: its loop is inside
    ({"R": 3, "H": 4}, "H, R # 32 / 8", "R # 32 % 8", 2, 1, (3, 0, 0, 0)),
])
def test_iterator_mask_configurations(axes, time, packet, last_axis, iterator, counts):
    """The packet's count varies along R's Time loop; the hand count is R's live cells per flit."""
    got = derive_mask(m(time, axes=axes), m(packet, axes=axes), {"R"})
    assert (got.last_axis, got.dim, got.iterator, got.counts) == (last_axis, MaskDim.ITERATOR, iterator, counts)


def test_iterator_keeps_exactly_the_live_cells():
    from ir.fetch_mask import mask_keep

    ax = {"R": 11, "A": 3}
    time, packet = m("R # 32 / 8, A", axes=ax), m("R # 32 % 8", axes=ax)
    keep = mask_keep(time, packet, derive_mask(time, packet, {"R"})).reshape(4, 3, 8)
    want = (8 * np.arange(4)[:, None, None] + np.arange(8)[None, None, :] < 11) & np.ones((4, 3, 8), bool)
    np.testing.assert_array_equal(keep, want)


def test_iterator_longer_than_eight_counts_is_fmask_3():
    got = derive_mask(m("R # 48 / 4", axes=AXES), m("R # 48 % 4", axes=AXES), {"R"})
    assert got.code == "FMASK-3"


def test_mask_refuses_padding_spread_over_a_cell():
    got = derive_mask(m("R # 12 / 4, A, R # 12 % 4", axes=AXES), m("1", axes=AXES), {"R"})
    assert got.code == "FMASK-2"


def _kernel(tmp_path, dtype="f32", cast="", r=6):
    src = f'''
from npu_opt import *
axes(A=256, H=4, R={r})
@device(chip=1)
def k(ctx: Context, x: HbmTensor[{dtype}, m("1"), m("A, H, R")]) -> HbmTensor[{"f32" if cast else dtype}, m("1"), m("A, H, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[{dtype}, m("1"), m("1 # 2"), m("A"), m("H, R # 8")])
    y = (ctx.main.begin(x.view()).fetch(m("H"), m("R # 8")).fetch_mask(m("H"), m("R #{{0}} 8")){cast}
         .collect(m("H"), m("R #{{0}} 8")).commit_trim(m("R #{{0}} 8")).commit())
    return y.to_hbm(ctx.tdma, HbmTensor[{"f32" if cast else dtype}, m("1"), m("A, H, R")])
'''
    path = tmp_path / "k.py"
    path.write_text(src)
    return runpy.run_path(str(path))["k"]


def _both(kernel, x):
    return both_backends(kernel, x, " mask={")


def test_masked_rows_round_trip(tmp_path):
    x = RNG.standard_normal((256, 4, 6)).astype(np.float32)
    cpu, text = _both(_kernel(tmp_path), x)
    np.testing.assert_array_equal(cpu, x)
    assert 'mask={axis="R", last_axis=1, dim=RIGHTMOST, counts=[6]}' in text


def test_mask_then_widening_cast(tmp_path):
    """bf16 -> f32 after the mask: exact (a bf16 is the top half of its f32)."""
    bits = RNG.integers(0, 2**16, (256, 4, 4), dtype=np.int64).astype(np.uint16)
    bits[(bits & 0x7F80) == 0x7F80] &= 0xBFFF  # no NaN or infinity in the input
    x = bits.view(ml_dtypes.bfloat16)
    cpu, _ = _both(_kernel(tmp_path, "bf16", ".fetch_cast(f32)", r=4), x)
    want = (bits.astype(np.uint32) << 16)
    want[(bits & 0x7F80) == 0] &= 0x80000000  # the Fetch Adapter flushes bf16 subnormals
    np.testing.assert_array_equal(cpu.view(np.uint32), want)


@pytest.mark.parametrize("old, new", [("counts=[6]", "counts=[5]"), ("counts=[6]", "counts=[7]"),
                                      ('axis="R"', 'axis="H"')])
def test_edited_mask_is_refused_by_feed_14(tmp_path, old, new):
    text = npu_opt.compile(_kernel(tmp_path)).text
    assert old in text
    with pytest.raises(Exception, match="FEED-14"):
        verify_text(text.replace(old, new, 1), rngd())


_ITER = '''
from npu_opt import *
axes(A=256, H=4, R=3)
@device(chip=1)
def k(ctx: Context, x: HbmTensor[f32, m("1"), m("A, H, R # 32")]) -> HbmTensor[f32, m("1"), m("A, H, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[f32, m("1"), m("1 # 2"), m("A"), m("H, R # 32")])
    y = (ctx.main.begin(x.view()).fetch(m("H, R # 32 / 8"), m("R # 32 % 8"))
         .fetch_mask(m("H, R #{0} 32 / 8"), m("R #{0} 32 % 8"))
         .collect(m("H, R #{0} 32 / 8"), m("R #{0} 32 % 8")).commit_trim(m("R #{0} 32 % 8")).commit())
    return y.to_hbm(ctx.tdma, HbmTensor[f32, m("1"), m("A, H, R")])
'''


def _iter_kernel(tmp_path):
    path = tmp_path / "it.py"
    path.write_text(_ITER)
    return runpy.run_path(str(path))["k"]


def test_iterator_mask_split_inside_the_live_range_round_trips(tmp_path):
    """R = 11 split as `R # 32 / 8`: the mask zeroes the last three cells of the second
    chunk and the two after it, and the commit writes the live cells back (it was COMMIT-3)."""
    path = tmp_path / "split.py"
    path.write_text(_ITER.replace("axes(A=256, H=4, R=3)", "axes(A=256, H=4, R=11)"))
    x = RNG.standard_normal((256, 4, 11)).astype(np.float32)
    cpu, text = _both(runpy.run_path(str(path))["k"], x)
    np.testing.assert_array_equal(cpu, x)
    assert 'mask={axis="R", last_axis=2, dim=ITERATOR, counts=[8, 3, 0, 0], iterator=1}' in text


def test_iterator_mask_round_trip(tmp_path):
    x = RNG.standard_normal((256, 4, 3)).astype(np.float32)
    cpu, text = _both(_iter_kernel(tmp_path), x)
    np.testing.assert_array_equal(cpu, x)
    assert 'mask={axis="R", last_axis=2, dim=ITERATOR, counts=[3, 0, 0, 0], iterator=1}' in text


@pytest.mark.parametrize("old, new", [("counts=[3, 0, 0, 0]", "counts=[3, 1, 0, 0]"),
                                      ("counts=[3, 0, 0, 0]", "counts=[2, 0, 0, 0]"),
                                      (", iterator=1}", "}"), ("iterator=1", "iterator=0")])
def test_edited_iterator_mask_is_refused_by_feed_14(tmp_path, old, new):
    text = npu_opt.compile(_iter_kernel(tmp_path)).text
    assert old in text
    with pytest.raises(Exception, match="FEED-14"):
        verify_text(text.replace(old, new, 1), rngd())


@pytest.mark.parametrize("page_code", ["FMASK-1", "FMASK-2", "FMASK-3"])
def test_refusal_at_the_users_line(tmp_path, page_code):
    from driver.explain import page

    src = page(page_code).example
    d = _first(tmp_path, src)
    assert d.code == page_code, d.render()
    assert d.line == next(n for n, line in enumerate(src.splitlines(), 1) if "# <--" in line)


def test_partial_mask_is_refused(tmp_path):
    src = '''
from npu_opt import *
axes(A=256, H=5, R=6)
@device(chip=1)
def k(ctx: Context, x: HbmTensor[f32, m("1"), m("A, R # 8")]) -> HbmTensor[f32, m("1"), m("A, R # 8")]:
    x = x.to_dm(ctx.tdma, DmTensor[f32, m("1"), m("1 # 2"), m("A"), m("R # 8")])
    y = (ctx.main.begin(x.view()).fetch(m("1"), m("R # 8")).fetch_mask(m("1"), m("R #{0} 8 = 7"))
         .collect(m("1"), m("R # 8")).commit_trim(m("R # 8")).commit())
    return y.to_hbm(ctx.tdma)
'''
    assert _first(tmp_path, src).code == "FMASK-1"


def test_the_naive_model_agrees(tmp_path):
    """The differential tests' element-by-element model runs the masked chain too."""
    from tests.differential.test_naive_model import differences, wide_inputs

    kernel = _kernel(tmp_path, "bf16", ".fetch_cast(f32)", r=4)
    for any_bits in (False, True):
        assert differences(kernel, wide_inputs(kernel, np.random.default_rng(5), any_bits)) is None
