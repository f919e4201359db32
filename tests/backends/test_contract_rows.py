"""A bf16 contraction of one product per spatial row widens its operands a block of rows
at a time (issue 61, first-run memory: both sides widened whole held 6 MiB on `drawn_s2_2`),
and its no-rounding guard, folded over the blocks, still reads every class of each side."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from backends.cpu import CpuBackend, CpuOptions, contract_blas
from tests.backends.test_contract_blas import PER_ROW, _data, _per_row_contraction


def _widened_bytes(raw_a: np.ndarray, raw_w: np.ndarray, plan) -> int:
    """Bytes of both sides' classes widened whole to float32."""
    (ni, g, r, nn), nj = plan.a.groups, plan.w.groups[0]
    return 4 * nn * g * r * (len(raw_a) * ni + len(raw_w) * nj)


def test_per_row_operands_widened_a_block_at_a_time_give_the_oracles_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(contract_blas, "_ROW_BLOCK_BYTES", 1 << 16)
    real, seen = contract_blas.contract, []

    def traced(stored_a, stored_w, plan, *rest):
        if seen:  # the first contraction traced, the others as they are
            return real(stored_a, stored_w, plan, *rest)
        rows = np.arange(len(stored_a[1]))  # every spatial row a class of its own: a product per row
        stored_a, stored_w = (stored_a[0][stored_a[1]], rows), (stored_w[0][stored_w[1]], rows)
        copies = [(raw.copy(), classes) for raw, classes in (stored_a, stored_w)]  # nothing the next call finds kept
        real(*copies, plan, *rest)  # the layout's route found: the second call widens and multiplies only
        tracemalloc.start()
        try:
            out = real(stored_a, stored_w, plan, *rest)
            (ni, _g, _r, nn), nj = plan.a.groups, plan.w.groups[0]
            seen.append((out is not None, tracemalloc.get_traced_memory()[1],
                         _widened_bytes(stored_a[0], stored_w[0], plan),
                         len(stored_a[1]) * 4 * (plan.out_cells + nn * ni * nj)))
        finally:
            tracemalloc.stop()
        return out

    monkeypatch.setattr(contract_blas, "contract", traced)
    rng = np.random.default_rng(3)
    arrays = _data(rng, PER_ROW.inputs(rng), "exact")
    CpuBackend(CpuOptions(threads=1, blas_threads=1)).run(PER_ROW.kernel, tuple(arrays))
    want = np.asarray(PER_ROW.oracle(*arrays[:-1], np.zeros_like(arrays[-1])), np.float32) + np.float32(0)
    np.testing.assert_array_equal(arrays[-1].view(np.uint32), want.view(np.uint32))
    assert seen and all(used for used, *_ in seen)
    for _, peak, whole, result in seen:  # the products and result cells, and blocks far below both sides widened
        assert peak < result + whole // 4, (peak, whole, result)


@pytest.mark.parametrize("bad", [0x7FC0, 0x0001, None])  # NaN, a subnormal, a zero
def test_the_guard_reads_classes_no_row_reads(monkeypatch: pytest.MonkeyPatch, bad: int | None) -> None:
    """A class no spatial row reads still counts in the guard, as when each side was widened
    whole: a NaN or a subnormal there sends the contraction to the exact cores (None)."""
    (raw_a, ca), (raw_w, cw), plan, threads, pool = _per_row_contraction(monkeypatch, 50, 1)
    monkeypatch.setattr(contract_blas, "_ROW_BLOCK_BYTES", 1 << 13)
    want = contract_blas.contract((raw_a, ca), (raw_w, cw), plan, threads, pool)
    extra = np.zeros((1, *raw_w.shape[1:]), raw_w.dtype)
    if bad is not None:
        extra.view(np.uint16).reshape(-1)[5] = bad
    got = contract_blas.contract((raw_a, ca), (np.concatenate([raw_w, extra]), cw), plan, threads, pool)
    if bad is None:
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    else:
        assert got is None
