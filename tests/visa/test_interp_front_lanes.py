"""The interpreter's front-lane shortcuts (issue 29) give the bytes of the plain 8-lane run:
front-lane passes, broadcast VRF reads, and `Front` streams (feeds and passes that leave
only their front four lanes, read as such by passes, VRF loads and commits). Each example
is interpreted with the shortcuts on and again with them off (`lanes.trim_at` answering
-1, `vrf._walk` giving no per-step word, `lanes.HELD` off); the results must be equal bit
for bit, close to a numpy version of the kernel's math, and the test checks that the
shortcuts were taken."""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np
import pytest

import npu_opt
from visa import parse_visa
from visa.interp import execute_inout, vector, vector_branch, vrf
from visa.interp.fast import lanes

ROOT = Path(__file__).resolve().parents[2]


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _masked_softmax(x: np.ndarray) -> np.ndarray:
    keep = x >= -2.0  # examples/masked_softmax.py's THRESHOLD
    m = np.where(keep, x, -np.inf).max(axis=1, keepdims=True)
    e = np.where(keep, np.exp(x.astype(np.float64) - m), 0.0)
    return e / e.sum(axis=1, keepdims=True)


def _rmsnorm(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    return x64 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + 1e-6) * g


# file -> (kernel, numpy version)
EXAMPLES = {
    "softmax_rows.py": ("softmax_rows_kernel", _softmax),
    "masked_softmax.py": ("masked_softmax_kernel", _masked_softmax),
    "rmsnorm.py": ("rmsnorm_kernel", _rmsnorm),
}


def _inputs(file: str, rng) -> list[np.ndarray]:
    x = rng.standard_normal((8, 64)).astype(np.float32) * 2
    if file == "rmsnorm.py":
        x[0, :3] = [0.0, -0.0, 1e-30]
        return [x, rng.standard_normal(64).astype(np.float32)]
    x[0, :2] = [-0.0, 0.0]
    x[1, :4] = [-1e30, 30.0, -30.0, 1e-40]  # exp underflows to 0 and to a subnormal
    x[:, 5] = np.abs(x[:, 5])  # every row of the masked softmax keeps a cell
    return [x]


def _bits(x) -> bytes:
    return np.asarray(x).view(np.uint32).tobytes()


@pytest.mark.parametrize("file", sorted(EXAMPLES))
def test_front_lane_shortcuts_give_the_8_lane_bytes(file, monkeypatch):
    name, oracle = EXAMPLES[file]
    kernel = runpy.run_path(str(ROOT / "examples" / file))[name]
    artifact = parse_visa(npu_opt.compile(kernel).text)
    arrays = _inputs(file, np.random.default_rng(3))
    taken: list[int] = []
    fronts: list[bool] = []
    trim_at = lanes.trim_at

    def spy(op):
        taken.append(trim_at(op))
        return taken[-1]

    for mod in (vector, vector_branch):
        monkeypatch.setattr(mod, "trim_at", spy)
    for mod in (vector, vrf):
        run = mod.run_vector

        def front_spy(op, stream, *args, run=run, **kw):
            fronts.append(isinstance(stream, lanes.Front))
            return run(op, stream, *args, **kw)

        monkeypatch.setattr(mod, "run_vector", front_spy)
    fast = execute_inout(artifact, arrays)[0][0]
    assert any(at >= 0 for at in taken), "no pass ran on the front lanes"
    assert any(fronts), "no pass read a four-lane stream"
    for mod in (vector, vector_branch):
        monkeypatch.setattr(mod, "trim_at", lambda op: -1)
    walk = vrf._walk
    monkeypatch.setattr(vrf, "_walk", lambda read: (*walk(read)[:2], None))
    monkeypatch.setattr(lanes, "HELD", False)
    fronts.clear()
    slow = execute_inout(artifact, arrays)[0][0]
    assert not any(fronts)
    assert _bits(fast) == _bits(slow)
    np.testing.assert_allclose(np.asarray(fast, np.float64), oracle(*arrays), rtol=2e-6, atol=1e-37)


def test_front_stream_widens_to_zero_back_lanes():
    front = np.arange(24, dtype=np.uint32).reshape(1, 6, 4) + 1
    wide = lanes.Front(front).materialize()
    assert wide.shape == (1, 6, 8) and lanes.Front(front).shape == (1, 6, 8)
    assert np.array_equal(wide[..., :4], front) and not wide[..., 4:].any()
