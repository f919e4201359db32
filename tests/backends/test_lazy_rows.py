"""Moves left uncopied (`backends.cpu.lazy_rows`) change no bit: every example and a run
of the differential generator's kernels give the same result bits with the default cpu
options (lazy moves, contraction operands read in place) as with the reference options
(every move an index gather, the dense contraction), and a `LazyRows` copied out is the
eager strided move."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, seed, settings
from hypothesis import strategies as st

import npu_opt
from backends.cpu import CpuBackend, CpuOptions, layout, lazy_rows, moves
from backends.cpu.contract_plan import Gather
from backends.cpu.handlers import takes_lazy
from tests.differential.harness import compare, load_kernel
from tests.differential.strategies import kernels, make_inputs
from tests.kernel_files import example, example_names

REFERENCE = CpuOptions(fast_moves=False, fast_contract=False)


def _both(kernel, arrays):
    """Both runs on their own copies (a resident buffer keeps what a run wrote)."""
    ref = CpuBackend(REFERENCE)
    return CpuBackend().run(kernel, [a.copy() for a in arrays]), ref.run(kernel, [a.copy() for a in arrays])


@pytest.mark.parametrize("name", example_names())
def test_examples_are_bit_identical_to_the_reference(name):
    kernel = example(name)
    fast, ref = _both(kernel, make_inputs(kernel, 3))
    assert compare(fast, ref) is None


def test_generated_kernels_are_bit_identical_to_the_reference():
    ran = []

    @seed(20261201)
    @settings(max_examples=25, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(g=kernels(), input_seed=st.integers(0, 2**32 - 1))
    def prop(g, input_seed):
        kernel = load_kernel(g.source)
        assume(npu_opt.check(kernel).ok)
        fast, ref = _both(kernel, make_inputs(kernel, input_seed))
        assert compare(fast, ref) is None, g.source
        ran.append(g.source)

    prop()
    assert len(ran) >= 10


def test_the_gemm_fetch_stays_lazy_and_copies_out_as_the_eager_move():
    kernel = example("gemm_i8_kernel")
    traced = kernel.trace("rngd").kernel
    fetch = [op for op in traced.ops if type(op).__name__ == "Fetch"][-1]
    src_t, dst_t = fetch.input.type, fetch.result.type
    rng = np.random.default_rng(1)
    buf = np.zeros(layout.shape_of(src_t), np.int8)
    rows = layout.rows_view(buf, src_t)
    rows[...] = rng.integers(-128, 128, rows.shape, dtype=np.int8)
    lazy = moves.move_local(buf, src_t, dst_t, lazy=True)
    assert isinstance(lazy, lazy_rows.LazyRows)
    eager = moves.move_local(buf, src_t, dst_t)
    gathered = moves.move_local(buf, src_t, dst_t, fast=False)
    assert np.array_equal(lazy_rows.materialize(lazy), eager)
    assert np.array_equal(eager, gathered)


def _gemm_fetch(name: str, dtype, rng: np.random.Generator):
    """The last fetch of example `name` (the stream of its GEMM) on random DM rows: lazy,
    eager and gathered."""
    kernel = example(name)
    traced = kernel.trace("rngd").kernel
    fetch = [op for op in traced.ops if type(op).__name__ == "Fetch"][-1]
    src_t, dst_t = fetch.input.type, fetch.result.type
    buf = np.zeros(layout.shape_of(src_t), dtype)
    rows = layout.rows_view(buf, src_t)
    rows[...] = rng.integers(0, 1 << 16, rows.shape).astype(dtype)
    return moves.move_local(buf, src_t, dst_t, lazy=True), moves.move_local(buf, src_t, dst_t, fast=False)


def test_a_float_fetch_stays_lazy_and_its_base_gather_reads_the_same_cells():
    rng = np.random.default_rng(2)
    lazy, gathered = _gemm_fetch("gemm_bf16_kernel", np.uint16, rng)
    assert isinstance(lazy, lazy_rows.LazyRows)
    assert np.array_equal(lazy_rows.materialize(lazy), gathered)
    copied = gathered.reshape(lazy.n_rows, -1)
    index = rng.integers(0, lazy.n_dst, (3, 5, 7))
    gather = Gather((0, 1, 2), index.shape, (3, 35), index.reshape(-1), None, None)
    aimed = lazy_rows.base_gather(lazy, gather)
    assert aimed is lazy_rows.base_gather(lazy, gather)  # one object per gather and form
    assert np.array_equal(lazy.base[:, aimed.index], copied[:, gather.index])
    assert (aimed.digits, aimed.shape, aimed.groups) == (gather.digits, gather.shape, gather.groups)


def test_an_affine_base_gather_has_its_strided_form():
    lazy, gathered = _gemm_fetch("gemm_bf16_kernel", np.uint16, np.random.default_rng(3))
    copied = gathered.reshape(lazy.n_rows, -1)
    # the stream cell (m, n / 8 % 4, k) reads DM cell (m, k): every other k of every m, each
    # four times over (the fetch's broadcast), is affine with a zero stride on the base
    index = np.arange(lazy.n_dst).reshape(32, 4, -1)[:, :, ::2]
    gather = Gather((0, 1, 2), index.shape, index.shape, index.reshape(-1), None, None)
    aimed = lazy_rows.base_gather(lazy, gather)
    assert aimed.offset == 0 and aimed.strides == (index.shape[2] * 2, 0, 2)
    cells = aimed.offset + sum(np.arange(n).reshape([-1 if d == k else 1 for d in range(3)]) * s
                               for k, (n, s) in enumerate(zip(aimed.shape, aimed.strides)))
    assert np.array_equal(lazy.base[:, cells.reshape(-1)], copied[:, gather.index])


def test_which_handlers_take_a_lazy_operand_is_declared_with_them():
    """`handlers.takes_lazy` reads the `lazy` fact of `@handles`: the GEMM's moves, its
    identity fetch_cast, contract_outer, commit_trim (which composes a trim with a move
    not made yet, backends/cpu/compact_moves.py), and view and begin (a DMA's copies held
    as its distinct rows pass them on: backends/cpu/row_classes.py `dma_copies`) take a lazy operand,
    nothing else does;
    a widening fetch_cast (i8 -> i32) does not either."""
    ops = example("gemm_i8_kernel").trace("rngd").kernel.ops
    taking = {type(op).__name__ for op in ops if takes_lazy(op)}
    assert taking == {"View", "Begin", "Fetch", "FetchCast", "Collect", "ToTrf", "Commit", "CommitTrim", "ContractOuter"}
    widening = [op for op in example("fetch_commit_simple").trace("rngd").kernel.ops
                if type(op).__name__ == "FetchCast"]
    assert widening and not any(takes_lazy(op) for op in widening)


def test_a_form_with_padding_cells_reads_zero_there_and_composes_only_past_them():
    """A `LazyRows` holding the live cells of every packet only (a turned stream's, issue
    61): copied out, its padding cells are zero; for a contraction its rows are copied out
    whole (`filled`); a move that reads only live cells (a commit_trim) composes with it, and
    one that reads a padding cell does not (the copy is made instead)."""
    item = 2
    base = np.arange(1, 13, dtype=np.int16).reshape(2, 6)  # 2 rows, 3 packets of 2 live cells
    form = lazy_rows.StridedForm((3, 2), (4, 1), (2 * item, item), 0, 0, False)  # packets of 4 cells
    lazy = lazy_rows.LazyRows(base, form, 12, (2, 12))
    want = np.zeros((2, 3, 4), np.int16)
    want[:, :, :2] = base.reshape(2, 3, 2)
    np.testing.assert_array_equal(lazy_rows.materialize(lazy), want.reshape(2, 12))
    filled = lazy_rows.filled(lazy)
    assert filled.form.full and filled.base.shape == (2, 12)
    np.testing.assert_array_equal(lazy_rows.materialize(filled), want.reshape(2, 12))
    trim = np.array([0, 1, 4, 5, 8, 9])  # the live cells, as a trim of every packet to 2 reads them
    got = lazy_rows.compose_form(lambda: (trim.__getitem__, 6, None), lazy, ("trim", 6))
    assert got is not None and got.full
    np.testing.assert_array_equal(lazy_rows.materialize(lazy_rows.LazyRows(base, got, 6, (2, 6))), base)
    over = np.array([0, 1, 2, 4, 5, 6])  # a padding cell of each of two packets
    assert lazy_rows.compose_form(lambda: (over.__getitem__, 6, None), lazy, ("over", 6)) is None


def test_a_contraction_reads_unevenly_spaced_live_rows_without_a_buffer_of_every_row(monkeypatch) -> None:
    # issue 61, first-run memory (drawn_s2_6: 48 KiB of tensors, 7.3 MiB of growth): the stream's
    # live rows (4 batch elements side by side, on 1/32 of the slices) are not evenly spaced, and
    # the contraction copied out every spatial row of it, 4 MiB, to pick them; now their base rows only
    from backends.cpu import arena
    from benchmarks.drawn_kernels import pinned
    d = pinned("uneven_rows", "out[b,n,m] = a[b,m,k] * w[b,n,k]", "i8:i32", {"b": 4, "k": 128, "m": 32, "n": 32},
               dict(placement="2x1 of 16x32, 4 batch elements side by side, on 1/32 of the slices, w by switch",
                    trf="a", packet=32, pieces=1), "batched")
    taken: list[int] = []
    take = arena.Arena.take
    monkeypatch.setattr(arena.Arena, "take", lambda self, shape, dtype, note=None:
                        taken.append(int(np.prod(shape)) * np.dtype(dtype).itemsize) or take(self, shape, dtype, note))
    a, w, out = d.inputs(np.random.default_rng(8))
    CpuBackend(CpuOptions(threads=1)).run(d.kernel, (a, w, out))
    want = np.einsum("bmk,bnk->bnm", a.astype(np.int64), w.astype(np.int64)).astype(np.int32)
    assert np.array_equal(out, want)
    assert taken == []  # was one 4 MiB buffer
