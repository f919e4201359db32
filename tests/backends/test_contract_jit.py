"""The compiled float core (backends/cpu/contract_jit.py) against the numpy core of
backends/cpu/contract_float.py, its reference, bit for bit: every kernel of examples/ and
generated contraction kernels of the differential generator (tests/differential/), on
the generator's inputs (special values, subnormals and raw bits mixed in). Each
comparison also checks that the same contractions took each core (no silent fallback).
The numpy core still runs when numba is absent or turned off; row blocks on several
threads give the same bits; the kernels are cached on disk, and compile without a cache
when no cache directory can be written.

The numba extra is part of the `test` extra (pyproject.toml); under CI (CI=true) a
missing numba fails, elsewhere these tests are skipped without it.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

import npu_opt
from ir.resident import DmBuffer
from backends.cpu import CpuBackend, CpuOptions, contract_float, contract_jit, contract_plan, thread_pool
from ir.exact_kernels import compile as kernels_compile
from ir.dtypes import bf16
from driver.discover import discover
from tests.backends.examples import EXAMPLES, bf16_uniform, example
from tests.differential.harness import load_kernel
from tests.differential.strategies import kernels, make_inputs
from tests.optional_deps import need

NUMPY = CpuOptions(jit=False)
JIT = CpuOptions(jit=True)


@pytest.fixture(autouse=True)
def _numba_loaded() -> None:
    """numba loaded in the process: from then on every float contraction takes the
    compiled core, whatever its size (contract_jit.JIT_MIN). Without numba: skipped, or a
    failure under CI (tests/optional_deps.py)."""
    need("numba", "test")
    assert contract_jit._compiled() is not None


def _bits(out) -> list[np.ndarray]:
    outs = out if isinstance(out, tuple) else (out,)
    return [np.ascontiguousarray(o).view(f"u{np.asarray(o).dtype.itemsize}") for o in outs]


def both_cores(monkeypatch: pytest.MonkeyPatch, kern, arrays: list[np.ndarray],
               threads: int | None = None) -> tuple[int, int]:
    """Run `kern` by the compiled and by the numpy float core and assert the same bits;
    returns how many contractions each core ran."""
    calls = Counter()
    for mod, name in ((contract_jit, "core"), (contract_float, "float_core")):
        fn = getattr(mod, name)
        monkeypatch.setattr(mod, name, functools.partial(_count, calls, name, fn))
    extra = {} if threads is None else {"threads": threads}
    fast = _with_resident(CpuBackend(CpuOptions(jit=True, **extra)), kern, arrays)
    jit_calls, calls["core"] = calls["core"], 0
    ref = _with_resident(CpuBackend(CpuOptions(jit=False, **extra)), kern, arrays)
    assert calls["core"] == 0
    for f, r in zip(_bits(fast), _bits(ref), strict=True):
        assert f.shape == r.shape and f.dtype == r.dtype
        np.testing.assert_array_equal(f, r)
    assert jit_calls == calls["float_core"], "the two runs took different float paths"
    return jit_calls, calls["float_core"]


def _with_resident(backend: CpuBackend, kern, arrays: list) -> tuple:
    """The outputs of one run on copies of `arrays`, then the contents of its resident
    buffers (a resident DM parameter's final contents stay in the buffer, not in `run`'s result)."""
    copies = [a.copy() for a in arrays]
    out = backend.run(kern, tuple(copies))
    out = out if isinstance(out, tuple) else () if out is None else (out,)
    return out + tuple(b.read() for b in copies if isinstance(b, DmBuffer))


def _count(calls: Counter, name: str, fn, *args, **kwargs):
    calls[name] += 1
    return fn(*args, **kwargs)


# ---- every example ---------------------------------------------------------------------------

EXAMPLE_FILES = sorted(p for p in EXAMPLES.glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[p.stem for p in EXAMPLE_FILES])
def test_every_example_is_bit_identical(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    found = discover([str(path)])
    assert not found.errors and found.kernels
    for kern in found.kernels:
        if not npu_opt.check(kern).ok:
            continue
        both_cores(monkeypatch, kern, make_inputs(kern, 1))


def test_the_examples_exercise_the_compiled_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bf16 GEMM takes the compiled core on ordinary data (no flush) and on special
    values (flushed, NaN), both bit-identical."""
    kern = example("gemm_bf16", "gemm_bf16_kernel")
    rng = np.random.default_rng(3)
    plain = [bf16_uniform(rng, (512, 128)), bf16_uniform(rng, (512, 128))]
    assert both_cores(monkeypatch, kern, plain) == (1, 1)
    special = [a.copy() for a in plain]
    special[0][::7, ::5] = 0x7F80  # +inf
    special[1][::3, ::11] = 0x0001  # a subnormal: widened by adapters, not shifted
    assert both_cores(monkeypatch, kern, special) == (1, 1)


