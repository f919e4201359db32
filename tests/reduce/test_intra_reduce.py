"""`vector_intra_slice_reduce`: every op against a numpy oracle (exact for i32 and for f32
max / min; the f32 add against the hardware's tree-then-time order), cpu == visa bit for
bit, and each shape rule refusing a kernel."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import f32, i32
from ir.vector.enums import ClipBinaryOpI32, IntraSliceReduceOpF32 as F, IntraSliceReduceOpI32 as I
from tu_ops import rngd
from visa.interp import execute
from visa.parser import parse_visa
from visa.printer import print_artifact
from visa.verify import verify_text

from tests.reduce.kernels import column_kernel, row_kernel

RNG = np.random.default_rng(23)
XI = RNG.integers(-(2**31), 2**31, (8, 64), dtype=np.int64).astype(np.int32)
XF = (RNG.standard_normal((8, 64)) * 100).astype(np.float32)


def _sat_sum(v: np.ndarray, axis: int) -> np.ndarray:
    """Saturating sum folded left to right in the tree-then-time order of a row reduce."""
    v = np.moveaxis(v.astype(np.int64), axis, -1)
    lo, hi = -(2**31), 2**31 - 1
    sat = lambda a, b: np.clip(a + b, lo, hi)  # noqa: E731
    flits = v.reshape(*v.shape[:-1], -1, 4)
    tree = sat(sat(flits[..., 0], flits[..., 1]), sat(flits[..., 2], flits[..., 3]))
    acc = np.zeros(v.shape[:-1], np.int64)
    for k in range(tree.shape[-1]):
        acc = sat(acc, tree[..., k])
    return acc.astype(np.int32)


def _f32_tree_sum(v: np.ndarray) -> np.ndarray:
    """Row sums in float32, each flit of four as (a + b) + (c + d), flits left to right."""
    flits = v.reshape(v.shape[0], -1, 4)
    tree = (flits[..., 0] + flits[..., 1]) + (flits[..., 2] + flits[..., 3])
    acc = np.zeros(v.shape[0], np.float32)
    for k in range(tree.shape[1]):
        acc = (acc + tree[:, k]).astype(np.float32)
    return acc


ROWS = {
    "i32_add_sat": (i32, I.ADD_SAT, lambda x: _sat_sum(x, 1)),
    "i32_max": (i32, I.MAX, lambda x: x.max(1)),
    "i32_min": (i32, I.MIN, lambda x: x.min(1)),
    "f32_add": (f32, F.ADD, _f32_tree_sum),
    "f32_max": (f32, F.MAX, lambda x: x.max(1)),
    "f32_min": (f32, F.MIN, lambda x: x.min(1)),
}


@pytest.mark.parametrize("name", sorted(ROWS))
def test_row_reduce_matches_the_oracle(name):
    dtype, op, oracle = ROWS[name]
    x = XI if dtype is i32 else XF
    got = npu_opt.run(row_kernel(dtype, op, name=name), x)
    np.testing.assert_array_equal(got, oracle(x))


def test_saturating_row_sum_saturates():
    x = np.full((8, 64), 2**30, np.int32)
    x[1] = -(2**31)
    got = npu_opt.run(row_kernel(i32, I.ADD_SAT), x)
    assert got[0] == 2**31 - 1 and got[1] == -(2**31)


def test_column_reduce_keeps_the_packet():
    got = npu_opt.run(column_kernel(f32, F.MAX), XF)
    np.testing.assert_array_equal(got, XF.max(0))
    got = npu_opt.run(column_kernel(i32, I.MIN), XI)
    np.testing.assert_array_equal(got, XI.min(0))


@pytest.mark.parametrize("kernel, x", [(row_kernel(f32, F.ADD, name="r_add"), XF),
                                       (row_kernel(i32, I.ADD_SAT, name="r_sat"), XI),
                                       (column_kernel(f32, F.MIN, name="c_min"), XF)])
def test_visa_agrees_with_cpu(kernel, x):
    artifact = npu_opt.compile(kernel)
    assert print_artifact(parse_visa(artifact.text)) == artifact.text
    verify_text(artifact.text, rngd())
    cpu, visa = npu_opt.run(kernel, x), execute(parse_visa(artifact.text), [x])
    np.testing.assert_array_equal(cpu.view(np.uint32), visa.view(np.uint32))


def test_the_record_names_the_reduce():
    text = npu_opt.compile(row_kernel(f32, F.MAX)).text
    assert "{unit=INTRA_REDUCE_F32, op=MAX, arg=1}" in text
    text = npu_opt.compile(column_kernel(f32, F.MAX)).text
    assert "{unit=INTRA_REDUCE_F32, op=MAX, arg=0}" in text


def _code(kernel):
    report = npu_opt.check(kernel)
    assert report.diagnostics, "the kernel was accepted"
    d = report.diagnostics[0]
    assert d.file.endswith("kernels.py")
    return d.code


@pytest.mark.parametrize("kwargs, code", [
    (dict(out_time="E / 4, B"), "VE-REDUCE-1"),
    (dict(out_time="1", out_packet="E % 4"), "VE-REDUCE-2"),
    (dict(out_time="E / 4, A / 2"), "VE-REDUCE-3"),
    (dict(time="A, E / 4", out_time="E / 4"), "VE-REDUCE-5"),
])
def test_refused_shapes(kwargs, code):
    assert _code(column_kernel(f32, F.MAX, **kwargs)) == code


def test_a_packet_neither_kept_nor_reduced_is_refused():
    assert _code(row_kernel(f32, F.MAX, out_packet="1 # 2")) == "VE-REDUCE-4"


def test_an_i32_op_on_an_f32_stream_is_refused():
    assert _code(row_kernel(f32, I.MAX)) == "VE-DTYPE-1"


def test_a_clip_enum_is_refused():
    assert _code(row_kernel(i32, ClipBinaryOpI32.MAX)) == "VE-ENUM-4"



def test_a_widen_concat_after_the_reduce_gives_back_the_reduced_time():
    """Reduce A out of a split stream, then concat the halves: the reduce leaves the output
    time with the concat's half restored (it was an ICE: VEOP-7 read the output time)."""
    from tests.agree import both_backends
    from tests.reduce.kernels import column_concat_kernel

    x = np.random.default_rng(5).standard_normal((8, 64)).astype(np.float32)
    cpu, _ = both_backends(column_concat_kernel(F.MAX), x, "INTRA_REDUCE_F32", "WIDEN_CONCAT")
    np.testing.assert_array_equal(cpu, x.max(axis=0))
