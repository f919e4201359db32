"""The engines' data movement against the cell-by-cell oracle of tests/ir/switch/oracle.py.

For each accepted switch or transpose, the input stream is filled from one logical tensor
through its mappings; the engine's output must hold, at every live cell of the requested
output mappings, the element those cells name. That is what "the switch is legal" means,
so these tests also confirm the rules accept only switches whose mappings tell the truth.
"""

from __future__ import annotations

import numpy as np
import pytest

from ir.dtypes import DType
from ir.mapping import m
from ir.switch.config import SwitchConfig as SC
from ir.switch.rules import check_switch
from ir.switch.semantics import switch_data, transpose_data
from ir.transpose.rules import TransposeParams, check_transpose
from npu_opt import axes
from tests.ir.switch.oracle import PAD_MARK, expected_live, stream_array

axes(K=64, N=8, W=2, X=2, Y=4, Z=8, U=256, V=3, F=8, G=4, H=2, P=16)

B1, B01, TR = SC.BROADCAST1, SC.BROADCAST01, SC.TRANSPOSE
IT, TB1, CB = SC.INTER_TRANSPOSE, SC.TRANSPOSED_BROADCAST1, SC.CUSTOM_BROADCAST

TENSOR_AXES = ["K", "N", "U", "V", "W", "F", "G", "H", "P"]  # X, Y, Z are tile axes, never tensor axes

SWITCHES = {
    "forwarding": ("K", "N", "K", "N", SC.FORWARDING),
    "b01": ("K", "N", "K / 4, X, 2", "N / 4, K / 2 % 2, N % 4, K % 2", B01(slice1=2, slice0=2, time0=4)),
    "b01_literal_tiles": ("K", "N", "K / 8, 2, 4", "N / 2, K / 4 % 2, N % 2, K % 4", B01(slice1=2, slice0=4, time0=2)),
    "b1": ("K", "N", "K / 16, Y, K % 4", "N, K / 4 % 4", B1(slice1=4, slice0=4)),
    "transpose": ("K", "N", "K / 16, K % 4, K / 4 % 4", "N", TR(slice1=4, slice0=4)),
    "inter_transpose": ("U", "N", "U / 8, N / 2 % 2, U % 4", "N / 4, N % 2, U / 4 % 2", IT(slice1=2, slice0=4, time0=2)),
    "transposed_b1": ("K", "N", "K / 16, Y, K / 4 % 4", "N, K % 4", TB1(slice1=4, slice0=4)),
    "cu_broadcast": ("K", "N", "K / 4, Y", "N, K % 4", CB(ring_size=4)),
    "cu_reverse": ("K", "N", "K % 4, K / 4", "N", CB(ring_size=64)),
    "cu_apart": ("K / 2, W", "N", "K / 4, X, W", "N, K / 2 % 2", CB(ring_size=4)),
    "cu_pad_extract": ("P, V # 4", "N", "P, Y", "N, V", CB(ring_size=4)),
    "cu_padded_time": ("K", "N # 16", "K / 2, X", "N # 16, K % 2", CB(ring_size=2)),
}


@pytest.mark.parametrize("name", sorted(SWITCHES))
def test_switch_moves_what_the_mappings_say(name: str) -> None:
    si, ti, so, to, cfg = (m(x) if isinstance(x, str) else x for x in SWITCHES[name])
    packet = m("H")
    assert check_switch(si, ti, so, to, cfg) is None
    x = stream_array(si, ti, packet, TENSOR_AXES)
    y = switch_data(x, si, ti, so, to, cfg)
    assert y.shape == (so.size, to.size, packet.size)
    cells = expected_live(so, to, packet, TENSOR_AXES)
    assert cells, "the case has live output cells"
    got = np.array([y[s, t, p] for s, t, p, _ in cells])
    want = np.array([v for *_, v in cells])
    np.testing.assert_array_equal(got, want)
    assert not np.any(got == PAD_MARK)


def test_oracle_catches_a_wrong_movement() -> None:
    """The oracle can fail: a TRANSPOSE whose out_slice forgot the swap is not what the engine does."""
    si, ti, cfg = m("K"), m("N"), TR(slice1=4, slice0=4)
    x = stream_array(si, ti, m("H"), TENSOR_AXES)
    y = switch_data(x, si, ti, m("K / 16, K % 4, K / 4 % 4"), ti, cfg)
    cells = expected_live(si, ti, m("H"), TENSOR_AXES)  # the unswapped claim
    assert any(y[s, t, p] != v for s, t, p, v in cells)


TRANSPOSES = {
    "i8_square": ("i8", "G, F", "F # 32", "G, F", "F # 32"),
    "i8_gather_two": ("i8", "F, H", "F # 32", "H, F", "F # 32"),
    "i8_trim": ("i8", "F", "V # 32", "V", "F # 32"),
    "i8_outer_padding": ("i8", "(G, H) # 16", "F # 32", "1 # 2, F", "(G, H) # 32"),
    "bf16": ("bf16", "H, G", "F # 16", "H, F", "G # 16"),
    "f32": ("f32", "G, H", "F # 8", "G, F", "H # 8"),
    "i4": ("i4", "H, P", "G # 64", "H, G", "P # 64"),
}


