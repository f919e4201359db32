"""The LOWER-3 regression matrix: every (element_type, collect_flits, dest kind) that a
trace-valid kernel can reach lowers to ops whose verifiers accept them, including the
reference's v0.3 failure (RawInt8, Flit2, TRF_LOAD) and (RawInt8, Flit2, CONTRACT_OUTER).
Combinations no trace-valid kernel reaches are documented by tests that show why."""

from __future__ import annotations

import attrs
import pytest

from backends.npu import lower_kernel
from ir.errors import CompileError
from tests.lowering.kernels import DTYPES as D
from tests.lowering.kernels import cast_kernel, commit_kernel, contract_kernel, transpose_engine_kernel, trf_kernel
from npu_opt import ClipBinaryOpF32, ClipBinaryOpI32, Cmp, TagMode
from tests.vector.kernels import chain_kernel
from tests.vector_pair.kernels import pair_kernel, tagged_kernel
from tu_ops import OP_CLASSES, CollectFlits, ConversionKind, DestKind, FeedElementType, rngd
from tests.vrf.kernels import rf_kernel
from npu_opt import FxpBinaryOp
from npu_opt import InterSliceReduceOpF32, InterSliceReduceOpI32, f32, i32
from tests.inter.kernels import inter_first

E, F1, F2 = FeedElementType, CollectFlits.Flit1, CollectFlits.Flit2
TRF, OUTER, CAST, COMMIT = DestKind.TRF_LOAD, DestKind.CONTRACT_OUTER, DestKind.CAST, DestKind.COMMIT
TRANSPOSE = DestKind.TRANSPOSE
VECTOR = DestKind.VECTOR
VECTOR_PAIR = DestKind.VECTOR_PAIR
VECTOR_BRANCH = DestKind.VECTOR_BRANCH
_LESS0 = TagMode.COMPARISON([Cmp.LESS(0), Cmp.FALSE, Cmp.FALSE, Cmp.FALSE])
VRF = DestKind.VRF_LOAD
INTER = DestKind.INTER_SLICE_REDUCE


def _zp(d: str, z: int):
    return [("fetch_zero_point_sub", D[d], z)]


def _cast(d: str):
    return [("fetch_cast", D[d])]


def _lut(d: str):
    return [("fetch_table_lookup", D[d])]


# (case id, kernel factory, the feed combination the case exists for)
CASES = [
    *[(f"trf-{d}-{rb}", lambda d=d, rb=rb: trf_kernel(D[d], row_bytes=rb), (et, fl, TRF))
      for d, et in [("bf16", E.BF16), ("i8", E.RawInt8), ("i4", E.RawInt4), ("f8e4m3", E.F8E4M3),
                    ("f8e5m2", E.F8E5M2)]
      for rb, fl in [(32, F1), (64, F2)]],
    ("trf-i8-main-flit2", lambda: trf_kernel(D["i8"], row_bytes=128, lanes=8, context="main"), (E.RawInt8, F2, TRF)),
    ("trf-i8-identity-cast", lambda: trf_kernel(D["i8"], conv=_cast("i8"), row_bytes=64), (E.RawInt8, F2, TRF)),
    ("trf-f32-to-bf16", lambda: trf_kernel(D["f32"], conv=_cast("bf16"), after=D["bf16"]), (E.BF16, F1, TRF)),
    ("trf-f4-lut-f8e4m3", lambda: trf_kernel(D["f4e2m1"], conv=_lut("f8e4m3"), after=D["f8e4m3"], row_bytes=64,
                                             context="main"), (E.F8E4M3, F2, TRF)),
    ("trf-f4-lut-f8e5m2", lambda: trf_kernel(D["f4e2m1"], conv=_lut("f8e5m2"), after=D["f8e5m2"], context="main"),
     (E.F8E5M2, F1, TRF)),
    ("trf-f8-lut-bf16", lambda: trf_kernel(D["f8e4m3"], conv=_lut("bf16"), after=D["bf16"], row_bytes=64,
                                           context="main"), (E.BF16, F2, TRF)),
    *[(f"outer-{name}-pack{pack}", lambda s=s, w=w, conv=conv, after=after, pack=pack:
       contract_kernel(D[s], D[w], pack, conv=conv, after=after and D[after]), (et, F1 if pack == 1 else F2, OUTER))
      for name, s, w, conv, after, et in [
          ("bf16", "bf16", "bf16", (), None, E.BF16), ("i8", "i8", "i8", (), None, E.RawInt8),
          ("i4", "i4", "i4", (), None, E.RawInt4), ("i9", "i8", "i8", _zp("i9", 3), "i9", E.Int9),
          ("i5", "i4", "i4", _zp("i5", -2), "i5", E.Int5), ("f8e4m3", "f8e4m3", "f8e4m3", (), None, E.F8E4M3),
          ("f8e5m2", "f8e5m2", "f8e5m2", (), None, E.F8E5M2)]
      for pack in (1, 2)],
    ("outer-i8-x-i4", lambda: contract_kernel(D["i4"], D["i4"], 2, conv=_zp("i5", 7), after=D["i5"]),
     (E.Int5, F2, OUTER)),
    ("outer-f8-lut-bf16", lambda: contract_kernel(D["f8e4m3"], D["bf16"], 2, conv=_lut("bf16"), after=D["bf16"]),
     (E.BF16, F2, OUTER)),
    ("cast-i32", lambda: cast_kernel(D["i8"], D["i32"], D["i8"]), (E.I32, F1, CAST)),
    ("cast-i32-to-i16", lambda: cast_kernel(D["i16"], D["i32"], D["i16"]), (E.I32, F1, CAST)),
    ("cast-f32", lambda: cast_kernel(D["bf16"], D["f32"], D["bf16"]), (E.F32, F1, CAST)),
    ("cast-f32-to-f8", lambda: cast_kernel(D["f8e5m2"], D["f32"], D["f8e4m3"]), (E.F32, F1, CAST)),
    *[(f"commit-{d}-{ctx}", lambda d=d, ctx=ctx: commit_kernel(D[d], context=ctx), (et, F1, COMMIT))
      for d, et in [("bf16", E.BF16), ("f32", E.F32), ("i32", E.I32), ("i16", E.I16), ("u8", E.U8),
                    ("i8", E.RawInt8), ("i4", E.RawInt4), ("f8e4m3", E.F8E4M3), ("f8e5m2", E.F8E5M2),
                    ("f4e2m1", E.F4E2M1)]
      for ctx in ("main", "sub")],
    *[(f"commit-{s}-to-{t}-{ctx}", lambda s=s, t=t, ctx=ctx: commit_kernel(D[s], conv=_cast(t), after=D[t],
                                                                            context=ctx), (et, F1, COMMIT))
      for s, t, ctx, et in [("i8", "i32", "main", E.I32), ("i8", "i32", "sub", E.I32), ("i16", "i32", "main", E.I32),
                            ("i4", "i32", "main", E.I32), ("bf16", "f32", "main", E.F32),
                            ("f8e4m3", "f32", "main", E.F32), ("f8e5m2", "f32", "main", E.F32),
                            ("f32", "bf16", "main", E.BF16), ("f32", "bf16", "sub", E.BF16)]],
    ("commit-lut-f4-f8e4m3", lambda: commit_kernel(D["f4e2m1"], conv=_lut("f8e4m3"), after=D["f8e4m3"]),
     (E.F8E4M3, F1, COMMIT)),
    ("commit-lut-f8e5m2-bf16", lambda: commit_kernel(D["f8e5m2"], conv=_lut("bf16"), after=D["bf16"]),
     (E.BF16, F1, COMMIT)),
    ("commit-lut-then-cast", lambda: commit_kernel(D["f8e4m3"], conv=_lut("bf16") + _cast("f32"), after=D["f32"]),
     (E.F32, F1, COMMIT)),
    *[(f"transpose-{d}-{ctx}", lambda d=d, ctx=ctx: transpose_engine_kernel(D[d], context=ctx), (et, F1, TRANSPOSE))
      for d, et, ctx in [("bf16", E.BF16, "main"), ("f32", E.F32, "sub"), ("i32", E.I32, "main"),
                         ("i16", E.I16, "main"), ("u8", E.U8, "sub"), ("i8", E.RawInt8, "main"),
                         ("i4", E.RawInt4, "main"), ("f8e4m3", E.F8E4M3, "main"), ("f8e5m2", E.F8E5M2, "sub"),
                         ("f4e2m1", E.F4E2M1, "main")]],
    ("vector-i32", lambda: chain_kernel(D["i32"], []), (E.I32, F1, VECTOR)),
    ("vector-f32", lambda: chain_kernel(D["f32"], []), (E.F32, F1, VECTOR)),
    ("vector-pair-i32", lambda: pair_kernel(D["i32"], [("vector_clip_zip", ClipBinaryOpI32.ADD_FXP)]),
     (E.I32, F1, VECTOR_PAIR)),
    ("vector-pair-f32", lambda: pair_kernel(D["f32"], [("vector_clip_zip", ClipBinaryOpF32.ADD)]),
     (E.F32, F1, VECTOR_PAIR)),
    ("vector-branch-i32", lambda: tagged_kernel(D["i32"], _LESS0, []), (E.I32, F1, VECTOR_BRANCH)),
    ("vector-branch-f32", lambda: tagged_kernel(D["f32"], TagMode.COMPARISON([Cmp.LESS(0.0)] + [Cmp.FALSE] * 3), []),
     (E.F32, F1, VECTOR_BRANCH)),
    ("vrf-i32", lambda: rf_kernel(D["i32"], "vector_fxp", FxpBinaryOp.ADD_FXP), (E.I32, F1, VRF)),
    ("vrf-f32", lambda: rf_kernel(D["f32"], "vector_clip", ClipBinaryOpF32.ADD), (E.F32, F1, VRF)),
    ("inter-i32", lambda: inter_first(i32, InterSliceReduceOpI32.ADD_SAT), (E.I32, F1, INTER)),
    ("inter-f32", lambda: inter_first(f32, InterSliceReduceOpF32.MUL), (E.F32, F1, INTER)),
]


