"""The cpu `window` / `to_view` copies (backends/cpu/views.py): cells addressed through strided
grids where a level's live positions form one, and `to_view` writing its destination in place
only when the executor hands that buffer over (backends/cpu/executor.py `_owned`)."""

from __future__ import annotations

import tracemalloc

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from ir.resident import DmBuffer
from ir.runtime_ops import LoopBegin
from backends import get_backend
from backends.cpu import CpuBackend, CpuOptions, executor, layout, moves_strided, views
from backends.cpu.handlers import HANDLERS
from ir.mapping import m
from ir.mapping.live import live_positions
from ir.view_ops import ToView
from npu_opt import axes

from benchmarks.drawn_kernels import pinned
from tests.backends.examples import example
from tests.runtime import tile_kernels as tk
from tests.topology import gather_kernels as g
from tests.kernel_files import example as example_kernel, example_names
from tests.visa.test_interp import host_inputs


@pytest.mark.parametrize("text,is_grid", [("M, K", True), ("1 # 4, M % 8, K", True), ("M % 8, 1 # 3, K", True),
                                          ("K, M # 19", True), ("1 # 2, M / 4, 1 # 5, M % 4", True),
                                          ("M % 8 # 12, K # 7", True), ("R # 12 / 4, 1 # 2, R # 12 % 4", False)])
def test_a_grid_form_names_exactly_the_live_positions(text, is_grid):
    axes(M=16, K=6, R=10)
    mapping = m(text)
    want = live_positions(mapping)
    form = views._affine(mapping)
    assert (form is not None) == is_grid  # the last: blocks of 4, 4 and 2 live cells
    if form is None:
        return
    p0, dims = form
    grid = np.zeros(1, np.int64)
    for count, step in reversed(dims):
        grid = (np.arange(count)[:, None] * step + grid[None, :]).reshape(-1)
    np.testing.assert_array_equal(p0 + grid, want)


@pytest.mark.parametrize("text", ["M, K", "1 # 4, M % 8, K", "M % 8, 1 # 3, K", "K, M # 19",
                                  "1 # 2, M / 4, 1 # 5, M % 4", "M % 8 # 12, K # 7", "K # 8, 1 # 2, M"])
def test_a_grid_form_is_found_from_the_factors_without_the_positions(text, monkeypatch):
    """Issue 61 (first-run memory): a level's grid comes from its factors (`live_grid`), no
    int64 array of its live positions made (2 MiB for a 256 Ki-position HBM level), and it is
    the form the positions themselves give (`moves_strided._dims`)."""
    axes(M=16, K=6, R=10)
    mapping = m(text)
    q = live_positions(mapping)
    dims = moves_strided._dims((q,))
    want = (int(q[0]), tuple((count, int(steps[0])) for count, steps in reversed(dims)))
    monkeypatch.setattr(views, "live_positions", lambda _: pytest.fail("the live positions were made"))
    assert views._affine.__wrapped__(mapping) == want


class _Levels:
    """The levels of a view: what `_copy_cells` reads of a type."""

    def __init__(self, *levels):
        self._levels = levels

    def levels(self):
        return self._levels


def test_grid_copy_equals_a_cell_by_cell_copy():
    axes(M=16, K=6, R=10)
    grid_levels = (m("1 # 2, M % 8"), m("K # 9"))
    ragged = m("R # 12 / 4, 1 # 2, R # 12 % 4")
    rng = np.random.default_rng(3)
    src = rng.integers(0, 1000, (40, 12, 30)).astype(np.int32)
    for levels in (grid_levels, (*grid_levels, ragged)):  # a grid on every level; one level no grid
        shape, offsets = src.shape[:len(levels)], ((5, 2, 3)[:len(levels)], (3, 1, 4)[:len(levels)])
        want = np.zeros(shape + src.shape[len(levels):], np.int32)
        got = want.copy()
        live = [live_positions(mp) for mp in levels]
        for index in np.ndindex(*(len(p) for p in live)):  # the oracle: cell by cell
            at = tuple(int(p[i]) for p, i in zip(live, index))
            want[tuple(a + o for a, o in zip(at, offsets[0]))] = src[tuple(a + o for a, o in zip(at, offsets[1]))]
        views._copy_cells(got, offsets[0], src, offsets[1], _Levels(*levels))
        np.testing.assert_array_equal(got, want)


