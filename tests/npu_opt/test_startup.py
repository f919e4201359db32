"""Start-up: importing npu_opt and the commands that never touch host arrays import
neither ml_dtypes (about half a second of CPU in its 0.7 releases) nor the lowering
(tu_ops) when they do not use it; and the ml_dtypes versions npu-opt supports."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import sys
from driver.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
print(" ".join(sorted({{{name} for m in sys.modules}})), file=sys.stderr)
"""


def _imported(argv: list[str], tmp_path: Path, *, packages: bool = True) -> set[str]:
    """The packages (or, not `packages`, the modules) loaded by `npu-opt ARGV`."""
    name = "m.split('.')[0]" if packages else "m"
    code = f"import sys, npu_opt\nprint(' '.join(sorted({{{name} for m in sys.modules}})), file=sys.stderr)" \
        if argv is None else PROBE.format(argv=argv, name=name)
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    return set(done.stderr.strip().splitlines()[-1].split())


@pytest.mark.parametrize("argv,forbidden", [
    (None, {"ml_dtypes", "numpy", "lark", "tu_ops", "visa", "backends"}),
    (["--version"], {"ml_dtypes", "numpy", "tu_ops", "visa", "backends"}),
    (["check", str(ROOT / "examples")], {"ml_dtypes", "tu_ops", "visa"}),
    (["compile", str(ROOT / "examples" / "gemm.py"), "-o", "OUT"], {"ml_dtypes"}),
])
def test_commands_import_only_what_they_use(argv, forbidden, tmp_path: Path) -> None:
    if argv is not None:
        argv = [str(tmp_path / "out") if a == "OUT" else a for a in argv]
    loaded = _imported(argv, tmp_path)
    assert "ir" in loaded or argv is None
    assert not loaded & forbidden


def test_compile_loads_no_cpu_backend(tmp_path: Path) -> None:
    """`npu-opt compile` reaches `backends.npu`; the cpu backend (host arrays, the
    executor) is imported only by a command or a call that runs a kernel on it."""
    argv = ["compile", str(ROOT / "examples" / "gemm.py"), "-o", str(tmp_path / "out"), "--jobs", "1"]
    loaded = _imported(argv, tmp_path, packages=False)
    assert "backends.npu" in loaded
    assert not {m for m in loaded if m == "backends.cpu" or m.startswith("backends.cpu.")}


