"""The interpreter's front-lane passes and broadcast VRF reads (issue 29) give the bytes of
the plain 8-lane run: each example is interpreted with the shortcuts on and again with them
off (`lanes.trim_at` answering -1, `vrf._walk` giving no per-step word), and the results
must be equal bit for bit; the test also checks that the shortcuts were taken."""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np
import pytest

import npu_opt
from visa import parse_visa
from visa.interp import execute_inout, lanes, vector, vector_branch, vrf

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = {"softmax_rows.py": "softmax_rows_kernel", "masked_softmax.py": "masked_softmax_kernel"}


def _inputs(rng) -> list[np.ndarray]:
    x = rng.standard_normal((8, 64)).astype(np.float32) * 4
    x[0, :5] = [np.inf, -np.inf, np.nan, -0.0, 0.0]
    return [x]


@pytest.mark.parametrize("file", sorted(EXAMPLES))
def test_front_lane_passes_give_the_8_lane_bytes(file, monkeypatch):
    kernel = runpy.run_path(str(ROOT / "examples" / file))[EXAMPLES[file]]
    artifact = parse_visa(npu_opt.compile(kernel).text)
    arrays = _inputs(np.random.default_rng(3))
    taken: list[int] = []
    trim_at = lanes.trim_at

    def spy(op):
        taken.append(trim_at(op))
        return taken[-1]

    for mod in (vector, vector_branch):
        monkeypatch.setattr(mod, "trim_at", spy)
    fast = execute_inout(artifact, arrays)[0][0]
    assert any(at >= 0 for at in taken), "no pass ran on the front lanes"
    for mod in (vector, vector_branch):
        monkeypatch.setattr(mod, "trim_at", lambda op: -1)
    walk = vrf._walk
    monkeypatch.setattr(vrf, "_walk", lambda read: (*walk(read)[:2], None))
    slow = execute_inout(artifact, arrays)[0][0]
    assert np.asarray(fast).view(np.uint32).tobytes() == np.asarray(slow).view(np.uint32).tobytes()
