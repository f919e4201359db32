"""attrs' generated methods come from the on-disk code cache in a later process
(ir/attrs_code_cache.py), and classes made from it behave as freshly compiled ones: the same
artifacts, equality and hashing that agree within the process."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import ir.attrs_code_cache as cache
from ir.mapping.nodes import Symbol
from ir.ops import Value
from npu_opt.compile_api import compile_kernel
from tests.kernel_files import load_source
text = open("examples/gemm.py").read()
outcome = compile_kernel(load_source(text, "cache_child").gemm_kernel)
a, b = Symbol("I", 64).stride(32), Symbol("I", 64).stride(32)
assert a == b and hash(a) == hash(b) and a is not b and a != Symbol("I", 64).stride(16)
assert hash(Value(1, None)) == hash(Value(1, None)) and Value(1, None) != Value(2, None)
print(cache._STATE["new"], len(cache._CODES))
print(outcome.text)
"""


def _run(cache_dir: Path) -> tuple[int, int, str]:
    env = {k: v for k, v in os.environ.items()} | {"NPU_OPT_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=True)
    counts, text = done.stdout.split("\n", 1)
    new, total = map(int, counts.split())
    return new, total, text


def test_a_later_process_compiles_no_generated_method(tmp_path):
    first_new, first_total, first_text = _run(tmp_path)
    assert first_new == first_total > 100            # the first process compiled and saved them
    assert list(tmp_path.glob("attrs-code-*.marshal"))
    second_new, second_total, second_text = _run(tmp_path)
    assert second_new == 0 and second_total == first_total
    assert second_text == first_text


def test_an_unwritable_cache_falls_back_to_compiling(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    new, total, text = _run(blocked / "cache")
    assert new == total > 100 and text.startswith("visa ")
