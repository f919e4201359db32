"""An intra-slice reduce in a pair pass is refused (PAIR-REDUCE-1, as the reference since v0.7):
before the zip and on the stream the zip merged, at the reduce's line. The reducer takes no
group condition, so it cannot fold only the group a zip wrote. The same reduce in a pass of its
own, after committing the zipped stream, compiles and matches a numpy oracle.

The `vector_pair` record's merged INTRA_REDUCE_* step stays in VISA (an artifact written
before v0.7 still reads, verifies and runs): its rule VPAIR-4 is checked on records built
here directly."""

from __future__ import annotations

import runpy

import numpy as np
import pytest

import npu_opt
from tests.agree import both_backends
from tests.vector_pair.bad_ops import _reducing, REDUCE_MIN
from tu_ops import rngd

_HEAD = '''
from npu_opt import *
axes(X=256, R=10, B=4, I=2, E=8, Q=8)
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("X")
'''

_MIN = _HEAD + '''
@device(chip=1)
def zipped_min(ctx: Context, x: HbmTensor[i32, Chip, m("X, R # 16, B")],
               y: HbmTensor[i32, Chip, m("X, R # 16, B")]) -> HbmTensor[i32, Chip, m("X, B")]:
    x = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("R # 16, B")])
    y = y.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("R # 16, B")])
    s = (ctx.main.begin_interleaved(x.view(), y.view(), m("I")).fetch(m("R # 16, I"), m("B"))
         .collect(m("R # 16, I"), m("B # 8")).vector_init()
         .vector_intra_slice_unzip(m("I"), m("R # 16, 1 # 2"), m("R # 16"))
         .vector_fxp_zip(FxpBinaryOp.ADD_FXP))
    if {split}:
        s = s.vector_final().commit_trim(m("B # 8")).commit()
        s = (ctx.main.begin(s.view()).fetch(m("R # 16"), m("B # 8")).collect(m("R # 16"), m("B # 8"))
             .vector_init().vector_intra_slice_tag(TagMode.ZERO))
    z = (s.vector_narrow_trim(m("B"))
         .vector_intra_slice_reduce(m("R"), m("1"), m("B"), IntraSliceReduceOpI32.MIN)
         .vector_widen_pad(m("B # 8")).vector_final().commit_trim(m("B")).commit())
    return z.to_hbm(ctx.tdma)
'''

_TREE = _HEAD + '''
@device(chip=1)
def zipped_tree(ctx: Context, x: HbmTensor[i32, Chip, m("X, Q, B")],
                y: HbmTensor[i32, Chip, m("X, Q, B")]) -> HbmTensor[i32, Chip, m("X, Q")]:
    x = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("Q, B")])
    y = y.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("Q, B")])
    z = (ctx.main.begin_interleaved(x.view(), y.view(), m("I")).fetch(m("Q, I"), m("B"))
         .collect(m("Q, I"), m("B # 8")).vector_init()
         .vector_intra_slice_unzip(m("I"), m("Q, 1 # 2"), m("Q"))
         .vector_fxp(FxpBinaryOp.MUL_INT, 3, None)
         .vector_fxp_zip_with_mode(FxpBinaryOp.SUB_FXP_SAT, BinaryArgMode.MODE10)
         .vector_narrow_trim(m("B"))
         .vector_intra_slice_reduce(m("B"), m("Q"), m("1 # 4"), IntraSliceReduceOpI32.ADD_SAT)
         .vector_widen_pad(m("1 # 8")).vector_final().commit_trim(m("1 # 2")).commit(m("Q, 1 # 2")))
    return z.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("X, Q")])
'''

_FLOAT = _HEAD + '''
@device(chip=1)
def zipped_{tag}(ctx: Context, x: HbmTensor[f32, Chip, m("X, Q, E")],
                  y: HbmTensor[f32, Chip, m("X, Q, E")]) -> HbmTensor[f32, Chip, m("X, E")]:
    x = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("Q, E")])
    y = y.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("Q, E")])
    z = (ctx.main.begin_interleaved(x.view(), y.view(), m("I")).fetch(m("Q, I"), m("E"))
         .collect(m("Q, I"), m("E")).vector_init()
         .vector_intra_slice_unzip(m("I"), m("Q, 1 # 2"), m("Q"))
         .vector_narrow_split(m("Q, E / 4 % 2"), m("E % 4"))
         .vector_fp_zip(FpBinaryOp.MUL_F(FpMulAlu.MUL0))
         .vector_intra_slice_reduce(m("Q"), m("E / 4 % 2"), m("E % 4"), IntraSliceReduceOpF32.{op})
         .vector_widen_concat(m("1"), m("E")).vector_final().commit_trim(m("E")).commit())
    return z.to_hbm(ctx.tdma)
'''

_ON_A_PAIR = _HEAD + '''
@device(chip=1)
def pair_reduce(ctx: Context, x: HbmTensor[i32, Chip, m("X, Q, B")],
                y: HbmTensor[i32, Chip, m("X, Q, B")]) -> HbmTensor[i32, Chip, m("X, B")]:
    x = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("Q, B")])
    y = y.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("Q, B")])
    z = (ctx.main.begin_interleaved(x.view(), y.view(), m("I")).fetch(m("Q, I"), m("B"))
         .collect(m("Q, I"), m("B # 8")).vector_init()
         .vector_intra_slice_unzip(m("I"), m("Q, 1 # 2"), m("Q"))
         .vector_intra_slice_reduce(m("Q"), m("1"), m("B"), IntraSliceReduceOpI32.MIN)
         .vector_fxp_zip(FxpBinaryOp.ADD_FXP)
         .vector_final().commit_trim(m("B")).commit())
    return z.to_hbm(ctx.tdma)
'''


