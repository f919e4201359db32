"""A broadcasting switch made into its distinct rows with little scratch (issue 61, first-run
memory): the map from output to input is one number per packet, never per cell, so a
switch of wide packets takes scratch of the order of its distinct rows, not of the
machine-sized buffer it stands for."""

from __future__ import annotations

import tracemalloc

import numpy as np

from backends.cpu import layout, switch_rows
from backends.cpu.lazy_rows import materialize
from ir.data_movement_ops import Switch
from ir.dtypes import DType
from ir.mapping import m
from ir.ops import Value
from ir.switch.config import SwitchConfig as SC
from ir.switch.semantics import switch_data
from ir.types import StreamType
from npu_opt import axes


def test_a_broadcast_of_wide_packets_takes_scratch_of_its_distinct_rows():
    axes(K=64, N=8, Y=4, E=1024)
    stream = StreamType(DType.I32, m("1"), m("1 # 2"), m("K"), m("N"), m("E"), "main")
    op = Switch.build(lambda t: Value(1, t), input=Value(0, stream), out_slice=m("K / 16, Y, K % 4"),
                      out_time=m("N, K / 4 % 4"), config=SC.BROADCAST1(slice1=4, slice0=4))
    assert op.check() is None
    rng = np.random.default_rng(5)
    buf = layout.zero_padding(rng.integers(1, 1 << 30, layout.shape_of(stream)).astype(np.int32), stream)
    tracemalloc.start()
    try:
        got = switch_rows.distinct(op, buf)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    whole = 4 * layout.n_rows(op.result.type) * op.out_time.size * 1024  # the buffer written out: 8 MiB
    assert got is not None and got.base.nbytes * 4 <= whole
    assert peak <= 3 * got.base.nbytes, (peak, got.base.nbytes)  # the rows, their gather, a little more
    t, out_t = stream, op.result.type  # and the same cells as the eager switch
    rings = buf.reshape(-1, t.slice.size, t.time.size, t.packet.size)
    want = np.stack([switch_data(r, t.slice, t.time, op.out_slice, op.out_time, op.config) for r in rings])
    want = layout.zero_padding(want.reshape(layout.shape_of(out_t)), out_t)
    assert np.array_equal(materialize(got), want)
