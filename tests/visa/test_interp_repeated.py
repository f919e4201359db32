"""Repeated streams (visa/interp/fast/repeated.py, issue 18 item 5): a feed whose read plan has
a zero-stride time loop is held as its distinct packets and a broadcast view.

- the helpers: `view_reshape` gives a view or nothing, `compact` cuts zero strides only;
- the integer contraction of a broadcast stream equals an int64 einsum of every element;
- kernels whose feeds repeat (the i8 GEMM example into the Contraction Engine, a
  broadcast read into a commit, which writes the copies out) equal a numpy oracle, take
  the repeated path (so the test fails if it stops being used), and give the same bytes
  with that path switched off;
- `from_hbm` hands back a view only of an array it is given to own.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from npu_opt.compile_api import compile_kernel
from tests.kernel_files import example, load_source
from tu_ops import rngd
from visa import parse_visa
from visa.interp import contract, execute, feed
from visa.interp.host import from_hbm
from visa.interp.fast.repeated import Repeated, compact, view_reshape


def test_view_reshape_is_a_view_or_nothing():
    base = np.arange(24, dtype=np.int16).reshape(2, 1, 12)
    full = np.broadcast_to(base, (2, 3, 12))
    v = view_reshape(full, (2, 3, 3, 4))
    assert v is not None and np.shares_memory(v, base) and v.strides[1] == 0
    np.testing.assert_array_equal(v, np.ascontiguousarray(full).reshape(2, 3, 3, 4))
    assert view_reshape(full, (2, 36)) is None           # merging a repeat with its packets copies
    assert view_reshape(np.arange(6)[::2], (3, 1)) is not None


def test_compact_cuts_zero_strides_from_the_first_axis_on():
    x = np.broadcast_to(np.arange(5).reshape(1, 1, 5), (4, 3, 5))
    assert compact(x).shape == (4, 1, 5)                 # axis 0 is kept whatever its stride
    assert compact(x, first=0).shape == (1, 1, 5)
    y = np.arange(12).reshape(3, 4)
    assert compact(y) is not y and compact(y).shape == (3, 4)


@pytest.mark.parametrize("as_float", [False, True])
@pytest.mark.parametrize("axis", [2, 3])                 # a kept digit, a summed digit
def test_int_sum_of_a_broadcast_stream(as_float, axis):
    rng = np.random.default_rng(axis + 2 * as_float)
    # axes: rows, lanes, digit (kept), digit (summed), column, leaf
    shape = (6, 1, 5, 3, 1, 8)
    one = list(shape)
    one[axis] = 1
    s = np.broadcast_to(rng.integers(-128, 128, one, dtype=np.int8), shape)
    w = rng.integers(-128, 128, (6, 4, 5, 3, 1, 8), dtype=np.int8)
    keep = [0, 1, 2, 4]
    want = np.einsum(s.astype(np.int64), [0, 1, 2, 3, 4, 5], w.astype(np.int64), [0, 1, 2, 3, 4, 5], keep)
    sa = compact(s)
    assert sa.shape[axis] == 1
    plan = SimpleNamespace(g=8, digits=(5, 3), keep=(True, False))
    got, bound = contract._row_sum(sa, w, keep, plan, SimpleNamespace(scratch=np.empty), as_float)
    assert (got.dtype.kind == "f") == as_float
    np.testing.assert_array_equal(np.broadcast_to(got, want.shape).astype(np.int64), want)
    assert bound >= np.abs(want).max()


def _count_repeated(monkeypatch) -> list[tuple[bool, bool]]:
    """Per feed that may deliver a `Repeated` stream: (whether it does, whether in place)."""
    seen = []
    real = feed._repeated

    def spy(*args):
        held = real(*args)
        seen.append((held is not None, args[-1]))
        return held
    monkeypatch.setattr(feed, "_repeated", spy)
    return seen


def test_i8_gemm_multiplies_the_distinct_packets(monkeypatch):
    kernel = example("gemm_i8_kernel")
    rng = np.random.default_rng(5)
    a = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    w = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    text = compile_kernel(kernel).text
    assert "time=[32:128, 4:0]" in text                  # the MAIN feed reads each row four times
    art = parse_visa(text)
    seen = _count_repeated(monkeypatch)
    got = execute(art, [a, w])
    # the SUB feed goes to the TRF as a view of the DM; the MAIN feed repeats over N / 8 % 4,
    # its integers read in place too (nothing writes the DM before the contraction reads them)
    assert seen == [(True, True), (True, True)]
    want = (a.astype(np.int64) @ w.astype(np.int64).T).astype(np.int32)
    np.testing.assert_array_equal(got, want)
    monkeypatch.setattr(feed, "_repeats", lambda op, target: (False, False))
    np.testing.assert_array_equal(execute(art, [a, w]), got)


_BROADCAST = '''
from npu_opt import *

axes(R=4, K=64)
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")

@device(chip=1)
def repeat_rows(ctx: Context, x: HbmTensor[i8, Chip, m("K")]) -> HbmTensor[i8, Chip, m("R, K")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("K")])
    y = (ctx.main.begin(x.view())
         .fetch(m("R, K / 32"), m("K % 32"))
         .collect(m("R, K / 32"), m("K % 32"))
         .commit_trim(m("K % 32"))
         .commit(m("R, K")))
    return y.to_hbm(ctx.tdma)
'''


def test_a_repeated_stream_written_out_for_a_commit(monkeypatch):
    kernel = load_source(_BROADCAST, "interp_repeated_commit").repeat_rows
    text = compile_kernel(kernel).text
    assert "time=[4:0, 2:32]" in text                    # the read plan repeats every row of K
    art = parse_visa(text)
    x = np.random.default_rng(9).integers(-128, 128, 64, dtype=np.int8)
    seen = _count_repeated(monkeypatch)
    got = execute(art, [x])
    assert seen == [(True, False)]
    np.testing.assert_array_equal(got, np.broadcast_to(x, (4, 64)))


def test_materialize_writes_every_copy():
    base = np.arange(2 * 3 * 4, dtype=np.int8).reshape(2, 1, 3, 4)
    held = Repeated(np.broadcast_to(base, (2, 5, 3, 4)), (2, 15, 4))
    out = held.materialize()
    assert out.shape == (2, 15, 4) and out.flags.c_contiguous and not np.shares_memory(out, base)
    np.testing.assert_array_equal(out.reshape(2, 5, 3, 4), np.broadcast_to(base, (2, 5, 3, 4)))


def test_from_hbm_views_only_what_it_owns():
    art = parse_visa(compile_kernel(example("gemm_i8_kernel")).text)
    rt = next(op.output_type for op in art.kernel.ops() if op.result.id == art.kernel.results[0].id)
    data = np.arange(512 * 512 * 4, dtype=np.int64).astype(np.uint8)
    shared = from_hbm(data, rt, rngd(), owned=True)
    copied = from_hbm(data, rt, rngd())
    assert np.shares_memory(shared, data) and not np.shares_memory(copied, data)
    np.testing.assert_array_equal(shared, copied)