def test_a_buffer_still_held_elsewhere_is_not_handed_over():
    buf = np.zeros((4, 4), np.int32)
    step = executor._Step(op=None, operands=(1, 2), result=3, lazy=False, last=(1, 2))
    other = np.ones(3)
    assert executor._owned(step, 1, {1: other, 2: buf}, [], [])
    assert not executor._owned(step, 1, {1: other, 2: buf, 7: buf[1:]}, [], [])   # a view of it is live
    assert not executor._owned(step, 1, {1: other, 2: buf}, [buf], [])             # a caller's parameter
    assert not executor._owned(step, 1, {1: other, 2: buf}, [], [buf.reshape(-1)])  # an in-out's final
    later = executor._Step(op=None, operands=(1, 2), result=3, lazy=False, last=(1,))
    assert not executor._owned(later, 1, {1: other, 2: buf}, [], [])               # read again later
    assert not executor._owned(step, 1, {1: other, 2: buf[:, ::2]}, [], [])        # not contiguous


def _spied_tiles(monkeypatch) -> list[tuple[bool, np.ndarray]]:
    """(owned, result) of every `to_view` of the runs after it."""
    seen = []
    inner = HANDLERS[ToView]

    def spy(op, src, into, options=None, owned=False):
        done = inner(op, src, into, options=options, owned=owned)
        seen.append((owned, done))
        return done

    monkeypatch.setitem(HANDLERS._base.fns, ToView, spy)  # loaded by the lookup above
    return seen


def _bf16_operands(seed: int):
    rng = np.random.default_rng(seed)
    a = rng.integers(-64, 64, (1024, 128)).astype(np.float32)
    w = rng.integers(-64, 64, (1024, 128)).astype(np.float32)
    return a, w, a.astype(ml_dtypes.bfloat16), w.astype(ml_dtypes.bfloat16)


def test_tiles_are_written_in_place_into_the_callers_array_and_the_inputs_are_left_alone(monkeypatch):
    """Every tile, the first included, is written straight into the caller's in-out array
    (no copy of it made, none back at the end); two runs with other inputs and another
    starting content each give their own exact product (nothing stale kept)."""
    kernel = example("gemm_tiled", "gemm_tiled")
    seen = _spied_tiles(monkeypatch)
    for seed, fill in ((8, 7.0), (9, -3.0)):
        seen.clear()
        a, w, a_bits, w_bits = _bf16_operands(seed)
        a_keep, w_keep = a_bits.copy(), w_bits.copy()
        out = np.full((1024, 1024), fill, np.float32)
        assert npu_opt.run(kernel, a_bits, w_bits, out) is out
        np.testing.assert_array_equal(out, a @ w.T)  # small integers: exact in bf16 and f32
        np.testing.assert_array_equal(a_bits, a_keep)
        np.testing.assert_array_equal(w_bits, w_keep)
        assert len(seen) == 4 and all(owned and np.shares_memory(done, out) for owned, done in seen)


def test_an_in_out_array_shared_with_another_argument_is_copied_first(monkeypatch):
    """When an input views the caller's in-out array, nothing is written in place: the
    first tile goes into a copy (then the others into it), the inputs read as passed."""
    kernel = example("gemm_tiled", "gemm_tiled")
    seen = _spied_tiles(monkeypatch)
    _, w, _, w_bits = _bf16_operands(10)
    out = np.full((1024, 1024), 0.5, np.float32)
    a_bits = out.view(ml_dtypes.bfloat16)[:, :128]  # an input inside the in-out array
    a = a_bits.astype(np.float32)
    npu_opt.run(kernel, a_bits, w_bits, out)
    np.testing.assert_array_equal(out, a @ w.T)  # 0.5 and 0 bit patterns: exact
    assert [owned for owned, _ in seen] == [False, True, True, True]
    assert not np.shares_memory(seen[0][1], out)


def test_the_uninitialized_read_check_keeps_the_callers_array_out_of_the_run(monkeypatch):
    """With the check on (an error may stop the run halfway) the caller's array is not
    written until the run is done: the first tile goes into a copy."""
    kernel = example("gemm_tiled", "gemm_tiled")
    seen = _spied_tiles(monkeypatch)
    a, w, a_bits, w_bits = _bf16_operands(11)
    out = np.zeros((1024, 1024), np.float32)
    CpuBackend(CpuOptions(report_uninit=True)).run(kernel, (a_bits, w_bits, out))
    np.testing.assert_array_equal(out, a @ w.T)
    assert [owned for owned, _ in seen] == [False, True, True, True]


def test_the_tiles_are_moved_straight_into_the_destination(monkeypatch):
    """gemm_tiled's result tiles go from the contraction's buffer (its live rows only: the
    commit's value holds those) to the output in one strided copy (no moved buffer of the
    whole output's size, no full buffer of the commit: from the commit's moves composed in, or
    from its live rows), and the GEMM is exact."""
    taken = []
    real, pending = views._direct_live, views._direct_pending
    monkeypatch.setattr(views, "_direct_live", lambda *args: taken.append(real(*args)) or taken[-1])
    monkeypatch.setattr(views, "_direct_pending", lambda *args: pending(*args) and taken.append(True) is None)
    monkeypatch.setattr(views, "_direct", lambda *args: taken.append("full") or False)
    kernel = example("gemm_tiled", "gemm_tiled")
    rng = np.random.default_rng(9)
    a = rng.integers(-64, 64, (1024, 128)).astype(np.float32)
    w = rng.integers(-64, 64, (1024, 128)).astype(np.float32)
    out = np.full((1024, 1024), 7.0, np.float32)
    npu_opt.run(kernel, a.astype(ml_dtypes.bfloat16), w.astype(ml_dtypes.bfloat16), out)
    np.testing.assert_array_equal(out, a @ w.T)
    assert taken == [True] * 4