_VRF = _HEAD + '''
axes(A=4, F=32)

@device(chip=1)
def zipped_vrf(ctx: Context, x: HbmTensor[i32, Chip, m("I, A, F")], w: HbmTensor[i32, Chip, m("F")]) -> HbmTensor[i32, Chip, m("F")]:
    w = w.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("1 # 256"), m("F")])
    w = ctx.sub.begin(w.view()).fetch(m("F / 8"), m("F % 8")).collect(m("F / 8"), m("F % 8")).to_vrf(m("F"))
    x = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("1 # 256"), m("I, A, F")])
    z = (ctx.main.begin(x.view()).fetch(m("A, F / 8, I"), m("F % 8")).collect(m("A, F / 8, I"), m("F % 8"))
         .vector_init().vector_intra_slice_unzip(m("I"), m("A, F / 8, 1 # 2"), m("A, F / 8"))
         .vector_fxp(FxpBinaryOp.MUL_INT, w, 5)
         .vector_fxp_zip(FxpBinaryOp.ADD_FXP)
         .vector_narrow_split(m("A, F / 8, F / 4 % 2"), m("F % 4"))
         .vector_intra_slice_reduce(m("A"), m("F / 8, F / 4 % 2"), m("F % 4"), IntraSliceReduceOpI32.MAX)
         .vector_widen_concat(m("F / 8"), m("F % 8")).vector_final().commit_trim(m("F % 8")).commit())
    return z.to_hbm(ctx.tdma)
'''


def _kernel(tmp_path, src, name, **fields):
    path = tmp_path / f"{name}.py"
    path.write_text(src.format(**fields) if fields else src)
    return runpy.run_path(str(path))[name]


def _ints(lo, hi, shape, seed):
    rng = np.random.default_rng(seed)
    return tuple(rng.integers(lo, hi, shape, dtype=np.int32) for _ in range(2))


def _line(src, text):
    return next(i for i, t in enumerate(src.splitlines(), 1) if text in t)


def _refused_at_the_reduce(kernel, src):
    (d, *_) = npu_opt.check(kernel).diagnostics
    assert d.code == "PAIR-REDUCE-1", d.render()
    assert d.line == _line(src, "vector_intra_slice_reduce")
    assert "group condition" in d.render() and "pass of its own" in d.render()
    return d


def test_a_reduce_after_the_zip_is_refused_at_its_line(tmp_path):
    d = _refused_at_the_reduce(_kernel(tmp_path, _MIN, "zipped_min", split=False), _MIN.format(split=False))
    assert "the stream a zip merged" in d.render()


def test_the_reduce_in_a_pass_of_its_own_still_compiles_and_runs(tmp_path):
    """What PAIR-REDUCE-1 says to write: the zipped stream committed, then min over R (10 of 16
    time steps live) of x + y in a second pass; positive values, so a padding cell folded in
    (0) would show."""
    x, y = _ints(1, 1000, (256, 10, 4), 4)
    two, text = both_backends(_kernel(tmp_path, _MIN, "zipped_min", split=True), (x, y))
    assert text.count("program ") == 2
    assert "unit=INTRA_REDUCE_I32, op=MIN, arg=0" in text  # a `vector` record step: no side=MERGED
    np.testing.assert_array_equal(two, (x + y).min(axis=1))


def test_a_tree_reduce_after_a_moded_zip_is_refused(tmp_path):
    _refused_at_the_reduce(_kernel(tmp_path, _TREE, "zipped_tree"), _TREE)


@pytest.mark.parametrize("op", ["ADD", "MAX"])
def test_a_float_reduce_after_the_zip_is_refused(tmp_path, op):
    src = _FLOAT.format(tag=op.lower(), op=op)
    _refused_at_the_reduce(_kernel(tmp_path, _FLOAT, f"zipped_{op.lower()}", tag=op.lower(), op=op), src)


def test_a_reduce_after_a_group_read_the_vrf_is_refused(tmp_path):
    _refused_at_the_reduce(_kernel(tmp_path, _VRF, "zipped_vrf"), _VRF)


def test_a_pair_offers_no_reduce_before_its_zip(tmp_path):
    d = _refused_at_the_reduce(_kernel(tmp_path, _ON_A_PAIR, "pair_reduce"), _ON_A_PAIR)
    assert "on a pair" in d.render()


def test_a_reduce_record_verifies_and_its_damage_is_vpair_4():
    good, _ = _reducing(REDUCE_MIN)()
    assert good.first_failure(rngd(), None) is None
    bad, _ = _reducing(REDUCE_MIN, out_time="A")()
    assert bad.first_failure(rngd(), None).code == "VPAIR-4"


@pytest.mark.parametrize("time", ["A # 16"])
def test_a_padded_reduce_record_needs_its_counts(time):
    from tu_ops.valid_count import reduce_vcg
    import attrs

    bad, _ = _reducing(REDUCE_MIN, time=time)()
    assert "carries no vcg=" in bad.first_failure(rngd(), None).message
    counted = attrs.evolve(REDUCE_MIN, vcg=reduce_vcg(bad.input_type.slice, bad.split_time,
                                                      bad.input_type.packet.resize(4).normalize(), "A"))
    good, _ = _reducing(counted, time=time)()
    assert good.first_failure(rngd(), None) is None


def test_a_type_1_note_on_a_pair_does_not_list_the_reduce():
    from tests.vector_pair.kernels import pair_kernel
    from npu_opt import i32

    (d, *_) = npu_opt.check(pair_kernel(i32, [])).diagnostics  # a pair cannot reach vector_final
    assert d.code == "TYPE-1" and "vector_clip_zip" in d.render(), d.render()
    assert "vector_intra_slice_reduce" not in d.render()