def test_broadcast_operands_are_widened_once_per_distinct_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exact kernel widens one stored row per row class of each operand (the
    broadcast DMA records them) and takes the spatial rows grouped by W's class: the
    bits are those of the independent oracle, and the same with every row widened on
    its own (no classes known)."""
    from tests.backends.oracles import gemm_bf16_oracle_exact

    kern = example("gemm_bf16", "gemm_bf16_kernel")
    rng = np.random.default_rng(11)
    a, w = bf16_uniform(rng, (512, 128)), bf16_uniform(rng, (512, 128))
    want = np.asarray(gemm_bf16_oracle_exact(a, w), np.float32).view(np.uint32)
    seen = []
    distinct = contract_jit.distinct_rows

    def spy(raw, row_of=None):
        keep, cls = distinct(raw, row_of)
        seen.append((cls.size, None if keep is None else keep.size))
        return keep, cls

    monkeypatch.setattr(contract_jit, "distinct_rows", spy)
    got = CpuBackend(JIT).run(kern, (a, w))
    np.testing.assert_array_equal(np.asarray(got).view(np.uint32), want)
    assert len(seen) == 2 and all(keep is not None and 1 < keep < rows for rows, keep in seen)  # repeats found

    monkeypatch.setattr(contract_jit, "distinct_rows",  # every spatial row on its own (the copies made)
                        lambda raw, row_of=None: (row_of, np.arange(raw.shape[0] if row_of is None else len(row_of),
                                                                    dtype=np.int64)))
    again = CpuBackend(JIT).run(kern, (a, w))
    np.testing.assert_array_equal(np.asarray(again).view(np.uint32), want)


def test_the_copies_map_reaches_the_core_and_each_run_reads_its_own_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The broadcast DMA's copies are not made for the compiled core: it gets the stored
    rows and their map (`row_of`); two runs of one backend on other inputs each give the
    independent oracle's bits, and the same as the numpy core (which copies them out)."""
    from tests.backends.oracles import gemm_bf16_oracle_exact

    kern = example("gemm_bf16", "gemm_bf16_kernel")
    maps = []
    distinct = contract_jit.distinct_rows
    monkeypatch.setattr(contract_jit, "distinct_rows",
                        lambda raw, row_of=None: maps.append(row_of is not None) or distinct(raw, row_of))
    backend = CpuBackend(JIT)
    for seed in (21, 22):
        rng = np.random.default_rng(seed)
        a, w = bf16_uniform(rng, (512, 128)), bf16_uniform(rng, (512, 128))
        want = np.asarray(gemm_bf16_oracle_exact(a, w), np.float32).view(np.uint32)
        np.testing.assert_array_equal(np.asarray(backend.run(kern, (a, w))).view(np.uint32), want)
        np.testing.assert_array_equal(np.asarray(CpuBackend(NUMPY).run(kern, (a, w))).view(np.uint32), want)
    # each run: the exact-sum BLAS attempt of backends/cpu/contract_blas.py (refused: these sums
    # round), which the compiled core then reuses; the numpy core's run makes the attempt too
    assert maps == [True, True] * 4


# ---- the cores directly, on shapes the examples do not reach ----------------------------------

SHAPES = [(3, 5, 1, 2, 1), (5, 4, 2, 3, 2), (1, 1, 8, 1, 1), (7, 3, 16, 2, 3), (2, 33, 4, 5, 1)]


