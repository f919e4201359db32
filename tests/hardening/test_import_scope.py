"""Each kernel file sees its own imports (issue 28, item 1): two kernel files in different
folders that import a helper module of the same name each get the helper beside them."""

from __future__ import annotations

import json
import sys

import pytest

from driver.cli import main
from tests.hardening.kernels import write


@pytest.fixture
def two_folders(tmp_path):
    for folder, name, size in (("a", "ka", 2048), ("b", "kb", 1024)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "shape_helper.py").write_text(f"A_SIZE = {size}\n")
        write(tmp_path / folder, f"{name}.py", name=f"{name}_kernel", head="from shape_helper import A_SIZE\n",
              replace=("axes(A=4096, B=8)", "axes(A=A_SIZE, B=8)"))
    yield tmp_path
    for name in [n for n, mod in sys.modules.items() if str(getattr(mod, "__file__", "")).startswith(str(tmp_path))]:
        del sys.modules[name]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_each_kernel_file_gets_the_helper_beside_it(two_folders, jobs, capsys):
    out = two_folders / "out"
    status = main(["compile", str(two_folders / "a" / "ka.py"), str(two_folders / "b" / "kb.py"),
                   "-o", str(out), "--jobs", jobs, "--no-cache"])
    assert status == 0, capsys.readouterr().out
    assert "A=2048" in (out / "ka_kernel.visa").read_text()
    assert "A=1024" in (out / "kb_kernel.visa").read_text()


def test_a_helper_imported_inside_the_kernel_body_is_the_files_own(tmp_path, capsys):
    for folder, size in (("a", 2048), ("b", 1024)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "late_helper.py").write_text(f"SIZE = {size}\n")
        write(tmp_path / folder, f"k{folder}.py", name=f"k{folder}_kernel",
              body=f"import late_helper\n    assert late_helper.SIZE == {size}, late_helper.SIZE")
    assert main(["check", str(tmp_path / "a"), str(tmp_path / "b")]) == 0, capsys.readouterr().out
    for name in [n for n, mod in sys.modules.items() if str(getattr(mod, "__file__", "")).startswith(str(tmp_path))]:
        del sys.modules[name]

