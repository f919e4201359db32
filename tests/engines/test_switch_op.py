"""The traced `Switch` op and its cpu handler (the stage method and the lowering are not
wired yet): the op runs the switch rules and types its result, and the cpu backend moves
every (chip, cluster) ring's data as the oracle of tests/ir/switch says, padding zero."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from backends.cpu import lazy_rows
from backends.cpu.handlers import HANDLERS
from ir.dtypes import DType
from ir.data_movement_ops import Switch
from ir.mapping import m
from ir.ops import Value
from ir.switch.config import SwitchConfig as SC
from ir.types import StreamType
from npu_opt import axes
from tests.ir.switch.oracle import PAD_MARK, expected_live, stream_array

axes(K=64, N=8, X=2, Y=4, H=2, P=16, V=3)

TENSOR_AXES = ["K", "N", "H", "P", "V"]  # X and Y are tiles

# name -> (in Slice, in Time, out_slice, out_time, config); packet H (2 x i32 = 8 bytes)
CASES = {
    "forwarding": ("K", "N", "K", "N", SC.FORWARDING),
    "broadcast1": ("K", "N", "K / 16, Y, K % 4", "N, K / 4 % 4", SC.BROADCAST1(slice1=4, slice0=4)),
    "transpose": ("K", "N", "K / 16, K % 4, K / 4 % 4", "N", SC.TRANSPOSE(slice1=4, slice0=4)),
    "custom_broadcast": ("K", "N", "K / 4, Y", "N, K % 4", SC.CUSTOM_BROADCAST(ring_size=4)),
    "custom_pad_extract": ("P, V # 4", "N", "P, Y", "N, V", SC.CUSTOM_BROADCAST(ring_size=4)),
}

CHIP, CLUSTER = m("1"), m("1 # 2")
_ids = itertools.count(1)


def _op(si: str, ti: str, so: str, to: str, config) -> Switch:
    stream = StreamType(DType.I32, CHIP, CLUSTER, m(si), m(ti), m("H"), "main")
    return Switch.build(lambda t: Value(next(_ids), t), input=Value(0, stream), out_slice=m(so), out_time=m(to),
                        config=config)


@pytest.mark.parametrize("name", sorted(CASES))
def test_cpu_switch_moves_what_the_oracle_says(name):
    si, ti, so, to, config = CASES[name]
    op = _op(si, ti, so, to, config)
    assert op.check() is None
    out_t = op.result.type
    assert (out_t.slice, out_t.time, out_t.packet, out_t.dtype) == (m(so), m(to), m("H"), DType.I32)
    ring = stream_array(m(si), m(ti), m("H"), TENSOR_AXES)
    ring[ring == PAD_MARK] = 0
    buf = np.zeros((1, 2, *ring.shape), np.int64)
    buf[0, 0] = ring                                   # the second cluster is padding
    got = lazy_rows.materialize(HANDLERS[Switch](op, buf))  # a broadcast's distinct rows copied out
    assert got.shape == (1, 2, m(so).size, m(to).size, 2)
    assert not got[0, 1].any()
    cells = expected_live(m(so), m(to), m("H"), TENSOR_AXES)
    live = np.zeros(got[0, 0].shape, bool)
    for s, t, p, value in cells:
        assert got[0, 0, s, t, p] == value
        live[s, t, p] = True
    assert not got[0, 0][~live].any(), "a padding position holds data"


def test_refused_switch_names_its_rule_and_keeps_the_requested_type():
    op = _op("K", "N", "K / 16, K % 4, K / 4 % 4", "N", SC.TRANSPOSE(slice1=4, slice0=2))
    violation = op.check()
    assert violation is not None and violation.code == "SWITCH-7"
    assert op.result.type.slice == m("K / 16, K % 4, K / 4 % 4")
