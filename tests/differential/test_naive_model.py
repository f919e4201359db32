"""The `cpu` backend against the naive reference model (naive_model.py), which shares no
geometry or conversion code with it: on every example and on generated kernels.

Integers must be equal; floats bit for bit, because the model reproduces the device's
reduction order (adjacent-pair tree over the packet, then time accumulation from +0) and
its flush-to-zero / one-NaN rules. The normal suite runs the small examples and a few
generated kernels; `-m slow` adds the large GEMMs and many more generated kernels.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

import npu_opt
from ir.topology import host_array_shape
from tests.differential import naive_numbers as nn
from tests.differential.harness import load_kernel
from tests.differential.naive_model import evaluate
from tests.differential.strategies import equal_chip_copies, kernels, make_inputs
from tests.kernel_files import example, example_names

BIG = {"gemm_kernel", "gemm_bf16_kernel", "gemm_i8_kernel", "gemm_tiled",   # about a minute each in the model
       "residual_add_kernel", "leaky_relu_kernel",   # (131072 elements each, element by element)
       "dense_bf16_kernel", "gemm_bf16_relu_kernel", "gemm_i8_requant_kernel",
       "tune_gemm", "tune_gemm_bf16"}

# Large examples that the default run still checks, as the same kernel text at smaller sizes:
# `-m slow` checks them at full size. A string is the new `axes(...)` line (64 slices, the
# fewest a DM tensor may have; two time steps or more); a tuple lists (old, new) texts, each
# replaced wherever it occurs, for the examples whose sizes are written in more places.
SMALLER: dict[str, str | tuple[tuple[str, str], ...]] = {
    "gemm_bf16_relu_kernel": "M=256, N=256, K=64", "gemm_i8_requant_kernel": "M=256, N=256, K=64",
    # the output tile's edge 512 -> 256 in the axes line, the slices (8 x 8 of 32 x 32) and
    # every tile: still MT x NT = 2 x 2 tiles with `a` kept across the inner loop; K = 64, one
    # packet of 64 (two 32-byte flits a step, as at full size)
    "tune_gemm": (("512", "256"), ("K=128", "K=64")),
    # M = N = 256 in 2 x 2 tiles of 128 (16 x 16 slices of 8 x 8 outputs; the full size is one
    # tile of 512), K = 128 in four packets of 32
    "tune_gemm_bf16": (("SIZE, DEPTH = 512, 128", "SIZE, DEPTH = 256, 128"),
                       ("tm: int = 512, tn: int = 512", "tm: int = 128, tn: int = 128")),
}


def _raw(a: np.ndarray) -> np.ndarray:
    """A backend result as the model stores it: integer values, float bit patterns."""
    if np.issubdtype(a.dtype, np.integer):
        return a.astype(np.int64)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[a.dtype.itemsize]).astype(np.int64)


def differences(kernel, arrays) -> str | None:
    """None when the cpu backend and the model agree exactly, else where they differ."""
    cpu = npu_opt.run(kernel, *[a.copy() for a in arrays], backend="cpu")  # in-out arrays are written
    cpu = cpu if isinstance(cpu, tuple) else (cpu,)
    model = evaluate(kernel, *arrays)
    if len(cpu) != len(model):
        return f"cpu returns {len(cpu)} results, the model {len(model)}"
    for k, (got, want) in enumerate(zip(cpu, model)):
        got, want = _raw(got), want.astype(np.int64)
        if got.shape != want.shape:
            return f"result {k}: cpu shape {got.shape}, model {want.shape}"
        bad = np.argwhere(got != want)
        if len(bad):
            at = [f"{tuple(int(i) for i in ix)}: cpu {hex(got[tuple(ix)])}, model {hex(want[tuple(ix)])}"
                  for ix in bad[:6]]
            return f"result {k}: {len(bad)} of {got.size} differ\n  " + "\n  ".join(at)
    return None


def _wide_floats(rng: np.random.Generator, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """Finite values of many magnitudes and both signs, as bit patterns, so that the
    rounding of a sum depends on the order of its additions."""
    sign = rng.integers(0, 2, shape)
    if dtype == "bf16":
        exp, mant = rng.integers(127 - 8, 127 + 8, shape), rng.integers(0, 128, shape)
        return ((sign << 15) | (exp << 7) | mant).astype(np.uint16)
    if dtype == "f32":
        exp, mant = rng.integers(127 - 8, 127 + 8, shape), rng.integers(0, 1 << 23, shape)
        return ((sign << 31) | (exp << 23) | mant).astype(np.uint32).view(np.float32)
    if dtype == "f8e4m3":
        return ((sign << 7) | rng.integers(0, 0x7F, shape)).astype(np.uint8)     # 0x7F is NaN
    if dtype == "f8e5m2":
        return ((sign << 7) | rng.integers(0, 0x7C, shape)).astype(np.uint8)     # 0x7C.. are inf / NaN
    return rng.integers(0, 16, shape).astype(np.uint8)                           # f4e2m1


def wide_inputs(kernel, rng: np.random.Generator, any_bits: bool = False) -> list[np.ndarray]:
    """One host array per parameter: wide-range floats (or, `any_bits`, every bit pattern:
    NaN, infinities, subnormals, signed zeros), integers over their whole range. A padded
    HBM parameter takes its host shape, the live size of each term (`A, R # 8` -> (|A|, |R|))."""
    arrays = []
    for t in (op.result.type for op in kernel.trace().kernel.params):
        shape, d = host_array_shape(t), t.dtype
        if d.is_float and any_bits:
            top = 16 if d.value == "f4e2m1" else 1 << d.bits_dtype.itemsize * 8
            arrays.append(rng.integers(0, top, shape, dtype=np.uint64).astype(d.bits_dtype))
        elif d.is_float:
            arrays.append(_wide_floats(rng, d.value, shape))
        else:
            arrays.append(rng.integers(d.min, d.max + 1, shape).astype(d.host_dtype))
        arrays[-1] = equal_chip_copies(arrays[-1], t.chip)   # rule 11: a broadcast Chip's copies agree
    return arrays


# Examples whose ops the naive model does not have yet (the intra-slice reduce and the float
# path's transcendentals); each is checked against its own numpy oracle (tests/reduce).
NOT_MODELLED = {"softmax_rows_kernel", "rmsnorm_kernel", "masked_softmax_kernel",
                # resident DM parameters (the model binds host arrays to HBM parameters only): checked
                # against numpy in tests/params/test_resident.py and tests/visa/test_interp.py
                "resident_accumulate", "resident_readout"}


def _examples(big: bool):
    return [n for n in example_names() if (n in BIG) == big and n not in NOT_MODELLED]


def _smaller(name: str):
    """Example `name` with its sizes changed as SMALLER[name] says."""
    kernel = example(name)
    text = Path(kernel.file).read_text(encoding="utf-8")
    if isinstance(SMALLER[name], str):
        smaller, count = re.subn(r"^axes\([^)]*\)$", f"axes({SMALLER[name]})", text, flags=re.M)
        assert count == 1 and smaller != text, (name, "has no axes(...) line to change")
        return load_kernel(smaller)
    smaller = text
    for old, new in SMALLER[name]:
        assert old in smaller, (name, "has no", old)
        smaller = smaller.replace(old, new)
    return load_kernel(smaller)


def _kinds(kernel) -> tuple[str, ...]:
    """The input kinds worth drawing: "bits" differs from "wide" only for float parameters
    (every bit pattern, NaN and infinities included); an all-integer kernel draws its whole
    range either way, so it runs once."""
    floats = any(op.result.type.dtype.is_float for op in kernel.trace().kernel.params)
    return ("wide", "bits") if floats else ("wide",)


def _check_example(name: str, kernel=None) -> None:
    kernel = example(name) if kernel is None else kernel
    for kind in _kinds(kernel):
        rng = np.random.default_rng(zlib.crc32(f"{name}/{kind}".encode()))
        arrays = wide_inputs(kernel, rng, any_bits=kind == "bits")
        diff = differences(kernel, arrays)
        assert diff is None, (name, kind, diff)


@pytest.mark.parametrize("name", _examples(big=False))
def test_the_cpu_backend_matches_the_model_on_an_example(name):
    _check_example(name)


@pytest.mark.parametrize("name", sorted(SMALLER))
def test_the_cpu_backend_matches_the_model_on_a_smaller_large_example(name):
    _check_example(name, _smaller(name))


@pytest.mark.slow
@pytest.mark.parametrize("name", _examples(big=True))
def test_the_cpu_backend_matches_the_model_on_a_large_example(name):
    _check_example(name)


def test_the_model_shares_no_code_with_the_compiler():
    """The model may read mapping cells (`ir.mapping`) and nothing else of the compiler."""
    import ast
    from pathlib import Path

    here = Path(__file__).parent
    for name in ("naive_model.py", "naive_layout.py", "naive_numbers.py", "naive_vector.py"):
        tree = ast.parse((here / name).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                mods = [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            else:
                continue
            for mod in mods:
                root = mod.split(".")[0]
                assert root in {"__future__", "dataclasses", "fractions", "functools", "math", "struct", "typing", "numpy",
                                "ml_dtypes", "tests", "ir"}, (name, mod)
                assert root != "ir" or mod.startswith("ir.mapping"), (name, mod)
                assert root != "tests" or mod.startswith("tests.differential.naive_"), (name, mod)


def test_every_example_is_covered():
    assert set(example_names()) == set(_examples(True)) | set(_examples(False)) | NOT_MODELLED
    assert BIG <= set(example_names()) and set(SMALLER) <= BIG


# --- generated kernels ---------------------------------------------------------------------

SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]


def _generated(stats: Counter):
    def check(g, input_seed):
        kernel = load_kernel(g.source)
        if not npu_opt.check(kernel).ok:
            stats["refused"] += 1
            return
        rng = np.random.default_rng(input_seed)
        arrays = wide_inputs(kernel, rng) if input_seed % 3 else make_inputs(kernel, input_seed)
        diff = differences(kernel, arrays)
        assert diff is None, f"cpu and the naive model disagree: {diff}\n--- kernel (seed {input_seed}) ---\n{g.source}"
        stats["agree"] += 1
        stats.update(g.features)

    return check


def _run_generated(count: int, rng_seed: int) -> Counter:
    stats: Counter = Counter()

    @seed(rng_seed)
    @settings(max_examples=count, deadline=None, database=None, suppress_health_check=SUPPRESS)
    @given(g=kernels(illegal_rate=0, copy_rate=15), input_seed=st.integers(0, 2**32 - 1))
    def prop(g, input_seed):
        _generated(stats)(g, input_seed)

    prop()
    assert stats["agree"] >= 0.8 * count, stats
    return stats


def test_the_cpu_backend_matches_the_model_on_generated_kernels():
    stats = _run_generated(30, 20261201)
    assert stats["family:contraction"] > 0 and stats["family:copy"] > 0, stats


@pytest.mark.slow
def test_the_cpu_backend_matches_the_model_on_many_generated_kernels():
    stats = _run_generated(400, 4242)
    for needed in ("lane_mode:INTERLEAVED", "lane_mode:SEQUENTIAL", "pack:2", "dtype:bf16", "dtype:i4",
                   "dtype:f8e4m3", "dtype:f8e5m2"):
        assert stats[needed] > 0, (needed, stats)


# --- the model's own arithmetic, on values worked out by hand ----------------------------------

def test_the_model_tree_is_not_a_serial_fold():
    """Leaves [1, 2^-24, 2^-24, -1]: the adjacent-pair tree gives 2^-24, a serial fold 0."""
    from tests.differential.naive_model import _tree

    leaves = nn.f32_bits(np.array([[1.0, 2.0 ** -24, 2.0 ** -24, -1.0]], dtype=np.float32))
    assert nn.as_f32(_tree(leaves, integer=False))[0] == np.float32(2.0 ** -24)


def test_the_model_conversions_follow_the_dtype_rules():
    f32 = nn.f32_bits(np.array([1.0, -0.0, 1e-40, np.nan, -1e-40], dtype=np.float32))
    assert nn.narrow_bf16(f32).tolist() == [0x3F80, 0x8000, 0x0000, 0x7FC0, 0x8000]
    assert nn.narrow_bf16(np.array([0x3F808000, 0x3F818000, 0x7F7FFFFF], np.uint32)).tolist() == [0x3F80, 0x3F82, 0x7F80]
    assert nn.widen_bf16(np.array([0x0001, 0x8001, 0x7F81, 0x3F80], np.uint16)).tolist() == [
        0, 0x80000000, 0x7FC00000, 0x3F800000]
    big = nn.f32_bits(np.array([500.0, -np.inf, 2.0 ** -10, np.nan], dtype=np.float32))
    assert nn.narrow_e4m3(big).tolist() == [0x7E, 0xFE, 0x00, 0x7F]
    e5 = nn.f32_bits(np.array([1.125, 2.5 * 2.0 ** -16, 2.0 ** -17, 3.75 * 2.0 ** -16, 1e6], dtype=np.float32))
    assert nn.narrow_e5m2(e5).tolist() == [0x3D, 0x03, 0x01, 0x04, 0x7C]
    assert nn.wrap(np.array([200, -129, 8]), 8).tolist() == [-56, 127, 8]
    assert nn.wrap(np.array([8, 15]), 4).tolist() == [-8, -1]


# --- the reduction order is pinned, not only the values ---------------------------------------

ORDER_KERNEL = '''\
from npu_opt import *

axes(I=256, J=512)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("I")

@device(chip=1)
def f32_gemv(ctx: Context, a: HbmTensor[bf16, Chip, m("I, J")],
             v: HbmTensor[bf16, Chip, m("J")]) -> HbmTensor[f32, Chip, m("I")]:
    a = a.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("J")])
    v = v.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("J")])
    v_trf = (ctx.sub.begin(v.view()).fetch(m("1"), m("J")).collect(m("J / 16"), m("J % 16"))
             .to_trf(m("1"), m("J")))
    out = (ctx.main.begin(a.view()).fetch(m("J / 16"), m("J % 16")).collect(m("J / 16"), m("J % 16"))
           .contract_outer(v_trf, m("J / 32"), m("J % 32"))
           .contract_packet(m("1"))
           .contract_time(m("1"))
           .contract_lane(m("1"), m("1 # 8"), LaneMode.INTERLEAVED)
           .commit_trim(m("1 # 2"))
           .commit(m("1 # 2")))
    return out.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("I")])
'''


def test_the_f32_sums_follow_the_tree_then_time_order():
    """An f32 result of a depth-5 packet tree and a 16-step time sum: the cpu backend
    equals the model bit for bit, and a serial fold of the same products does not (so
    the comparison really pins the order)."""
    from tests.differential.naive_model import _tree

    kernel = load_kernel(ORDER_KERNEL)
    a, v = wide_inputs(kernel, np.random.default_rng(11))
    assert differences(kernel, [a, v]) is None
    products = nn.fmul(nn.widen_bf16(a), nn.widen_bf16(v)[None, :])             # (I, J)
    serial = np.zeros(256, dtype=np.uint32)
    for j in range(512):
        serial = nn.fadd(serial, products[:, j])
    trees = _tree(products.reshape(256, 16, 32), integer=False)                 # (I, J / 32)
    timed = np.zeros(256, dtype=np.uint32)
    for t in range(16):
        timed = nn.fadd(timed, trees[:, t])
    (model,) = evaluate(kernel, a, v)
    assert np.array_equal(model, timed)
    assert np.count_nonzero(model != serial) > 16