@pytest.mark.parametrize("name", example_names())
def test_the_straight_copy_writes_what_the_moved_buffer_does(name, monkeypatch):
    """Every example: the same bits with the straight copy and with the move through a
    buffer of the view's type (the reference, itself pinned to the oracles)."""
    kernel = example_kernel(name)
    arrays = host_inputs(kernel, np.random.default_rng(11))
    fast = _outputs(kernel, arrays)
    monkeypatch.setattr(views, "_direct", lambda *args: False)
    monkeypatch.setattr(views, "_direct_live", lambda *args: False)
    monkeypatch.setattr(views, "_direct_pending", lambda *args: False)
    slow = _outputs(kernel, arrays)
    assert len(fast) == len(slow) > 0
    for f, s in zip(fast, slow):
        np.testing.assert_array_equal(np.asarray(f).view(np.uint8), np.asarray(s).view(np.uint8))


def _outputs(kernel, arrays) -> list:
    """The results and in-out arrays of one run on copies of `arrays`, then the contents of
    its resident buffers (which `run` does not return)."""
    copies = [x.copy() for x in arrays]
    out = npu_opt.run(kernel, *copies)
    out = list(out) if isinstance(out, tuple) else [] if out is None else [out]
    return out + [b.read() for b in copies if isinstance(b, DmBuffer)]
def test_a_kernel_an_error_may_stop_halfway_keeps_in_out_arrays_out_of_the_run():
    """A gather (its index may fault) or a runtime scalar (a tile at a runtime start may
    fall past its limit) rules the in-place write of a caller's array out; a plain GEMM not."""
    def faults(kernel) -> bool:
        return executor._may_fault(kernel.trace("rngd").kernel)

    assert faults(g.rows_scaled) and faults(g.scatter_rows) and faults(tk.column_block)
    assert not faults(example("gemm_tiled", "gemm_tiled"))


def test_the_straight_copys_form_is_found_with_little_scratch(monkeypatch):
    """`_direct_form` (issue 61, first-run memory) holds at most five int64 words per live
    cell of the view (the lookup positions and the plan's lookup, the source and output
    offset columns; ~4 measured), not an index array per level as well (7.5 before):
    measured on gemm_tiled's DM -> HBM copies, and the GEMM is exact."""
    peaks = _traced_direct_forms(monkeypatch, peak=True)
    _exact_gemm_tiled(9)
    found = [(peak, cells) for peak, cells, ok in peaks if ok and cells >= 1 << 14]
    assert found
    for peak, cells in found:
        assert peak <= 5 * 8 * cells, (peak, cells)


def test_a_rolled_loop_writes_its_carried_tensor_in_place(monkeypatch):
    """A rolled tile loop (a drawn tiled bf16 GEMM, `loop ... end_loop`) writes each tile
    into the tensor it carries: the iteration's `to_view` reads the tensor's old version
    for the last time (the loop's end replaces it by the result), so the executor hands it
    over (`_carried`) instead of the whole tensor being copied per tile; the bits equal the
    VISA interpreter's and a numpy oracle's, and the operands are left as they were."""
    # once drawn by seed 63; pinned by its layout since the draws follow synth's levers
    d = pinned("drawn_s63_0", "out[m,n] = w[n,k] * a[m,k]", "bf16:f32", {"k": 64, "m": 84, "n": 1024},
               {"placement": "1x128 of 32x8, on 1/2 of the slices", "trf": "w", "packet": 16, "order": "ij",
                "reuse": "outer"}, "tiled")
    assert any(isinstance(op, LoopBegin) for op in d.kernel.trace("rngd").kernel.ops), d.layout
    seen = []
    inner = HANDLERS[ToView]

    def spy(op, src, into, *rest, **kwargs):
        seen.append(kwargs.get("owned", False))
        return inner(op, src, into, *rest, **kwargs)

    monkeypatch.setitem(HANDLERS._base.fns, ToView, spy)
    arrays = d.inputs(np.random.default_rng(5))
    assert [name for name, _ in d.spec.operands] == ["w", "a"] and d.spec.result[1] == ("m", "n")
    w, a = (x.astype(np.float64) for x in arrays[:2])
    want = np.einsum("nk,mk->mn", w, a).astype(np.float32) + np.float32(0)  # out[m,n] = w[n,k] * a[m,k]
    kept = [x.copy() for x in arrays[:2]]
    got = [x.copy() for x in arrays]
    CpuBackend(CpuOptions(threads=1)).run(d.kernel, tuple(got))
    assert len(seen) >= 2 and all(seen), seen
    np.testing.assert_array_equal(got[-1].view(np.uint32), want.view(np.uint32))
    for x, y in zip(got[:2], kept):
        np.testing.assert_array_equal(x.view(np.uint8), y.view(np.uint8))
    interp = [x.copy() for x in arrays]
    get_backend("visa").run(d.kernel, tuple(interp))
    np.testing.assert_array_equal(interp[-1].view(np.uint32), want.view(np.uint32))


