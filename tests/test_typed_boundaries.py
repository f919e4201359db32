"""The layers hand each other typed objects, not `Any` (issue #26, "type the boundaries").

Each layer's entry points are annotated with the real types: a `@device` kernel as
`npu_opt.device.DeviceKernel` in the DSL and as the `ir.boundary.Traceable` protocol below it,
a traced kernel as `ir.kernel.Kernel`, a target as `tu_ops.target.TargetLike` (a target object,
a name or a path) or, in `ir`, as `ir.boundary.TargetRef`. Two checks hold them:
- the entry-point modules type-check under mypy (the protocol and its implementations agree:
  mypy found `npu_opt.run` passing `numerics=` to a `Backend` whose protocol has no such
  argument);
- no parameter named like a kernel or a target is annotated `Any` in those modules, and the
  count of such parameters in the rest of the tree only goes down.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests import source_tree

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("npu_opt", "synth", "driver", "ir", "tu_ops", "visa", "backends")

BOUNDARY = (
    "ir/boundary.py", "ir/rules/fetch_size.py", "ir/rules/topology.py",
    "npu_opt/run.py", "npu_opt/report.py", "npu_opt/compile_api.py", "npu_opt/trace.py",
    "tu_ops/lower/api.py",
    "visa/interp/walker.py",
    "backends/__init__.py", "backends/base.py", "backends/typecheck.py", "backends/npu.py",
    "backends/visa_backend.py",
)
"""The entry point of each layer, as the next layer calls it."""

NAMES = ("kernel", "target", "artifact_or_kernel")

UNTYPED_ELSEWHERE = 241
"""Parameters named in NAMES and annotated `Any` outside BOUNDARY when this test was written:
the count may only go down (lower it when you type some)."""


def _any_params(path: Path, root: Path = ROOT) -> list[str]:
    """`file:line name` of every parameter in NAMES annotated as plain `Any`."""
    tree = source_tree.tree(path)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for a in (*args.posonlyargs, *args.args, *args.kwonlyargs):
                ann = a.annotation
                if a.arg in NAMES and isinstance(ann, ast.Name) and ann.id == "Any":
                    out.append(f"{path.relative_to(root)}:{a.lineno} {a.arg}")
    return out


def test_boundary_parameters_are_typed():
    found = [hit for rel in BOUNDARY for hit in _any_params(ROOT / rel)]
    assert not found, "annotate these with the layer's type (ir.boundary, tu_ops.target.TargetLike):\n" + \
        "\n".join(found)


def test_untyped_kernels_and_targets_only_decrease():
    boundary = {ROOT / rel for rel in BOUNDARY}
    found = [hit for package in PACKAGES for path in source_tree.paths(package)
             if path not in boundary for hit in _any_params(path)]
    assert len(found) <= UNTYPED_ELSEWHERE, (
        f"{len(found)} kernel/target parameters annotated `Any` (at most {UNTYPED_ELSEWHERE}): type the ones "
        "you added (a target is `tu_ops.target.Target` in tu_ops and visa). All of them:\n" + "\n".join(found))


def test_a_checker_finds_an_untyped_parameter(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from typing import Any\ndef f(kernel: Any, target: 'Target', other: Any): ...\n")
    assert _any_params(sample, tmp_path) == ["sample.py:2 kernel"]


def test_entry_points_type_check(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--follow-imports=silent", "--ignore-missing-imports",
         "--no-error-summary", "--cache-dir", str(tmp_path / "mypy"), *BOUNDARY],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
