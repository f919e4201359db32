"""Tiles at a runtime start (docs/runtime.md#runtime-tile-starts): cpu == visa == a numpy
oracle at several launch values, RUNTIME-10 for a start past the tile's range on both
backends, the refusals at their marked lines, and the VISA records: printed only when
present, parsed back, verified, refused when edited; the schedule does not charge the
address arithmetic."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pytest

import npu_opt
from driver.discover import discover
from ir.errors import NpuOptError
from tests.runtime import tile_kernels as tk
from visa import parse_visa
from visa.artifact import VisaTextError
from visa.printer import print_artifact
from visa.schedule import schedule_artifact
from visa.verify import verify_text

ROOT = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(27)
X = RNG.integers(-128, 128, (64, 32), dtype=np.int8)
CACHE = RNG.integers(-128, 128, (8, 64, 32), dtype=np.int8)
Y = RNG.integers(-128, 128, (64, 4, 32), dtype=np.int8)


def both(kernel, *args):
    cpu = npu_opt.run(kernel, *args)
    visa = npu_opt.run(kernel, *args, backend="visa")
    assert np.array_equal(cpu, visa)
    return cpu


@pytest.mark.parametrize("n", [0, 1, 3])
def test_an_hbm_read_view_tiled_at_a_runtime_start(n):
    assert np.array_equal(both(tk.column_block, X, n), X[:, 8 * n:8 * n + 8])


@pytest.mark.parametrize("p", [0, 4, 7])
def test_an_hbm_write_view_tiled_at_a_runtime_start(p):
    want = CACHE.copy()
    want[p] = X
    assert np.array_equal(both(tk.row_into_page, CACHE, X, p), want)


@pytest.mark.parametrize("i,j", [(0, 0), (3, 1), (2, 3)])
def test_dm_views_tiled_at_two_runtime_starts_in_one_copy(i, j):
    want = Y.copy()
    want[:, j, :8] = X[:, 8 * i:8 * i + 8]
    assert np.array_equal(both(tk.dm_both_sides, X, Y, i, j), want)


@pytest.mark.parametrize("g", [0, 2, 3])
def test_a_stream_begins_over_a_dm_view_tiled_at_a_runtime_start(g):
    x = RNG.integers(-2 ** 31, 2 ** 31, (64, 4, 16), dtype=np.int32)
    assert np.array_equal(both(tk.group_by_index, x, g), x[:, g])


@pytest.mark.parametrize("backend", ["cpu", "visa"])
@pytest.mark.parametrize("kernel,args,start", [
    (tk.column_block, (X, 4), 32),              # 8 * 4 = 32: the 8 columns from 32 run past B = 32
    (tk.row_into_page, (CACHE, X, 8), 8),
    (tk.row_into_page, (CACHE, X, -1), 2 ** 64 - 1),   # -1 as usize
    (tk.dm_both_sides, (X, Y, 0, 4), 4),
    (tk.group_by_index, (np.zeros((64, 4, 16), np.int32), 2 ** 40), 2 ** 40),
])
def test_a_start_past_the_tile_stops_the_run_with_runtime_10(backend, kernel, args, start):
    with pytest.raises(NpuOptError) as e:
        npu_opt.run(kernel, *args, backend=backend)
    assert e.value.code == "RUNTIME-10"
    assert f"start {start} is outside" in str(e.value)


def marked(kernel) -> list[tuple[int, str]]:
    lines, first = inspect.getsourcelines(kernel.fn)
    return [(first + i, mk.group(1)) for i, text in enumerate(lines) if (mk := re.search(r"# ([A-Z]+-\d+)", text))]


@pytest.mark.parametrize("kernel", [tk.refused, tk.unaligned_dm_write])
def test_the_refusals_are_at_their_marked_lines(kernel):
    found = [(d.line, d.code) for d in kernel.trace().diagnostics]
    assert sorted(found) == sorted(marked(kernel))


def test_the_refusals_say_what_takes_a_runtime_start():
    by_line = {d.line: d for d in tk.refused.trace().diagnostics}
    nine, level = (by_line[line] for line, _ in marked(tk.refused)[:2])
    assert "cast(usize)" in nine.help
    assert "`slice_tile` (the slice level)" in level.message and "a redistribution" in level.message


def test_the_records_carry_the_scalar_only_when_present():
    text = npu_opt.compile(tk.dm_both_sides).text
    [line] = [r for r in text.splitlines() if "= dma_into " in r]
    assert re.search(r"src_start=%\d+ src_start_bytes=1 src_start_limit=24 ", line)
    assert re.search(r"dst_start=%\d+ dst_start_bytes=32 dst_start_limit=3 ", line)
    assert print_artifact(parse_visa(text)) == text
    verify_text(text)
    assert "_start" not in npu_opt.compile(tk.column_block_at_8).text


def _edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize("edit,message", [
    (lambda t, s: _edit(t, f"src_start={s} ", "src_start=%2 "), "is scalar<u32>, not a scalar[usize]"),
    (lambda t, s: _edit(t, " src_start_limit=24", ""), "needs src_start=, src_start_bytes= and src_start_limit="),
    (lambda t, s: _edit(t, "src_start_limit=24", "src_start_limit=25"), "outside the tensor"),
    (lambda t, s: _edit(t, "src_start_bytes=1 ", "src_start_bytes=-1 "), "must not be negative"),
    (lambda t, s: _edit(t, f"src_start={s} ", "src_start=%0 "), "is not the result of a scalar record"),
])
def test_an_edited_runtime_start_is_refused(edit, message):
    text = npu_opt.compile(tk.column_block).text
    start = re.search(r"src_start=(%\d+)", text).group(1)
    with pytest.raises(VisaTextError) as e:
        verify_text(edit(text, start))
    assert e.value.rule == "RUNTIME-8" and message in str(e.value)


@pytest.mark.parametrize("old,new,message", [
    ("start_limit=3 ", "start_limit=4 ", "is not a tile of"),
    ("start_elems=16 ", "", "needs start=, start_elems= and start_limit="),
    ("start_elems=16 ", "start_elems=-16 ", "must not be negative"),
])
def test_an_edited_feed_start_is_refused(old, new, message):
    text = npu_opt.compile(tk.group_by_index).text
    [feed] = [r for r in text.splitlines() if "= feed_buffer " in r]
    assert re.search(r" start=%\d+ start_elems=16 start_limit=3 ", feed)
    with pytest.raises(VisaTextError) as e:
        verify_text(_edit(text, old, new))
    assert e.value.rule == "RUNTIME-8" and message in str(e.value)


def test_a_feed_start_of_another_type_is_refused():
    text = npu_opt.compile(tk.group_by_index).text
    load = re.search(r"(%\d+) = scalar_load", text).group(1)       # the u64 before its cast
    start = re.search(r" start=(%\d+) start_elems", text).group(1)
    with pytest.raises(VisaTextError) as e:
        verify_text(_edit(text, f" start={start} start_elems", f" start={load} start_elems"))
    assert e.value.rule == "RUNTIME-8" and "scalar<u64>, not a scalar[usize]" in str(e.value)


def test_a_start_defined_later_does_not_parse():
    text = npu_opt.compile(tk.column_block).text
    start = re.search(r"src_start=(%\d+)", text).group(1)
    with pytest.raises(VisaTextError, match="defined later"):
        parse_visa(_edit(text, f"src_start={start} ", "src_start=%6 "))


def test_the_schedule_does_not_charge_the_address_arithmetic():
    """The runtime copy costs what the same copy at a trace-time start costs."""
    def durations(kernel):
        schedule = schedule_artifact(parse_visa(npu_opt.compile(kernel).text))
        return {s.step.records[0].mnemonic: s.step.duration for s in schedule.slots}

    runtime, static = durations(tk.column_block), durations(tk.column_block_at_8)
    assert runtime["dma_window"] == static["dma_window"] > 0
    assert runtime["scalar"] == 0 and "scalar" not in static


@pytest.mark.parametrize("src,dst", [(0, 0), (5, 2), (7, 7)])
def test_the_kv_pages_example_matches_the_oracle(src, dst):
    [kernel] = discover([str(ROOT / "examples" / "runtime" / "kv_pages.py")]).kernels
    cache = RNG.integers(-1000, 1000, (8, 64, 8)).astype(np.int32)
    want = cache.copy()
    want[dst] = cache[src] + 100
    assert np.array_equal(both(kernel, cache, src, dst), want)
    with pytest.raises(NpuOptError) as e:
        npu_opt.run(kernel, cache, src, -3, backend="visa")
    assert e.value.code == "RUNTIME-10"
