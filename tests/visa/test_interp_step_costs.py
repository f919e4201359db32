"""Costs the interpreter paid on every run of a kernel and no longer does (issue 61 item 2,
the kernels without the Transpose Engine): each test pins that the cost is gone (a spy on
the step that paid it) and that the kernel still equals a numpy oracle on the cpu backend
and the interpreter, bit for bit.

- An integer contraction whose weight rows are padded (`D # 128` of 64 features, the
  layout of examples/interop/mlp_kernels.py's `mlp_down`) zeroes the padded products in the
  weights: the product mask is cut to the axes it varies along, so the zeroed weights are
  no larger than the TRF operand (they were broadcast along the time digit `M % 8`: 8x
  the operand, 24 ms of `np.where` a run of `mlp_down`).
- A TRF load over two clusters of a stream that knows its equal rows notes them per cluster
  (it noted them only for a load of one (chip, cluster)), so the bf16 contraction's weight
  operand does not compare the TRF slices again; and a tile's second contraction of the
  same TRF rows takes the operand the first widened (the drawn `drawn_s2_7` layout, `16x16
  of 32x32, 2 clusters`, in small: 2 x 2 slices a cluster, two pieces of the rows). The
  load itself writes each cluster's distinct rows into the slices repeating them, in the
  TRF's order (it copied every slice's row from the stream: 16 MiB read on `drawn_s2_7`).
- A run reads the speed switch's environment variable once (`shortcuts.mode(None)`), not
  at every shortcut asked (~800 times a run of a batched drawn kernel, ~1 us each).
"""

from __future__ import annotations

import functools
import ml_dtypes
import numpy as np
import pytest

import npu_opt
from npu_opt.compile_api import compile_kernel
from tests.kernel_files import load_source
from visa import parse_visa
from visa.interp import contract, execute_inout, shortcuts, trf
from visa.interp.fast import contract_jit, contract_jit_weights, copies, lazy

_PADDED_ROWS = '''
from npu_opt import *

axes(M=16, D=64, H=64)
Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M / 8, D # 128 / 128, 1 # 128")


@device(chip=1)
def padded_rows(ctx: Context,
                h: HbmTensor[i8, Chip, m("M, H")],
                w: HbmTensor[i8, Chip, m("D, H")],
                y: Mut[HbmTensor[i32, Chip, m("M, D")]]) -> None:
    h_dm = h.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("M % 8, H")])
    w_dm = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("D # 128, H")])
    w_trf = (ctx.sub.begin(w_dm.view())
             .fetch(m("D # 128 % 8, D # 128 / 8 % 16"), m("H"))
             .collect(m("D # 128 % 8, D # 128 / 8 % 16, H / 32"), m("H % 32"))
             .to_trf(m("D # 128 % 8"), m("D # 128 / 8 % 16, H")))
    out = (ctx.main.begin(h_dm.view())
           .fetch(m("M % 8, D # 128 / 8 % 16"), m("H"))
           .collect(m("M % 8, D # 128 / 8 % 16, H / 32"), m("H % 32"))
           .contract_outer(w_trf, m("M % 8, D # 128 / 8 % 16, H / 32"), m("H % 32"))
           .contract_packet(m("1"))
           .contract_time(m("M % 8, D # 128 / 8 % 16"))
           .contract_lane(m("M % 8, D # 128 / 8 % 16"), m("D # 128 % 8"), LaneMode.INTERLEAVED)
           .commit_trim(m("D # 128 % 8"))
           .commit(m("M % 8, D # 128")))
    out.view().to_hbm_view(ctx.tdma, y.view_mut())
'''


@functools.lru_cache(maxsize=1)
def _padded() -> tuple:
    """The padded-rows kernel and its parsed artifact (compiled once for two tests)."""
    kernel = load_source(_PADDED_ROWS, "interp_step_costs_padded").padded_rows
    return kernel, parse_visa(compile_kernel(kernel).text)


