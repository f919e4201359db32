"""A chain over a reshaped DM view (`t.reshape(...)`, VIEW-5: the same cells relabelled, every
level's size kept) compiles to an artifact that `verify` accepts: its feed reads the tensor
under the relabelled mappings, which are neither the tensor's element nor a window of it,
and says so (`reshape=[...]`, the levels the reshape relabelled the tensor to). The
artifact runs to the cpu result and to the input itself (a copy); a source of another size is
still refused, and so is a relabel the record does not mark as a reshape, or one that is not
its reshape (FEED-15). A tile of a reshaped view feeds too."""

from __future__ import annotations

import re
import runpy

import numpy as np
import pytest

import npu_opt
from tu_ops import rngd
from visa.artifact import VisaTextError
from visa.interp import execute
from visa.parser import parse_visa
from tests.kernel_text import parse_kernel
from tests.agree import both_backends
from tu_ops.lower import Options, lower
from visa.printer import print_visa
from visa.verify import verify_text

SRC = '''
from npu_opt import *
axes(S=256, G=4, H=64, A=4, B=8, C=32)

@device(chip=1)
def relabel_copy(ctx: Context, x: HbmTensor[i32, m("1"), m("S, A, B")]) -> HbmTensor[i32, m("1"), m("S, A, B")]:
    x = x.to_dm(ctx.tdma, DmTensor[i32, m("1"), m("1 # 2"), m("S"), m("A, B")])
    v = x.reshape(m("1"), m("1 # 2"), m("{slices}"), m("C"))
    y = (ctx.sub.begin(v).fetch(m("C / 8"), m("C % 8")).collect(m("C / 8"), m("C % 8"))
         .commit_trim(m("C % 8")).commit())
    return y.reshape(m("1"), m("1 # 2"), m("S"), m("A, B")).to_hbm(ctx.tdma)
'''


def _kernel(tmp_path, slices):
    path = tmp_path / "relabel.py"
    path.write_text(SRC.format(slices=slices))
    return runpy.run_path(str(path))["relabel_copy"]


@pytest.mark.parametrize("slices", ["S", "G, H"])
def test_a_reshaped_view_verifies_and_runs(tmp_path, slices):
    kernel = _kernel(tmp_path, slices)
    text = npu_opt.compile(kernel).text
    verify_text(text, rngd())
    assert 'f32' not in text and '"C")' in text  # the feed reads the relabelled element
    x = np.random.default_rng(7).integers(-2**31, 2**31 - 1, (256, 4, 8), dtype=np.int64).astype(np.int32)
    cpu = np.asarray(npu_opt.run(kernel, x))
    np.testing.assert_array_equal(cpu, x)
    np.testing.assert_array_equal(np.asarray(execute(parse_visa(text), [x])), cpu)


def test_a_source_of_another_size_is_still_refused(tmp_path):
    text = npu_opt.compile(_kernel(tmp_path, "S")).text
    assert text.count('i32, "C")') == 1
    bad = text.replace('i32, "C")', 'i32, "C / 2")')
    with pytest.raises(VisaTextError, match="not a window of it"):
        verify_text(bad, rngd())


MARK = re.compile(r' reshape=\[[^\]]*\]')


def _x(seed: int = 7) -> np.ndarray:
    return np.random.default_rng(seed).integers(-2**31, 2**31 - 1, (256, 4, 8), dtype=np.int64).astype(np.int32)


@pytest.mark.parametrize("slices", ["S", "G, H"])
def test_the_feed_names_the_levels_of_the_reshape(tmp_path, slices):
    text = npu_opt.compile(_kernel(tmp_path, slices)).text
    (feed,) = [line for line in text.splitlines() if " feed_buffer " in line]
    assert MARK.search(feed).group(0) == f' reshape=["1", "1 # 2", "{slices}", "C"]'


@pytest.mark.parametrize("slices", ["S", "G, H"])
def test_an_unmarked_relabel_is_refused(tmp_path, slices):
    """The same artifact without `reshape=`: its feed reads %1 relabelled (the element, and
    with "G, H" the Slice level too), which only a reshape may do."""
    text = npu_opt.compile(_kernel(tmp_path, slices)).text
    bare = MARK.sub("", text)
    assert bare.count("\n") == text.count("\n") and "reshape=" not in bare
    with pytest.raises(VisaTextError, match="FEED-15") as info:
        verify_text(bare, rngd())
    assert info.value.rule == info.value.code == "FEED-15"
    level = "Slice" if slices != "S" else "Element"
    assert ("program's Slice mapping" if level == "Slice" else 'source element "C"') in info.value.detail


