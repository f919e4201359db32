"""A tile of a DM tensor at a fixed, non-zero start read by `to_spm`, an interleaved `begin`
and a scatter: cpu and visa read the tile itself, as numpy does (the lowering once read the
tensor from its start, so visa disagreed with cpu)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from tests.spm import window_kernels as W
from visa.verify import verify_text

X = np.arange(4 * 16, dtype=np.int32).reshape(4, 16) * 3 - 50
RNG = np.random.default_rng(7)
A = RNG.integers(-1000, 1000, (512, 4, 8)).astype(np.int32)
B = RNG.integers(-1000, 1000, (512, 4, 8)).astype(np.int32)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_to_spm_reads_the_tile_at_its_start(backend):
    assert np.array_equal(npu_opt.run(W.spm_of_tile, X, backend=backend), X[2])


def test_the_spm_record_names_the_tile_and_its_offset():
    text = npu_opt.compile(W.spm_of_tile).text
    line = next(x for x in text.splitlines() if "= dma_spm " in x and "-> spm[" in x)
    assert 'src_view=["1", "1 # 2", "1 # 64", "1 # 4, N"] src_offset=128' in line
    assert ': dm[i32, "1", "1 # 2", "1 # 64", "E, N"] -> spm[' in line      # the tensor's own type
    verify_text(text)


def test_the_verifier_refuses_an_spm_record_reading_its_source_as_another_type():
    text = npu_opt.compile(W.spm_of_tile).text
    line = next(x for x in text.splitlines() if "= dma_spm " in x and "-> spm[" in x)
    bad = (line.replace(' src_view=["1", "1 # 2", "1 # 64", "1 # 4, N"] src_offset=128', "")
           .replace('"1 # 64", "E, N"] -> spm', '"1 # 64", "1 # 4, N"] -> spm'))
    with pytest.raises(npu_opt.NpuOptError) as e:
        verify_text(text.replace(line, bad))
    assert "not its type" in str(e.value)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
@pytest.mark.parametrize("starts", [(1, 1), (0, 0), (3, 3)])
def test_an_interleaved_begin_over_two_tiles_at_one_start(backend, starts):
    got = npu_opt.run(W.interleaved_tiles(*starts), A, B, backend=backend)
    assert np.array_equal(got, np.minimum(A[:, starts[0]], B[:, starts[1]]))


@pytest.mark.parametrize("starts", [(1, 3), (3, 0)])
def test_an_interleaved_begin_over_tiles_at_two_starts_reads_each_tile(starts):
    # was VIEW-10 (the feed read the second tensor at the first tile's start): the feed now
    # names where it reads the second (`rhs_offset=`) and cpu == visa
    want = np.minimum(A[:, starts[0]], B[:, starts[1]])
    for backend in ("cpu", "visa"):
        assert np.array_equal(npu_opt.run(W.interleaved_tiles(*starts), A, B, backend=backend), want)
    text = npu_opt.compile(W.interleaved_tiles(*starts)).text
    [feed] = [x for x in text.splitlines() if "= feed_buffer " in x]
    assert f"rhs_offset={starts[1] * 8}" in feed and f'source=(%' in feed


@pytest.mark.parametrize("kernel", [W.scatter_of_tile, W.v06_scatter_of_tile])
@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_scatter_out_of_a_tile_writes_the_tiles_rows(kernel, backend):
    fresh = RNG.standard_normal((24, 4, 32)).astype(ml_dtypes.bfloat16)
    rows = RNG.permutation(90)[:24]
    cache = RNG.standard_normal((90, 32)).astype(ml_dtypes.bfloat16)
    want = cache.copy()
    want[rows] = fresh[:, 2]
    npu_opt.run(kernel, fresh, (rows * 64).astype(np.int32), cache, backend=backend)
    assert np.array_equal(cache.view(np.uint16), want.view(np.uint16))


def test_the_scatter_record_names_the_tile_and_the_verifier_checks_it():
    text = npu_opt.compile(W.scatter_of_tile).text
    line = next(x for x in text.splitlines() if "= dma_scatter " in x)
    assert 'src_view=["1", "1 # 2", "R # 64", "1 # 4, W"] src_offset=128' in line
    verify_text(text)
    with pytest.raises(npu_opt.NpuOptError) as e:
        verify_text(text.replace("src_offset=128", "src_offset=64"))
    assert "src_offset" in str(e.value) or "commands" in str(e.value)
