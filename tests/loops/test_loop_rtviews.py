"""A redistribution reading or writing a tile at a runtime start, and an interleaved
`begin` over two tiles at different starts (docs/runtime.md#runtime-tile-starts):
cpu == visa == numpy == the unrolled kernel, the records name each start and the verifier
checks it (RUNTIME-8, LOOP-6), a start out of range for some iteration is LOOP-1 at the
user's line, one past the tile at run time RUNTIME-10."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from ir.kernel import print_kernel
from tests.kernel_text import parse_kernel
from tests.loops import reader_kernels as R
from tests.loops import rtview_kernels as K
from visa.verify import verify_text

RNG = np.random.default_rng(60)
XS = RNG.integers(-2 ** 31, 2 ** 31, (2, 2, 8, 4, 8)).astype(np.int32)   # (chip, cluster, R, S, W)


def _swapped(x: np.ndarray) -> np.ndarray:
    """Every (chip, cluster) part holds the other chip's other cluster's part."""
    return x[::-1, ::-1]


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_redistribution_reads_a_tile_at_the_loop_index(backend):
    rolled = npu_opt.run(K.swapped_rows(True), XS, backend=backend)
    assert np.array_equal(rolled, _swapped(XS))
    assert rolled.tobytes() == npu_opt.run(K.swapped_rows(False), XS, backend=backend).tobytes()


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_redistribution_writes_a_tile_at_the_loop_index(backend):
    rolled = npu_opt.run(K.swapped_rows(True, write=True), XS, backend=backend)
    assert np.array_equal(rolled, _swapped(XS)[:, :, :, ::-1])
    assert rolled.tobytes() == npu_opt.run(K.swapped_rows(False, write=True), XS, backend=backend).tobytes()


def test_the_redistribute_record_names_both_starts_and_the_verifier_checks_them():
    text = npu_opt.compile(K.swapped_rows(True, write=True)).text
    lines = [x for x in text.splitlines() if "= dma_redistribute " in x]
    assert len(lines) == 1   # the body once
    line = lines[0]
    assert re.search(r" src_start=%\d+ src_start_bytes=32 src_start_limit=3", line)
    assert re.search(r" dst_start=%\d+ dst_start_bytes=32 dst_start_limit=3", line)
    verify_text(text)
    for side in ("src", "dst"):
        with pytest.raises(npu_opt.NpuOptError) as e:   # the last start's window past the slice's bytes
            verify_text(text.replace(line, line.replace(f"{side}_start_limit=3", f"{side}_start_limit=100000")))
        assert e.value.code == "RUNTIME-8"
        with pytest.raises(npu_opt.NpuOptError) as e:   # start s (or 3 - s) reaches 3, past a limit of 2
            verify_text(text.replace(line, line.replace(f"{side}_start_limit=3", f"{side}_start_limit=2")))
        assert e.value.code == "LOOP-6" and "past the last start 2" in str(e.value)
        start = re.search(rf" {side}_start=(%\d+)", line)[1]
        with pytest.raises(npu_opt.NpuOptError) as e:   # the start names the tensor, not a scalar
            verify_text(text.replace(line, line.replace(f" {side}_start={start}", f" {side}_start=%1")))
        assert e.value.code == "RUNTIME-8" and "not a scalar[usize]" in str(e.value)


def test_a_plain_redistribution_record_has_no_start_fields():
    text = npu_opt.compile(K.swapped_rows(False, write=True)).text
    assert all("_start" not in x for x in text.splitlines() if "= dma_redistribute " in x)


def test_a_redistribution_of_a_tile_past_the_end_for_an_iteration_is_loop_1():
    with pytest.raises(npu_opt.NpuOptError) as e:
        npu_opt.compile(K.swapped_rows(True, shift=1))
    assert e.value.code == "LOOP-1" and "is 4 at i = 3, past the last start 3" in str(e.value)
    assert e.value.diagnostics[0].line == _line_of("d.view().tile(m(\"XS\"), 1, m(\"1 # 4, XW\"), s + shift)")


def _line_of(text: str, module=K) -> int:
    source = open(module.__file__).read().splitlines()
    return next(i for i, x in enumerate(source, 1) if text in x)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_redistribution_between_tiles_at_launch_values_and_past_the_end(backend):
    for src, dst in ((0, 3), (2, 2), (3, 1)):
        want = XS.copy()
        want[:, :, :, dst] = _swapped(XS)[:, :, :, src]
        assert np.array_equal(npu_opt.run(K.swap_row_at_launch, XS, src, dst, backend=backend), want)
    for src, dst in ((4, 0), (0, 4)):
        with pytest.raises(npu_opt.NpuOptError) as e:
            npu_opt.run(K.swap_row_at_launch, XS, src, dst, backend=backend)
        assert e.value.code == "RUNTIME-10" and "start 4 is outside" in str(e.value)


YA = RNG.integers(-1000, 1000, (512, 4, 8)).astype(np.int32)
YB = RNG.integers(-1000, 1000, (512, 4, 8)).astype(np.int32)
ROLLED, UNROLLED = (lambda ctx: ctx.loop(3)), (lambda ctx: range(3))


def _pair_min_oracle(trips: int, lhs, rhs) -> np.ndarray:
    want = np.zeros_like(YA)
    for t in range(trips):
        want[:, t] = np.minimum(YA[:, lhs(t)], YB[:, rhs(t)])
    return want


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_an_interleaved_begin_over_tiles_at_two_fixed_starts(backend):
    lhs, rhs = (lambda t: t), (lambda t: 3 - t)
    got = npu_opt.run(K.pair_min(lambda ctx: range(4), lhs, rhs), YA, YB, backend=backend)
    assert np.array_equal(got, _pair_min_oracle(4, lhs, rhs))


@pytest.mark.parametrize("backend", ["cpu", "visa"])
@pytest.mark.parametrize("lhs, rhs", [(lambda t: t, lambda t: t + 1), (lambda t: t + 1, lambda t: t),
                                      (lambda t: 2 * t, lambda t: 2 * t + 1)], ids=["t,t+1", "t+1,t", "2t,2t+1"])
def test_an_interleaved_begin_over_tiles_a_fixed_distance_apart_at_the_loop_index(backend, lhs, rhs):
    trips = 2 if lhs(2) > 3 or rhs(2) > 3 else 3
    roll = (lambda ctx: ctx.loop(trips))
    got = npu_opt.run(K.pair_min(roll, lhs, rhs), YA, YB, backend=backend)
    assert np.array_equal(got, _pair_min_oracle(trips, lhs, rhs))
    assert got.tobytes() == npu_opt.run(K.pair_min(lambda ctx: range(trips), lhs, rhs), YA, YB,
                                        backend=backend).tobytes()


def test_the_feed_names_the_second_tiles_offset_and_the_verifier_checks_it():
    text = npu_opt.compile(K.pair_min(ROLLED, lambda t: t, lambda t: t + 1)).text
    [feed] = [x for x in text.splitlines() if "= feed_buffer " in x]
    assert re.search(r" start=%\d+ start_elems=8 start_limit=2 rhs_offset=8\b", feed)
    verify_text(text)
    with pytest.raises(npu_opt.NpuOptError) as e:   # the second tile at start_limit past its tensor's element
        verify_text(text.replace(feed, feed.replace("rhs_offset=8", "rhs_offset=16")))
    assert e.value.code == "RUNTIME-8" and "rhs_offset" in str(e.value)
    with pytest.raises(npu_opt.NpuOptError) as e:   # not a tile of the second tensor's element at all
        verify_text(text.replace(feed, feed.replace("rhs_offset=8", "rhs_offset=3")))
    assert e.value.code == "FEED-15" and "rhs_offset" in str(e.value)
    fixed = npu_opt.compile(K.pair_min(lambda ctx: range(4), lambda t: 1, lambda t: 3)).text
    assert [x for x in fixed.splitlines() if "= feed_buffer " in x and "rhs_offset=24" in x]
    same = npu_opt.compile(K.pair_min(ROLLED, lambda t: t, lambda t: t)).text
    assert all("rhs_offset" not in x for x in same.splitlines())   # one start: the field is left out


@pytest.mark.parametrize("rhs", [lambda t: 3 - t, lambda t: 3, lambda t: 2 * t], ids=["3-t", "3", "2t"])
def test_an_interleaved_begin_over_tiles_a_varying_distance_apart_is_runtime_2(rhs):
    with pytest.raises(npu_opt.NpuOptError) as e:
        npu_opt.compile(K.pair_min(lambda ctx: ctx.loop(2), lambda t: t, rhs))
    assert e.value.code == "RUNTIME-2"
    assert "one walk" in str(e.value) and "trace-time distance" in str(e.value)
    assert e.value.diagnostics[0].line == _line_of("ctx.main.begin_interleaved(a, b, m(\"RI\"))", R)


def test_an_interleaved_begin_over_tiles_at_two_launch_values_is_runtime_2():
    with pytest.raises(npu_opt.NpuOptError) as e:
        npu_opt.compile(K.pair_min_at_launch)
    assert e.value.code == "RUNTIME-2" and "trace-time distance" in str(e.value)


def test_an_interleaved_second_tile_past_the_end_for_an_iteration_is_loop_1():
    with pytest.raises(npu_opt.NpuOptError) as e:
        npu_opt.compile(K.pair_min(lambda ctx: ctx.loop(4), lambda t: t, lambda t: t + 1))
    assert e.value.code == "LOOP-1" and "is 4 at i = 3, past the last start 3" in str(e.value)
    assert e.value.diagnostics[0].line == _line_of("b = dy.view().tile(")


ZRNG = np.random.default_rng(61)
FRESH = ZRNG.standard_normal((24, 4, 32)).astype(ml_dtypes.bfloat16)
ZROWS = np.stack([ZRNG.permutation(90)[:24] for _ in range(4)])
CACHE = ZRNG.standard_normal((4, 90, 32)).astype(ml_dtypes.bfloat16)


def _scatter_pages(loop, page, backend):
    cache = CACHE.copy()
    npu_opt.run(K.scatter_pages(loop, page), FRESH, (ZROWS * 64).astype(np.int32), cache, backend=backend)
    return cache


def _pages_oracle(trips, page):
    want = CACHE.copy()
    for e in range(trips):
        want[page(e)][ZROWS[e]] = FRESH[:, e]
    return want


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_scatter_into_a_tile_at_a_fixed_start(backend):
    page = lambda e: 3 - e
    got = _scatter_pages(lambda ctx: range(4), page, backend)
    assert got.view(np.uint16).tobytes() == _pages_oracle(4, page).view(np.uint16).tobytes()


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_scatter_into_a_tile_at_the_loop_index(backend):
    page = lambda e: 3 - e
    rolled = _scatter_pages(lambda ctx: ctx.loop(4), page, backend)
    assert rolled.view(np.uint16).tobytes() == _pages_oracle(4, page).view(np.uint16).tobytes()
    assert rolled.view(np.uint16).tobytes() == _scatter_pages(lambda ctx: range(4), page, backend).view(np.uint16).tobytes()


def test_the_scatter_record_names_the_destination_tile_and_the_verifier_checks_it():
    text = npu_opt.compile(K.scatter_pages(lambda ctx: ctx.loop(4), lambda e: 3 - e)).text
    [line] = [x for x in text.splitlines() if "= dma_scatter " in x]
    assert re.search(r" dst_view=\[.*\] dst_offset=0 dst_start=%\d+ dst_start_bytes=5760 dst_start_limit=3", line)
    verify_text(text)
    with pytest.raises(npu_opt.NpuOptError) as e:   # the last page's window past the cache
        verify_text(text.replace(line, line.replace("dst_start_limit=3", "dst_start_limit=4")))
    assert e.value.code == "RUNTIME-8"
    with pytest.raises(npu_opt.NpuOptError) as e:   # start 3 - e is 3 at e = 0, past a limit of 2
        verify_text(text.replace(line, line.replace("dst_start_limit=3", "dst_start_limit=2")))
    assert e.value.code == "LOOP-6"


def test_a_scatter_into_a_tile_past_the_end_for_an_iteration_is_loop_1():
    with pytest.raises(npu_opt.NpuOptError) as e:
        npu_opt.compile(K.scatter_pages(lambda ctx: ctx.loop(4), lambda e: e + 1))
    assert e.value.code == "LOOP-1" and "is 4 at i = 3, past the last start 3" in str(e.value)
    assert e.value.diagnostics[0].line == _line_of("dst = cache.view_mut().tile(")


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_scatter_into_a_tile_at_a_launch_value_and_past_the_end(backend):
    fresh, rows = FRESH[:, 0].copy(), ZROWS[0]
    for p in (0, 2, 3):
        cache, want = CACHE.copy(), CACHE.copy()
        want[p][rows] = fresh
        npu_opt.run(K.scatter_page_at_launch, fresh, (rows * 64).astype(np.int32), p, cache, backend=backend)
        assert cache.view(np.uint16).tobytes() == want.view(np.uint16).tobytes()
    with pytest.raises(npu_opt.NpuOptError) as e:
        npu_opt.run(K.scatter_page_at_launch, fresh, (rows * 64).astype(np.int32), 4, CACHE.copy(), backend=backend)
    assert e.value.code == "RUNTIME-10" and "start 4 is outside" in str(e.value)


@pytest.mark.parametrize("kernel, op", [
    (K.swapped_rows(True, write=True), " = redistribute "),
    (K.pair_min(ROLLED, lambda t: t + 1, lambda t: t), " = begin_interleaved "),
    (K.scatter_pages(lambda ctx: ctx.loop(4), lambda e: 3 - e), " = dma_scatter "),
], ids=["redistribute", "begin_interleaved", "scatter"])
def test_the_traced_ops_read_back_from_their_ir_text(kernel, op):
    text = print_kernel(kernel.trace().kernel)
    line = next(x for x in text.splitlines() if op in x)
    assert "start" in line or "rhs_shift=" in line
    assert print_kernel(parse_kernel(text)) == text