def test_padded_weight_rows_are_zeroed_at_the_operands_size(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, art = _padded()
    rng = np.random.default_rng(3)
    h = rng.integers(-128, 128, (16, 64), dtype=np.int8)
    w = rng.integers(-128, 128, (64, 64), dtype=np.int8)
    want = h.astype(np.int32) @ w.astype(np.int32).T
    read, sizes = contract.Weights.read, []

    def spy(self, which):
        out = read(self, which)
        sizes.append((out.size, self.mask is not None))
        return out

    monkeypatch.setattr(contract.Weights, "read", spy)
    _, finals = execute_inout(art, [h, w, np.zeros((16, 64), np.int32)])
    np.testing.assert_array_equal(finals[-1], want)
    # each row's weights: 8 lanes x 16 rows x 64 elements of H, no copy per step of M % 8
    assert sizes and all(masked for _, masked in sizes)
    assert all(size <= 2 * 8 * 16 * 64 for size, _ in sizes), sizes
    y = np.zeros((16, 64), np.int32)
    npu_opt.run(kernel, h, w, y)
    np.testing.assert_array_equal(y, want)


_TWO_CLUSTERS = '''
from npu_opt import *

axes(K=512, M=128, N=64)
Chip = m("1")
Cluster = m("M % 128 / 64")
Slice = m("M % 64 / 32, N % 64 / 32, 1 # 16")


@device(chip=1)
def two_clusters(ctx: Context,
                 w: HbmTensor[bf16, Chip, m("N, K")],
                 a: HbmTensor[bf16, Chip, m("M, K")],
                 out: Mut[HbmTensor[f32, Chip, m("M, N")]]) -> None:
    w_dm = w.view().to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("N % 32, K")])
    parts = [a.view().tile(m("M % 32 / 16"), 1, m("M / 32, 1 # 2, M % 16, K"), p)
             .to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("M % 16, K")]) for p in range(2)]
    trf = (ctx.sub.begin(w_dm.view())
           .fetch(m("N % 8, N / 8 % 4"), m("K"))
           .collect(m("N % 8, N / 8 % 4, K / 16"), m("K % 16"))
           .to_trf(m("N % 8"), m("N / 8 % 4, K")))
    for p, part in enumerate(parts):
        result = (ctx.main.begin(part.view())
                  .fetch(m("M % 16, N / 8 % 4"), m("K"))
                  .collect(m("M % 16, N / 8 % 4, K / 16"), m("K % 16"))
                  .contract_outer(trf, m("M % 16, N / 8 % 4, K / 16"), m("K % 16"))
                  .contract_packet(m("1"))
                  .contract_time(m("M % 16, N / 8 % 4"))
                  .contract_lane(m("M % 16, N / 8 % 4"), m("N % 8"), LaneMode.INTERLEAVED)
                  .commit_trim(m("N % 8"))
                  .commit(m("M % 16, N % 32")))
        dst = out.view_mut().tile(m("M % 32 / 16"), 1, m("M / 32, 1 #{!} 2, M % 16, N"), p)
        result.view().to_hbm_view(ctx.tdma, dst)
'''


def test_a_two_cluster_load_notes_its_copies_and_the_operand_is_widened_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = load_source(_TWO_CLUSTERS, "interp_step_costs_two_clusters").two_clusters
    rng = np.random.default_rng(4)     # small integers: every sum exact, the matmul path proves it
    w = rng.integers(-8, 9, (64, 512)).astype(ml_dtypes.bfloat16)
    a = rng.integers(-8, 9, (128, 512)).astype(ml_dtypes.bfloat16)
    want = (a.astype(np.float64) @ w.astype(np.float64).T).astype(np.float32)
    monkeypatch.setenv(contract_jit.ENV, "1")          # the compiled path at this size
    monkeypatch.setattr(lazy, "LAZY_BYTES", 0)         # the broadcasts held lazily at this size
    calls: dict[str, list] = {"distinct": [], "operand": [], "blas": []}
    calls.update(periodic=[], store=[], repeats=[], held=[])
    for module, name in ((contract_jit_weights, "distinct"), (contract_jit_weights, "widened"),
                         (contract_jit, "_by_blas"), (trf, "_store_periodic"), (trf, "_store"),
                         (trf, "_store_repeats"), (trf, "_store_held")):
        real = getattr(module, name)

        def spy(*args, real=real, name=name, **kw):
            out = real(*args, **kw)
            calls[{"widened": "operand", "_by_blas": "blas", "_store_periodic": "periodic",
                   "_store": "store", "_store_repeats": "repeats", "_store_held": "held"}.get(name, name)].append(
                out is not None)
            return out

        monkeypatch.setattr(module, name, spy)
    _, finals = execute_inout(parse_visa(compile_kernel(kernel).text), [w, a, np.zeros((128, 64), np.float32)])
    np.testing.assert_array_equal(finals[-1], want)
    assert calls["blas"] == [True, True]      # both pieces by the matmuls
    assert not calls["distinct"]              # the load's note told each cluster's equal slices
    assert len(calls["operand"]) == 1         # the second piece took the first's widened operand
    # the load: each cluster's 4 slices repeat its first 2 rows (w's two column blocks), each
    # written from those rows, the stream's copies never read: by their period, or (when the
    # feed handed on only the distinct rows, fast/transpose_rows.py) into the first slice of
    # each, the copies left for later (trf_later.py) and never made: the contraction reads
    # those first slices only
    assert (len(calls["held"]) == 2 or len(calls["periodic"]) == 2) and not calls["repeats"] and not calls["store"]
    out = np.zeros((128, 64), np.float32)
    npu_opt.run(kernel, w, a, out)
    np.testing.assert_array_equal(out, want)


def test_a_run_reads_the_switch_from_the_environment_once(monkeypatch: pytest.MonkeyPatch) -> None:
    reads = []

    class Environ(dict):
        def get(self, key, default=None):
            reads.append(key)
            return super().get(key, default)

    class Os:
        environ = Environ({shortcuts.ENV: "1"})

    monkeypatch.setattr(shortcuts, "os", Os)
    _, art = _padded()
    rng = np.random.default_rng(6)
    h = rng.integers(-128, 128, (16, 64), dtype=np.int8)
    w = rng.integers(-128, 128, (64, 64), dtype=np.int8)
    want = h.astype(np.int32) @ w.astype(np.int32).T
    for switch in ("1", "0"):            # each run reads it again: "0" runs the plain path
        Os.environ[shortcuts.ENV] = switch
        reads.clear()
        _, finals = execute_inout(art, [h, w, np.zeros((16, 64), np.int32)])
        np.testing.assert_array_equal(finals[-1], want)
        assert reads == [shortcuts.ENV], switch


def test_a_remembered_value_lasts_until_a_write_meets_its_rows_or_another_is_kept() -> None:
    notes = copies.CopyNotes()
    spans = [(("trf", 0, 0), 0, 4), (("trf", 0, 1), 0, 4)]
    notes.remember(spans, "tag", "widened")
    assert notes.recall(spans, "tag") == "widened"
    assert notes.recall(spans, "other") is None and notes.recall(spans[:1] + [(("trf", 0, 1), 0, 5)], "tag") is None
    notes.forget(("trf", 0, 0), 8, 12)                 # a write of other rows
    assert notes.recall(spans, "tag") == "widened"
    notes.forget(("trf", 0, 1), 3, 4)                  # a write of one of its rows, one cluster
    assert notes.recall(spans, "tag") is None
    notes.remember(spans, "tag", "first")
    notes.remember(spans[:1], "tag", "second")         # one value at a time
    assert notes.recall(spans, "tag") is None and notes.recall(spans[:1], "tag") == "second"
    notes.clear_dm()                                   # a commit writes the DM only
    assert notes.recall(spans[:1], "tag") == "second"


def test_a_period_only_where_the_rows_repeat_their_first_rows() -> None:
    sel = np.arange(4, 12)
    assert trf._period(np.array([0, 1, 2, 3, 4, 5, 4, 5, 4, 5, 4, 5]), sel) == 2
    assert trf._period(None, sel) is None
    assert trf._period(np.array([0, 1, 2, 3, 4, 5, 4, 5, 5, 4, 4, 5]), sel) is None     # out of order
    assert trf._period(np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]), sel) is None   # no repeat
    assert trf._period(np.array([0, 1, 2, 0, 1, 2, 0, 1]), np.arange(8)) is None      # 8 rows, period 3
