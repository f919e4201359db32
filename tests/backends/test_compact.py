"""Values of live rows only (backends/cpu/compact.py, backends/cpu/compact_moves.py) change no
bit: the one-slice softmax example runs its Vector Engine chain on `Compact` values and
`Pending` moves and gives the reference options' bits (every move an index gather, full
buffers), close to a numpy oracle; a composed chain of moves is the moves made one after
the other; a DMA form is cut to one row only when it stays inside it."""

from __future__ import annotations

import numpy as np
import pytest

from backends.cpu import CpuBackend, CpuOptions, compact, compact_moves, contract_fast, layout, moves
from backends.cpu.moves_strided import StridedForm
from benchmarks.drawn_kernels import pinned
from tests.backends.examples import EXAMPLES, load

REFERENCE = CpuOptions(fast_moves=False, fast_contract=False)
ROWS = 64


@pytest.fixture(scope="module")
def softmax(tmp_path_factory):
    """examples/softmax_rows.py at R = 64 (one live slice of 512)."""
    source = (EXAMPLES / "softmax_rows.py").read_text()
    assert "axes(R=8, C=64)" in source
    path = tmp_path_factory.mktemp("compact") / "softmax_rows_64.py"
    path.write_text(source.replace("axes(R=8, C=64)", f"axes(R={ROWS}, C=64)"))
    return load(path).softmax_rows_kernel


def _oracle(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_the_vector_chain_runs_on_live_rows_and_keeps_the_reference_bits(softmax, monkeypatch):
    x = np.random.default_rng(5).standard_normal((ROWS, 64)).astype(np.float32)
    made = []
    real = compact.make

    def spy(rows, t):
        made.append(rows.shape[0])
        return real(rows, t)

    monkeypatch.setattr(compact, "make", spy)
    fast = np.asarray(CpuBackend().run(softmax, [x]))
    assert made and set(made) == {1}  # values of the one live slice's row, none of 512 rows
    made.clear()
    ref = np.asarray(CpuBackend(REFERENCE).run(softmax, [x]))
    assert not made  # the reference options make no compact value
    assert np.array_equal(fast.view(np.uint32), ref.view(np.uint32))
    np.testing.assert_allclose(fast, _oracle(x), rtol=1e-5, atol=1e-6)


def test_a_composed_chain_is_the_moves_one_after_the_other(softmax):
    """fetch, collect and narrow_trim of the example, made as one `Pending`, against the
    three gathers of the reference path on the full buffers."""
    ops = softmax.trace("rngd").kernel.ops
    names = [type(op).__name__ for op in ops]
    fetch = ops[names.index("Fetch")]
    collect = ops[names.index("Collect")]
    trim = ops[names.index("VectorNarrowTrim")]
    src_t = fetch.input.type
    rng = np.random.default_rng(9)
    live = rng.integers(0, 2**32, (1, *layout.shape_of(src_t)[3:]), dtype=np.uint32)
    full = layout.from_rows(live.reshape(1, -1), src_t).reshape(layout.shape_of(src_t))
    want = full
    for op in (fetch, collect):
        want = moves.move_local(want, op.input.type, op.result.type, fast=False)
    want = moves.move_local(want, trim.input.type, trim.result.type, fast=False)
    got = compact_moves.move_local(compact.make(live.reshape(1, -1), src_t), src_t, fetch.result.type, lazy=True)
    got = compact_moves.move_local(got, collect.input.type, collect.result.type, lazy=True)
    got = compact_moves.move_local(got, trim.input.type, trim.result.type, lazy=True)
    assert isinstance(got, compact_moves.Pending) and len(got.chain) == 3
    assert np.array_equal(compact_moves.materialize(got), want)


def test_a_dma_form_is_cut_to_one_row_only_inside_it():
    inside = StridedForm((4, 8), (8, 1), (32, 4), 0, 16, True)  # reads elements 16 ... 47 of rows of 16
    assert compact.read_in_row(inside, 16, 4, 1) is None  # 16 ... 47 span rows 1 and 2
    assert compact.read_in_row(inside, 64, 4, 0).v0 == 16
    assert compact.read_in_row(inside, 16, 4, 0) is None
    writes = StridedForm((2, 8), (8, 1), (32, 4), 64, 0, False)  # writes positions 64 ... 79
    assert compact.write_in_row(writes, 16, 4).p0 == 0
    assert compact.write_in_row(writes, 16, 5) is None
    assert compact.write_in_row(writes, 8, 8) is None  # 64 ... 79 is two rows of 8


def test_an_integer_contraction_of_few_live_rows_holds_those_rows_only(monkeypatch):
    """An i8 -> i32 contraction on a quarter of the slices gives its accumulator as its live
    rows only (issue 61, first-run memory: the whole buffer of padding rows was made and
    held until the result was written out, 8x the live cells here); `contract_lane`, the
    `commit_trim` (every cell of its packets kept: no copy; every drawn bf16 kernel copied
    its whole result once a tile there) and the commit take it as it is, and the result is
    numpy's, exactly."""
    d = pinned("quarter_i8", "out[m,n] = a[m,k] * w[n,k]", "i8:i32", {"k": 64, "m": 64, "n": 64},
               {"placement": "8x8 of 8x8, on 1/4 of the slices", "trf": "w", "packet": 32, "pieces": 1}, "gemm")
    made, whole = [], []
    real, trim = contract_fast.contract, moves.trim
    monkeypatch.setattr(contract_fast, "contract", lambda *a, **k: made.append(real(*a, **k)) or made[-1])
    monkeypatch.setattr(moves, "trim", lambda buf, size: whole.append(buf.shape[-1] == size) or trim(buf, size))
    arrays = d.inputs(np.random.default_rng(8))
    want = d.oracle(*arrays)
    CpuBackend(CpuOptions(threads=1)).run(d.kernel, tuple(arrays))
    np.testing.assert_array_equal(arrays[-1], want)
    assert made and all(isinstance(v, compact.Compact) and v.dtype == np.int32 for v in made), made
    for v in made:  # 64 of 512 rows (a quarter of the slices of one of two clusters)
        assert len(v.base) == len(layout.live_rows(v.t)) and 8 * len(v.base) == layout.n_rows(v.t), len(v.base)
    assert not any(whole), whole  # `commit_trim` keeping every cell of the packets (`N % 8` of 8) copies nothing

