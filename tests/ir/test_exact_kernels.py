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
from backends.cpu import contract_plan
from backends.cpu import contract_jit_exact as cpu_exact
from backends.cpu import contract_jit_rows as cpu_rows
from ir.contract_arith import fadd, fmul, ftz_f32
from ir.exact_kernels import compile as kernels_compile
from ir.exact_kernels import sums, tiles
from visa.interp.fast import contract_jit as interp_jit
from visa.interp.fast import contract_jit_scan as interp_scan
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


def _kernels():
    if cpu_jit._compiled() is None or interp_jit._compiled() is None:
        pytest.skip("numba is not importable (the optional fast extra)")
    return interp_jit._compiled()


def test_both_general_kernels_run_the_same_sums():
    """The product tree, accumulation, flush and bf16 scan are one compiled copy."""
    _kernels()
    assert cpu_rows.sums is interp_jit.sums is cpu_exact.sums is interp_scan.sums is sums
    assert cpu_jit._compiled()["leaves"] is interp_jit._compiled()["leaves"] is sums.leaves


SPECIAL = [0.0, -0.0, 1.0, -1.5, 2.0 ** -127, -(2.0 ** -130), 2.0 ** -126, np.inf, -np.inf, np.nan, 3.0e38, -2.5e-39]


def test_flush_is_contract_arith():
    kernels = _kernels()
    x = np.array([SPECIAL], np.float32)
    x.view(np.uint32)[0, -3] = 0x7FA00001     # a signalling NaN with a payload
    want = ftz_f32(x).view(np.uint32)
    kernels["flush"](x.view(np.uint32), 0, x.shape[1])
    assert np.array_equal(x.view(np.uint32), want)


