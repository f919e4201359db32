"""The exact-arithmetic kernel library both backends call (ir/exact_kernels/).

One threshold and one compile for the cpu backend and the VISA interpreter: the tiles
each backend's exact kernel runs are the same compiled objects, the threshold is one
number, and the kernels' disk cache is outside the checkout (a read-only checkout keeps
it), where `NUMBA_CACHE_DIR` says when set.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from backends.cpu import contract_jit as cpu_jit
from backends.cpu import contract_jit_exact as cpu_exact
from ir.exact_kernels import compile as kernels_compile
from ir.exact_kernels import tiles
from visa.interp.fast import contract_jit as interp_jit
from visa.interp.fast import contract_jit_tiles as interp_tiles

ROOT = Path(__file__).resolve().parents[2]


def test_one_threshold_for_both_backends():
    assert cpu_jit.JIT_MIN == interp_jit.JIT_MIN == kernels_compile.JIT_MIN


def test_the_process_products_add_up_over_both_backends(monkeypatch):
    """A one-off small contraction keeps the numpy path; a loop of them (on either backend)
    reaches the threshold and moves to the compiled one."""
    monkeypatch.setattr(kernels_compile, "loaded", lambda: False)
    monkeypatch.setattr(kernels_compile, "_SEEN", [0])
    third = kernels_compile.JIT_MIN // 3
    assert not kernels_compile.wanted(third)
    assert not kernels_compile.wanted(third)
    assert kernels_compile.wanted(third + 2)
    monkeypatch.setattr(kernels_compile, "_SEEN", [0])
    monkeypatch.setenv(cpu_jit.ENV, "1")
    monkeypatch.delenv(interp_jit.ENV, raising=False)
    cpu_jit.enabled(True, 2 * third)
    assert interp_jit.enabled(third + 2) is (cpu_jit._compiled() is not None)


def test_both_backends_run_the_same_tiles():
    if cpu_jit._compiled() is None or interp_jit._compiled() is None:
        pytest.skip("numba is not importable (the optional fast extra)")
    assert cpu_exact.kt is interp_tiles.kt is tiles
    assert tiles.tile_8x8 is not None and tiles.tile_4x16 is not None   # made once, by the first


def test_the_cache_is_outside_the_checkout(monkeypatch, tmp_path):
    monkeypatch.delenv(kernels_compile.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert kernels_compile.cache_dir().parent == tmp_path / "npu-opt" / "numba"
    assert ROOT not in kernels_compile.cache_dir().parents
    monkeypatch.setenv(kernels_compile.CACHE_ENV, str(tmp_path / "mine"))
    assert kernels_compile.cache_dir().parent == tmp_path / "mine"


@pytest.mark.parametrize("g", tiles.TREES)
def test_leaf_order_is_the_bit_reversal(g):
    bits = g.bit_length() - 1
    want = [sum(((k >> b) & 1) << (bits - 1 - b) for b in range(bits)) for k in range(g)]
    got = tiles.leaf_order(g)
    assert got.tolist() == want and np.array_equal(got[got], np.arange(g))
