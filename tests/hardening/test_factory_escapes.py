"""A kernel made by a factory cannot silently take a module global for a mapping escape
(issue 28, item 17): `m("A / {tile}")` in the kernel body looks `tile` up in the body's
own variables and the module's, not in the factory's. When the factory has a `tile` of
another value than the module's, the kernel is refused (USAGE) with the fix, instead of
compiling with the module's value."""

from __future__ import annotations

import pytest

from driver.cli import main

FACTORY = '''from npu_opt import *

axes(A=4096, B=8)
Chip = m("1")
Cluster = m("1 # 2")
tile = {module_tile}


def make(tile):
    @device(chip=1)
    def factory_kernel(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i32, Chip, m("B, A")]:
        x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A / 16"), m("A / 8 % 2, A % 8, B")])
        y = (ctx.main.begin(x.view())
             .fetch(m("A / 8 % 2"), m("A % {tile}, B"{keyword}))
             .fetch_cast(i32)
             .collect(m("A / 8 % 2, A % 8"), m("B"))
             .commit_trim(m("B"))
             .commit(m("A / 8 % 2, A % 8, B")))
        return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("B, A")])
    return factory_kernel


kernel = make(8)
'''


@pytest.mark.parametrize("module_tile, keyword, status", [
    ("16", "", 2),             # the module's tile (16) would silently win over the factory's (8)
    ("8", "", 0),              # the same value: nothing is taken wrongly
    ("16", ", tile=tile", 0),  # passed explicitly: the factory's value
])
def test_a_factory_argument_shadowed_by_a_module_global(tmp_path, capsys, module_tile, keyword, status):
    path = tmp_path / "factory.py"
    path.write_text(FACTORY.replace("{module_tile}", module_tile).replace("{keyword}", keyword))
    assert main(["check", str(path)]) == status
    out = capsys.readouterr().out
    if status == 2:
        assert "error[USAGE]" in out and "`{tile}`" in out and "tile=tile" in out and "factory.py:" in out
    else:
        assert "checked 1 kernel(s): 1 ok" in out
