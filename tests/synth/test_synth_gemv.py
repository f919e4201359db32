"""The GEMV layouts and the padded result rows of `npu-opt synth` (issue 54 item 1): R rows of
`a` per slice in the TRF with `x` streamed, `k` whole or over neighbouring slices added by
the inter-slice reducer (synth/gemv.py); a GEMM's result columns that need padding
padded to rows of whole aligned HBM accesses, and the one-pass padded tile offered beside
exact tiles (synth/spec.py, tiling.py). Every layout's kernel on seeded random
shapes equals an independent numpy oracle on the cpu backend and in the VISA interpreter."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from backends import get_backend
from driver.cli import main
from driver.discover import load_file
from synth import contraction
from synth.gemv import ROW, layout, layouts
from synth.space import build, points
from synth.tiling import ALIGN_BYTES
from tests.synth.test_synth_many_shapes import oracle
from tests.synth.lever_checks import makespan
from visa.schedule import builtin_rates

GEMV = "y[m] = a[m,k] * x[k]"
GEMM = "out[m,n] = a[m,k] * w[n,k]"
BF16 = ml_dtypes.bfloat16


def _ops(rng: np.random.Generator, dtype: str, shapes: list[tuple[int, ...]]) -> list[np.ndarray]:
    return [rng.integers(-128, 128, s, dtype=np.int8) if dtype == "i8:i32" else rng.integers(-8, 9, s).astype(BF16)
            for s in shapes]


def test_the_gemv_space_holds_rows_in_the_trf_and_k_over_slices() -> None:
    spec = contraction(GEMV, dtype="i8:i32", sizes=dict(m=4096, k=4096))
    assert points(spec)["layout"] == [ROW, "8 rows per slice", "16 rows per slice", "32 rows per slice, k over 2 slices",
                                      "64 rows per slice, k over 4 slices", "128 rows per slice, k over 8 slices",
                                      "256 rows per slice, k over 16 slices"]
    # 16 rows x 4096 fill the TRF in one pass of 256 slices; 8 rows take two passes
    assert (layout(spec, "16 rows per slice").passes, layout(spec, "8 rows per slice").passes) == (1, 2)
    # a small result: the k splits fill the slices its row blocks leave idle
    small = layouts(contraction(GEMV, dtype="i8:i32", sizes=dict(m=512, k=4096)))
    assert "8 rows per slice, k over 4 slices" in small and "16 rows per slice, k over 8 slices" in small
    # no split under an epilogue (the reducer's sums are the epilogue's input), nor of a chunk under 256 bytes
    assert not any("over" in lay for lay in layouts(contraction("y[m] = relu(a[m,k] * x[k])", dtype="i8:i32",
                                                                sizes=dict(m=512, k=4096))))
    bf16 = contraction(GEMV, dtype="bf16:f32", sizes=dict(m=4096, k=4096))
    assert all(4096 // layout(bf16, lay).sk * 2 >= ALIGN_BYTES for lay in layouts(bf16)[1:])


def test_a_k_chunk_under_the_aligned_access_is_why_the_references_split_is_slow() -> None:
    # ALIGN_BYTES is the schedule model's aligned HBM access
    assert ALIGN_BYTES == builtin_rates("rngd").values[("hbm", "align_bytes")]
    spec = contraction(GEMV, dtype="i8:i32", sizes=dict(m=4096, k=4096))
    offered = makespan(spec, dict(layout="256 rows per slice, k over 16 slices", packet=32, reuse="trf"))
    one_row = makespan(spec, dict(layout=ROW, packet=32, reuse="trf"))
    # the reference's matmul_4096 choice: 32-byte chunks of k over 128 slices, each an HBM access of its own
    reference = makespan(spec, dict(layout="2048 rows per slice, k over 128 slices", packet=32, reuse="trf"))
    assert offered * 1.5 < one_row and offered * 5 < reference, (offered, one_row, reference)


GEMV_DRAWS = [(1, "i8:i32", ""), (2, "bf16:f32", ""), (3, "bf16:bf16", "relu"), (4, "i8:i32", "requant"),
              (5, "i8:i32", "relu"), (6, "bf16:f32", "")]


@pytest.mark.parametrize("seed, dtype, fn", GEMV_DRAWS)
def test_every_gemv_layout_equals_numpy_on_cpu_and_visa(seed: int, dtype: str, fn: str) -> None:
    rng = np.random.default_rng(seed)
    sizes = dict(m=int(rng.integers(1, 700)), k=int(rng.integers(1, 9)) * 64 - int(rng.integers(0, 2)) * 17)
    einsum = GEMV if not fn else f"y[m] = {fn}(a[m,k] * x[k]" + (", 0.01)" if fn == "requant" else ")")
    spec = contraction(einsum, dtype=dtype, sizes=sizes)
    ops = _ops(rng, dtype, [(sizes["m"], sizes["k"]), (sizes["k"],)])
    want = oracle(einsum, dtype, sizes, ops, None)
    lays = layouts(spec)
    assert len(lays) > 1, (sizes, lays)
    for lay in lays[1:]:
        kernel = build(spec, dict(layout=lay, packet=spec.space().params[1][1][0], reuse="trf"))
        for backend in ("cpu", "visa"):
            result = np.zeros(spec.shape(spec.result[1]), want.dtype)
            get_backend(backend).run(kernel, (*spec.pad(*ops), result))
            assert np.array_equal(spec.unpad(result), want), (backend, lay, einsum, dtype, sizes)


def test_padded_result_columns_fill_whole_aligned_rows() -> None:
    padded = {d: contraction(GEMM, dtype=d, sizes=dict(m=300, n=200, k=100)).padded for d in
              ("i8:i32", "bf16:f32", "bf16:bf16")}
    assert padded == {"i8:i32": dict(m=320, n=256, k=128), "bf16:f32": dict(m=320, n=256, k=128),
                      "bf16:bf16": dict(m=320, n=256, k=128)}
    # 72 columns: 4-byte sums pad to 128 (512-byte rows), bf16 to 128, i8 after requant to 256
    assert contraction(GEMM, dtype="i8:i32", sizes=dict(m=64, n=72, k=64)).padded["n"] == 128
    assert contraction(GEMM, dtype="bf16:bf16", sizes=dict(m=64, n=72, k=64)).padded["n"] == 128
    assert contraction("q[m,n] = requant(a[m,k] * w[n,k], 0.5)", dtype="i8:i32",
                       sizes=dict(m=64, n=72, k=64)).padded["n"] == 256
    # a size that needs no padding keeps it: the host arrays are the user's own
    assert contraction(GEMM, dtype="i8:i32", sizes=dict(m=300, n=224, k=100)).padded["n"] == 224
    # the one-pass tile padded inside the kernel is offered beside the tiles that cover 320 rows exactly
    spec = contraction(GEMM, dtype="i8:i32", sizes=dict(m=300, n=200, k=100))
    assert "16x1 of 32x256, on 1/16 of the slices" in points(spec)["placement"]


def _synth(einsum: str, dtype: str, sizes: dict[str, int], out: Path) -> dict:
    status = main(["synth", einsum, "--dtype", dtype, "--sizes", ",".join(f"{k}={v}" for k, v in sizes.items()),
                   "-o", str(out), "--top", "1"])
    assert status == 0
    return json.loads((out / "synth.json").read_text())


SYNTH_DRAWS = [(GEMV, "i8:i32", dict(m=1000, k=300)), (GEMM, "i8:i32", dict(m=300, n=200, k=100)),
               # m = 40 pads to 64 (m = 70 padded to 96, three 32-row blocks: 768 candidates, 180 now)
               ("out[m,n] = relu(a[m,k] * w[n,k] + c[n])", "bf16:f32", dict(m=40, n=90, k=40))]


@pytest.mark.parametrize("einsum, dtype, sizes", SYNTH_DRAWS)
def test_a_synthesized_gemv_or_padded_gemm_equals_numpy(einsum: str, dtype: str, sizes: dict[str, int],
                                                        tmp_path: Path) -> None:
    data = _synth(einsum, dtype, sizes, tmp_path / "out")
    kernel = load_file(tmp_path / "out" / "synth_kernel.py")[0].synth_kernel
    spec = contraction(einsum, dtype=dtype, sizes=sizes)
    rng = np.random.default_rng(11)
    names = [name for name, _ in spec.operands]
    ops = _ops(rng, dtype, [tuple(sizes[i] for i in idx) for _, idx in spec.operands])
    bias = rng.integers(-64, 65, sizes["n"]).astype(np.float32) if "c[n]" in einsum else None
    want = oracle(einsum, dtype, sizes, ops, bias)
    for backend in ("cpu", "visa"):
        result = np.zeros(spec.shape(spec.result[1]), want.dtype)
        get_backend(backend).run(kernel, (*spec.pad(*ops, *([bias] if bias is not None else [])), result))
        assert np.array_equal(spec.unpad(result), want), (backend, einsum, data["winner"], names)
