"""Views at a runtime start from a rolled loop's index (docs/loops.md): `commit_view` into a
tile at the index runs on cpu and visa like numpy and like the unrolled kernel, its commit
writes the tile itself (no copy), the verifier checks the commit's start, and a start out of
range for some iteration is LOOP-1 naming it."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from tests.loops import view_kernels as V
from visa.verify import verify_text

X = np.arange(64 * 4 * 8, dtype=np.int32).reshape(64, 4, 8) * 7 - 900


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_commit_view_at_the_loop_index_equals_numpy_and_the_unrolled_kernel(backend):
    rolled = npu_opt.run(V.commit_reversed(True), X, backend=backend)
    unrolled = npu_opt.run(V.commit_reversed(False), X, backend=backend)
    assert np.array_equal(rolled, X[:, ::-1])
    assert np.array_equal(rolled, unrolled)


def test_the_commit_writes_the_tile_at_the_index_itself():
    text = npu_opt.compile(V.commit_reversed(True)).text
    commit = next(line for line in text.splitlines() if "= commit " in line)
    assert "into=%" in commit and "start=%" in commit and "start_bytes=32" in commit and "start_limit=3" in commit
    assert "dma_into" not in text.split("loop_begin")[1].split("loop_end")[0]   # no copy in the body
    verify_text(text)


def test_the_verifier_checks_the_commits_start():
    text = npu_opt.compile(V.commit_reversed(True)).text
    with pytest.raises(npu_opt.NpuOptError) as e:
        verify_text(text.replace("start_bytes=32", "start_bytes=36"))
    assert e.value.code == "RUNTIME-8"
    with pytest.raises(npu_opt.NpuOptError) as e:
        verify_text(text.replace("start_limit=3", "start_limit=4"))
    assert e.value.code in ("RUNTIME-8", "LOOP-6")


def test_a_commit_tile_past_the_end_for_the_last_iteration_is_loop_1():
    with pytest.raises(npu_opt.NpuOptError) as e:
        npu_opt.compile(V.commit_past_the_end)
    assert e.value.code == "LOOP-1"
    assert "is 4 at g = 3, past the last start 3" in str(e.value)


# --- two runtime starts -------------------------------------------------------------------

BLOCKS = np.arange(4 * 2 * 64 * 32).astype(np.int8).reshape(4, 2, 64, 32)
GRID = (np.arange(64 * 4 * 2 * 8, dtype=np.int32) * 5 - 1000).reshape(64, 4, 2, 8)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_view_at_two_runtime_starts_of_nested_loops(backend):
    rolled = npu_opt.run(V.blocks_transposed(True), BLOCKS, backend=backend)
    assert np.array_equal(rolled, BLOCKS[::-1, ::-1])
    assert np.array_equal(rolled, npu_opt.run(V.blocks_transposed(False), BLOCKS, backend=backend))


def test_two_starts_are_one_start_in_the_artifact():
    text = npu_opt.compile(V.blocks_transposed(True)).text
    assert text.count("loop_begin") == 2 and text.count("= dma_window ") == 1 and text.count("= dma_into ") == 1
    verify_text(text)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_commit_view_at_two_runtime_starts(backend):
    rolled = npu_opt.run(V.committed_blocks(True), GRID, backend=backend)
    assert np.array_equal(rolled, GRID[:, ::-1, ::-1])
    assert np.array_equal(rolled, npu_opt.run(V.committed_blocks(False), GRID, backend=backend))
    text = npu_opt.compile(V.committed_blocks(True)).text
    assert "start=%" in next(line for line in text.splitlines() if "= commit " in line)


def test_a_second_start_past_the_end_is_loop_1_naming_the_iteration():
    with pytest.raises(npu_opt.NpuOptError) as e:
        npu_opt.compile(V.block_past_the_end)
    assert e.value.code == "LOOP-1"
    assert "is 2 at c = 1, past the last start 1" in str(e.value)


def test_a_second_start_no_trace_check_covers_is_loop_7():
    with pytest.raises(npu_opt.NpuOptError) as e:
        npu_opt.compile(V.block_at_launch_rows)
    assert e.value.code == "LOOP-7"
