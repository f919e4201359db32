"""The interpreter's speed machinery against its plain path (visa/interp/fast/speed.py), bit for bit.

Each case runs one artifact twice: with the machinery (`fast=True`: compiled float
contractions, copy notes, pooled stores, `Repeated` and `Front` streams, row
de-duplication, the per-record memo) and without it (`fast=False`, the plain numpy spec
path), over every shipped example and every kernel the interpreter's agreement tests
run (tests/visa/test_interp.py: every contraction case with padding and special values in
every kind of data, every case of the feed matrix, every layout kernel). A shortcut
that changes one bit fails here; `test_a_broken_shortcut_is_caught` shows it does.
"""

from __future__ import annotations

import zlib

import ml_dtypes
import numpy as np
import pytest

from tests.backends import test_contract_fast as fast_cases
from tests.kernel_files import EXAMPLES_DIR, _kernels, example, example_names
from tests.lowering import kernels as lowering_kernels
from tests.visa.test_interp import MATRIX, artifact, bits, host_inputs
from visa.interp import feed
from visa.interp.fast import contract_jit, copies, lanes, memo, pool, row_split, speed
from visa.interp import execute_inout


def _bits(art, arrays, fast: bool) -> list[np.ndarray]:
    results, finals = execute_inout(art, [a.copy() if isinstance(a, np.ndarray) else a for a in arrays], fast=fast)
    return bits(tuple(results + finals))


def same_bits(kernel, arrays) -> None:
    """The fast and the plain interpreter give the same bits for `arrays`."""
    art = artifact(kernel)
    plain = _bits(art, arrays, False)
    got = _bits(art, arrays, True)
    assert len(got) == len(plain)
    for g, w in zip(got, plain):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("name", example_names())
def test_every_example_runs_the_same_bits_plain(name):
    kernel = example(name)
    for kind in ("uniform", "bits"):
        same_bits(kernel, host_inputs(kernel, np.random.default_rng(zlib.crc32(f"{name}/{kind}".encode())), kind))


def _bf16(rng, *shape):
    return rng.standard_normal(shape).astype(ml_dtypes.bfloat16)


def _offsets(rng, n, rows, row_bytes):
    return (rng.permutation(rows)[:n] * row_bytes).astype(np.int32)


BLOCK = 16 * 4 * 64 * 2     # a KV block: tokens x heads x head dim x bf16
NESTED_INPUTS = {           # the examples in examples/*/ whose indices or scalars must make sense
    "paged_kv_gather": lambda r: [_bf16(r, 32, 8, 16, 64), r.permutation(32)[:16].astype(np.int32)],
    "embedding_lookup": lambda r: [_bf16(r, 1000, 128), (r.integers(0, 1000, 512) * 256).astype(np.int32)],
    "take_along_axis": lambda r: [_bf16(r, 8, 256, 64), (r.integers(0, 256, 32) * 128).astype(np.int32)],
    "put_along_axis": lambda r: [_bf16(r, 8, 16, 64), _offsets(r, 16, 256, 128), _bf16(r, 8, 256, 64)],
    "paged_kv_cache": lambda r: [_bf16(r, 32, 16, 4, 64), _bf16(r, 4, 16, 4, 64), _offsets(r, 4, 32, BLOCK),
                                 r.permutation(32)[:16].astype(np.int32)],
    "paged_kv_decode": lambda r: [_bf16(r, 32, 16, 4, 64), _offsets(r, 16, 32, BLOCK), 7],
    "moe_experts": lambda r: [_bf16(r, 4, 2, 64, 16), _bf16(r, 4, 8, 16), 0, 70, 64, 128],
    "kv_page_bump": lambda r: [r.integers(-1000, 1000, (8, 64, 8)).astype(np.int32), 3, 5],
}


def _nested():
    return {k.name: k for f in sorted(EXAMPLES_DIR.glob("*/*.py")) for k in _kernels(f).values()}


@pytest.mark.parametrize("name", sorted(_nested()))
def test_every_nested_example_runs_the_same_bits_plain(name):
    """examples/runtime/ and examples/topology/: their own inputs where indices or launch
    scalars must make sense, the generic ones otherwise."""
    kernel, rng = _nested()[name], np.random.default_rng(zlib.crc32(name.encode()))
    same_bits(kernel, NESTED_INPUTS[name](rng) if name in NESTED_INPUTS else host_inputs(kernel, rng))


