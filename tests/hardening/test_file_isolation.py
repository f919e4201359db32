"""One kernel file cannot change another's artifact (issue 55, item 1).

A file that rebinds a name of npu-opt's modules (`npu_opt.i8 = npu_opt.i32`, at import or
while its kernel is traced) changes what that file's own kernels see, as it would in a
process of its own, and nothing else: the next file's import and trace see npu-opt as
shipped, and the compile cache never keeps an artifact made under another file's change."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from driver.cli import main
from tests.hardening.kernels import write

PATCHES = {
    "npu_opt.i8": "import npu_opt\nnpu_opt.i8 = npu_opt.i32\n",
    "ir.dtypes.i8": "import ir.dtypes\nir.dtypes.i8 = ir.dtypes.i32\n",
    "numpy.zeros": "import numpy\nnumpy.zeros = numpy.ones\n",
}


@pytest.fixture(autouse=True)
def _forget_user_modules(tmp_path):
    yield
    for name in [n for n, mod in sys.modules.items() if str(getattr(mod, "__file__", "")).startswith(str(tmp_path))]:
        del sys.modules[name]


def _files(tmp_path, patch: str):
    src = tmp_path / "src"
    src.mkdir()
    (src / "a_patch.py").write_text(patch)
    write(src, "b_good.py", name="b_kernel")
    return src


def _visa(tmp_path, paths, out: str, *extra: str) -> str:
    status = main(["compile", *map(str, paths), "-o", str(tmp_path / out), *extra])
    assert status == 0
    return (tmp_path / out / "b_kernel.visa").read_text()


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("patch", list(PATCHES))
def test_a_patch_at_import_leaves_the_next_files_artifact_alone(tmp_path, capsys, patch, jobs):
    src = _files(tmp_path, PATCHES[patch])
    alone = _visa(tmp_path, [src / "b_good.py"], "alone", "--no-cache")
    assert "i8" in alone
    together = _visa(tmp_path, [src / "a_patch.py", src / "b_good.py"], "out", "--jobs", jobs)
    assert together == alone
    # the cache of `out` (filled by the run above) replays the right artifact
    assert _visa(tmp_path, [src / "b_good.py"], "out") == alone
    import npu_opt
    assert npu_opt.i8 is not npu_opt.i32


def test_a_patch_made_while_tracing_stays_with_its_file(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    # a's kernel patches npu-opt as it is traced, and sees its own patch; b's kernel, traced
    # after it, sees npu-opt as shipped (each assert fails the trace: a USAGE error)
    write(src, "a_patch.py", name="a_kernel", body="import npu_opt\n    npu_opt.i8 = npu_opt.i32\n"
          "    assert npu_opt.i8 is npu_opt.i32")
    write(src, "b_good.py", name="b_kernel", body="import npu_opt, ir.dtypes\n"
          "    assert npu_opt.i8 is not npu_opt.i32 and ir.dtypes.i8.bits == 8")
    status = main(["check", str(src / "a_patch.py"), str(src / "b_good.py")])
    out = capsys.readouterr().out
    assert status == 0, out
    assert main(["check", str(src / "b_good.py"), str(src / "a_patch.py")]) == 0, capsys.readouterr().out


def test_a_file_sees_its_own_import_time_patch_when_traced(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    write(src, "a_patch.py", name="a_kernel", head="import npu_opt\nnpu_opt.SHAPE_HINT = 4096\n",
          body="import npu_opt\n    assert npu_opt.SHAPE_HINT == 4096")
    write(src, "b_good.py", name="b_kernel", body="import npu_opt\n    assert not hasattr(npu_opt, 'SHAPE_HINT')")
    assert main(["check", str(src / "a_patch.py"), str(src / "b_good.py")]) == 0, capsys.readouterr().out


def test_a_module_first_imported_by_the_patch_is_put_back(tmp_path):
    # visa.printer is loaded by no file's import: in a fresh process the patch is what
    # imports it first, and it is put back as that import left it
    src = _files(tmp_path, "import visa.printer\nvisa.printer._signature = lambda kernel: ['patched']\n")
    done = subprocess.run([sys.executable, "-m", "npu_opt", "compile", "src/a_patch.py", "src/b_good.py", "-o", "out",
                           "--no-cache", "--jobs", "1"], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=os.environ | {"PYTHONPATH": str(Path(__file__).parents[2])})
    assert done.returncode == 0, (done.stdout, done.stderr)
    text = (tmp_path / "out" / "b_kernel.visa").read_text()
    assert "patched" not in text and "i8" in text


def test_a_file_that_loads_another_file_imports_as_usual(tmp_path):
    # a kernel file that loads another while it is imported (as some test files load the
    # examples) opens a scope inside a scope: a module neither had loaded still imports
    write(tmp_path, "inner.py", name="inner_kernel", head="import visa.printer\n")
    write(tmp_path, "outer.py", name="outer_kernel", head="from pathlib import Path\n"
          "from driver.discover import load_file\n"
          "_, error = load_file(Path(__file__).with_name('inner.py'))\nassert error is None, error\n")
    done = subprocess.run([sys.executable, "-m", "npu_opt", "check", "outer.py"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env=os.environ | {"PYTHONPATH": str(Path(__file__).parents[2])})
    assert done.returncode == 0, (done.stdout, done.stderr)
