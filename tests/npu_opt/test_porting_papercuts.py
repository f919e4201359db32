"""Porting papercuts of furiosa-opt code (#27 item 8): `reshape` given the whole target type,
as `to_dm` takes it, and the reference's constant constructors `bf16.from_f32(3.0)`,
`i4.from_i32(-1)`, ... with their range checks (DTYPE-CONST at the user's line)."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from ir.constants import CONSTRUCTORS
from ir.errors import NpuOptError
from npu_opt import *
from tests.npu_opt.test_typestate import line_of
from tests.npu_opt.test_views import both

axes(A=64, B=32, G=8, J=8, E=64)

Chip = m("1")
Cluster = m("1 # 2")
X = np.random.default_rng(27).integers(-128, 128, (64, 32)).astype(np.int8)


# --- reshape(TensorType[...]) ------------------------------------------------------------------


@device(chip=1)
def hbm_by_type(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("A / 2, A % 2, B")]:
    v = x.reshape(HbmTensor[i8, Chip, m("A / 2, A % 2, B")])
    return v.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("A / 2, A % 2, B")])


@device(chip=1)
def dm_by_type(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("J, G, B")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A"), m("B")])
    v = d.reshape(DmTensor[i8, Chip, Cluster, m("G, J"), m("B")])
    out = ctx.main.begin(v).fetch(m("1"), m("B")).collect(m("B / 32"), m("B % 32")).commit_trim(m("B % 32")).commit(m("B"))
    return out.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("J, G, B")])


@device(chip=1)
def dm_by_levels(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("J, G, B")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A"), m("B")])
    v = d.reshape(Chip, Cluster, m("G, J"), m("B"))
    out = ctx.main.begin(v).fetch(m("1"), m("B")).collect(m("B / 32"), m("B % 32")).commit_trim(m("B % 32")).commit(m("B"))
    return out.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("J, G, B")])


@device(chip=1)
def other_dtype(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> None:
    d = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A"), m("B")])
    d.reshape(DmTensor[bf16, Chip, Cluster, m("G, J"), m("B")])   # <-- reshape keeps i8


@device(chip=1)
def other_kind(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> None:
    x.reshape(DmTensor[i8, Chip, Cluster, m("A"), m("B")])   # <-- an HBM tensor stays HBM


def test_an_hbm_reshape_takes_the_target_type():
    assert np.array_equal(both(hbm_by_type, X), X.reshape(32, 2, 32))


def test_a_dm_reshape_by_type_is_the_reshape_by_levels():
    assert dm_by_type.trace().kernel.text().replace("dm_by_type", "k") == \
        dm_by_levels.trace().kernel.text().replace("dm_by_levels", "k")
    assert np.array_equal(both(dm_by_type, X), X.reshape(8, 8, 32).transpose(1, 0, 2))


@pytest.mark.parametrize("kernel, says", [(other_dtype, "keeps the element type i8"),
                                          (other_kind, "keeps the kind of tensor")])
def test_a_target_type_of_another_dtype_or_kind_is_type_6_at_the_line(kernel, says):
    (d,) = kernel.trace().diagnostics
    assert d.code == "TYPE-6" and says in d.message
    assert d.line == line_of(kernel, "# <--")


# --- constant constructors ---------------------------------------------------------------------

# (constructor call, the value it holds), worked out by hand from each format's layout.
HELD = [
    (lambda: bf16.from_f32(3.0), 3.0),
    (lambda: bf16.from_f32(3.1), 3.09375),        # 0x40466666: the dropped half 0x6666 rounds down
    (lambda: bf16.from_f32(1.00390625), 1.0),     # exactly halfway (0x3F808000), to even 0x3F80
    (lambda: bf16.from_f32(1.01171875), 1.015625),  # halfway above an odd 0x3F81: up to 0x3F82
    (lambda: bf16.from_bits(0x4040), 3.0),
    (lambda: bf16.from_bits(0xC2F7), -123.5),
    (lambda: f8e4m3.from_f32(300.0), 288.0),      # steps of 32 between 256 and 448
    (lambda: f8e4m3.from_f32(460.0), 448.0),      # below the 464 midpoint: the largest value
    (lambda: f8e5m2.from_f32(1000.5), 1024.0),    # steps of 128 between 512 and 1024
    (lambda: f4e2m1.from_f32(2.6), 3.0),
    (lambda: f4e2m1.from_f32(-0.25), 0.0),        # +0 (code 0) and -0.5 tie: the lowest code
    (lambda: f4e2m1.from_bits(0xF), -6.0),
    (lambda: i4.from_i32(-1), -1),
    (lambda: i4.from_i32(7), 7),
    (lambda: i5.from_i32(-16), -16),
    (lambda: i9.from_i32(255), 255),
]


@pytest.mark.parametrize("call, held", HELD)
def test_a_constructor_gives_the_value_its_type_holds(call, held):
    got = call()
    assert got == held and type(got) is type(held)


def test_bf16_agrees_with_ml_dtypes_on_ordinary_and_subnormal_values():
    import ml_dtypes

    for v in np.random.default_rng(3).standard_normal(200).astype(np.float32).tolist() + [1e-40, -3e-39]:
        assert bf16.from_f32(v) == float(ml_dtypes.bfloat16(np.float32(v))), v


REFUSED = [
    (lambda: i4.from_i32(9), "low 4 bits, -7"),
    (lambda: i4.from_i32(-9), "holds -8 ... 7"),
    (lambda: i9.from_i32(256), "holds -256 ... 255"),
    (lambda: i4.from_i32(2**31), "not an i32"),
    (lambda: i4.from_i32(1.0), "takes an int"),
    (lambda: bf16.from_f32(3.4e38), "overflows bf16"),
    (lambda: bf16.from_f32(1e39), "not an f32"),
    (lambda: f8e4m3.from_f32(465.0), "largest f8e4m3 (448)"),
    (lambda: f8e4m3.from_f32(float("inf")), "no infinity"),
    (lambda: f8e5m2.from_f32(61440.0), "overflows f8e5m2"),
    (lambda: f4e2m1.from_f32(7.5), "largest f4e2m1 (6)"),
    (lambda: f4e2m1.from_f32(float("nan")), "no infinity or NaN"),
    (lambda: f4e2m1.from_bits(16), "0 ... 0xf"),
    (lambda: bf16.from_bits(-1), "0 ... 0xffff"),
    (lambda: bf16.from_f32(True), "takes a number"),
    (lambda: i8.from_i32(3), "plain Python number"),
    (lambda: f32.from_f32(3.0), "plain Python number"),
    (lambda: i4.from_f32(3.0), "plain Python number"),
]


@pytest.mark.parametrize("call, says", REFUSED)
def test_a_value_the_type_cannot_hold_is_dtype_const(call, says):
    with pytest.raises(NpuOptError) as info:
        call()
    assert info.value.code == "DTYPE-CONST" and says in str(info.value), str(info.value)


def test_the_constructors_are_the_references():
    for dtype in (bf16, f8e4m3, f8e5m2, f4e2m1, i4, i5, i9):
        assert CONSTRUCTORS[dtype.value]
    assert {d for d, names in CONSTRUCTORS.items() if "from_i32" in names} == {"i4", "i5", "i9"}


@device(chip=1)
def plus_nibble(ctx: Context, x: HbmTensor[i32, Chip, m("A, E")]) -> HbmTensor[i32, Chip, m("A, E")]:
    d = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("1 # 256"), m("A, E")])
    y = (ctx.main.begin(d.view()).fetch(m("A, E / 8"), m("E % 8")).collect(m("A, E / 8"), m("E % 8"))
         .vector_init().vector_intra_slice_tag(TagMode.ZERO)
         .vector_fxp(FxpBinaryOp.ADD_FXP, i4.from_i32(-3))
         .vector_final().commit_trim(m("E % 8")).commit())
    return y.to_hbm(ctx.tdma)


@device(chip=1)
def plus_too_much(ctx: Context, x: HbmTensor[i32, Chip, m("A, E")]) -> HbmTensor[i32, Chip, m("A, E")]:
    d = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("1 # 256"), m("A, E")])
    y = (ctx.main.begin(d.view()).fetch(m("A, E / 8"), m("E % 8")).collect(m("A, E / 8"), m("E % 8"))
         .vector_init().vector_intra_slice_tag(TagMode.ZERO)
         .vector_fxp(FxpBinaryOp.ADD_FXP, i4.from_i32(12))   # <-- DTYPE-CONST
         .vector_final().commit_trim(m("E % 8")).commit())
    return y.to_hbm(ctx.tdma)


def test_a_constant_works_in_a_kernel_and_a_bad_one_is_refused_at_its_line():
    x = np.random.default_rng(8).integers(-1000, 1000, (64, 64)).astype(np.int32)
    assert np.array_equal(npu_opt.run(plus_nibble, x, backend="cpu"), x - 3)
    (d,) = plus_too_much.trace().diagnostics
    assert d.code == "DTYPE-CONST" and d.line == line_of(plus_too_much, "# <--")
