"""Which way a short-sum bf16 contraction goes (visa/interp/fast/contract_jit.py `_by_blas`):
its products are counted as the exact kernel computes them (`contract_blas.tile_products`),
whose tiles take four rows that read one TRF operand, so a GEMM whose stream has two distinct
rows (each operand read by two rows) costs it twice its products. Checked against the
kernel's own row order (`contract_jit_tiles.tile_order`) and, on a kernel of that shape,
against numpy's sums (small integers: no sum rounds)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from benchmarks.drawn_kernels import pinned
from npu_opt.compile_api import compile_kernel
from visa import parse_visa
from visa.interp import execute_inout
from visa.interp.fast import contract_blas, contract_jit
from visa.interp.fast import contract_jit_tiles as jit_tiles


@pytest.mark.parametrize("n_stored", [2, 3, 4, 5, 6, 8])
@pytest.mark.parametrize("n_ops", [1, 3])
def test_the_counted_products_are_the_exact_kernels(n_stored: int, n_ops: int) -> None:
    """Every stream row meets every TRF operand (rows operand-major, as a GEMM's slices
    are): the kernel's order repeats rows to fill its tiles, and the count follows it."""
    which = np.repeat(np.arange(n_ops), n_stored)
    per_row = 8 * 16 * 64                      # lanes x slots x terms of one row
    products = which.size * per_row
    tiled = jit_tiles.tile_order(which).size * per_row
    assert contract_blas.tile_products(products, n_stored, jit_tiles.ROWS) == tiled


def test_one_stream_row_is_not_repeated() -> None:
    """One stream row: each row is alone with its operand, and the kernel tiles its slots."""
    assert contract_blas.tile_products(1 << 20, 1, jit_tiles.ROWS) == 1 << 20


SIZES = dict(m=256, n=256, k=64)


NEVER = 1 << 40
PRODUCTS = SIZES["m"] * SIZES["n"] * SIZES["k"]


@pytest.mark.parametrize("least, repeats, matmuls", [
    (PRODUCTS + 1, NEVER, 1), (2 * PRODUCTS + 1, NEVER, 0),     # the products as tiled
    (NEVER, PRODUCTS, 1), (NEVER, PRODUCTS + 1, 0),             # the products the tiles repeat
])
def test_two_rows_an_operand_take_the_matmuls_at_half_the_products(monkeypatch: pytest.MonkeyPatch, least: int,
                                                                   repeats: int, matmuls: int) -> None:
    """w streamed as its two column blocks (two distinct stream rows), a in the TRF (32
    operands, each read by two rows): the exact kernel would compute each product twice. With
    `MIN_PRODUCTS_IN_PLACE` just above the products the matmuls run, just above twice them the
    exact kernel does; with `MIN_REPEATS` at the products computed twice the matmuls run, one
    above it the exact kernel does. Every case gives numpy's bits."""
    m, n, k = SIZES["m"], SIZES["n"], SIZES["k"]
    monkeypatch.setenv(contract_jit.ENV, "1")
    monkeypatch.setattr(contract_blas, "MIN_TERMS", 1 << 30)       # every sum (64 products) short
    monkeypatch.setattr(contract_blas, "MIN_TERMS_IN_PLACE", 0)
    monkeypatch.setattr(contract_blas, "MIN_PRODUCTS_IN_PLACE", least)
    monkeypatch.setattr(contract_blas, "MIN_REPEATS", repeats)
    ran: list = []
    contract = contract_blas.contract
    monkeypatch.setattr(contract_blas, "contract", lambda *args: ran.append(1) or contract(*args))
    drawn = pinned("blas_tiles", "out[m,n] = w[k,n] * a[m,k]", "bf16:f32", SIZES,
                   dict(placement="32x2 of 8x128", trf="a", packet=16), "gemm", "device")
    rng = np.random.default_rng(5)
    w = rng.integers(-8, 9, (k, n)).astype(ml_dtypes.bfloat16)
    a = rng.integers(-8, 9, (m, k)).astype(ml_dtypes.bfloat16)
    results, finals = execute_inout(parse_visa(compile_kernel(drawn.kernel).text), [w, a, np.zeros((m, n), np.float32)])
    got = np.asarray((results + finals)[-1])
    want = (a.astype(np.float64) @ w.astype(np.float64)).astype(np.float32)
    assert len(ran) == matmuls
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
