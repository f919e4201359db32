"""examples/masked_softmax.py against a numpy float64 oracle (within a few f32 ulps: the
engine's exp / log are once-rounded and the reduce adds in its own order), cpu == visa bit
for bit, and the tagged passes that read the VRF lower to `vector_branch_rf` records."""

from __future__ import annotations

import numpy as np

import npu_opt
from tu_ops import rngd
from visa.interp import execute
from visa.parser import parse_visa
from visa.printer import print_artifact
from visa.verify import verify_text

from tests.backends.examples import example

THRESHOLD = -2.0  # the example's


def _masked_softmax(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    kept = x64 >= THRESHOLD
    top = np.where(kept, x64, -np.inf).max(axis=1, keepdims=True)
    e = np.where(kept, np.exp(np.where(kept, x64, 0.0) - top), 0.0)
    return e / e.sum(axis=1, keepdims=True)


def test_masked_softmax_on_cpu_and_visa():
    rng = np.random.default_rng(61)
    x = (rng.standard_normal((8, 64)) * 4).astype(np.float32)
    x[2] += 70.0                                   # a row that would overflow exp without the max
    x[5, :] = -50.0                                # a row with one kept cell: its softmax is 1 there
    x[5, 17] = THRESHOLD                           # the boundary itself is kept
    x[6, ::3] = -1e30                              # masked cells far below the threshold
    kernel = example("masked_softmax", "masked_softmax_kernel")
    text = npu_opt.compile(kernel).text
    assert print_artifact(parse_visa(text)) == text
    verify_text(text, rngd())
    assert text.count(" = vector_branch_rf ") == 2 and text.count(" = vector_branch ") == 1
    cpu = npu_opt.run(kernel, x)
    visa = execute(parse_visa(text), [x])
    np.testing.assert_array_equal(cpu.view(np.uint32), visa.view(np.uint32))
    want = _masked_softmax(x)
    np.testing.assert_allclose(cpu, want, rtol=4e-6, atol=1e-30)
    assert np.all(cpu[x < THRESHOLD] == 0.0) and cpu[5, 17] == 1.0
    np.testing.assert_allclose(cpu.astype(np.float64).sum(axis=1), 1.0, rtol=2e-5)