def test_the_straight_copys_form_is_found_a_block_of_cells_at_a_time(monkeypatch):
    """`_direct_form` (issue 61, first-run memory) asks for the positions of a block of the
    view's live cells at a time, never of all of them at once (no table per live cell), and
    still finds the one strided copy: gemm_tiled's tiles (far more live cells than a block)
    go straight to the output, and the GEMM is exact."""
    monkeypatch.setattr(moves_strided, "_CHECK_BLOCK", 512)
    asked = []
    real_nth = views._nth
    monkeypatch.setattr(views, "_nth", lambda parts, weights, k: asked.append(len(k)) or real_nth(parts, weights, k))
    forms = []
    real = views._direct_form.__wrapped__
    monkeypatch.setattr(views, "_direct_form", lambda *args: forms.append(real(*args)) or forms[-1])
    monkeypatch.setattr(views, "_direct_live", lambda *args: False)
    monkeypatch.setattr(views, "_direct_pending", lambda *args: False)
    _exact_gemm_tiled(4)
    assert any(f is not None and np.prod(f[1]) > 512 for f in forms), forms
    assert asked and max(asked) <= 512, max(asked)


def _exact_gemm_tiled(seed: int) -> None:
    """gemm_tiled run once on small-integer bf16 operands, its result checked against numpy."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-64, 64, (1024, 128)).astype(np.float32)
    w = rng.integers(-64, 64, (1024, 128)).astype(np.float32)
    out = np.zeros((1024, 1024), np.float32)
    npu_opt.run(example("gemm_tiled", "gemm_tiled"), a.astype(ml_dtypes.bfloat16), w.astype(ml_dtypes.bfloat16), out)
    np.testing.assert_array_equal(out, a @ w.T)


def test_the_straight_copys_form_keeps_no_table_of_a_levels_live_positions(monkeypatch):
    """`_direct_form` reads a level's live positions from its grid form when it has one
    (issue 61, first-run memory): nothing of the size of the view stays behind it. It used
    to ask `live_positions` for every level, whose cache then kept an int64 array of the
    whole output tensor's element level (4 MiB on a 1024 x 512 i32 result) for the rest of
    the process. A small tiled i8 GEMM written straight into its 32 Ki-cell result; exact."""
    d = pinned("tiled_i8", "out[m,n] = w[n,k] * a[m,k]", "i8:i32", {"k": 32, "m": 512, "n": 64},
               {"placement": "8x8 of 8x8, on 1/4 of the slices", "trf": "w", "packet": 32, "pieces": 1}, "tiled")
    kept = _traced_direct_forms(monkeypatch, peak=False)
    arrays = d.inputs(np.random.default_rng(3))
    want = d.oracle(*arrays)
    npu_opt.run(d.kernel, *arrays)
    np.testing.assert_array_equal(arrays[-1], want)
    assert any(ok for *_, ok in kept), kept
    for size, cells, _ in kept:  # 8 bytes and more per cell before; the form's few words now
        assert size < 4 * cells, (size, cells)


def _traced_direct_forms(monkeypatch, peak: bool) -> list[tuple[int, int, bool]]:
    """Each `views._direct_form` call (its cache bypassed, the live-cells path off) traced by
    tracemalloc: (peak bytes while it ran, or with `peak=False` the bytes it still holds after
    `live_positions`' cache is emptied; the view's live cells; whether it found a form)."""
    found: list[tuple[int, int, bool]] = []
    real = views._direct_form.__wrapped__

    def measured(src_t, view, *rest):
        cells = int(np.prod([len(live_positions(mp)) for mp in (*layout.spatial_levels(view), *layout.local_levels(view))]))
        if not peak:
            live_positions.cache_clear()
        tracemalloc.start()
        try:
            form = real(src_t, view, *rest)
            found.append((tracemalloc.get_traced_memory()[1 if peak else 0], cells, form is not None))
        finally:
            tracemalloc.stop()
        return form
    monkeypatch.setattr(views, "_direct_form", measured)
    monkeypatch.setattr(views, "_direct_live", lambda *args: False)
    monkeypatch.setattr(views, "_direct_pending", lambda *args: False)
    return found
