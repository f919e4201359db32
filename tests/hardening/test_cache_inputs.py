"""The compile cache keys on every input the import and the trace read (issue 28, item 2):
a new module beside the kernel that shadows one on the module search path, a change of
that path, `os.environb`, and checks that only stat or list files (`Path.exists()`,
`os.path.getsize`, `glob`). Each case compiles, changes the input, and compiles again
with the cache: the result must be the one a `--no-cache` compile gives."""

from __future__ import annotations

import hashlib
import json
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


# --- issue 39, items 1 to 3 ----------------------------------------------------------------

@pytest.mark.parametrize("how", ["os.readlink", "Path.readlink", "os.path.realpath"])
def test_a_symlink_target_read_at_trace_time(tmp_path, src, how):
    """Retargeting a link the kernel reads (to a name of the same length: its lstat size
    stays) must not serve the artifact of the old target."""
    (src / "big").write_text("")
    (src / "low").write_text("")
    (src / "size").symlink_to("big")
    read = {"os.readlink": "os.readlink(Path(__file__).parent / 'size')",
            "Path.readlink": "str((Path(__file__).parent / 'size').readlink())",
            "os.path.realpath": "os.path.realpath(Path(__file__).parent / 'size')"}[how]
    write(src, head="import os\nfrom pathlib import Path\n",
          replace=("axes(A=4096, B=8)", f"axes(A=4096 if {read}.endswith('big') else 2048, B=8)"))

    def retarget():
        (src / "size").unlink()
        (src / "size").symlink_to("low")

    _edit_then_compare(tmp_path, src, retarget)


@pytest.mark.parametrize("read", ["posix.environ[b'WC_BYTES']", "posix.environ.get(b'WC_BYTES', b'1')",
                                  "dict(posix.environ).get(b'WC_BYTES', b'1')"])
def test_a_posix_environ_read(tmp_path, src, monkeypatch, read):
    monkeypatch.setenv("WC_BYTES", "1")
    write(src, head="import posix\n", replace=("axes(A=4096, B=8)", f"axes(A=2048 * int({read}), B=8)"))
    _edit_then_compare(tmp_path, src, lambda: monkeypatch.setenv("WC_BYTES", "2"))


def test_an_edited_cache_entry_is_a_miss(tmp_path, src, capsys):
    """An entry whose replayed text was edited (and the artifact deleted, so no run record
    answers) is recompiled: the artifact is the compiler's, and `visa --verify` takes it."""
    write(src)
    out = tmp_path / "out"
    first = compile_(src, out)
    assert first[0] == 0
    [entry] = [p for p in (out / ".npu-opt-cache").glob("*.json")]
    text = entry.read_text()
    assert "dma_commands=2" in text
    entry.write_text(text.replace("dma_commands=2", "dma_commands=3"))
    (out / "copy_kernel.visa").unlink()
    again = compile_(src, out)
    assert again == first
    capsys.readouterr()
    assert main(["visa", "--verify", str(out / "copy_kernel.visa")]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kernels"][0]["sha256"] == hashlib.sha256((out / "copy_kernel.visa").read_bytes()).hexdigest()


def test_a_symlinked_cache_directory_is_not_used(tmp_path, src, capsys):
    write(src)
    out = tmp_path / "out"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out.mkdir()
    (out / ".npu-opt-cache").symlink_to(elsewhere)
    for _ in range(2):
        status, files = compile_(src, out)
        assert status == 0 and "copy_kernel.visa" in files
        assert "is a symbolic link" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == []
    assert (out / ".npu-opt-cache").is_symlink()