def test_supported_ml_dtypes_versions() -> None:
    """pyproject.toml names the oldest supported ml_dtypes: 0.5, the first with
    float4_e2m1fn. The installed one is at least that and has every type npu-opt uses."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    spec = next(d for d in deps if d.startswith("ml_dtypes"))
    low = re.search(r">=\s*([0-9.]+)", spec).group(1)
    assert tuple(int(p) for p in low.split(".")) >= (0, 5)
    have = tuple(int(p) for p in re.findall(r"[0-9]+", ml_dtypes.__version__)[:2])
    assert have >= tuple(int(p) for p in low.split("."))[:2]
    for name, size in (("bfloat16", 2), ("float8_e4m3fn", 1), ("float8_e5m2", 1), ("float4_e2m1fn", 1)):
        assert np.dtype(getattr(ml_dtypes, name)).itemsize == size


def test_a_cached_explain_page_loads_neither_numpy_nor_lark(tmp_path: Path) -> None:
    """`npu-opt explain CODE` runs the page's example once (its output is then cached under
    the user cache directory, here in HOME); a later call reads the rule index (titles
    only, no checks) and the cached output, and loads no numerics and no parser."""
    _imported(["explain", "DMA-1"], tmp_path)
    loaded = _imported(["explain", "DMA-1"], tmp_path)
    assert "ir" in loaded
    assert not loaded & {"ml_dtypes", "numpy", "lark", "tu_ops", "visa", "backends"}


def test_a_warm_compile_loads_no_compiler(tmp_path: Path) -> None:
    """`npu-opt compile` of unchanged kernels into the same DIR is answered from DIR's run
    record (driver/replay.py): it executes no kernel file and loads no numerics, no parser,
    no attrs, no lowering, not even argparse."""
    argv = ["compile", str(ROOT / "examples" / "gemv.py"), "-o", str(tmp_path / "out"), "--jobs", "1"]
    first = _imported(argv, tmp_path)
    assert {"numpy", "tu_ops"} <= first  # the cold run compiled
    loaded = _imported(argv, tmp_path)
    assert "driver" in loaded
    assert not loaded & {"ml_dtypes", "numpy", "lark", "attrs", "attr", "tu_ops", "visa", "backends", "examples",
                         "argparse"}  # a plain command line


def test_the_command_line_collects_less_and_freezes_before_exit(tmp_path: Path) -> None:
    """Issue 29: the process's own command line raises the collector's threshold (start-up
    builds ~150,000 long-lived objects) and freezes every object once the command is done,
    so the interpreter's exit does not search them all for cycles; a caller that passes
    `argv` (a test, a tool embedding the command line) keeps its collector as it was."""
    probe = ("import gc, sys\nfrom driver.cli import main\n"
             "sys.argv = ['npu-opt', 'compile', {gemm!r}, '-o', {out!r}, '--no-cache']\n"
             "before = gc.get_threshold()\nstatus = main({argv})\n"
             "print(status, before[0], gc.get_threshold()[0], gc.get_freeze_count() > 0)\n")
    gemm, out = str(ROOT / "examples" / "gemm.py"), str(tmp_path / "out")
    runs = {}
    for own in (True, False):
        argv = None if own else ["compile", gemm, "-o", out, "--no-cache"]
        done = subprocess.run([sys.executable, "-c", probe.format(gemm=gemm, out=out, argv=argv)], cwd=tmp_path,
                              capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                                                                     "HOME": str(tmp_path)})
        runs[own] = done.stdout.splitlines()[-1].split()
    assert runs[True] == ["0", "700", "200000", "True"]
    assert runs[False] == ["0", "700", "700", "False"]


def test_importing_a_submodule_of_npu_opt_loads_no_vector_units(tmp_path: Path) -> None:
    """`from npu_opt import stages` (the DSL's modules import each other this way) asks the
    package's `__getattr__` first: a submodule's name is answered at once, without loading
    the Vector Engine units (and their numerics) to look for an op enum of that name."""
    code = ("import sys, npu_opt\nfrom npu_opt import per_file_imports\n"
            "print('ir.vector.units' in sys.modules, npu_opt.FpBinaryOp.__name__)")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.stdout.split() == ["False", "FpBinaryOp"], done.stderr


def test_a_gemm_compile_loads_no_vector_lowering(tmp_path: Path) -> None:
    """Issue 29: a kernel without Vector Engine stages loads the lowerings it uses (the
    lowering tables' index, tu_ops/lower/declared_index.py), the destination classes its
    feeds name (tu_ops/feed_fields.py: DestKind), and no vector, gather, runtime or SPM lowering or record
    module (tu_ops/lower/build.py loads those with a kernel's first such step)."""
    argv = ["compile", str(ROOT / "examples" / "gemm.py"), "-o", str(tmp_path / "out"), "--jobs", "1"]
    loaded = _imported(argv, tmp_path, packages=False)
    assert {"tu_ops.lower.contract", "tu_ops.contract"} <= loaded
    assert not loaded & {"tu_ops.lower.vector", "tu_ops.lower.vector_inter", "tu_ops.lower.vector_pair",
                         "tu_ops.lower.vector_branch", "tu_ops.vector_pair", "tu_ops.vector_branch",
                         "tu_ops.vector_inter", "tu_ops.transpose", "tu_ops.gather", "tu_ops.runtime", "tu_ops.spm"}


def test_the_star_import_defines_branched_without_the_branched_ops(tmp_path: Path) -> None:
    """`from npu_opt import *` (every kernel file) defines `Branched`, `TagGuard` and `Stash`
    without loading the branched ops, the vector chain's methods or the stash's
    (npu_opt/branched.py): a kernel without a Vector Engine chain never uses them."""
    code = ("import sys\nfrom npu_opt import *\n"
            "print(Branched.__name__, TagGuard.__name__, type(Stash).__name__, sorted(m for m in sys.modules if m in "
            "('ir.vector.branch_ops', 'npu_opt.vector_branch', 'npu_opt.vector_chain_methods', "
            "'npu_opt.vector_stash', 'ir.vector.stash_ops')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.stdout.split() == ["Branched", "TagGuard", "StashOperand", "[]"], done.stderr
