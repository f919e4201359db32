"""Discovery compiles a kernel file the way `import` does: with the file's own `__future__`
imports only, so the CLI sees the same annotations as `python file.py` (driver/discover.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

import npu_opt
from driver.cli import main
from driver.discover import discover

# Kernels made by a factory: their annotations name the factory's arguments. With
# postponed (string) annotations those names could not be evaluated any more.
FACTORY = '''
{future}
from npu_opt import *

axes(N=256)


def scaled(dtype, factor):
    @device(chip=1)
    def kernel(ctx: Context, x: HbmTensor[dtype, m("1"), m("N")]) -> HbmTensor[dtype, m("1"), m("N")]:
        d = x.to_dm(ctx.tdma, DmTensor[dtype, m("1"), m("1 # 2"), m("N / 2"), m("N % 2")])
        y = (ctx.main.begin(d.view()).fetch(m("1"), m("N % 2")).fetch_cast(dtype)
             .collect(m("1"), m("N % 2 # 8")).vector_init().vector_intra_slice_tag(TagMode.ZERO)
             .vector_fxp(FxpBinaryOp.MUL_INT, factor).vector_final()
             .commit_trim(m("N % 2")).commit(m("N % 2")))
        return y.to_hbm(ctx.tdma)
    return kernel


times_five = scaled(i32, 5)
'''


def _write(tmp_path: Path, future: str) -> Path:
    path = tmp_path / "factory_kernels.py"
    path.write_text(textwrap.dedent(FACTORY.format(future=future)))
    return path


def test_factory_kernel_checks_and_compiles_from_the_command_line(tmp_path, capsys):
    path = _write(tmp_path, "")
    assert main(["check", str(path)]) == 0
    assert main(["compile", str(path), "-o", str(tmp_path / "build"), "--no-cache"]) == 0
    assert "1 ok" in capsys.readouterr().out
    assert (tmp_path / "build" / "kernel.visa").is_file()


def test_discovered_factory_kernel_runs_like_the_imported_one(tmp_path):
    (kernel,) = discover([str(_write(tmp_path, ""))]).kernels
    assert not isinstance(kernel.fn.__annotations__["x"], str)  # evaluated at def time, as on import
    x = (np.arange(256, dtype=np.int64) * 40_000_003 - 2**31).astype(np.int32)
    expected = ((x.astype(np.int64) * 5 + 2**31) % 2**32 - 2**31).astype(np.int32)
    cpu = npu_opt.run(kernel, x)
    np.testing.assert_array_equal(cpu, expected)
    np.testing.assert_array_equal(npu_opt.run(kernel, x, backend="visa"), cpu)


def test_a_file_that_postpones_its_annotations_keeps_them_as_strings(tmp_path, capsys):
    """The file's own `from __future__ import annotations` still applies: module-level names
    resolve, and the closure name `dtype` is then the user's USAGE error at its annotation."""
    path = _write(tmp_path, "from __future__ import annotations")
    (kernel,) = discover([str(path)]).kernels
    assert isinstance(kernel.fn.__annotations__["x"], str)
    assert main(["check", str(path)]) == 2
    out = capsys.readouterr().out
    assert "error[USAGE]" in out and "names `dtype`, which is not defined" in out
    assert "factory_kernels.py:10:" in out


def test_two_kernels_of_one_factory_are_named_after_their_bindings(tmp_path, capsys):
    """docs/porting.md's generic kernels: the factory called twice makes two kernels of one
    function name; each takes its module-level name, for `check`, its artifact and `run`."""
    path = tmp_path / "factory_kernels.py"
    path.write_text(textwrap.dedent(FACTORY.format(future="")) + "times_three = scaled(i32, 3)\n")
    five, three = discover([str(path)]).kernels
    assert (five.name, three.name) == ("times_five", "times_three")
    assert main(["check", str(path)]) == 0 and "2 ok" in capsys.readouterr().out
    build = tmp_path / "build"
    assert main(["compile", str(path), "-o", str(build), "--no-cache"]) == 0
    assert sorted(p.name for p in build.glob("*.visa")) == ["times_five.visa", "times_three.visa"]
    assert 'signature "times_three"' in (build / "times_three.visa").read_text()
    x = np.arange(256, dtype=np.int32) - 128
    np.testing.assert_array_equal(npu_opt.run(three, x, backend="visa"), x * 3)
    np.testing.assert_array_equal(npu_opt.run(five, x), x * 5)
