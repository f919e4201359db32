"""`to_spm`, an interleaved `begin` and a scatter reading a tile at a rolled loop's index
(docs/loops.md "Views at the index"): cpu == visa == numpy == the unrolled kernel, the
`dma_spm` and `dma_scatter` records name the start and the verifier checks it (RUNTIME-8, LOOP-6), a start out of range for
some iteration is LOOP-1, and an interleaved `begin` over tiles whose distance changes with
the index stays RUNTIME-2 (tests/loops/test_loop_rtviews.py: tiles a fixed distance apart)."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from tests.loops import reader_kernels as R
from visa.verify import verify_text

X = (np.arange(4 * 16, dtype=np.int32) * 11 - 300).reshape(4, 16)
RNG = np.random.default_rng(3)
A = RNG.integers(-1000, 1000, (512, 4, 8)).astype(np.int32)
B = RNG.integers(-1000, 1000, (512, 4, 8)).astype(np.int32)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_to_spm_of_a_tile_at_the_loop_index(backend):
    rolled = npu_opt.run(R.spm_reversed(True), X, backend=backend)
    assert np.array_equal(rolled, X[::-1])
    assert np.array_equal(rolled, npu_opt.run(R.spm_reversed(False), X, backend=backend))


def test_the_spm_record_names_the_start_once_and_the_verifier_checks_it():
    text = npu_opt.compile(R.spm_reversed(True)).text
    assert text.count("= dma_spm ") == 2      # the body once: into SPM and out
    line = next(x for x in text.splitlines() if "= dma_spm " in x and "-> spm[" in x)
    assert re.search(r" src_start=%\d+ src_start_bytes=64 src_start_limit=3 ", line)
    verify_text(text)
    with pytest.raises(npu_opt.NpuOptError) as e:   # the last start's window past the slice's bytes
        verify_text(text.replace(line, line.replace("src_start_limit=3", "src_start_limit=100000")))
    assert e.value.code == "RUNTIME-8"
    with pytest.raises(npu_opt.NpuOptError) as e:   # start 3 - i is 3 at i = 0, past a limit of 2
        verify_text(text.replace(line, line.replace("src_start_limit=3", "src_start_limit=2")))
    assert e.value.code == "LOOP-6" and "past the last start 2" in str(e.value)
    start = re.search(r" src_start=(%\d+)", line)[1]
    with pytest.raises(npu_opt.NpuOptError) as e:   # the start names the tensor, not a scalar
        verify_text(text.replace(line, line.replace(f" src_start={start}", " src_start=%1")))
    assert e.value.code == "RUNTIME-8" and "not a scalar[usize]" in str(e.value)


def test_to_spm_of_a_tile_past_the_end_for_an_iteration_is_loop_1():
    with pytest.raises(npu_opt.NpuOptError) as e:
        npu_opt.compile(R.spm_reversed(True, shift=1))
    assert e.value.code == "LOOP-1" and "is 4 at i = 0, past the last start 3" in str(e.value)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_an_interleaved_begin_over_tiles_at_the_loop_index(backend):
    rolled = npu_opt.run(R.interleaved_min(True), A, B, backend=backend)
    assert np.array_equal(rolled, np.minimum(A, B))
    assert np.array_equal(rolled, npu_opt.run(R.interleaved_min(False), A, B, backend=backend))


def test_the_interleaved_feed_names_the_start_once():
    text = npu_opt.compile(R.interleaved_min(True)).text
    feeds = [x for x in text.splitlines() if "= feed_buffer " in x]
    assert len(feeds) == 1 and re.search(r" start=%\d+ start_elems=8 start_limit=3", feeds[0])
    verify_text(text)


def test_an_interleaved_begin_over_tiles_a_varying_distance_apart_is_runtime_2():
    with pytest.raises(npu_opt.NpuOptError) as e:   # t and 3 - t: the feed's fixed step cannot follow them
        npu_opt.compile(R.interleaved_min(True, rhs_start=lambda t: 3 - t))
    assert e.value.code == "RUNTIME-2" and "trace-time distance" in str(e.value)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_scatter_out_of_a_tile_at_the_loop_index(backend):
    rng = np.random.default_rng(5)
    fresh = rng.standard_normal((24, 4, 32)).astype(ml_dtypes.bfloat16)
    rows = np.stack([rng.permutation(90)[:24] for _ in range(4)])
    cache = rng.standard_normal((90, 32)).astype(ml_dtypes.bfloat16)
    want = cache.copy()
    for i in range(4):
        want[rows[i]] = fresh[:, i]
    got = {}
    for rolled in (True, False):
        got[rolled] = cache.copy()
        npu_opt.run(R.scatter_tiles(rolled), fresh, (rows * 64).astype(np.int32), got[rolled], backend=backend)
    assert np.array_equal(got[True].view(np.uint16), want.view(np.uint16))
    assert np.array_equal(got[True].view(np.uint16), got[False].view(np.uint16))


def test_the_scatter_record_names_the_start_and_the_verifier_checks_it():
    text = npu_opt.compile(R.scatter_tiles(True)).text
    line = next(x for x in text.splitlines() if "= dma_scatter " in x)
    assert re.search(r" src_view=\[.*\] src_offset=0 src_start=%\d+ src_start_bytes=64 src_start_limit=3 ", line)
    verify_text(text)
    with pytest.raises(npu_opt.NpuOptError) as e:
        verify_text(text.replace(line, line.replace("src_start_limit=3", "src_start_limit=100000")))
    assert e.value.code == "RUNTIME-8"
    with pytest.raises(npu_opt.NpuOptError) as e:
        verify_text(text.replace(line, line.replace("src_start_limit=3", "src_start_limit=2")))
    assert e.value.code == "LOOP-6"


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_to_spm_of_a_tile_at_a_launch_value_and_past_the_end(backend):
    for row in (0, 2, 3):
        assert np.array_equal(npu_opt.run(R.spm_row_at_launch, X, row, backend=backend), X[row])
    with pytest.raises(npu_opt.NpuOptError) as e:
        npu_opt.run(R.spm_row_at_launch, X, 4, backend=backend)
    assert e.value.code == "RUNTIME-10" and "start 4 is outside" in str(e.value)
