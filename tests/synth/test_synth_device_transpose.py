"""`--transpose device` (synth/onchip.py `device_transpose`): an operand stored with
the contracted index first, numpy's `b[k,n]` of `out[m,n] = a[m,k] * b[k,n]`, is read as stored
(the host array is the user's, not a transposed copy) and each slice's block is turned into
rows of `k` by the Transpose Engine before the TRF load or the stream. Each kernel equals an
independent numpy product on the cpu backend and in the VISA interpreter."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from driver.cli import main
from ir.errors import NpuOptError
from synth import contraction
from synth.space import build, points, source

# (einsum, dtype, sizes, placement, trf): blocks of 8 columns (one packet of 8 values a row),
# of 16 and more (packets of 16, the engine's doubled packing), several tiles, the stored
# operand streamed instead of held, and `a` stored k-first
CASES = [
    ("out[m,n] = a[m,k] * b[k,n]", "bf16:f32", dict(m=64, n=96, k=64), "8x4 of 8x8, on 1/8 of the slices", "b"),
    ("out[m,n] = a[m,k] * b[k,n]", "i8:i32", dict(m=128, n=256, k=64), "16x4 of 8x64, on 1/4 of the slices", "b"),
    ("out[m,n] = a[m,k] * b[k,n]", "bf16:bf16", dict(m=64, n=64, k=128), "4x4 of 16x16, on 1/16 of the slices", "a"),
    ("out[m,n] = a[k,m] * w[n,k]", "i8:i32", dict(m=64, n=64, k=96), "2x4 of 32x16, on 1/32 of the slices", "w"),
]


def _arrays(spec, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _, idx in spec.given[1:]:
        shape = tuple(spec.sizes[i] for i in idx)
        out.append(rng.integers(-128, 128, shape, dtype=np.int8) if spec.dtype_in == "i8"
                   else rng.integers(-4, 5, shape).astype(ml_dtypes.bfloat16))
    return out


@pytest.mark.parametrize("backend", ["cpu", "visa"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_a_device_transposed_kernel_equals_numpy(case, backend):
    einsum, dtype, sizes, placement, trf = CASES[case]
    spec = contraction(einsum, dtype=dtype, sizes=sizes, transpose="device")
    assert placement in points(spec)["placement"]
    point = dict(placement=placement, trf=trf, packet=min(points(spec)["packet"]),
                 **({"order": "ij", "reuse": "outer"} if "order" in points(spec) else {}))
    text = source(spec, point)
    stored = spec.transposed[0]
    assert ".transpose(" in text and "Device-side transpose" in text
    kernel = build(spec, point)
    assert npu_opt.check(kernel).ok
    arrays = _arrays(spec, case)
    host = spec.pad(*arrays)
    given = dict(spec.given[1:])
    assert host[[n for n, _ in spec.operands].index(stored)].shape == tuple(spec.padded[i] for i in given[stored])
    _, dout = spec.host_dtypes()
    out = np.zeros(spec.shape(spec.result[1]), dout)
    npu_opt.run(kernel, *host, out, backend=backend)
    wide = [a.astype(np.int64 if a.dtype == np.int8 else np.float64) for a in arrays]
    subs = ",".join("".join(idx) for _, idx in spec.given[1:])
    want = np.einsum(f"{subs}->mn", *wide)
    want = ((want + 2**31) % 2**32 - 2**31).astype(np.int32) if dtype == "i8:i32" else want.astype(dout)
    got = spec.unpad(out)
    assert got.dtype == want.dtype and np.array_equal(got.astype(np.float64), want.astype(np.float64))


def test_device_transpose_needs_an_operand_stored_k_first():
    with pytest.raises(NpuOptError, match="nothing to transpose"):
        contraction("out[m,n] = a[m,k] * w[n,k]", sizes=dict(m=64, n=64, k=64), transpose="device")
    with pytest.raises(NpuOptError, match="host or device"):
        contraction("out[m,n] = a[m,k] * b[k,n]", sizes=dict(m=64, n=64, k=64), transpose="gpu")


def test_the_command_line_writes_a_device_transposed_kernel(tmp_path: Path):
    out = tmp_path / "dev"
    assert main(["synth", "out[m,n] = a[m,k] * b[k,n]", "--sizes", "m=64,n=64,k=64", "--transpose", "device",
                 "-o", str(out), "--top", "1"]) == 0
    data = json.loads((out / "synth.json").read_text())
    assert data["contraction"]["transpose"] == "device"
    assert 'b: HbmTensor[i8, Chip, m("K, N")]' in (out / "synth_kernel.py").read_text()
    assert "transpose='device'" in (out / "synth_space.py").read_text()
    assert main(["synth", "out[m,n] = a[m,k] * b[k,n]", "--sizes", "m=64,n=64,k=64", "--transpose", "gpu",
                 "-o", str(tmp_path / "bad")]) == 2
