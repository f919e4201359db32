"""The traced IR text is deterministic: identical across processes and hash seeds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]

SCRIPT = """
from npu_opt.discover import discover
for k in discover(["examples"]).kernels:
    print(k.trace().kernel.text())
"""


def ir_text(seed: str) -> str:
    env = dict(os.environ, PYTHONHASHSEED=seed)
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True,
                         text=True, check=True)
    return out.stdout


def test_ir_text_is_identical_across_hash_seeds():
    first, second = ir_text("1"), ir_text("12345")
    assert first == second
    assert first.count("kernel @") == 13 and "contract_outer" in first and "transpose" in first