def _combos(lowered) -> set:
    return {(op.element_type, op.collect_flits, op.dest.kind) for op in lowered.ops() if op.MNEMONIC == "feed_buffer"}


@pytest.mark.parametrize("case,factory,combo", CASES, ids=[c[0] for c in CASES])
def test_combination_lowers_and_verifies(case, factory, combo):
    lowered = lower_kernel(factory())
    lowered.verify(rngd())
    assert combo in _combos(lowered)
    for op in lowered.ops():
        op.verify(rngd(), lowered.context())
        assert op.loc is not None


# FEED-3: a Flit2 delivery exists only into a TRF load (64-byte bank pairs) or a packed
# contraction; CAST, COMMIT, TRANSPOSE and the Vector Engine consume one flit per step, so no
# kernel reaches Flit2 there.
UNREACHABLE_FLITS = {CAST: {F2}, COMMIT: {F2}, TRANSPOSE: {F2}, VECTOR: {F2}, VECTOR_PAIR: {F2}, VECTOR_BRANCH: {F2},
                     TRF: set(),
                     OUTER: set(), VRF: {F2}, INTER: {F2}}


def reachable() -> set:
    assert OP_CLASSES  # every record module loaded: every kind declared
    return {(et, fl, kind) for kind in DestKind for et in kind.op_class.FEED_ELEMENTS
            for fl in (F1, F2) if fl not in UNREACHABLE_FLITS[kind]}


def test_the_matrix_covers_every_reachable_combination():
    covered = {c[2] for c in CASES}
    assert covered == reachable()
    assert len(reachable()) == 10 + 14 + 2 + 10 + 10 + 2 + 2 + 2 + 2 + 2
    assert (E.RawInt8, F2, TRF) in covered and (E.RawInt8, F2, OUTER) in covered


def test_the_covered_combination_is_the_one_lowered():
    """Each case's feed combination is computed by the lowering, not assumed."""
    seen = set()
    for _, factory, _ in CASES:
        seen |= _combos(lower_kernel(factory()))
    assert seen == reachable()


@pytest.mark.parametrize("kind", [CAST, COMMIT])
def test_flit2_into_cast_or_commit_is_unreachable(kind):
    """Documented: FEED-3 refuses Flit2 outside TRF_LOAD / CONTRACT_OUTER, and no stage
    after `collect` other than `to_trf` and `contract_outer` pairs flits."""
    factory = (lambda: cast_kernel(D["i8"], D["i32"], D["i8"])) if kind is CAST else (lambda: commit_kernel(D["i8"]))
    lowered = lower_kernel(factory())
    feed = next(op for op in lowered.ops() if op.MNEMONIC == "feed_buffer")
    assert feed.collect_flits is F1
    forced = attrs.evolve(feed, collect_flits=F2, beats=feed.beats // 2)
    assert forced.first_failure(rngd()).code == "FEED-3"


@pytest.mark.parametrize("staging", ["i9", "i5"])
def test_staging_types_reach_only_contract_outer(staging):
    """Documented: (Int9 | Int5, *, TRF_LOAD / COMMIT / CAST) is not in FEED-2 because
    TYPE-2 refuses every other consumer of an i5/i9 stream at trace time."""
    src = "i8" if staging == "i9" else "i4"
    kernel = trf_kernel(D[src], conv=_zp(staging, 1), after=D[staging], row_bytes=64, context="main")
    codes = [d.code for d in kernel.trace().errors]
    assert codes == ["TYPE-2"]
    with pytest.raises(CompileError) as info:
        lower_kernel(kernel)
    assert info.value.diagnostics[0].code == "TYPE-2"
    assert all(FeedElementType.of(D[staging]) not in k.op_class.FEED_ELEMENTS for k in (TRF, CAST, COMMIT))


def test_conversions_are_recorded_lookup_first():
    lowered = lower_kernel(commit_kernel(D["f8e4m3"], conv=_lut("bf16") + _cast("f32"), after=D["f32"]))
    feed = next(op for op in lowered.ops() if op.MNEMONIC == "feed_buffer")
    assert [c.kind for c in feed.conversions] == [ConversionKind.LUT_F8E4M3_BF16, ConversionKind.BF16_TO_F32]
    identity = lower_kernel(trf_kernel(D["i8"], conv=_cast("i8"), row_bytes=64))
    assert next(op for op in identity.ops() if op.MNEMONIC == "feed_buffer").conversions == ()


def test_read_elems_follow_the_context_and_widening():
    sub = next(op for op in lower_kernel(commit_kernel(D["bf16"], context="sub")).ops() if op.MNEMONIC == "feed_buffer")
    assert sub.shapes[0].read_elems == 4                         # 8 bytes of bf16
    wide = next(op for op in lower_kernel(commit_kernel(D["i4"], conv=_cast("i32"), after=D["i32"])).ops()
                if op.MNEMONIC == "feed_buffer")
    assert wide.shapes[0].read_elems * 4 // 8 * 8 <= 32           # i4 -> i32 widens 8x
    assert wide.shapes[0].read_elems == 8
