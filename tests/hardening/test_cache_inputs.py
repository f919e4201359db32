"""The compile cache keys on every input the import and the trace read (issue 28, item 2):
a new module beside the kernel that shadows one on the module search path, a change of
that path, `os.environb`, and checks that only stat or list files (`Path.exists()`,
`os.path.getsize`, `glob`). Each case compiles, changes the input, and compiles again
with the cache: the result must be the one a `--no-cache` compile gives."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from driver.cli import main
from npu_opt.per_file_imports import system_roots
from tests.hardening.kernels import write


def _forget(root: Path) -> None:
    for name in [n for n, mod in sys.modules.items() if str(getattr(mod, "__file__", "")).startswith(str(root))]:
        del sys.modules[name]


def compile_(src: Path, out: Path, *extra: str) -> tuple[int, dict[str, str]]:
    _forget(src.parent)
    status = main(["compile", str(src / "kern.py"), "-o", str(out), "--jobs", "1", *extra])
    return status, {p.name: p.read_text() for p in sorted(out.iterdir()) if p.suffix in (".visa", ".fail")}


def _edit_then_compare(tmp_path: Path, src: Path, edit) -> None:
    out = tmp_path / "out"
    first = compile_(src, out)
    assert first[0] in (0, 2), first
    edit()
    again = compile_(src, out)
    fresh = compile_(src, tmp_path / f"fresh{len(list(tmp_path.iterdir()))}", "--no-cache")
    assert again == fresh
    assert again != first


@pytest.fixture
def src(tmp_path, monkeypatch):
    (tmp_path / "src").mkdir()
    monkeypatch.delenv("WC_BYTES", raising=False)
    yield tmp_path / "src"
    _forget(tmp_path)


def test_a_new_module_beside_the_kernel_shadowing_one_on_the_search_path(tmp_path, src, monkeypatch):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "shade_helper.py").write_text("A_SIZE = 2048\n")
    monkeypatch.syspath_prepend(str(lib))
    write(src, head="from shade_helper import A_SIZE\n", replace=("axes(A=4096, B=8)", "axes(A=A_SIZE, B=8)"))
    _edit_then_compare(tmp_path, src, lambda: (src / "shade_helper.py").write_text("A_SIZE = 1024\n"))


def test_a_change_of_the_module_search_path(tmp_path, src, monkeypatch):
    for name, size in (("lib1", 2048), ("lib2", 1024)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "path_helper.py").write_text(f"A_SIZE = {size}\n")
    monkeypatch.syspath_prepend(str(tmp_path / "lib1"))
    write(src, head="from path_helper import A_SIZE\n", replace=("axes(A=4096, B=8)", "axes(A=A_SIZE, B=8)"))
    _edit_then_compare(tmp_path, src, lambda: sys.path.insert(0, str(tmp_path / "lib2")))


def test_an_environb_read(tmp_path, src, monkeypatch):
    write(src, head="import os\n", replace=("axes(A=4096, B=8)",
                                            "axes(A=2048 * int(os.environb.get(b'WC_BYTES', b'1')), B=8)"))
    _edit_then_compare(tmp_path, src, lambda: monkeypatch.setenv("WC_BYTES", "2"))


@pytest.mark.parametrize("check", ["Path.exists", "os.path.getsize", "glob"])
def test_a_stat_or_listing_at_trace_time(tmp_path, src, check):
    data = src / "data"
    data.mkdir()
    (data / "flag").write_text("x")
    test = {"Path.exists": "(Path(__file__).parent / 'data' / 'flag').exists()",
            "os.path.getsize": "os.path.getsize(Path(__file__).parent / 'data' / 'flag') > 1",
            "glob": "len(list((Path(__file__).parent / 'data').glob('*'))) > 1"}[check]
    write(src, head="import os\nfrom pathlib import Path\n",
          body=f"if {test}:\n        raise ValueError('the data says no')")

    def edit():
        if check == "Path.exists":
            (data / "flag").unlink()
        else:
            (data / "flag").write_text("xx")
            (data / "other").write_text("x")

    _edit_then_compare(tmp_path, src, edit)


def test_a_recorded_load_after_the_system_roots_memo_was_cleared(tmp_path, src):
    """`system_roots` resolves paths; computed inside the stat hook (after a benchmark's
    `clear_caches` emptied its memo) it must not re-enter the hook: that recursed to
    Python's limit and failed the kernel file's load (and cost a cache hit ~0.2 s)."""
    write(src)
    out = tmp_path / "out"
    assert compile_(src, out)[0] == 0
    system_roots.cache_clear()
    again = compile_(src, out)
    assert again[0] == 0, again
    assert again == compile_(src, tmp_path / "fresh", "--no-cache")
