"""`npu-opt synth` on results that no tile of every slice covers exactly: a GEMM smaller than
one 256-slice tile or not a multiple of one runs on the slices whose blocks cover it (the rest
idle, `on 1/N of the slices`) or as one tile padded inside the kernel (`M # 128`); a long `k`
goes over the slices such a result would leave idle; a GEMV shorter than one pass leaves
slices idle and a longer one pads its rows to whole passes; a packet longer than `k` is not
offered. Each winner against an independent numpy oracle on the cpu backend and the VISA
interpreter."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from backends import get_backend
from driver.cli import main
from driver.discover import load_file
from tests.synth.test_synth import BF16, _operands

GEMM, GEMV, BATCHED = "out[m,n] = a[m,k] * w[n,k]", "y[m] = a[m,k] * x[k]", "out[b,m,n] = a[b,m,k] * w[b,n,k]"

# (einsum, dtype, sizes, the kernel's host shapes of the operands and the result, result dtype,
#  the winner's placement ends with (None: a GEMV, no placement lever))
CASES = [
    (GEMM, "i8:i32", dict(m=256, n=256, k=64), [(256, 64), (256, 64), (256, 256)], np.int32,
     "on 1/4 of the slices"),
    # n = 8 is padded to 64 columns, a row of 256-byte sums (no partial HBM write)
    (GEMM, "i8:i32", dict(m=8, n=8, k=32), [(32, 32), (64, 32), (32, 64)], np.int32, "on 1/64 of the slices"),
    # 544 rows: one pass of 32 x 4 slices of 17 x 128 blocks (odd blocks, synth/odd_rows.py), w by
    # switch (9,454 cycles); not a 1024 x 512 tile of 32 x 128 blocks padded inside the kernel, 17 of
    # its 32 rows of slices busy and w copied to each (11,602 in two pieces), nor nine passes of
    # 64-row tiles on a quarter of the slices (102,850)
    (GEMM, "i8:i32", dict(m=544, n=512, k=64), [(544, 64), (512, 64), (544, 512)], np.int32,
     "32x4 of 17x128, on 1/2 of the slices"),
    # 64 x 64: 8 slices of 8 x 64 blocks (4944 cycles) beat 8 x 128 blocks with the columns
    # padded to 128 inside the kernel (5456), the old space's best
    (GEMM, "bf16:f32", dict(m=64, n=64, k=64), [(64, 64), (64, 64), (64, 64)], np.float32,
     "8x1 of 8x64, on 1/32 of the slices"),
    # 96 is no power of two times 32: one 128 x 128 tile on 16 slices of 8 x 128 blocks, padded
    # inside the kernel (`M # 128`), rather than nine 32 x 32 tiles on one slice
    (GEMM, "i8:i32", dict(m=96, n=96, k=64), [(96, 64), (96, 64), (96, 96)], np.int32, "on 1/16 of the slices"),
    (GEMM, "bf16:bf16", dict(m=96, n=96, k=64), [(96, 64), (96, 64), (96, 96)], BF16, "on 1/16 of the slices"),
    (BATCHED, "i8:i32", dict(b=2, m=64, n=128, k=64), [(2, 64, 64), (2, 128, 64), (2, 64, 128)], np.int32,
     "on 1/16 of the slices"),
    # a k too long for one slice and a result too small for the tile the smallest split
    # leaves: k goes over more slices (16 chunks of 256 for 16 slices of 32 x 32 results)
    (GEMM, "i8:i32", dict(m=128, n=128, k=4096), [(128, 4096), (128, 4096), (128, 128)], np.int32,
     "k over 16 slices"),
    (GEMV, "i8:i32", dict(m=300, k=64), [(512, 64), (64,), (512,)], np.int32, None),
    (GEMV, "i8:i32", dict(m=96, k=128), [(96, 128), (128,), (96,)], np.int32, None),
]


def _oracle(einsum: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    wide = [x.astype(np.int64 if x.dtype == np.int8 else np.float64) for x in (a, b)]
    return {GEMM: lambda: wide[0] @ wide[1].T, GEMV: lambda: wide[0] @ wide[1],
            BATCHED: lambda: np.einsum("bmk,bnk->bmn", *wide)}[einsum]()


@pytest.mark.parametrize("einsum, dtype, sizes, shapes, out_dtype, placement", CASES,
                         ids=[f"{e.split('=')[0].strip()}-{d}-{'x'.join(map(str, s.values()))}"
                              for e, d, s, *_ in CASES])
def test_a_result_no_full_tile_covers_runs_on_fewer_slices_and_equals_the_oracle(
        tmp_path: Path, capsys: pytest.CaptureFixture, einsum: str, dtype: str, sizes: dict[str, int],
        shapes: list[tuple[int, ...]], out_dtype: np.dtype, placement: str | None) -> None:
    out = tmp_path / "out"
    text = ",".join(f"{k}={v}" for k, v in sizes.items())
    assert main(["synth", einsum, "--dtype", dtype, "--sizes", text, "-o", str(out), "--top", "1"]) == 0, \
        capsys.readouterr().err
    data = json.loads((out / "synth.json").read_text())
    params = data["candidates"][data["winner"]]["params"]
    if placement is not None:  # the slices it runs on (the `w by switch` twin of a placement moves w once)
        assert params["placement"].removesuffix(", w by switch").endswith(placement)
    assert data["refused_by_rule"] == {} and all(c["code"] is None for c in data["candidates"])
    module, error = load_file(out / "synth_kernel.py")
    assert error is None
    given = [tuple(sizes[i] for i in idx) for idx in ((["b"] if "b" in sizes else []) + ["m", "k"],
                                                      (["b"] if "b" in sizes else []) + (["n", "k"] if "n" in sizes
                                                                                         else ["k"]))]
    a, b = _operands(given, dtype)
    want = _oracle(einsum, a, b).astype(out_dtype)
    for backend in ("cpu", "visa"):
        args = []
        for x, shape in zip((a, b), shapes):
            full = np.zeros(shape, x.dtype)
            full[tuple(slice(0, n) for n in x.shape)] = x
            args.append(full)
        result = np.zeros(shapes[2], out_dtype)
        get_backend(backend).run(module.synth_kernel, (*args, result))
        got = result[tuple(slice(0, n) for n in want.shape)]
        assert np.array_equal(got, want), backend
        result[tuple(slice(0, n) for n in want.shape)] = 0
        assert not result.any(), backend  # the padding stays zero


def test_a_packet_longer_than_k_is_not_offered(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "out"
    assert main(["synth", GEMM, "--sizes", "m=512,n=512,k=32", "-o", str(out), "--top", "1"]) == 0
    data = json.loads((out / "synth.json").read_text())
    assert {c["params"]["packet"] for c in data["candidates"]} == {32}
    assert data["refused_by_rule"] == {}


def test_the_printout_names_the_operands_as_the_einsum_does(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Issue 58: the `trf` lever said ['w', 'a'] whatever the operands were called."""
    out = tmp_path / "out"
    einsum = "y[m,n] = x[m,k] * v[n,k]"
    assert main(["synth", einsum, "--sizes", "m=64,n=64,k=64", "-o", str(out), "--top", "1"]) == 0
    printed = capsys.readouterr().out
    assert "trf ['v', 'x']" in printed and "trf='v'" in printed and "'w'" not in printed
    source = (out / "synth_kernel.py").read_text()
    data = json.loads((out / "synth.json").read_text())
    trf = data["candidates"][data["winner"]]["params"]["trf"]
    assert data["levers"]["trf"] == ["v", "x"] and f"# trf='{trf}': {trf}'s " in source
    module, error = load_file(out / "synth_kernel.py")
    assert error is None
    x, v = _operands([(64, 64), (64, 64)], "i8:i32")
    y = np.zeros((64, 64), np.int32)
    get_backend("cpu").run(module.synth_kernel, (x, v, y))
    assert np.array_equal(y, x.astype(np.int64) @ v.astype(np.int64).T)