def _operand(rng: np.random.Generator, rows: int, groups: tuple[int, ...], special: bool):
    """Stored bf16 cells (rows, 2 x cells, half of them unread) and a Gather reading a
    shuffled half of them over `groups`."""
    cells = 2 * int(np.prod(groups))
    raw = bf16_uniform(rng, (rows, cells))
    index = rng.permutation(cells)[:cells // 2]
    if special:  # one infinity read for sure, then any of these anywhere
        raw[0, index[0]] = 0x7F80
        pick = rng.random(raw.shape) < 0.2
        raw[pick] = rng.choice(np.array([0x7F80, 0xFF80, 0x7FC1, 0x0001, 0x8000, 0x0080, 0x7F7F, 0x00FF],
                                        np.uint16), int(pick.sum()))
    gather = contract_plan.Gather(digits=(), shape=(), groups=groups, index=index, offset=None, strides=None)
    return raw, gather


@pytest.mark.parametrize("shape", SHAPES, ids=[str(s) for s in SHAPES])
@pytest.mark.parametrize("kind", ["exact", "flushed", "padded"])
def test_the_cores_agree_on_odd_shapes(shape: tuple[int, ...], kind: str) -> None:
    """I odd or one, a one-leaf tree, several batch positions, J past a vector width; no
    flush, flushed special values, and padding leaves with skipped time steps."""
    ni, nj, g, nr, nn = shape
    rng = np.random.default_rng(sum(shape) + len(kind))
    rows = 3
    raw_a, ga = _operand(rng, rows, (ni, g, nr, nn), kind != "exact")
    raw_w, gw = _operand(rng, rows, (nj, g, nr, nn), kind != "exact")
    pad = skip = None
    if kind == "padded":
        pad = rng.random((ni, 1, g, nr, nn)) < 0.3
        skip = rng.random((1, nj, nr, 1)) < 0.3
    a, a_info = contract_float.float_operand(raw_a, bf16, ga)
    w, w_info = contract_float.float_operand(raw_w, bf16, gw)
    exact = contract_float.exact_f32(a_info, w_info, 8, 8, g * nr)
    assert exact is (kind == "exact")
    want = contract_float.float_core(a, w, pad, skip, exact)  # (I, J, N', rows)
    ja, _ = contract_jit.float_stored(*contract_jit.stored_rows(raw_a), bf16, ga)
    jw, _ = contract_jit.float_stored(*contract_jit.stored_rows(raw_w), bf16, gw)
    got = contract_jit.core(ja, jw, pad, skip, exact, 1)  # (rows, I, J, N')
    np.testing.assert_array_equal(got.transpose(1, 2, 3, 0).view(np.uint32), want.view(np.uint32))


RUN_SHAPES = [(3, 17, 32, 3, 2), (2, 32, 64, 2, 1), (1, 16, 1, 4, 3), (5, 1, 16, 1, 1), (4, 40, 8, 5, 2),
              (6, 33, 2, 2, 1), (2, 7, 4, 1, 2), (17, 9, 16, 2, 2), (9, 8, 64, 3, 1)]


def _run_operand(rng: np.random.Generator, rows: int, ni: int, g: int, nr: int, nn: int, f8: bool):
    """Stored cells (rows, 2 x cells) and a Gather over (ni, g, nr, nn) whose every run of
    leaves reads g consecutive cells (leaf l of the layout, bit-reversed, at natural leaf
    bitrev(l)), the runs at shuffled places: the layout the exact kernel copies as runs.
    Zeros of both signs mixed in; f8e4m3 patterns (widened, two halves a cell) when `f8`."""
    runs = ni * nr * nn
    if f8:
        raw = rng.integers(0, 256, (rows, 2 * runs * g), dtype=np.uint8)
        raw[(raw & 0x7F) == 0x7F] = 0x80  # no NaN (e4m3 has no infinity): -0 instead
    else:
        raw = bf16_uniform(rng, (rows, 2 * runs * g))
        raw[rng.random(raw.shape) < 0.1] = 0x8000
    bits = max(g.bit_length() - 1, 1)
    rev = np.array([int(format(q, f"0{bits}b")[::-1], 2) >> (bits - (g.bit_length() - 1)) for q in range(g)])
    base = rng.permutation(2 * runs)[:runs].reshape(ni, 1, nr, nn) * g
    index = (base + rev.reshape(1, g, 1, 1)).reshape(-1)
    return raw, contract_plan.Gather(digits=(), shape=(), groups=(ni, g, nr, nn), index=index, offset=None,
                                     strides=None)


@pytest.mark.parametrize("shape", RUN_SHAPES, ids=[str(s) for s in RUN_SHAPES])
@pytest.mark.parametrize("f8", [False, True], ids=["bf16", "f8e4m3"])
def test_the_exact_kernel_agrees_on_runs(shape: tuple[int, ...], f8: bool) -> None:
    """The vectorized exact kernel (backends/cpu/contract_jit_exact.py) on layouts it
    copies as runs: every leaf count it unrolls, I odd, J below, at and past a multiple
    of its 8-column tiles, I past a multiple of its 8-row tiles, several steps and batch positions, bf16 shifted and f8
    widened (two halves a cell), zeros of both signs."""
    from backends.cpu import contract_jit_exact
    from ir.dtypes import f8e4m3

    ni, nj, g, nr, nn = shape
    dtype = f8e4m3 if f8 else bf16
    rng = np.random.default_rng(sum(shape) + f8)
    raw_a, ga = _run_operand(rng, 3, ni, g, nr, nn, f8)
    raw_w, gw = _run_operand(rng, 3, nj, g, nr, nn, f8)
    a, a_info = contract_float.float_operand(raw_a, dtype, ga)
    w, w_info = contract_float.float_operand(raw_w, dtype, gw)
    bits = 4 if f8 else 8
    assert contract_float.exact_f32(a_info, w_info, bits, bits, g * nr)
    want = contract_float.float_core(a, w, None, None, True)  # (I, J, N', rows)
    ja, _ = contract_jit.float_stored(*contract_jit.stored_rows(raw_a), dtype, ga)
    jw, _ = contract_jit.float_stored(*contract_jit.stored_rows(raw_w), dtype, gw)
    assert (ja[1], jw[1]) == (f8, f8)  # f8 is widened, bf16 shifted
    assert contract_jit_exact.layout(ga, "a").starts.size and contract_jit_exact.layout(gw, "w").starts.size  # runs
    got = contract_jit.core(ja, jw, None, None, True, 1)  # (rows, I, J, N')
    np.testing.assert_array_equal(got.transpose(1, 2, 3, 0).view(np.uint32), want.view(np.uint32))


FOLD_SHAPES = [(5, 3, 8, 2, 3), (9, 8, 32, 2, 2), (2, 3, 16, 3, 2), (12, 8, 64, 1, 4)]


@pytest.mark.parametrize("shape", FOLD_SHAPES, ids=[str(s) for s in FOLD_SHAPES])
def test_the_exact_kernel_folds_batch_positions_into_columns(shape: tuple[int, ...]) -> None:
    """A reading the same cells at every batch position n (a GEMM's A does not depend on
    the TRF's column group): the exact kernel takes the n x J results of a row as its
    columns (8- and 16-wide tiles, padded), bit for bit the numpy core."""
    from backends.cpu import contract_jit_exact

    ni, nj, g, nr, nn = shape
    rng = np.random.default_rng(sum(shape))
    raw_a, one = _run_operand(rng, 3, ni, g, nr, 1, False)
    index = np.repeat(one.index.reshape(ni, g, nr, 1), nn, axis=3).reshape(-1)
    ga = contract_plan.Gather(digits=(), shape=(), groups=(ni, g, nr, nn), index=index, offset=None, strides=None)
    raw_w, gw = _run_operand(rng, 3, nj, g, nr, nn, False)
    a, a_info = contract_float.float_operand(raw_a, bf16, ga)
    w, w_info = contract_float.float_operand(raw_w, bf16, gw)
    assert contract_float.exact_f32(a_info, w_info, 8, 8, g * nr)
    assert contract_jit_exact.layout(ga, "a").na == 1
    want = contract_float.float_core(a, w, None, None, True)  # (I, J, N', rows)
    ja, _ = contract_jit.float_stored(*contract_jit.stored_rows(raw_a), bf16, ga)
    jw, _ = contract_jit.float_stored(*contract_jit.stored_rows(raw_w), bf16, gw)
    got = contract_jit.core(ja, jw, None, None, True, 1)  # (rows, I, J, N')
    np.testing.assert_array_equal(got.transpose(1, 2, 3, 0).view(np.uint32), want.view(np.uint32))


# ---- generated kernels -----------------------------------------------------------------------


def _generated(n_examples: int, at: int) -> Counter:
    stats: Counter = Counter()

    @seed(at)
    @settings(max_examples=n_examples, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.large_base_example])
    @given(g=kernels(illegal_rate=0, copy_rate=0), input_seed=st.integers(0, 2**32 - 1))
    def prop(g, input_seed):
        kern = load_kernel(g.source)
        if not npu_opt.check(kern).ok:
            stats["refused"] += 1
            return
        with pytest.MonkeyPatch.context() as mp:
            jit_calls, _ = both_cores(mp, kern, make_inputs(kern, input_seed))
        stats["float" if jit_calls else "int"] += 1

    prop()
    return stats