@pytest.mark.parametrize("name", sorted(TRANSPOSES))
def test_transpose_moves_what_the_mappings_say(name: str) -> None:
    dtype, t, p, t2, p2 = TRANSPOSES[name]
    slice_ = m("W")
    t, p, t2, p2 = m(t), m(p), m(t2), m(p2)
    params = check_transpose(t, p, t2, p2, DType.parse(dtype))
    assert isinstance(params, TransposeParams), params
    x = stream_array(slice_, t, p, TENSOR_AXES)
    y = transpose_data(x, params, t2.size)
    assert y.shape == (slice_.size, t2.size, p2.size)
    cells = expected_live(slice_, t2, p2, TENSOR_AXES)
    got = np.array([y[s, tt, pp] for s, tt, pp, _ in cells])
    np.testing.assert_array_equal(got, np.array([v for *_, v in cells]))


def test_transpose_writes_fill_outside_rows() -> None:
    """Row lanes past in_rows are the fill value, not stale input."""
    t, p, t2, p2 = m("F"), m("V # 32"), m("V"), m("F # 32")
    params = check_transpose(t, p, t2, p2, DType.I8)
    x = stream_array(m("W"), t, p, TENSOR_AXES)
    y = transpose_data(x, params, t2.size, fill=7)
    assert np.all(y[:, :, params.in_rows:] == 7) and not np.any(y[:, :, :params.in_rows] == 7)


def _named_grid():
    for name in ("BROADCAST1", "TRANSPOSE", "TRANSPOSED_BROADCAST1"):
        for s1 in (1, 2, 4):
            for s0 in (1, 2, 4):
                yield getattr(SC, name)(slice1=s1, slice0=s0)


@pytest.mark.parametrize("cfg", list(_named_grid()), ids=repr)
def test_named_config_equals_the_same_move_as_a_custom_broadcast(cfg) -> None:
    """A named frame without time interleaving is also a CUSTOM_BROADCAST; the two data
    paths (reshapes from the config, routes from the mappings) give the same array."""
    from ir.switch.custom import computed_ring_size, plan_custom, routes
    from ir.switch.rules import switch_frames

    si, ti = m("K"), m("G")
    frames = switch_frames(si, ti, cfg)
    so, to = frames.out_slice, frames.out_time
    assert check_switch(si, ti, so, to, cfg) is None
    ring = computed_ring_size(routes(si, so, to, plan_custom(si, ti, so, to)))
    assert check_switch(si, ti, so, to, CB(ring_size=ring)) is None
    x = stream_array(si, ti, m("1"), TENSOR_AXES)
    np.testing.assert_array_equal(switch_data(x, si, ti, so, to, cfg),
                                  switch_data(x, si, ti, so, to, CB(ring_size=ring)))
    cells = expected_live(so, to, m("1"), TENSOR_AXES)
    y = switch_data(x, si, ti, so, to, cfg)
    assert all(y[s, t, p] == v for s, t, p, v in cells)


def _generated(seeds):
    from ir.mapping.nodes import pair_all
    from ir.switch.custom import computed_ring_size, plan_custom, routes
    from tests.ir.switch.generate import legal_custom

    for seed in seeds:
        si, ti, so, to = legal_custom(seed)
        ring = computed_ring_size(routes(si, so, to, plan_custom(si, ti, so, to)))
        assert check_switch(si, ti, so, to, CB(ring_size=ring)) is None, (seed, so, to)
        x = stream_array(si, ti, m("1"), TENSOR_AXES)
        y = switch_data(x, si, ti, so, to, CB(ring_size=ring))
        for s, t, p, value in expected_live(so, to, m("1"), TENSOR_AXES):
            assert y[s, t, p] == value, (seed, so, to, s, t)
        moved = to.flatten()[1:] if hasattr(to, "flatten") else []
        if len(moved) >= 2:  # the same switch with the moved digits reversed must be refused
            swapped = pair_all([ti, *reversed(moved)])
            assert check_switch(si, ti, so, swapped, CB(ring_size=ring)).code == "SWITCH-16", (seed, so, to)


def test_generated_custom_switches_are_legal_and_move_the_right_data() -> None:
    _generated(range(8))


@pytest.mark.slow
def test_generated_custom_switches_many() -> None:
    _generated(range(8, 400))


@pytest.mark.parametrize("in_rows", [2, 4, 8])
def test_transpose_tiles_cell_by_cell(in_rows: int) -> None:
    """`transpose_data` on tiles of few rows (turned a column at a time) and of more (one
    transposed copy): output row c of each tile holds column c of the tile's input rows, then
    the fill; a loop over every cell says so."""
    in_cols, flit, out_rows, outer, slices = 8, 16, 6, 3, 2
    params = TransposeParams(in_rows=in_rows, in_cols=in_cols, out_rows=out_rows, packets_per_col=1,
                             valid_size_per_packet=in_cols, fetch_in_width_shift=0)
    x = np.random.default_rng(in_rows).integers(1, 1000, (slices, outer * in_rows, flit)).astype(np.uint16)
    y = transpose_data(x, params, outer * out_rows, fill=0)
    for s in range(slices):
        for o in range(outer):
            for c in range(out_rows):
                for j in range(flit):
                    want = x[s, o * in_rows + j, c] if j < in_rows else 0
                    assert y[s, o * out_rows + c, j] == want, (s, o, c, j)
