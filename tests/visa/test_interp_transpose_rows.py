"""The interpreter's Transpose Engine on a broadcast's distinct rows
(visa/interp/fast/transpose_rows.py; issue 61: the drawn kernels that store an operand `k`
first and turn it on the device). The operand's DMA copies each block into several slices
(held lazily as its distinct rows, visa/interp/fast/lazy.py); the feed reads each distinct
row once, the engine turns those rows only and the commit holds them lazily in the DM,
which the next program's fetch reads through. The result is the numpy oracle's, exactly (as
the cpu backend's is on these layouts, tests/backends/test_transpose_live.py), and the plain
interpreter (every slice turned) gives the same bits."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.drawn_kernels import pinned
from npu_opt.compile_api import compile_kernel
from visa import parse_visa
from visa.interp import engines, execute_inout, shortcuts
from visa.interp.fast import lazy, transpose_rows
from visa.interp.dm import Dm

# 16 live slices (N / 32 x M / 8); `w[k,n]` depends on N / 32 only: 2 distinct blocks, 8 copies each
_I8 = pinned("tr_rows_i8", "out[n,m] = a[m,k] * w[k,n]", "i8:i32", dict(m=64, n=64, k=64),
             dict(placement="2x8 of 32x8, on 1/16 of the slices", trf="w", packet=64), "gemm", transpose="device")
# `a[k,m]` (bf16, the contraction's stream) depends on M / 32 only: 2 distinct blocks
_BF16 = pinned("tr_rows_bf16", "out[n,m] = w[n,k] * a[k,m]", "bf16:f32", dict(m=64, n=64, k=32),
               dict(placement="8x2 of 8x32, on 1/16 of the slices", trf="w", packet=32, pieces=2), "gemm",
               transpose="device")


def _spy(monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], list[tuple[int, int]]]:
    """(rows of every Transpose Engine call, (offsets held, distinct rows) of every lazy DM region held)."""
    turned: list[int] = []
    held: list[tuple[int, int]] = []
    real_hold = Dm.hold
    for name in ("transpose_data", "transpose_cells"):   # padded flits (plain), turned cells (fast)
        real = getattr(engines, name)
        monkeypatch.setattr(engines, name,
                            lambda x, *a, real=real, **k: (turned.append(x.shape[0]), real(x, *a, **k))[1])
    monkeypatch.setattr(Dm, "hold", lambda self, z: (held.append((z.hi - z.lo, z.rows.shape[0])), real_hold(self, z))[1])
    return turned, held


@pytest.mark.parametrize("drawn", [_I8, _BF16], ids=["i8_trf_operand", "bf16_stream_operand"])
def test_each_distinct_block_is_turned_once_and_committed_lazily(monkeypatch: pytest.MonkeyPatch, drawn) -> None:
    monkeypatch.setattr(lazy, "LAZY_BYTES", 0)   # a small kernel's broadcast held lazily too
    turned, held = _spy(monkeypatch)
    arrays = drawn.inputs(np.random.default_rng(7))
    want = drawn.oracle(*arrays)
    artifact = parse_visa(compile_kernel(drawn.kernel).text)
    results, finals = execute_inout(artifact, [x.copy() for x in arrays])
    got = np.asarray((results + finals)[-1])
    assert np.array_equal(got.astype(np.float64), want.astype(np.float64))
    assert turned == [2]   # the 2 distinct blocks (was every live slice's: 16)
    k, n_block = 64 if drawn is _I8 else 32, 32
    elem = 1 if drawn is _I8 else 2
    assert (k * n_block * elem, 2) in held   # the commit: the turned tensor's 2 distinct rows, held
    if drawn is _I8:   # (one kernel: the plain run costs a tenth of a second)
        turned.clear()
        plain = execute_inout(artifact, [x.copy() for x in arrays], fast=False)
        assert turned == [16]  # the plain path turns every live slice's block, to the same bits
        assert np.asarray((plain[0] + plain[1])[-1]).tobytes() == got.tobytes()


@pytest.mark.parametrize("drawn", [_I8, _BF16], ids=["i8_trf_operand", "bf16_stream_operand"])
def test_turned_rows_hold_no_padding_cells(monkeypatch: pytest.MonkeyPatch, drawn) -> None:
    """The engine's result on the distinct rows keeps each flit's turned cells only (a
    `Turned`: `in_rows` of a flit's cells), and the commit writes them into the DM from
    there: the padded rows are never written out. Exact against numpy."""
    monkeypatch.setattr(lazy, "LAZY_BYTES", 0)
    made, padded = [], []
    real_turn, real_padded = transpose_rows.transpose_rows, transpose_rows.Turned.factored
    monkeypatch.setitem(shortcuts._SHORTCUTS, "transpose_rows",
                        lambda *a: made.append(real_turn(*a)) or made[-1])
    monkeypatch.setattr(transpose_rows.Turned, "factored",
                        property(lambda self: padded.append(self) or real_padded.fget(self)))
    arrays = drawn.inputs(np.random.default_rng(7))
    results, finals = execute_inout(parse_visa(compile_kernel(drawn.kernel).text), [x.copy() for x in arrays])
    got = np.asarray((results + finals)[-1])
    assert np.array_equal(got.astype(np.float64), drawn.oracle(*arrays).astype(np.float64))
    assert len(made) == 1 and isinstance(made[0], transpose_rows.Turned)
    stream = made[0]
    assert stream.cells.shape[0] == 2 and stream.cells.shape[-1] < stream.shape[-1]   # 2 rows, no padding cells
    assert not padded   # the commit read the turned cells; no padded rows were made