def test_generated_kernels_are_bit_identical() -> None:
    stats = _generated(40, 20261202)
    assert stats["float"] >= 10, stats


@pytest.mark.slow
def test_generated_kernels_are_bit_identical_slow() -> None:
    stats = _generated(400, 4242)
    assert stats["float"] >= 100, stats


# ---- absent, turned off, threads, cache ------------------------------------------------------


def _gemm_args() -> tuple:
    rng = np.random.default_rng(4)
    return example("gemm", "gemm_kernel"), (bf16_uniform(rng, (512, 64)), bf16_uniform(rng, (512, 64)))


def test_without_numba_the_numpy_core_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    kern, args = _gemm_args()
    want = CpuBackend(JIT).run(kern, args)
    monkeypatch.setitem(sys.modules, "numba", None)  # `import numba` raises ImportError
    monkeypatch.setattr(contract_jit, "_compiled", functools.lru_cache(maxsize=1)(contract_jit._compiled.__wrapped__))
    monkeypatch.setattr(kernels_compile, "numba", functools.lru_cache(maxsize=1)(kernels_compile.numba.__wrapped__))
    assert not contract_jit.enabled(True)
    ran = []
    core = contract_float.float_core
    monkeypatch.setattr(contract_float, "float_core", lambda *a: ran.append(1) or core(*a))
    got = CpuBackend(JIT).run(kern, args)
    assert ran == [1]
    np.testing.assert_array_equal(np.asarray(got).view(np.uint32), np.asarray(want).view(np.uint32))


