"""Numpy and ml_dtypes scalars are trace-time numbers (npu_opt/scalars.py): a `memset`
fill and a tile's start and length take them as the Python numbers they hold, through
every layer (trace, cpu, lowering, VISA text, interpreter), and a fill that is not a number
at all is VIEW-11 with a message that says so."""

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from npu_opt import *
from npu_opt.scalars import plain_number
from tests.agree import both_backends

axes(R=256, W=64)

Chip = m("1")
Cluster = m("1 # 2")


def _filler(dtype, value, start):
    """A kernel that fills the 16 columns from `start` of an (R, W) tensor with `value`."""
    @device(chip=1)
    def fill_band(ctx: Context, x: HbmTensor[dtype, Chip, m("R, W")]) -> HbmTensor[dtype, Chip, m("R, W")]:
        d = x.to_dm(ctx.tdma, DmTensor[dtype, Chip, Cluster, m("R"), m("W")])
        d.view_mut().tile(m("W"), np.int32(16), m("W = 16 #{!} 64"), start).memset(ctx.sub, value)
        return d.to_hbm(ctx.tdma)
    return fill_band


FILLS = [
    # dtype, fill, numpy dtype of the host array, the fill's bit pattern in the record
    (f32, np.float32(-0.75), np.float32, 0xBF400000),
    (bf16, ml_dtypes.bfloat16(2.5), ml_dtypes.bfloat16, 0x4020),
    (i16, np.int16(-300), np.int16, 0xFED4),
    (i8, np.uint8(100), np.int8, 100),
    (f8e4m3, ml_dtypes.float8_e4m3fn(-2.0), ml_dtypes.float8_e4m3fn, 0xC0),
]


@pytest.mark.parametrize(("dtype", "value", "host", "bits"), FILLS, ids=[str(f[0]) for f in FILLS])
def test_a_numpy_scalar_fill_is_the_number_it_holds(dtype, value, host, bits):
    kernel = _filler(dtype, value, np.int64(32))
    x = (np.arange(256 * 64) % 7).astype(np.float32).reshape(256, 64).astype(host)
    want = x.copy()
    want[:, 32:48] = np.asarray(float(value)).astype(host)
    cpu, text = both_backends(kernel, x, f"value={bits} ")
    np.testing.assert_array_equal(cpu.view(np.uint8), want.view(np.uint8))


def test_a_numpy_fill_and_the_literal_compile_to_the_same_artifact():
    as_numpy = npu_opt.compile(_filler(bf16, ml_dtypes.bfloat16(2.5), np.int64(16))).text
    as_literal = npu_opt.compile(_filler(bf16, 2.5, 16)).text
    strip = lambda t: [line.split(" ; loc")[0] for line in t.splitlines() if line.startswith("%")]  # noqa: E731
    assert strip(as_numpy) == strip(as_literal)


@device(chip=1)
def reverse_bands(ctx: Context, x: HbmTensor[i32, Chip, m("R, W")]) -> HbmTensor[i32, Chip, m("R, W")]:
    d = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("R"), m("W")])
    out = DmTensor[i32, Chip, Cluster, m("R"), m("W")].new()
    for band in np.arange(4):                       # np.int64 loop variables
        src = d.view().tile(m("W"), 16, m("W = 16 # 64"), band * 16)
        src.to_dm_view(ctx.tdma, out.view_mut().tile(m("W"), 16, m("W = 16 #{!} 64"), (3 - band) * 16))
    return out.to_hbm(ctx.tdma)


def test_tile_starts_from_a_loop_over_np_arange():
    x = np.arange(256 * 64, dtype=np.int32).reshape(256, 64)
    want = x.reshape(256, 4, 16)[:, ::-1, :].reshape(256, 64)
    cpu, _ = both_backends(reverse_bands, x)
    np.testing.assert_array_equal(cpu, want)


@pytest.mark.parametrize(("dtype", "value", "says"), [
    (f32, np.bool_(True), "np.True_ (bool) is not a number known while tracing"),
    (f32, True, "(bool) is not a number known while tracing"),
    (f32, "1.0", "(str) is not a number known while tracing"),
    (f32, np.complex64(1), "(complex64) is not a number known while tracing"),
    (i8, np.float32(1.0), "the fill value 1.0 is not a value of i8"),
    (i8, np.int64(200), "the fill value 200 is not a value of i8"),
    (bf16, np.float64(1e300), "is not a value of bf16"),
])
def test_fills_that_are_refused(dtype, value, says):
    first = npu_opt.check(_filler(dtype, value, 0)).diagnostics[0]
    assert first.code == "VIEW-11" and says in first.message, first.render()
    assert first.line == _filler.__code__.co_firstlineno + 5


def test_a_numpy_float_start_is_still_refused():
    first = npu_opt.check(_filler(i8, 1, np.float64(16.0))).diagnostics[0]
    assert first.code == "VIEW-8" and "not float" in first.message


@pytest.mark.parametrize(("value", "plain"), [
    (np.int64(-3), -3), (np.uint16(65535), 65535), (np.float16(0.5), 0.5),
    (ml_dtypes.bfloat16(-1.5), -1.5), (ml_dtypes.int4(-8), -8), (ml_dtypes.float4_e2m1fn(6.0), 6.0),
    (7, 7), (2.25, 2.25),
])
def test_plain_number(value, plain):
    got = plain_number(value)
    assert got == plain and type(got) is type(plain)


@pytest.mark.parametrize("value", [np.bool_(False), np.complex128(1j), np.str_("3"), np.datetime64("2026-01-01"), None])
def test_plain_number_leaves_non_numbers(value):
    assert plain_number(value) is value