def _contraction_cases():
    for name, (_, _, family) in fast_cases.CASES.items():
        for kind in fast_cases.KINDS[family]:
            yield pytest.param(name, kind, id=f"{name}-{kind}")


@pytest.mark.parametrize("name,kind", list(_contraction_cases()))
def test_contractions_run_the_same_bits_plain(name, kind):
    getter, shapes, family = fast_cases.CASES[name]
    rng = np.random.default_rng(zlib.crc32(f"{name}/{kind}".encode()))
    same_bits(getter(), [fast_cases.DATA[family](rng, shape, kind) for shape in shapes])


@pytest.mark.parametrize("case,factory", [(c[0], c[1]) for c in MATRIX], ids=[c[0] for c in MATRIX])
def test_feed_combinations_run_the_same_bits_plain(case, factory):
    kernel = factory()
    same_bits(kernel, host_inputs(kernel, np.random.default_rng(zlib.crc32(case.encode())), "bits"))


@pytest.mark.parametrize("factory", [lowering_kernels.ragged_commit_kernel, lowering_kernels.relayout_kernel,
                                     lowering_kernels.two_cluster_kernel, lowering_kernels.long_loop_kernel,
                                     lambda: lowering_kernels.transpose_kernel(3)],
                         ids=["ragged", "relayout", "two-cluster", "long-loop", "transpose"])
def test_layout_kernels_run_the_same_bits_plain(factory):
    kernel = factory()
    same_bits(kernel, host_inputs(kernel, np.random.default_rng(5)))


def _spy(monkeypatch) -> dict[str, list]:
    """Count the calls of one entry point of each shortcut."""
    calls: dict[str, list] = {}
    for module, name in ((contract_jit, "run_float"), (feed, "_repeated"), (row_split, "split"),
                         (copies.CopyNotes, "held_rows"), (lanes, "held")):
        real, seen = getattr(module, name), calls.setdefault(name, [])

        def counted(*args, _real=real, _seen=seen, **kw):
            out = _real(*args, **kw)
            if out is not False:     # `lanes.held` counts when it says yes
                _seen.append(1)
            return out

        monkeypatch.setattr(module, name, counted)
    return calls


@pytest.mark.parametrize("fast", [False, True])
def test_the_switch_turns_every_shortcut_off(fast, monkeypatch):
    """Plain: none of the shortcuts runs; fast: each of them does on some example (so the
    comparisons above are not vacuous)."""
    monkeypatch.setenv(contract_jit.ENV, "1")
    monkeypatch.setattr(pool, "_POOL", [])
    monkeypatch.setattr(memo, "_TABLE", {})
    calls = _spy(monkeypatch)
    for name in ("gemm_kernel", "gemm_i8_kernel", "gemv_kernel", "gemm_bf16_kernel", "rmsnorm_kernel", "row_sum_kernel",
                 "softmax_rows_kernel"):
        kernel = example(name)
        _bits(artifact(kernel), host_inputs(kernel, np.random.default_rng(1)), fast)
    ran = {name: len(seen) for name, seen in calls.items()}
    ran["pooled arrays"], ran["memo entries"] = len(pool._POOL), len(memo._TABLE)
    assert all(n > 0 for n in ran.values()) if fast else all(n == 0 for n in ran.values()), ran


def test_the_environment_variable_turns_it_off(monkeypatch):
    monkeypatch.setenv(speed.ENV, "0")
    assert not speed.on()
    with speed.mode(True):
        assert speed.on()
    monkeypatch.setenv(speed.ENV, "1")
    assert speed.on()
    with speed.mode(False):
        assert not speed.on()


def test_a_broken_shortcut_is_caught(monkeypatch):
    """Row de-duplication that takes rows for copies when they are not: the fast run gives
    other bits, and the comparison fails. Both ways rows are found equal are broken: by
    comparing them (`row_split`) and by a load's note, which a commit no longer forgets (the
    contraction after one then reads the note and never compares)."""
    monkeypatch.setattr(row_split, "_constant_along", lambda v, axis: True)
    monkeypatch.setattr(copies, "_first_rows", lambda rep, slices: np.zeros(slices.size, np.int64))
    kernel = example("gemm_i8_kernel")
    with pytest.raises(AssertionError):
        same_bits(kernel, host_inputs(kernel, np.random.default_rng(2)))