@pytest.mark.parametrize("edit, says", [
    ('"S", "C"]', '"S", "C / 2"]'),          # a level of another size: not a reshape
    ('"S", "C"]', '"S", "B, A"]'),           # the right size, but the feed reads C
    ('"1 # 2", "S"', '"1 # 2", "1 # 256"'),  # the Slice level relabelled, the space not
])
def test_a_reshape_the_feed_does_not_read_is_refused(tmp_path, edit, says):
    text = npu_opt.compile(_kernel(tmp_path, "S")).text
    (mark,) = MARK.findall(text)
    assert mark.count(edit) == 1
    with pytest.raises(VisaTextError, match="FEED-15") as info:
        verify_text(text.replace(mark, mark.replace(edit, says)), rngd())
    assert info.value.rule == "FEED-15"


TILED = '''
from npu_opt import *
axes(S=256, G=4, H=64, A=4, B=8, C=32)

@device(chip=1)
def tile_of_reshape(ctx: Context, x: HbmTensor[i32, m("1"), m("S, A, B")]) -> HbmTensor[i32, m("1"), m("S, B")]:
    x = x.to_dm(ctx.tdma, DmTensor[i32, m("1"), m("1 # 2"), m("S"), m("A, B")])
    v = x.reshape(m("1"), m("1 # 2"), m("G, H"), m("C")).tile(m("C / 8"), 1, m("1 # 4, C % 8"), {start})
    y = (ctx.sub.begin(v).fetch(m("1"), m("C % 8")).collect(m("1"), m("C % 8"))
         .commit_trim(m("C % 8")).commit(m("C % 8")))
    return y.reshape(m("1"), m("1 # 2"), m("S"), m("B")).to_hbm(ctx.tdma, HbmTensor[i32, m("1"), m("S, B")])
'''


@pytest.mark.parametrize("start", [0, 1, 3])
def test_a_tile_of_a_reshaped_view_feeds_its_cells(tmp_path, start):
    """Row `start` of every slice's (4, 8) cells, read as the tile of C / 8 of the relabelled
    element C; its feed reads at offset 8 * start and names the reshape."""
    path = tmp_path / "tiled.py"
    path.write_text(TILED.format(start=start))
    kernel = runpy.run_path(str(path))["tile_of_reshape"]
    x = _x(start)
    cpu, text = both_backends(kernel, x, f'source=(%1, {8 * start}, i32, "1 # 4, C % 8")',
                              'reshape=["1", "1 # 2", "G, H", "C"]')
    np.testing.assert_array_equal(cpu, x[:, start, :])


def test_a_plain_tile_names_no_reshape(tmp_path):
    path = tmp_path / "tiled.py"
    path.write_text(TILED.format(start=2).replace('x.reshape(m("1"), m("1 # 2"), m("G, H"), m("C"))', "x.view()")
                    .replace('m("1 # 4, C % 8")', 'm("1 # 4, B")').replace('m("C / 8")', 'm("A")')
                    .replace('m("C % 8")', 'm("B")').replace('y.reshape(m("1"), m("1 # 2"), m("S"), m("B"))', "y"))
    kernel = runpy.run_path(str(path))["tile_of_reshape"]
    x = _x(2)
    cpu, text = both_backends(kernel, x, 'source=(%1, 16, i32, "1 # 4, B")')
    assert "reshape=" not in text
    np.testing.assert_array_equal(cpu, x[:, 2, :])


def test_the_reshape_travels_in_the_ir_text(tmp_path):
    """The traced window names the reshaped type (`reshaped=`, only then); the kernel read
    back from its IR text lowers to the same artifact."""
    traced = _kernel(tmp_path, "G, H").trace().kernel
    text = traced.text()
    windows = [line for line in text.splitlines() if " window " in line]
    assert windows and all("reshaped=dm<" in line for line in windows)
    back = parse_kernel(text)
    assert back.text() == text
    target = rngd()
    direct = print_visa(lower(traced, Options(target=target)), target)
    again = print_visa(lower(back, Options(target=target)), target)
    assert again == "\n".join(line.split(" ; loc ")[0] for line in direct.split("\n"))