@pytest.mark.parametrize("g, exact", [(1, False), (2, False), (8, False), (8, True), (32, True), (32, False)])
def test_a_step_is_the_engine_tree_and_time_sum(g, exact):
    """`leaves` + `fold` + `add` against ir.contract_arith's fmul / fadd on the adjacent-pair
    tree (docs/numerics.md), the leaves stored bit-reversed, two steps summed from +0."""
    kernels = _kernels()
    rng = np.random.default_rng(g)
    n, leaf = 5, tiles.leaf_order(g)
    pool = np.array(SPECIAL if not exact else [1.0, -0.5, 0.25, 3.0, -2.0], np.float32)
    acc = np.zeros((1, n), np.float32)
    want = np.zeros(n, np.float32)
    for _ in range(2):
        sv = rng.choice(pool, g).astype(np.float32)
        w = rng.choice(pool, (g, n)).astype(np.float32)
        buf = np.empty((g, n), np.float32)
        m = kernels["leaves"](sv, w, 0, np.arange(g), leaf, buf, buf.view(np.uint32), exact, exact and g >= 4)
        kernels["fold"](buf, buf.view(np.uint32), m, exact)
        kernels["add"](acc, acc.view(np.uint32), buf, exact)
        level = [fmul(sv[k], w[k]) for k in range(g)]
        while len(level) > 1:
            level = [fadd(level[2 * k], level[2 * k + 1]) for k in range(len(level) // 2)]
        want = fadd(want, level[0])
    assert np.array_equal(acc[0].view(np.uint32), np.asarray(want, np.float32).view(np.uint32))


@pytest.mark.parametrize("fill", ["random", "zeros"])
def test_the_bf16_scan_is_numpy(fill):
    kernels = _kernels()
    codes = np.random.default_rng(7).integers(0, 1 << 16, 999).astype(np.uint16) if fill == "random" \
        else np.zeros(999, np.uint16) | np.uint16(0x8000)
    m = (codes & 0x7FFF).astype(np.int64)
    want = (m.max(), m[m > 0].min() - 1 if (m > 0).any() else 0xFFFF)
    assert tuple(map(int, kernels["bf16_bounds"](codes, 0, codes.size, 0, np.uint16(0), np.uint16(0xFFFF)))) == want
    wide = codes.astype(np.uint32) << np.uint32(16) | np.uint32(0x1234)
    assert tuple(map(int, kernels["bf16_bounds"](wide, 0, wide.size, 16, np.uint16(0), np.uint16(0xFFFF)))) == want


def test_two_threads_compiling_a_module_at_once_both_get_its_kernels(monkeypatch):
    # Two interpreter or cpu runs on two threads reaching their first compiled contraction together:
    # the second must not compile the names the first has already rebound to compiled kernels (numba
    # refuses a jitted function, TypeError) but wait for the module's kernels. A stand-in numba: the
    # first thread stops in the middle of the module (f rebound, g not compiled) while the second asks.
    import threading

    class Jitted:
        def __init__(self, fn):
            self.fn = fn

    in_g, second_done = threading.Event(), threading.Event()

    def njit(**_):
        def wrap(fn):
            if isinstance(fn, Jitted):
                raise TypeError("a jit decorator was called on an already jitted function")
            if fn.__name__ == "g" and threading.current_thread() is first:
                in_g.set()
                second_done.wait(0.2)   # the second thread's call fails meanwhile, or waits for this one
            return Jitted(fn)
        return wrap

    def f():
        return 1

    def g():
        return 2

    space = {"__name__": "tests.fake_kernels", "ORDER": ("f", "g"), "INLINE": (), "f": f, "g": g}
    monkeypatch.setattr(kernels_compile, "numba", lambda: type("FakeNumba", (), {"njit": staticmethod(njit)}))
    monkeypatch.setattr(kernels_compile, "_DONE", {})
    got: dict[str, object] = {}

    def ask(who: str) -> None:
        try:
            got[who] = kernels_compile.compiled(space)
        except TypeError as e:
            got[who] = e
        finally:
            if who == "second":
                second_done.set()

    first = threading.Thread(target=ask, args=("first",))
    first.start()
    assert in_g.wait(5)
    second = threading.Thread(target=ask, args=("second",))
    second.start()
    first.join(5), second.join(5)
    assert isinstance(got["first"], dict) and got["second"] == got["first"]
    assert [k.fn for k in got["first"].values()] == [f, g]


def test_read_only_views_share_the_memory_and_leave_the_array_writeable():
    """`read_only` gives views (no copy) that numba types alike whatever the array's flag,
    and leaves the caller's array as it was."""
    numba = kernels_compile.numba()
    writeable = np.arange(12, dtype=np.uint16).reshape(3, 4)
    frozen = writeable.copy()
    frozen.flags.writeable = False
    a, b = kernels_compile.read_only(writeable, frozen)
    assert np.shares_memory(a, writeable) and b is frozen
    assert not a.flags.writeable and writeable.flags.writeable
    assert numba.typeof(a) == numba.typeof(b) != numba.typeof(writeable)


def test_writeable_and_read_only_rows_run_one_compiled_range_scan():
    """The cpu backend's range scan called on host rows (read-only) and on computed rows
    (writeable) compiles once: every signature of `_range` takes read-only rows; both
    calls agree with numpy's masked max / smallest nonzero."""
    rng = np.random.default_rng(5)
    raw = rng.integers(0, 1 << 16, (3, 40), dtype=np.uint16)
    host = raw.copy()
    host.flags.writeable = False
    cols = np.arange(40)
    gather = contract_plan.Gather(digits=(), shape=(), groups=(40,), index=cols, offset=None, strides=None)
    masked = raw.astype(np.int64) & 0x7FFF
    want = (int(masked.max()), int(masked[masked != 0].min()))
    assert cpu_jit._range_of(raw, gather, False, 1) == want
    assert cpu_jit._range_of(host, gather, False, 1) == want
    assert raw.flags.writeable
    assert all(not sig[0].mutable for sig in cpu_jit._compiled()["_range"].signatures)
