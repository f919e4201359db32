"""npu-opt runs from bytecode alone: no module is found by reading a source file.

A sourceless install (`python -m compileall -b`, every `.py` removed; a zip or frozen
install alike) has each module's `.pyc` where its `.py` was. Every name a package exports
lazily, every stage method loaded on first use and every lowering / interpreter table must
then still be found, because each is bound by a real import, never by reading a module's
text or its file name. The test builds such a copy of the six packages in a temporary
directory, and in a fresh process there imports `npu_opt`, resolves its lazy names, and
compiles a shipped example and runs another on the cpu and visa backends: the `.visa` must be
byte for byte the one the source tree emits.
"""

from __future__ import annotations

import compileall
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import source_tree

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("driver", "npu_opt", "synth", "ir", "tu_ops", "visa", "backends")

_SCRIPT = """
import sys, numpy as np
import npu_opt
assert npu_opt.__file__.endswith(sys.argv[3]), npu_opt.__file__
from npu_opt import *                       # every lazy public name
assert npu_opt.testing is not None
import tu_ops, visa
assert tu_ops.TuOp and visa.parse_visa
from driver.cli import main
code = main(["compile", sys.argv[1], "-o", sys.argv[2], "--no-cache"])
assert code == 0, code
"""


@pytest.fixture(scope="module")
def sourceless(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sourceless")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    assert compileall.compile_dir(str(root), quiet=1, legacy=True)
    for path in root.rglob("*.py"):
        path.unlink()
    return root


def _env(path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NPU_OPT_")}
    env["PYTHONPATH"] = str(path)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def test_the_copy_has_no_source(sourceless):
    assert list(sourceless.rglob("*.py")) == []
    assert (sourceless / "npu_opt" / "__init__.pyc").is_file()


def test_a_sourceless_install_imports_and_compiles_an_example(sourceless, tmp_path):
    example = ROOT / "examples" / "gemm.py"
    script = tmp_path / "script.py"
    script.write_text(_SCRIPT)
    out = subprocess.run([sys.executable, str(script), str(example), str(tmp_path / "out"), ".pyc"], cwd=tmp_path,
                         env=_env(sourceless), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    ours = subprocess.run([sys.executable, str(script), str(example), str(tmp_path / "src"), ".py"], cwd=tmp_path,
                          env=_env(ROOT), capture_output=True, text=True, timeout=300)
    assert ours.returncode == 0, ours.stderr[-3000:]
    built = sorted(p.name for p in (tmp_path / "out").glob("*.visa"))
    assert built
    for name in built:
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "src" / name).read_bytes(), name


def test_no_module_is_imported_by_a_name_in_a_string():
    """The six packages import modules by import statements only: no `importlib.import_module`,
    `__import__` or package walk (pkgutil), whose names a sourceless or frozen install, a
    reader and an IDE cannot follow."""
    import ast

    found = []
    for package in PACKAGES:
        for path in source_tree.paths(package):
            for node in ast.walk(source_tree.tree(path)):
                name = (node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                        ) if isinstance(node, ast.Call) else ""
                modules = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                           [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                if name in ("import_module", "__import__") or "pkgutil" in modules:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []
