"""The cpu backend's Transpose Engine transposes the rows that differ only (issue 61: the
drawn kernels that read an operand `k` first). A padding slice's stream is zeros and so
is its transpose, and slices holding copies of one block (a DMA's broadcast) have equal
transposes: the engine transposes each distinct live row once and hands on those rows and
a map, which the commit and the fetches after it keep, so the contraction widens the
distinct rows only; the commit writes those rows out in the DM tensor's layout, so the
contraction reads them strided (composed through the transposed stream's order, its read
was a gather by index). Each kernel still equals an independent numpy product on cpu and visa."""

from __future__ import annotations

import numpy as np
import pytest

import backends.cpu.contract_blas as contract_blas
import backends.cpu.engines as engines
from backends import get_backend
from backends.cpu.handlers import HANDLERS
from backends.cpu.lazy_rows import LazyRows
from benchmarks.drawn_kernels import pinned
from ir.data_movement_ops import Transpose


def _run_both(d, rng: np.random.Generator, want_of) -> None:
    arrays = d.inputs(rng)
    want = want_of(*(x.astype(np.float64) for x in arrays[:2])).astype(np.float32)  # small integers in bf16
    for backend in ("cpu", "visa"):
        args = [x.copy() for x in arrays]
        get_backend(backend).run(d.kernel, tuple(args))
        assert np.array_equal(args[-1][:want.shape[0], :want.shape[1]], want), backend


def test_a_broadcast_is_transposed_and_widened_once_per_distinct_row_strided(monkeypatch) -> None:
    # 16 live slices (N / 8 x M / 32) of 512; `a[k,m]` depends on M / 32 only: 2 distinct blocks
    d = pinned("tr_live", "out[n,m] = w[n,k] * a[k,m]", "bf16:f32", dict(m=64, n=64, k=32),
               dict(placement="8x2 of 8x32, on 1/16 of the slices", trf="w", packet=32, pieces=2), "gemm",
               transpose="device")
    transposed: list[int] = []
    widened: list[tuple[int, bool]] = []  # (rows, read strided)
    real_widened = contract_blas._widened
    for name in ("transpose_data", "turned_tiles"):  # padded flits, or the kept cells straight from the tiles
        real = getattr(engines, name)
        monkeypatch.setattr(engines, name,
                            lambda x, *a, real=real, **k: (transposed.append(x.shape[0]), real(x, *a, **k))[1])
    monkeypatch.setattr(contract_blas, "_widened",
                        lambda raw, g, *a: (widened.append((raw.shape[0], g.offset is not None)),
                                            real_widened(raw, g, *a))[1])
    _run_both(d, np.random.default_rng(5), lambda w, a: w @ a)
    assert transposed == [3]  # the 2 distinct blocks and the padding slices' zero row (was 16 live slices)
    # `a`: its 2 distinct rows (was 16), strided (was by index); `w[n,k]`: N / 8, 8 blocks
    assert sorted(set(widened)) == [(2, True), (8, True)]


def _spy_engine(monkeypatch) -> list[tuple[object, object]]:
    """(input, result) of every call of the cpu Transpose Engine's handler."""
    seen: list[tuple[object, object]] = []
    inner = HANDLERS[Transpose]
    monkeypatch.setitem(HANDLERS._base.fns, Transpose,  # loaded by the lookup above
                        lambda op, buf, **kw: (seen.append((buf, inner(op, buf, **kw))), seen[-1][1])[1])
    return seen


def _rows_held(value) -> int:
    """Rows a value holds: a `LazyRows`' base rows, a `Compact`'s or `Pending`'s live rows, or
    every spatial row of a full buffer."""
    if isinstance(value, LazyRows) or hasattr(value, "base") and not isinstance(value, np.ndarray):
        return value.base.shape[0]
    return int(np.prod(value.shape[:3]))


@pytest.mark.parametrize("placement, side, rows", [
    # 2 live slices of 512, each its own block of `w[k,n]`: no copies; the engine gives the
    # 2 live rows and one zero row for the 510 padding slices (was a buffer of 512)
    ("1x2 of 32x32, on 1/128 of the slices", 1, 3),
    # 8 live slices, each its own 8-column block: the collect pads the packet (`N % 8 # 16`),
    # so it is made, of the live rows only: the engine is handed 8 rows (was every slice's, 512)
    ("1x8 of 32x8, on 1/32 of the slices", 0, 8),
])
def test_a_few_slices_are_held_without_the_padding_slices(monkeypatch, placement: str, side: int, rows: int) -> None:
    d = pinned("tr_few", "out[m,n] = a[m,k] * w[k,n]", "bf16:f32", dict(m=32, n=64, k=32),
               dict(placement=placement, trf="w", packet=16, pieces=1), "gemm", transpose="device")
    seen = _spy_engine(monkeypatch)
    _run_both(d, np.random.default_rng(6), lambda a, w: a @ w)
    assert [_rows_held(call[side]) for call in seen] == [rows]


def test_the_engine_parameters_are_found_once_per_op(monkeypatch) -> None:
    d = pinned("tr_few", "out[m,n] = a[m,k] * w[k,n]", "bf16:f32", dict(m=32, n=64, k=32),
               dict(placement="1x2 of 32x32, on 1/128 of the slices", trf="w", packet=16, pieces=1), "gemm",
               transpose="device")
    backend, arrays = get_backend("cpu"), d.inputs(np.random.default_rng(8))
    backend.run(d.kernel, tuple(x.copy() for x in arrays))
    asked: list[object] = []
    real = Transpose.params
    monkeypatch.setattr(Transpose, "params", lambda op: (asked.append(op), real(op))[1])
    backend.run(d.kernel, tuple(x.copy() for x in arrays))  # the rules ran at the first run
    assert asked == []


def test_a_turned_stream_is_held_without_its_packet_padding(monkeypatch) -> None:
    """The engine's result packet `K % 4 # 16` carries 12 padding cells of every 16: it holds
    the 4 live cells of each only (issue 61, first-run memory: 4.25 MiB of drawn_s1_3's turned
    `w`, 9 MiB of drawn_s2_3's `a`, were padding), and the commit after it reads them."""
    d = pinned("tr_trim", "out[m,n] = a[m,k] * w[k,n]", "bf16:f32", dict(m=32, n=64, k=32),
               dict(placement="1x2 of 32x32, on 1/128 of the slices", trf="a", packet=16, pieces=2), "gemm",
               transpose="device")
    seen = _spy_engine(monkeypatch)
    _run_both(d, np.random.default_rng(3), lambda a, w: a @ w)
    (_, out), = seen
    assert isinstance(out, LazyRows) and not out.form.full
    assert out.base.shape[1] * 4 == out.n_dst  # 4 of every 16 cells held (was every cell)


def test_a_trimmed_result_is_cut_straight_from_the_turned_tiles(monkeypatch) -> None:
    # `K % 4 # 16` packets: the 4 kept cells are the 4 the engine writes of each 16-cell flit, so
    # they are copied from the turned tiles with no padded scratch turned first and then cut
    d = pinned("tr_cut", "out[n,m] = w[n,k] * a[k,m]", "bf16:f32", dict(m=64, n=64, k=32),
               dict(placement="8x2 of 8x32, on 1/16 of the slices", trf="w", packet=32, pieces=2), "gemm",
               transpose="device")
    padded: list[int] = []
    real = engines.transpose_data
    monkeypatch.setattr(engines, "transpose_data",
                        lambda x, *a, **k: (padded.append(x.shape[0]), real(x, *a, **k))[1])
    _run_both(d, np.random.default_rng(7), lambda w, a: w @ a)
    assert padded == []
