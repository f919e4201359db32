"""The traced IR text is deterministic: identical across processes and hash seeds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.npu_opt.test_compile_cli import EXAMPLE_KERNELS

ROOT = Path(__file__).parents[2]

SCRIPT = """
from driver.discover import discover
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
    assert first.count("kernel @") == len(EXAMPLE_KERNELS) and "contract_outer" in first and "transpose" in first
