"""The Transpose Engine end to end: our own kernels check, run on cpu against numpy oracles
written from the engine's description (rows of one tile become columns), compile, verify
as VISA text, and the interpreter gives the cpu backend's bits; refused kernels are
reported at the user's `transpose` line with their rule ID."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from npu_opt.compile_api import compile_kernel
from npu_opt.run import run
from tests.kernel_files import example, load_source, marked_line
from visa import parse_visa
from visa.printer import print_artifact
from visa.interp import execute
from visa.verify import verify_text

HEAD = '''from npu_opt import *

axes({axes})

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")
'''

# i8 tile x[R, K] -> y[K, R]: one packet per row, 8 rows per transposed packet.
SQUARE_I8 = HEAD.format(axes="R=8, K=8") + '''
@device(chip=1)
def square_i8(ctx: Context, x: HbmTensor[i8, Chip, m("R, K")]) -> HbmTensor[i8, Chip, m("K, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("R, K")])
    y = (ctx.main.begin(x.view()).fetch(m("R"), m("K")).collect(m("R"), m("K # 32"))
         .transpose(m("K"), m("R # 32"))
         .commit_trim(m("R")).commit(m("K, R")))
    return y.to_hbm(ctx.tdma)
'''

# The same tile through the sub context's Tensor Unit.
SQUARE_I8_SUB = SQUARE_I8.replace("square_i8", "square_i8_sub").replace("ctx.main.begin", "ctx.sub.begin")

# u8 x[G, R, J] with J = 32 columns: 4 packets per transposed row, G tiles in order.
WIDE_U8 = HEAD.format(axes="G=3, R=8, J=32") + '''
@device(chip=1)
def wide_u8(ctx: Context, x: HbmTensor[u8, Chip, m("G, R, J")]) -> HbmTensor[u8, Chip, m("G, J, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[u8, Chip, Cluster, Slice, m("G, R, J")])
    y = (ctx.main.begin(x.view()).fetch(m("G, R, J / 8"), m("J % 8")).collect(m("G, R, J / 8"), m("J % 8 # 32"))
         .transpose(m("G, J"), m("R # 32"))
         .commit_trim(m("R")).commit(m("G, J, R")))
    return y.to_hbm(ctx.tdma)
'''

# The result of a contraction, y[A] = x[A, E] . v[E] in i32, leaves two values per packet:
# the transpose turns the A % 2 time steps into a packet of two rows, dropping the seven
# padding columns of each row.
PACKED_DOT = HEAD.format(axes="A=16, E=32") + '''
@device(chip=1)
def packed_dot(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
               v: HbmTensor[i8, Chip, m("E")]) -> HbmTensor[i32, Chip, m("A")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, E")])
    v = v.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("E")])
    v_trf = ctx.sub.begin(v.view()).fetch(m("1"), m("E")).collect(m("1"), m("E")).to_trf(m("1"), m("E"))
    y = (ctx.main.begin(x.view()).fetch(m("A"), m("E")).collect(m("A"), m("E"))
         .contract_outer(v_trf, m("A"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("1 # 8"), LaneMode.INTERLEAVED)
         .transpose(m("A / 2"), m("A % 2 # 8"))
         .commit_trim(m("A % 2")).commit(m("A")))
    return y.to_hbm(ctx.tdma)
'''

# The same contraction cast to bf16 first: bf16 rows hold 4 values.
CAST_DOT = HEAD.format(axes="A=16, E=32") + '''
@device(chip=1)
def cast_dot(ctx: Context, x: HbmTensor[bf16, Chip, m("A, E")],
             v: HbmTensor[bf16, Chip, m("E")]) -> HbmTensor[bf16, Chip, m("A")]:
    x = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("A, E")])
    v = v.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("E")])
    v_trf = ctx.sub.begin(v.view()).fetch(m("1"), m("E")).collect(m("E / 16"), m("E % 16")).to_trf(m("1"), m("E"))
    y = (ctx.main.begin(x.view()).fetch(m("A, E / 16"), m("E % 16")).collect(m("A, E / 16"), m("E % 16"))
         .contract_outer(v_trf, m("A"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("1 # 8"), LaneMode.INTERLEAVED)
         .cast(bf16, m("1 # 16"))
         .transpose(m("A / 4"), m("A % 4 # 16"))
         .commit_trim(m("A % 4")).commit(m("A")))
    return y.to_hbm(ctx.tdma)
'''

# After the Vector Engine: each slice adds 7 to two rows of eight i32, and the transpose
# packs the two rows of every column into one packet.
VECTOR_I32 = HEAD.format(axes="R=2, K=8") + '''
@device(chip=1)
def vector_i32(ctx: Context, x: HbmTensor[i32, Chip, m("R, K")]) -> HbmTensor[i32, Chip, m("K, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("R, K")])
    y = (ctx.main.begin(x.view()).fetch(m("R"), m("K")).collect(m("R"), m("K"))
         .vector_init().vector_intra_slice_tag(TagMode.ZERO).vector_fxp(FxpBinaryOp.ADD_FXP, 7).vector_final()
         .transpose(m("K"), m("R # 8"))
         .commit_trim(m("R")).commit(m("K, R")))
    return y.to_hbm(ctx.tdma)
'''

# A Vector Engine sum over E leaves one f32 per time step G; the transpose gathers the two
# sums into one packet.
VECTOR_SUM_F32 = HEAD.format(axes="G=2, E=24") + '''
@device(chip=1)
def vector_sum_f32(ctx: Context, x: HbmTensor[f32, Chip, m("G, E")]) -> HbmTensor[f32, Chip, m("G")]:
    x = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("G, E")])
    y = (ctx.main.begin(x.view()).fetch(m("G, E / 8"), m("E % 8")).collect(m("G, E / 8"), m("E % 8"))
         .vector_init().vector_intra_slice_tag(TagMode.ZERO)
         .vector_narrow_split(m("G, E / 4"), m("E % 4"))
         .vector_intra_slice_reduce(m("E"), m("G"), m("1 # 4"), IntraSliceReduceOpF32.ADD)
         .vector_widen_pad(m("1 # 8"))
         .vector_final()
         .transpose(m("1"), m("G # 8"))
         .commit_trim(m("G")).commit(m("G")))
    return y.to_hbm(ctx.tdma)
'''

ACCEPTED = {"square_i8": SQUARE_I8, "square_i8_sub": SQUARE_I8_SUB, "wide_u8": WIDE_U8,
            "packed_dot": PACKED_DOT, "cast_dot": CAST_DOT, "vector_i32": VECTOR_I32,
            "vector_sum_f32": VECTOR_SUM_F32}


def kernel(name: str):
    return getattr(load_source(ACCEPTED[name], name), name)


def _inputs(name: str, rng: np.random.Generator) -> list[np.ndarray]:
    if name.startswith("square_i8"):
        return [rng.integers(-128, 128, (8, 8), dtype=np.int8)]
    if name == "wide_u8":
        return [rng.integers(0, 256, (3, 8, 32), dtype=np.uint8)]
    if name == "packed_dot":
        return [rng.integers(-128, 128, (16, 32), dtype=np.int8), rng.integers(-128, 128, 32, dtype=np.int8)]
    if name == "vector_i32":
        return [rng.integers(-2**31, 2**31, (2, 8), dtype=np.int64).astype(np.int32)]
    if name == "vector_sum_f32":
        return [rng.integers(-64, 64, (2, 24)).astype(np.float32) / 8]
    return [rng.uniform(-1, 1, (16, 32)).astype(ml_dtypes.bfloat16), rng.uniform(-1, 1, 32).astype(ml_dtypes.bfloat16)]


def _oracle(name: str, arrays: list[np.ndarray]) -> np.ndarray:
    """What the kernel computes, from numpy alone."""
    if name.startswith("square_i8"):
        return arrays[0].T
    if name == "wide_u8":
        return np.swapaxes(arrays[0], 1, 2)
    if name == "packed_dot":
        return arrays[0].astype(np.int64) @ arrays[1].astype(np.int64)
    if name == "vector_i32":
        return ((arrays[0].astype(np.int64) + 7 + 2**31) % 2**32 - 2**31).T
    if name == "vector_sum_f32":
        return arrays[0].astype(np.float64).sum(axis=1)  # eighths: every partial sum is exact in f32
    return None  # bf16 sums: compared with a tolerance below


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_kernel_checks_runs_and_agrees_with_visa(name):
    k = kernel(name)
    assert npu_opt.check(k).diagnostics == ()
    arrays = _inputs(name, np.random.default_rng(len(name)))
    got = run(k, *arrays, backend="cpu")
    want = _oracle(name, arrays)
    if want is None:
        exact = arrays[0].astype(np.float64) @ arrays[1].astype(np.float64)
        np.testing.assert_allclose(np.asarray(got, np.float64), exact, rtol=2e-2, atol=2e-2)
    else:
        assert np.asarray(got).shape == want.shape
        as_ = np.float64 if want.dtype.kind == "f" else np.int64
        np.testing.assert_array_equal(np.asarray(got).astype(as_), want.astype(as_))
    outcome = compile_kernel(k)
    assert outcome.status == "ok", outcome.diagnostics
    assert " transpose in=" in outcome.text
    verify_text(outcome.text)
    assert print_artifact(parse_visa(outcome.text)) == outcome.text
    out = execute(parse_visa(outcome.text), arrays)
    assert out.dtype == got.dtype
    np.testing.assert_array_equal(np.asarray(out).view(np.uint8), np.asarray(got).view(np.uint8))


def test_transpose_record_carries_the_engine_parameters():
    text = compile_kernel(kernel("wide_u8")).text
    (line,) = [x for x in text.splitlines() if " transpose in=" in x]
    assert "in_rows=8 in_cols=32 out_rows=32 packets_per_col=4 valid_size_per_packet=8" in line
    feed = next(x for x in text.splitlines() if "feed_buffer" in x)
    assert "dest=(TRANSPOSE, " in feed


def test_shipped_example_transposes_every_slice_tile():
    k = example("transpose_tile")
    x = np.random.default_rng(7).uniform(-1, 1, (256, 16, 16)).astype(ml_dtypes.bfloat16)
    want = np.swapaxes(x, 1, 2).view(np.uint16)
    got = run(k, x, backend="cpu")
    np.testing.assert_array_equal(np.asarray(got).view(np.uint16), want)
    out = execute(parse_visa(compile_kernel(k).text), [x])
    np.testing.assert_array_equal(np.asarray(out).view(np.uint16), want)


# --- refusals: each rule a kernel can reach, at the `transpose` line -----------------------

def _refused(axes: str, collect: str, transpose: str, dtype: str = "i8", element: str = "R, K",
             fetch: str = 'm("R"), m("K")', adapter: str = "") -> str:
    return HEAD.format(axes=axes) + f'''
@device(chip=1)
def refused(ctx: Context, x: HbmTensor[{dtype}, Chip, m("{element}")]) -> HbmTensor[{dtype}, Chip, m("{element}")]:
    x = x.to_dm(ctx.tdma, DmTensor[{dtype}, Chip, Cluster, Slice, m("{element}")])
    y = (ctx.main.begin(x.view()).fetch({fetch}){adapter}.collect({collect})
         .transpose({transpose})  # <--
         .commit_trim(m("1")).commit(m("1")))
    return y.to_hbm(ctx.tdma)
'''


REFUSED = {
    "TRANSPOSE-3": _refused("R=8, K=8", 'm("R"), m("K # 32")', 'm("K"), m("R # 64")'),
    "TRANSPOSE-4": _refused("R=8, K=24", 'm("R"), m("K # 32")', 'm("K"), m("R # 32")'),
    "TRANSPOSE-5": _refused("R=16, K=8", 'm("R"), m("K # 32")', 'm("K"), m("R # 32")', fetch='m("R"), m("K")'),
    "TRANSPOSE-12": _refused("R=8, K=8", 'm("R"), m("K # 32")', 'm("K = 6"), m("R # 32")'),
    "TRANSPOSE-13": _refused("R=8, K=8, Q=8", 'm("R"), m("K # 32")', 'm("K"), m("Q # 32")'),
    "TRANSPOSE-14": _refused("R=8, K=8, H=16", 'm("R, H"), m("K # 32")', 'm("H, K"), m("R # 32")',
                             element="R, H, K", fetch='m("R, H"), m("K")'),
    "TRANSPOSE-15": _refused("R=8, K=8, G=4", 'm("R / 4, G, R % 4"), m("K # 32")', 'm("G, K"), m("R # 32")',
                             element="R, G, K", fetch='m("R / 4, G, R % 4"), m("K")'),
    "TRANSPOSE-16": _refused("R=8, K=8", 'm("R"), m("K # 32")', 'm("K"), m("8 # 32")'),
    "TRANSPOSE-17": _refused("R=16, K=32", 'm("R"), m("K # 64")', 'm("K"), m("R # 64")', dtype="i4"),
    "TYPE-2": _refused("R=8, K=8", 'm("R"), m("K # 32")', 'm("K"), m("R # 32")', adapter=".fetch_zero_point_sub(i9, 1)"),
    "TYPE-6": _refused("R=8, K=8", 'm("R"), m("K # 32")', '"K", m("R # 32")'),
}


@pytest.mark.parametrize("code", sorted(REFUSED))
def test_refused_at_the_transpose_line(code):
    k = getattr(load_source(REFUSED[code], f"refused_transpose_{code}"), "refused")
    diagnostics = npu_opt.check(k).diagnostics
    assert diagnostics, f"{code}: accepted"
    first = diagnostics[0]
    assert (first.code, first.line) == (code, marked_line(k)), first.render()
    assert first.help, f"{code}: no help line"


def test_after_a_transpose_only_commit_trim_is_offered():
    source = HEAD.format(axes="R=8, K=8") + '''
@device(chip=1)
def cast_after(ctx: Context, x: HbmTensor[i8, Chip, m("R, K")]) -> HbmTensor[i8, Chip, m("K, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("R, K")])
    y = (ctx.main.begin(x.view()).fetch(m("R"), m("K")).collect(m("R"), m("K # 32"))
         .transpose(m("K"), m("R # 32"))
         .transpose(m("R"), m("K # 32"))  # <--
         .commit_trim(m("R")).commit(m("K, R")))
    return y.to_hbm(ctx.tdma)
'''
    k = load_source(source, "transpose_twice").cast_after
    first = npu_opt.check(k).diagnostics[0]
    assert (first.code, first.line) == ("TYPE-1", marked_line(k))
    assert "`commit_trim`" in first.render()


def test_transpose_is_not_offered_after_fetch():
    source = HEAD.format(axes="R=8, K=8") + '''
@device(chip=1)
def too_early(ctx: Context, x: HbmTensor[i8, Chip, m("R, K")]) -> HbmTensor[i8, Chip, m("K, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("R, K")])
    y = (ctx.main.begin(x.view()).fetch(m("R"), m("K"))
         .transpose(m("K"), m("R # 32"))  # <--
         .commit_trim(m("R")).commit(m("K, R")))
    return y.to_hbm(ctx.tdma)
'''
    k = load_source(source, "transpose_after_fetch").too_early
    first = npu_opt.check(k).diagnostics[0]
    assert (first.code, first.line) == ("TYPE-1", marked_line(k))


# --- every element width the engine takes: cpu == numpy == visa, bit for bit ---------------

WIDTHS = ["bf16", "f32", "i32", "i16", "u8", "i8", "i4", "f8e4m3", "f8e5m2", "f4e2m1"]


def _tile_bits(d, shape, rng) -> np.ndarray:
    """Host values of dtype `d`: any bit pattern of a float, any value of an integer."""
    if d.value == "f4e2m1":
        return rng.integers(0, 16, shape).astype(np.uint8)
    if d.is_float:
        return rng.integers(0, 1 << (8 * d.bits_dtype.itemsize), shape, dtype=np.uint64).astype(d.bits_dtype)
    return rng.integers(d.min, d.max + 1, shape).astype(d.host_dtype)


@pytest.mark.parametrize("width", WIDTHS)
def test_every_width_transposes_bit_for_bit(width):
    from tests.lowering.kernels import DTYPES, transpose_engine_kernel

    d = DTYPES[width]
    k = transpose_engine_kernel(d, context="sub" if width in ("f32", "u8") else "main")
    rows, cols = 64 // d.bits, (16 if d.bits == 4 else 8)
    x = _tile_bits(d, (rows, cols), np.random.default_rng(rows * cols + d.bits))
    want = np.ascontiguousarray(x.T)
    got = run(k, x, backend="cpu")
    np.testing.assert_array_equal(np.asarray(got).view(want.dtype), want)
    out = execute(parse_visa(compile_kernel(k).text), [x])
    np.testing.assert_array_equal(np.asarray(out).view(want.dtype), want)