@pytest.mark.parametrize("value, on", [("0", False), ("off", False), ("1", True), ("", True)])
def test_the_environment_variable_turns_it_off(monkeypatch: pytest.MonkeyPatch, value: str, on: bool) -> None:
    monkeypatch.setenv(contract_jit.ENV, value)
    assert contract_jit.enabled(True) is on
    assert contract_jit.enabled(False) is False


def test_small_contractions_do_not_load_numba(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before numba is loaded, only a contraction of JIT_MIN products or more loads it."""
    fresh = functools.lru_cache(maxsize=1)(contract_jit._compiled.__wrapped__)
    monkeypatch.setattr(contract_jit, "_compiled", fresh)
    monkeypatch.setattr(kernels_compile, "loaded", lambda: False)
    monkeypatch.setattr(kernels_compile, "_SEEN", [0])
    assert not contract_jit.enabled(True, contract_jit.JIT_MIN // 2 - 1)
    assert fresh.cache_info().currsize == 0
    assert contract_jit.enabled(True, contract_jit.JIT_MIN // 2 + 1)  # the process's products add up
    monkeypatch.setattr(kernels_compile, "loaded", lambda: True)
    assert contract_jit.enabled(True, 1)  # loaded now


@pytest.mark.parametrize("threads", [1, 3])
def test_row_blocks_on_threads_do_not_change_results(monkeypatch: pytest.MonkeyPatch, threads: int) -> None:
    monkeypatch.setattr(contract_float, "PARALLEL_MIN", 1)
    pools = []
    pool = thread_pool.pool
    monkeypatch.setattr(thread_pool, "pool", lambda n: pools.append(n) or pool(n))
    kern, args = _gemm_args()
    assert both_cores(monkeypatch, kern, list(args), threads=threads) == (1, 1)
    assert (threads - 1 in pools) is (threads > 1)  # the calling thread and threads - 1 helpers


def test_loading_the_cpu_backend_does_not_import_numba() -> None:
    """numba (a quarter second of CPU) is imported by the first float contraction only."""
    code = ("import importlib, pkgutil, sys\nimport backends.cpu\n"
            "for info in pkgutil.walk_packages(backends.cpu.__path__, 'backends.cpu.'):\n"
            "    importlib.import_module(info.name)\n"
            "print('numba' in sys.modules)")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False"]


def test_the_kernels_are_cached_on_disk() -> None:
    compiled = contract_jit._compiled()
    assert compiled is not None
    assert all(type(fn._cache).__name__ == "FunctionCache" for fn in compiled.values())


def test_no_cache_directory_compiles_without_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """A read-only install and no writable user cache: numba refuses `cache=True` (no
    directory passes its write probe), and the kernel is compiled for the process only."""
    import tempfile

    import numba  # here, not at the top: collecting this file must not load numba in every worker

    def read_only(*args, **kwargs):
        raise PermissionError("read-only file system")

    def twice(x):
        return x * 2

    monkeypatch.setattr(numba.config, "CACHE_DIR", "")  # no NUMBA_CACHE_DIR either
    monkeypatch.setattr(tempfile, "TemporaryFile", read_only)
    with pytest.raises(RuntimeError):
        numba.njit(cache=True)(twice)
    fn = kernels_compile.njit(numba, twice)
    assert fn(21) == 42 and type(fn._cache).__name__ == "NullCache"


def test_the_exact_kernel_widens_many_stored_rows_on_several_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batched GEMM's operands have a stored row per slice: each row is widened in cache
    just before its tiles (`tiles_widening`), the rows split between the float threads,
    bit for bit the numpy core."""
    monkeypatch.setattr(contract_float, "PARALLEL_MIN", 1)
    ni, nj, g, nr, nn = 9, 8, 32, 2, 2
    rng = np.random.default_rng(11)
    raw_a, ga = _run_operand(rng, 7, ni, g, nr, nn, False)
    raw_w, gw = _run_operand(rng, 7, nj, g, nr, nn, False)
    a, _ = contract_float.float_operand(raw_a, bf16, ga)
    w, _ = contract_float.float_operand(raw_w, bf16, gw)
    want = contract_float.float_core(a, w, None, None, True)  # (I, J, N', rows)
    ja, _ = contract_jit.float_stored(*contract_jit.stored_rows(raw_a), bf16, ga)
    jw, _ = contract_jit.float_stored(*contract_jit.stored_rows(raw_w), bf16, gw)
    split = []
    real = contract_jit._on_rows
    monkeypatch.setattr(contract_jit, "_on_rows", lambda k, rows, threads, work, args: split.append(
        (k.py_func.__name__, threads)) or real(k, rows, threads, work, args))
    got = contract_jit.core(ja, jw, None, None, True, 2)  # (rows, I, J, N')
    assert split == [("tiles_widening", 2)]
    np.testing.assert_array_equal(got.transpose(1, 2, 3, 0).view(np.uint32), want.view(np.uint32))


def test_a_broadcast_operand_is_widened_once_per_class(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spatial rows that read few stored rows (a broadcast: 8 rows over 3 stored rows of A
    and 2 of W) widen each stored row once (`gather`) and then run the tiles, not a
    widening per spatial row; bit for bit the numpy core on the rows copied out."""
    monkeypatch.setattr(contract_float, "PARALLEL_MIN", 1)
    ni, nj, g, nr, nn = 9, 8, 32, 2, 2
    rng = np.random.default_rng(12)
    raw_a, ga = _run_operand(rng, 3, ni, g, nr, nn, False)
    raw_w, gw = _run_operand(rng, 2, nj, g, nr, nn, False)
    of_a, of_w = np.array([0, 0, 1, 1, 2, 2, 0, 1]), np.array([0, 1, 0, 1, 0, 1, 1, 0])
    a, _ = contract_float.float_operand(raw_a[of_a], bf16, ga)
    w, _ = contract_float.float_operand(raw_w[of_w], bf16, gw)
    want = contract_float.float_core(a, w, None, None, True)  # (I, J, N', rows)
    ja, _ = contract_jit.float_stored(*contract_jit.stored_rows(raw_a, of_a), bf16, ga)
    jw, _ = contract_jit.float_stored(*contract_jit.stored_rows(raw_w, of_w), bf16, gw)
    split = []
    real = contract_jit._on_rows
    monkeypatch.setattr(contract_jit, "_on_rows", lambda k, rows, threads, work, args: split.append(
        (k.py_func.__name__, rows)) or real(k, rows, threads, work, args))
    got = contract_jit.core(ja, jw, None, None, True, 2)
    assert split == [("gather", 3), ("gather", 2), ("tiles", 8)]
    np.testing.assert_array_equal(got.transpose(1, 2, 3, 0).view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("wide", [False, True], ids=["bf16", "f32"])
@pytest.mark.parametrize("fill", ["random", "zeros", "signed_zeros", "one_tiny"])
def test_the_range_scan_matches_numpy(wide: bool, fill: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`_range_of` (largest, smallest nonzero magnitude pattern over the cells a layout
    reads, the sign bit when every one is zero) against numpy over the same cells, for 16-bit patterns and
    float32 bits, with runs that skip cells."""
    monkeypatch.setattr(contract_float, "PARALLEL_MIN", 1)
    rng = np.random.default_rng(13)
    rows, cells = 5, 300
    bits = rng.integers(0, 2 ** (32 if wide else 16), (rows, cells), dtype=np.uint64)
    if fill != "random":
        bits[:] = 0
    if fill == "signed_zeros":
        bits[:, ::3] = 1 << (31 if wide else 15)
    if fill == "one_tiny":
        bits[3, 200] = 1 | (1 << (31 if wide else 15))
    bits[:, 100:150] = (1 << (31 if wide else 15)) - 1  # outside the runs: never scanned
    starts, ends = np.array([0, 150, 299]), np.array([100, 290, 300])
    if wide:
        raw = bits.astype(np.uint32).view(np.uint16).reshape(rows, 2 * cells)
    else:
        raw = bits.astype(np.uint16)
    mask = 0x7FFFFFFF if wide else 0x7FFF
    cols = np.concatenate([np.arange(s, e) for s, e in zip(starts, ends)])
    masked = bits[:, cols].astype(np.int64) & mask
    nonzero = masked[masked != 0]
    want = (int(masked.max()), int(nonzero.min()) if nonzero.size else mask + 1)
    gather = contract_plan.Gather(digits=(), shape=(), groups=(cols.size,), index=np.tile(cols, 2), offset=None,
                                  strides=None)
    for threads in (1, 2):
        assert contract_jit._range_of(raw, gather, wide, threads) == want


def test_stored_rows_in_order_are_a_view_and_others_a_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    """`stored_rows` keeps rows `row_of` names in one run as a view of them (a switch's
    distinct rows, the padding row last and unread: no copy of megabytes of rows), and
    copies out rows it names out of order or with gaps; the classes the same either way."""
    raw = np.arange(5 * 6, dtype=np.uint16).reshape(5, 6)
    rows, cls = contract_jit.stored_rows(raw, np.array([1, 3, 2, 2, 1, 3]))
    assert np.shares_memory(rows, raw) and np.array_equal(rows, raw[1:4])
    assert np.array_equal(rows[cls], raw[[1, 3, 2, 2, 1, 3]])
    rows, cls = contract_jit.stored_rows(raw, np.array([4, 0, 4]))
    assert not np.shares_memory(rows, raw) and np.array_equal(rows[cls], raw[[4, 0, 4]])
    raw[[1, 3]] = raw[[0, 2]]  # rows 0 = 1 and 2 = 3 recorded as copies: classes first met at rows 0, 2
    monkeypatch.setattr(contract_jit.row_classes, "classes_of", lambda rows: np.array([0, 0, 1, 1, 2]))
    rows, cls = contract_jit.stored_rows(raw)
    assert np.array_equal(rows[cls], raw) and rows.shape[0] == 3
    monkeypatch.setattr(contract_jit.row_classes, "classes_of", lambda rows: np.array([0, 2, 1, 3, 3]))
    rows, cls = contract_jit.stored_rows(raw)  # first rows 0, 2, 1, 3 by class: all of 0..3, not in order
    assert np.array_equal(rows[cls], raw[[0, 1, 2, 3, 3]])
