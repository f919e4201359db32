"""The interpreter's compiled float contraction (visa/interp/fast/contract_jit.py) against its
numpy path (visa/interp/contract_float.py), bit for bit.

Each case runs the same artifact twice, once with `NPU_OPT_INTERP_JIT=0` (numpy) and once
with `NPU_OPT_INTERP_JIT=1` (compiled, checked to have run), over every example and every
padded / special-value contraction of the cpu fast-path suite (padded time steps, leaves
and columns, f8 operands, NaN / infinities / subnormals that keep the flush, tiny and huge
values on both sides of the no-flush guard). The numpy path is itself pinned to the cpu
backend and to the examples' oracles in test_interp.py.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from tests.backends import test_contract_fast as fast
from tests.kernel_files import example, example_names
from tests.visa.test_interp import artifact, bits, host_inputs
from tests.visa.test_interp_jit_weights import paired_weights
from visa.interp import execute_inout
from visa.interp.fast import contract_jit, contract_jit_exact, contract_jit_weights, copies

FLOAT_EXAMPLES = ("dense_bf16_kernel", "dot_product_kernel", "gemv_kernel", "gemm_kernel", "gemm_bf16_kernel", "gemm_tiled")


def _run(art, arrays, monkeypatch, mode: str) -> tuple[list[np.ndarray], int]:
    """(result bits, how many contractions the compiled path ran) with NPU_OPT_INTERP_JIT=mode."""
    monkeypatch.setenv(contract_jit.ENV, mode)
    calls = []
    real = contract_jit.run_float

    def counted(*args, **kw):
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(contract_jit, "run_float", counted)
    results, finals = execute_inout(art, [a.copy() for a in arrays])
    monkeypatch.setattr(contract_jit, "run_float", real)
    return bits(tuple(results + finals)), len(calls)


def _both(kernel, arrays, monkeypatch, compiled: bool = True) -> None:
    """Both paths give the same bits; `compiled`: the compiled one did run."""
    art = artifact(kernel)
    want, none = _run(art, arrays, monkeypatch, "0")
    got, ran = _run(art, arrays, monkeypatch, "1")
    assert none == 0
    assert ran > 0 or not compiled
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_numba_is_installed_for_the_suite():
    """The test extra installs numba, so the comparisons below never pass vacuously."""
    assert contract_jit._compiled() is not None


@pytest.mark.parametrize("name", example_names())
def test_every_example_runs_the_same_bits_compiled(name, monkeypatch):
    kernel = example(name)
    arrays = host_inputs(kernel, np.random.default_rng(zlib.crc32(name.encode())))
    _both(kernel, arrays, monkeypatch, compiled=name in FLOAT_EXAMPLES)


@pytest.mark.parametrize("name", ["dot_product_kernel", "gemv_kernel", "gemm_kernel"])
def test_any_bit_pattern_runs_the_same_bits_compiled(name, monkeypatch):
    """NaN, infinities, subnormals and signed zeros: the flushed arithmetic."""
    kernel = example(name)
    _both(kernel, host_inputs(kernel, np.random.default_rng(5), "bits"), monkeypatch)


def _counting(monkeypatch, name: str) -> list:
    """Count the calls of the compiled kernel `name` (its entry in `contract_jit._compiled()`)."""
    kernels, calls = contract_jit._compiled(), []
    real = kernels[name]

    def counted(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setitem(kernels, name, counted)
    return calls


def test_a_plain_bf16_gemm_takes_the_exact_kernel(monkeypatch):
    """Values in [-1, 1), no padding: nothing can be flushed, so the vectorized kernel runs
    (and gives the numpy path's bits)."""
    kernel = example("gemm_bf16_kernel")
    calls = _counting(monkeypatch, "exact_kernel")
    _both(kernel, host_inputs(kernel, np.random.default_rng(3)), monkeypatch)
    assert calls


def test_slots_pair_when_they_read_the_same_stream_and_trf_reads_a_constant_distance_apart():
    sstep = np.array([[0, 4], [0, 4], [0, 4], [8, 12], [8, 12], [0, 4], [8, 12]], np.int64)
    tread = np.array([[0, 1], [2, 3], [9, 9], [5, 6], [3, 4], [4, 6], [7, 8]], np.int64)
    pairs, shifts = contract_jit_exact.slot_pairs(sstep, tread, np.zeros((0, 0), np.bool_))
    got = {(int(a), int(b), shifts[int(c)]) for a, b, c in pairs}
    # 0 and 1 read +2 apart, 3 and 4 -2; 2 and 5 read +(-5, -3) apart: each alone, as is 6
    assert got == {(0, 1, 2), (2, -1, 0), (5, -1, 0), (3, 4, -2), (6, -1, 0)}
    assert sorted([int(a) for a, _, _ in pairs] + [int(b) for _, b, _ in pairs if b >= 0]) == list(range(7))
    skipped = np.zeros((7, 2), np.bool_)
    skipped[1, 0] = True                                   # slot 1 skips a step slot 0 takes: no pair
    pairs, _ = contract_jit_exact.slot_pairs(sstep, tread, skipped)
    assert all({int(a), int(b)} != {0, 1} for a, b, _ in pairs)
    squares = np.arange(20, dtype=np.int64)[:, None] ** 2 * np.ones((1, 2), np.int64)  # every distance new
    pairs, shifts = contract_jit_exact.slot_pairs(np.zeros_like(squares), squares, np.zeros((0, 0), np.bool_))
    assert len(shifts) == contract_jit_exact.MAX_SHIFTS and shifts[0] == 0
    assert sorted([int(a) for a, _, _ in pairs] + [int(b) for _, b, _ in pairs if b >= 0]) == list(range(20))
    assert all(squares[b, 0] - squares[a, 0] == shifts[c] for a, b, c in pairs if b >= 0)


def test_the_paired_trf_layout_puts_the_partner_reads_beside():
    wt = np.arange(2 * 6 * 8, dtype=np.float32).reshape(2, 6, 8)
    out = paired_weights(wt, [0, 2, -1, 9], 1).reshape(4, 2, 6, 16)
    np.testing.assert_array_equal(out[:, :, :, :8], np.broadcast_to(wt, (4, 2, 6, 8)))
    np.testing.assert_array_equal(out[0, :, :, 8:], wt)
    np.testing.assert_array_equal(out[1, :, :4, 8:], wt[:, 2:])
    np.testing.assert_array_equal(out[2, :, 1:, 8:], wt[:, :5])
    assert not out[1, :, 4:, 8:].any() and not out[2, :, 0, 8:].any() and not out[3, :, :, 8:].any()


@pytest.mark.parametrize("name, tiles", [("gemm_bf16_kernel", "exact_kernel"), ("gemm_tiled", "exact_kernel"),
                                         ("gemm_kernel", "exact_kernel"), ("gemm_kernel", "octet_kernel")])
def test_unpaired_slots_run_the_same_bits(name, tiles, monkeypatch):
    """Every slot alone, by the four-row tiles (both halves of the vector computed, one
    written) or by the eight-row ones: the numpy path's bits, as with the pairs."""
    real = contract_jit_exact.slot_pairs
    if tiles == "exact_kernel":
        monkeypatch.setattr(contract_jit, "_by_octets", lambda pairs, which: False)

    def alone(sstep, tread, tpad):
        _, shifts = real(sstep, tread, tpad)
        return np.stack([np.arange(sstep.shape[0]), -np.ones(sstep.shape[0], np.int64),
                         np.zeros(sstep.shape[0], np.int64)], axis=1), shifts

    calls = _counting(monkeypatch, tiles)
    monkeypatch.setattr(contract_jit_exact, "slot_pairs", alone)
    kernel = example(name)
    _both(kernel, host_inputs(kernel, np.random.default_rng(zlib.crc32(name.encode()) + 1)), monkeypatch)
    assert calls


@pytest.mark.parametrize("name", FLOAT_EXAMPLES)
def test_the_general_kernel_alone_runs_the_same_bits(name, monkeypatch):
    """With no written-out tree the general kernel takes every contraction, the exact ones
    included: it too gives the numpy path's bits."""
    monkeypatch.setattr(contract_jit_exact, "TREES", ())
    exact_calls, general_calls = _counting(monkeypatch, "exact_kernel"), _counting(monkeypatch, "_float_kernel")
    kernel = example(name)
    _both(kernel, host_inputs(kernel, np.random.default_rng(zlib.crc32(name.encode()))), monkeypatch)
    assert general_calls and not exact_calls


def test_slices_with_the_same_weights_share_one_widened_copy(monkeypatch):
    """gemm_bf16_kernel's slices along M hold the same TRF codes: fewer copies are widened
    than there are rows, and the bits stay the numpy path's."""
    kernels = contract_jit._compiled()
    real, seen = kernels["exact_kernel"], []

    def recorded(*args):
        seen.append((args[3].shape[1], args[4].size))    # (widened copies, rows)
        return real(*args)

    monkeypatch.setitem(kernels, "exact_kernel", recorded)
    kernel = example("gemm_bf16_kernel")
    _both(kernel, host_inputs(kernel, np.random.default_rng(4)), monkeypatch)
    assert seen and all(0 < copies < rows for copies, rows in seen)


@pytest.mark.parametrize("name", ["gemm_bf16_kernel", "gemm_tiled"])
def test_a_digest_that_matches_every_slice_is_checked_code_for_code(name, monkeypatch):
    """Every slice's guess failed and every slice given the same digest: the code-for-code
    check still keeps the slices with other weights apart (the bits stay the numpy path's)."""
    kernels = contract_jit._compiled()
    digests = []
    monkeypatch.setattr(copies.CopyNotes, "held_rows", lambda self, *a: None)   # compare: no DMA copy notes
    monkeypatch.setitem(kernels, "classes", lambda words, slices, rows, key: (key.fill(-1), key.size)[1])
    monkeypatch.setitem(kernels, "digest", lambda *args: (digests.append(1), args[-1].fill(7)))
    kernel = example(name)
    _both(kernel, host_inputs(kernel, np.random.default_rng(zlib.crc32(name.encode()))), monkeypatch)
    assert digests


def test_a_repeated_stream_is_read_without_writing_out_its_copies(monkeypatch):
    """gemm_bf16_kernel feeds each activation packet once per weight column group (a
    `Repeated` stream): the compiled path reads the distinct packets and never writes the
    copies out, and gives the numpy path's bits."""
    from visa.interp.fast.repeated import Repeated

    kernel = example("gemm_bf16_kernel")
    arrays = host_inputs(kernel, np.random.default_rng(6))
    art = artifact(kernel)
    want, _ = _run(art, arrays, monkeypatch, "0")
    fed = []
    real = contract_jit.run_float
    monkeypatch.setattr(contract_jit, "run_float", lambda plan, stream, *rest: (
        fed.append(isinstance(stream, Repeated)), real(plan, stream, *rest))[1])
    monkeypatch.setattr(Repeated, "materialize", lambda self: pytest.fail("the stream was written out"))
    monkeypatch.setenv(contract_jit.ENV, "1")
    results, finals = execute_inout(art, [a.copy() for a in arrays])
    assert fed and all(fed)
    for g, w in zip(bits(tuple(results + finals)), want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_the_digest_and_the_check_of_the_weights():
    """digest: position-weighted sums of the touched TRF rows' words (equal rows, equal
    digests); same: word for word over those rows only; a slice is its own match."""
    cells = np.zeros((3, 4, 4), np.uint16)                 # 3 TRF rows, 4 slices, 4 elements a row
    cells[0, :, 1] = 9
    cells[0, 1, 1] = 8                                     # slice 1 differs in a touched row
    cells[1, 2, 3] = 5                                     # slice 2 differs in a touched row, past the operand
    cells[2, 3, 0] = 7                                     # slice 3 differs in a row no lane reads
    kernels = contract_jit._compiled()
    words = contract_jit_weights.words_of(cells)
    assert words.dtype == np.uint64 and words.shape == (3, 4, 1)
    touched = contract_jit_weights.operand_rows(8, 0, 6, 1, 4)  # one lane, elements 0..5: rows 0 and 1
    assert touched.tolist() == [0, 1]
    assert contract_jit_weights.operand_rows(12, 1, 2, 2, 4).tolist() == [0, 3]  # elements 1-2 and 13-14
    slices = np.arange(4, dtype=np.int64)
    out = np.zeros(4, np.uint64)
    kernels["digest"](words, slices, touched, out)
    assert out[0] == out[3] and len({int(out[0]), int(out[1]), int(out[2])}) == 3
    equal = np.zeros(4, np.bool_)
    kernels["same"](words, slices, np.array([0, 0, 0, 0], np.int64), touched, equal)
    assert equal.tolist() == [True, False, False, True]
    odd = np.arange(2 * 2 * 3, dtype=np.uint8).reshape(2, 2, 3)  # 3-byte rows: compared byte for byte
    assert contract_jit_weights.words_of(odd).dtype == np.uint8


def _fast_cases():
    for name, (_, _, family) in fast.CASES.items():
        if family != "i8":
            for kind in fast.KINDS[family]:
                yield pytest.param(name, kind, id=f"{name}-{kind}")


@pytest.mark.parametrize("name,kind", list(_fast_cases()))
def test_padded_and_special_contractions_run_the_same_bits_compiled(name, kind, monkeypatch):
    getter, shapes, family = fast.CASES[name]
    rng = np.random.default_rng(zlib.crc32(f"jit/{name}/{kind}".encode()))
    _both(getter(), [fast.DATA[family](rng, shape, kind) for shape in shapes], monkeypatch)


def test_the_environment_and_the_size_choose_the_path(monkeypatch):
    monkeypatch.setenv(contract_jit.ENV, "0")
    assert not contract_jit.enabled(1 << 30)
    monkeypatch.setenv(contract_jit.ENV, "1")
    assert contract_jit.enabled(1)
    monkeypatch.delenv(contract_jit.ENV)
    assert contract_jit.enabled(contract_jit.JIT_MIN)
    monkeypatch.setattr(contract_jit.kernels_compile, "loaded", lambda: False)
    monkeypatch.setattr(contract_jit.kernels_compile, "_SEEN", [0])
    assert not contract_jit.enabled(contract_jit.JIT_MIN // 2 - 1)
    assert contract_jit.enabled(contract_jit.JIT_MIN // 2 + 1)   # the process's products add up
