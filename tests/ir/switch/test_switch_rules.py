"""Switch rules SWITCH-1..18 (19: test_inter_transpose_run.py): refusals, one own case per reference fixture, and accepted switches.

`REFERENCE_FIXTURES` maps every switch refusal of the reference (the 27 kernels of
`furiosa-opt-examples/src/negative/switch_assertions.rs`, by module and function name,
and the six refused `CustomBroadcast` cases of the engine's own tests) to the case here
that makes the same kind of mistake and to the rule that refuses it. The cases are our
own: other axes, sizes and configurations than the fixtures.
"""

from __future__ import annotations

import pytest

from ir.dtypes import DType
from ir.mapping import m
from ir.mapping.nodes import Broadcast
from ir.rules.collect import check_collect
from ir.switch.config import SwitchConfig as SC
from ir.switch.custom import computed_ring_size, plan_custom, routes, snoop_bitmap
from ir.switch.rule_titles import SWITCH_RULES as RULES
from ir.switch.rules import check_packet_align, check_switch, ring_size, switch_frames
from npu_opt import axes
from tests.ir.test_rules_collect import collect_op

axes(L=256, M=16, H=64, N=4, Q=8, Z=8, W=2, X=2, Y=4, V=1024, U=128, R=3)

B1, B01 = SC.BROADCAST1, SC.BROADCAST01
TR, IT, TB1, CB = SC.TRANSPOSE, SC.INTER_TRANSPOSE, SC.TRANSPOSED_BROADCAST1, SC.CUSTOM_BROADCAST

# case -> (in_slice, in_time, out_slice, out_time, config, expected code)
REFUSED = {
    # BROADCAST1 on Slice L (256), Time M
    "b1_slice0_zero": ("L", "M", "L / 64, Z, L % 8", "M, L / 8 % 8", B1(slice1=8, slice0=0), "SWITCH-3"),
    "b1_slice1_not_pow2": ("L", "M", "L / 64, Z, L % 8", "M, L / 8 % 8", B1(slice1=6, slice0=8), "SWITCH-4"),
    "b1_outer_slice_differs": ("L", "M", "L / 32, 2, L % 16", "M, L / 8 % 2", B1(slice1=2, slice0=8), "SWITCH-7"),
    "b1_tile_is_input_digit": ("L", "M", "L / 16, L / 8 % 2, L % 8", "M, L / 8 % 2", B1(slice1=2, slice0=8),
                               "SWITCH-12"),
    "b1_slice0_differs": ("L", "M", "L / 16, X, Q", "M, L / 8 % 2", B1(slice1=2, slice0=8), "SWITCH-7"),
    "b1_moved_digit_outer": ("L", "M", "L / 16, X, L % 8", "L / 8 % 2, M", B1(slice1=2, slice0=8), "SWITCH-7"),
    # BROADCAST01
    "b01_time0_zero": ("L", "M", "L / 4, X, W", "M, L % 4", B01(slice1=2, slice0=2, time0=0), "SWITCH-3"),
    "b01_slice0_not_pow2": ("L", "M", "L / 4, X, W", "M, L % 4", B01(slice1=2, slice0=5, time0=1), "SWITCH-4"),
    "b01_time_not_interleaved": ("L", "M", "L / 8, 8", "M, L % 8", B01(slice1=4, slice0=2, time0=4), "SWITCH-7"),
    "b01_outer_slice_differs": ("L", "M", "L / 8, Z", "M, L % 4", B01(slice1=2, slice0=2, time0=1), "SWITCH-7"),
    "b01_tile_is_slice_digit": ("L", "M", "L / 4, L % 4", "M, L % 4", B01(slice1=2, slice0=2, time0=1),
                                "SWITCH-12"),
    "b01_tile_is_time_digit": ("L", "M", "L / 4, M % 4", "M, L % 4", B01(slice1=2, slice0=2, time0=1),
                               "SWITCH-12"),
    "b01_moved_order_swapped": ("L", "M", "L / 4, Y", "M, L % 2, L / 2 % 2", B01(slice1=2, slice0=2, time0=1),
                                "SWITCH-7"),
    # TRANSPOSE
    "tr_time_replaced": ("L", "M", "L / 32, L % 4, L / 4 % 8", "V % 16", TR(slice1=8, slice0=4), "SWITCH-7"),
    "tr_time_reordered": ("L", "M", "L / 32, L % 4, L / 4 % 8", "M % 4, M / 4", TR(slice1=8, slice0=4),
                          "SWITCH-7"),
    "tr_not_swapped": ("L", "M", "L / 32, L / 4 % 8, L % 4", "M", TR(slice1=8, slice0=4), "SWITCH-7"),
    # INTER_TRANSPOSE on Slice L, Time M: slice2 = L / 16, slice1 = L / 8 % 2, slice0 = L % 8
    "it_slice1_zero": ("L", "M", "L", "M", IT(slice1=0, slice0=4, time0=2), "SWITCH-3"),
    "it_slice0_not_pow2": ("L", "M", "L", "M", IT(slice1=2, slice0=12, time0=1), "SWITCH-4"),
    "it_time_not_divisible": ("L", "M", "L", "M", IT(slice1=4, slice0=4, time0=8), "SWITCH-6"),
    "it_slice2_differs": ("L", "M", "Q, W, M / 2 % 2, L % 8", "M / 4, M % 2, L / 8 % 2",
                          IT(slice1=2, slice0=8, time0=2), "SWITCH-7"),
    "it_slice0_differs": ("L", "M", "L / 16, M / 2 % 2, Q", "M / 4, M % 2, L / 8 % 2",
                          IT(slice1=2, slice0=8, time0=2), "SWITCH-7"),
    "it_wrong_time_digit_in_slice": ("L", "M", "L / 16, M % 2, L % 8", "M / 4, M / 2 % 2, L / 8 % 2",
                                     IT(slice1=2, slice0=8, time0=2), "SWITCH-7"),
    "it_time2_reordered": ("L", "M", "L / 16, M / 2 % 2, L % 8", "M / 4 % 2, M / 8, M % 2, L / 8 % 2",
                           IT(slice1=2, slice0=8, time0=2), "SWITCH-7"),
    "it_time1_kept_in_time": ("L", "M", "L / 16, M / 2 % 2, L % 8", "M / 4, M / 2 % 2, L / 8 % 2",
                              IT(slice1=2, slice0=8, time0=2), "SWITCH-7"),
    "it_moved_digit_replaced": ("L", "M", "L / 16, M / 2 % 2, L % 8", "M / 4, M % 2, H % 2",
                                IT(slice1=2, slice0=8, time0=2), "SWITCH-7"),
    # other named-config rules
    "slice_count_changes": ("L", "M", "U", "M", SC.FORWARDING, "SWITCH-2"),
    "slice_not_divisible": ("L", "M", "L", "M, 32", B1(slice1=16, slice0=32), "SWITCH-5"),
    "inter_transpose_half_chip": ("U", "M", "U", "M", IT(slice1=2, slice0=4, time0=1), "SWITCH-5"),
    "slice2_not_pow2": ("H, R", "M", "H, R", "M", TR(slice1=2, slice0=2), "SWITCH-4"),  # 192 slices
    "tile_on_zero_padding": ("L", "M", "L / 16, 1 #{0} 2, L % 8", "M, L / 8 % 2", B1(slice1=2, slice0=8),
                             "SWITCH-11"),
    "tile_named_twice": ("L", "M", "L / 4, W, W", "M, L % 4", B01(slice1=2, slice0=2, time0=1), "SWITCH-14"),
    "tiles_share_axis": ("L", "M", "L / 16, Y, Y % 2, L % 2", "M, L / 2 % 8", CB(ring_size=16), "SWITCH-14"),
    # CUSTOM_BROADCAST on Slice (H, N) or L, Time M
    "cu_digit_dropped": ("H, N", "M", "H / 2, X, N", "M", CB(ring_size=128), "SWITCH-10"),
    "cu_replaced_in_place": ("H, N", "M", "H, Y", "M", CB(ring_size=4), "SWITCH-10"),
    "cu_moved_digit_sliced": ("H, N", "M", "H, Y", "M, N = 3", CB(ring_size=4), "SWITCH-10"),
    "cu_sliced_with_broadcast": ("H, N", "M", "H / 2, X, N / 2, W", "M, H % 2, N % 2 = 1", CB(ring_size=128),
                                 "SWITCH-10"),
    "cu_single_axis_sliced": ("L", "M", "L / 4, N", "M, L % 4 = 2", CB(ring_size=4), "SWITCH-10"),
    "cu_padded_digit_sliced": ("Q # 16, Z # 16", "M", "Q # 16, Z # 16 / 4, N", "M, Z # 16 % 4 = 3",
                               CB(ring_size=4), "SWITCH-10"),
    "cu_time_copied": ("L", "M", "L", "M, 2", CB(ring_size=1), "SWITCH-10"),
    "cu_tile_is_time_digit": ("L", "M", "L / 4, M / 4", "M, L % 4", CB(ring_size=4), "SWITCH-12"),
    "cu_time_to_slice": ("L", "M", "L / 4, M % 4", "M / 4, L % 4", CB(ring_size=4), "SWITCH-13"),
    "cu_moved_not_innermost": ("L", "M", "L / 4, Y", "L % 4, M", CB(ring_size=4), "SWITCH-15"),
    "cu_moved_order_swapped": ("L", "M", "L / 4, Y", "M, L % 2, L / 2 % 2", CB(ring_size=4), "SWITCH-16"),
    "cu_time_not_carried": ("L", "M", "L / 4, Y", "M % 4, M / 4, L % 4", CB(ring_size=4), "SWITCH-17"),
    "cu_ring_not_pow2": ("L", "M", "L / 4, Y", "M, L % 4", CB(ring_size=6), "SWITCH-8"),
    "cu_ring_too_large": ("L", "M", "L", "M", CB(ring_size=512), "SWITCH-8"),
    "cu_ring_mismatch": ("L", "M", "L / 4, Y", "M, L % 4", CB(ring_size=16), "SWITCH-9"),
    "cu_tile_on_bottom_padding": ("N, H", "M", "N #{!} 8, H / 4, W", "M, H % 4", CB(ring_size=4), "SWITCH-11"),
    # the book's custom-config constraint "broadcast axes must not be padded" (`X # 4`, X new)
    "cu_padded_tile_axis": ("L", "M", "L / 8, X # 4, W", "M, L % 8", CB(ring_size=8), "SWITCH-11"),
    "b01_padded_tile_axis": ("L", "M", "L / 8, X # 4, W", "M, L / 2 % 4, L % 2", B01(slice1=4, slice0=2, time0=1),
                             "SWITCH-11"),
    "b1_ragged_tile_axis": ("L", "M", "L / 64, R # 4, L % 16", "M, L / 16 % 4", B1(slice1=4, slice0=16),
                            "SWITCH-11"),
}

# reference fixture -> (our case, rule). "collect:" cases are collect-rule refusals (below).
REFERENCE_FIXTURES = {
    "packet::packet_mismatch": ("collect:packet_not_the_fetched_one", "COLLECT-3"),
    "packet::collect_time_mismatch": ("collect:outer_flit_not_in_time", "COLLECT-4"),
    "broadcast1::invalid_slice1_zero": ("b1_slice0_zero", "SWITCH-3"),
    "broadcast1::invalid_slice_size": ("b1_slice1_not_pow2", "SWITCH-4"),
    "broadcast1::invalid_slice2_mismatch": ("b1_outer_slice_differs", "SWITCH-7"),
    "broadcast1::invalid_broadcast_axes_not_new": ("b1_tile_is_input_digit", "SWITCH-12"),
    "broadcast1::invalid_slice0_mismatch": ("b1_slice0_differs", "SWITCH-7"),
    "broadcast1::invalid_out_time": ("b1_moved_digit_outer", "SWITCH-7"),
    "broadcast01::invalid_slice0_zero": ("b01_time0_zero", "SWITCH-3"),
    "broadcast01::invalid_slice_size": ("b01_slice0_not_pow2", "SWITCH-4"),
    "broadcast01::invalid_time_size": ("b01_time_not_interleaved", "SWITCH-7"),
    "broadcast01::invalid_slice2_mismatch": ("b01_outer_slice_differs", "SWITCH-7"),
    "broadcast01::invalid_slice_axes_in_broadcast": ("b01_tile_is_slice_digit", "SWITCH-12"),
    "broadcast01::invalid_time_axes_in_broadcast": ("b01_tile_is_time_digit", "SWITCH-12"),
    "broadcast01::invalid_out_time": ("b01_moved_order_swapped", "SWITCH-7"),
    "transpose::invalid_time_size": ("tr_time_replaced", "SWITCH-7"),
    "transpose::invalid_time_mapping": ("tr_time_reordered", "SWITCH-7"),
    "transpose::invalid_transpose_placement": ("tr_not_swapped", "SWITCH-7"),
    "inter_transpose::invalid_time0": ("it_slice1_zero", "SWITCH-3"),
    "inter_transpose::invalid_dims": ("it_slice0_not_pow2", "SWITCH-4"),
    "inter_transpose::invalid_time0_size": ("it_time_not_divisible", "SWITCH-6"),
    "inter_transpose::invalid_slice2_mismatch": ("it_slice2_differs", "SWITCH-7"),
    "inter_transpose::invalid_slice0_mismatch": ("it_slice0_differs", "SWITCH-7"),
    "inter_transpose::invalid_time1_mismatch": ("it_wrong_time_digit_in_slice", "SWITCH-7"),
    "inter_transpose::invalid_time2_mismatch": ("it_time2_reordered", "SWITCH-7"),
    "inter_transpose::invalid_time0_mismatch": ("it_time1_kept_in_time", "SWITCH-7"),
    "inter_transpose::invalid_slice1_mismatch": ("it_moved_digit_replaced", "SWITCH-7"),
    # furiosa-opt-std/src/engine/switch.rs, tests::custom_broadcast (refused cases)
    "custom_broadcast::broadcast::partial_broadcast_replacement": ("cu_digit_dropped", "SWITCH-10"),
    "custom_broadcast::broadcast::broadcast_replace_in_place": ("cu_replaced_in_place", "SWITCH-10"),
    "custom_broadcast::slicing_unsupported::slice_moved_axis": ("cu_moved_digit_sliced", "SWITCH-10"),
    "custom_broadcast::slicing_unsupported::slice_with_broadcast": ("cu_sliced_with_broadcast", "SWITCH-10"),
    "custom_broadcast::slicing_unsupported::slice_single_axis": ("cu_single_axis_sliced", "SWITCH-10"),
    "custom_broadcast::slicing_unsupported::slice_padded_broadcast": ("cu_padded_digit_sliced", "SWITCH-10"),
}

# collect-rule cases for the two packet fixtures: (dtype, time, packet, time2, packet2), over
# the axes of tests/ir/test_rules_collect.py (A = 8, B = 64), where `collect_op` resolves them
COLLECT_CASES = {
    "collect:packet_not_the_fetched_one": (DType.I8, "A", "B % 32", "A", "A # 32"),
    "collect:outer_flit_not_in_time": (DType.BF16, "A", "B % 32", "A", "B % 16"),
}


def run(case: tuple) -> str | None:
    si, ti, so, to, cfg = case[:5]
    v = check_switch(m(si), m(ti), m(so), m(to), cfg)
    return None if v is None else v.code


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused(name: str) -> None:
    case = REFUSED[name]
    si, ti, so, to, cfg, expected = case
    v = check_switch(m(si), m(ti), m(so), m(to), cfg)
    assert v is not None and v.code == expected, (name, v)
    assert v.code in RULES and v.message and v.help


def test_every_reference_fixture_has_a_refused_case() -> None:
    assert len([k for k in REFERENCE_FIXTURES if "custom_broadcast" not in k]) == 27
    for fixture, (case, rule) in REFERENCE_FIXTURES.items():
        if case.startswith("collect:"):
            dtype, t, p, t2, p2 = COLLECT_CASES[case]
            v = check_collect(collect_op(dtype, t, p, t2, p2))
            assert v is not None and v.code == rule, (fixture, v)
        else:
            assert REFUSED[case][5] == rule, fixture


def test_every_switch_rule_has_a_refused_case() -> None:
    # SWITCH-19 (the inter-transpose run): tests/ir/switch/test_inter_transpose_run.py
    raised = {case[5] for case in REFUSED.values()} | {"SWITCH-1", "SWITCH-18", "SWITCH-19"}
    assert raised == set(RULES)


def test_packet_alignment() -> None:
    v = check_packet_align(m("N # 6"), DType.I8)
    assert v is not None and v.code == "SWITCH-18" and "# 8`" in v.help
    assert check_packet_align(m("Q"), DType.I8) is None
    assert check_packet_align(m("N"), DType.BF16) is None
    assert check_switch(m("L"), m("M"), m("L"), m("M"), SC.FORWARDING, m("Y"), DType.I8).code == "SWITCH-18"


ACCEPTED = {
    "forwarding": ("H, N", "M", "H, N", "M", SC.FORWARDING, 1),
    "b01": ("L", "M", "L / 8, X, Y", "M / 2, L / 4 % 2, M % 2, L % 4", B01(slice1=2, slice0=4, time0=2), 8),
    "b01_literal_tiles": ("L", "M", "L / 8, 2, 4", "M / 2, L / 4 % 2, M % 2, L % 4",
                          B01(slice1=2, slice0=4, time0=2), 8),
    "b1": ("L", "M", "L / 64, Y, L % 16", "M, L / 16 % 4", B1(slice1=4, slice0=16), 64),
    "b1_padded_tile": ("L", "M", "L / 64, 1 # 4, L % 16", "M, L / 16 % 4", B1(slice1=4, slice0=16), 64),
    "transpose": ("L", "M", "L / 16, L % 2, L / 2 % 8", "M", TR(slice1=8, slice0=2), 16),
    "inter_transpose": ("L", "M", "L / 32, M / 2 % 4, L % 8", "M / 8, M % 2, L / 8 % 4",
                        IT(slice1=4, slice0=8, time0=2), 32),
    "transposed_b1": ("L", "M", "L / 32, Z, L / 8 % 4", "M, L % 8", TB1(slice1=4, slice0=8), 32),
    "cu_identity": ("L", "M", "L", "M", CB(ring_size=1), 1),
    "cu_reverse_digits": ("H, N", "M", "N, H % 8, H / 8", "M", CB(ring_size=256), 256),
    "cu_inner_swap": ("Q, Z, N", "M", "Q, N, Z", "M", CB(ring_size=32), 32),
    "cu_two_tiles_apart": ("H, N", "M", "H / 2, X, N / 2, W", "M, H % 2, N % 2", CB(ring_size=8), 8),
    "cu_pad_only_extract": ("H, R # 4", "M", "H, Y", "M, R", CB(ring_size=4), 4),
    "cu_padded_swap": ("Q # 16, Z # 16", "M", "Z # 32, Q # 8", "M", CB(ring_size=128), 128),
    "cu_whole_broadcast": ("L", "M", "V % 256", "M, L", CB(ring_size=256), 256),
    # neighbours of the padded tile axis: the same slot as a new axis of its full size, or pure padding
    "cu_tile_axis_full_slot": ("L", "M", "L / 8, Y, W", "M, L % 8", CB(ring_size=8), 8),
    "cu_pure_padding_tile": ("L", "M", "L / 8, 1 # 4, W", "M, L % 8", CB(ring_size=8), 8),
    "b01_tile_axis_full_slot": ("L", "M", "L / 8, Y, W", "M, L / 2 % 4, L % 2", B01(slice1=4, slice0=2, time0=1), 8),
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_accepted(name: str) -> None:
    si, ti, so, to, cfg, ring = ACCEPTED[name]
    assert run(ACCEPTED[name]) is None
    if isinstance(cfg, type(CB(ring_size=1))):
        plan = plan_custom(m(si), m(ti), m(so), m(to))
        assert computed_ring_size(routes(m(si), m(so), m(to), plan)) == ring
    else:
        assert ring_size(cfg) == ring


def test_every_config_has_an_accepted_case() -> None:
    kinds = {type(case[4]).__name__ for case in ACCEPTED.values()}
    assert kinds == {"Forwarding", "Broadcast01", "Broadcast1", "Transpose", "InterTranspose",
                     "TransposedBroadcast1", "CustomBroadcast"}


def test_frames_are_the_help_line_and_are_accepted() -> None:
    """The inferred output of a named config is legal output, and the SWITCH-7 help shows it."""
    cfg = IT(slice1=2, slice0=16, time0=4)
    frames = switch_frames(m("L"), m("M"), cfg)
    assert frames.out_slice.equivalent(m("L / 32, M / 4 % 2, L % 16"))
    assert frames.out_time.equivalent(m("M / 8, M % 4, L / 16 % 2"))
    assert check_switch(m("L"), m("M"), frames.out_slice, frames.out_time, cfg) is None
    wrong = check_switch(m("L"), m("M"), m("L"), m("M"), cfg)
    assert wrong.code == "SWITCH-7" and f"`{frames.out_slice.normalize()}`" in wrong.help
    tiles = switch_frames(m("L"), m("M"), B01(slice1=2, slice0=4, time0=1))
    assert tiles.slice_slots[1:] == (2, 4) and Broadcast(2) in tiles.out_slice.flatten()


def test_help_lines_are_legal_choices() -> None:
    """The help of the ring and order rules names a choice the rules accept."""
    v = check_switch(m("L"), m("M"), m("L / 4, Y"), m("M, L % 4"), CB(ring_size=16))
    assert v.help == "SwitchConfig.CUSTOM_BROADCAST(ring_size=4)"
    assert run(("L", "M", "L / 4, Y", "M, L % 4", CB(ring_size=4))) is None
    v = check_switch(m("L"), m("M"), m("L / 4, Y"), m("L % 4, M"), CB(ring_size=4))
    legal = v.help.split("`")[1]
    assert run(("L", "M", "L / 4, Y", legal, CB(ring_size=4))) is None
    v = check_switch(m("L"), m("M"), m("L / 4, W, W"), m("M, L % 4"), CB(ring_size=4))
    assert run(("L", "M", v.help.split("`")[1], "M, L % 4", CB(ring_size=4))) is None


def test_snoop_bitmap_of_a_broadcast() -> None:
    """Each output slice of a 4-slice broadcast snoops exactly its own group of four."""
    plan = plan_custom(m("L"), m("M"), m("L / 4, Y"), m("M, L % 4"))
    bitmap = snoop_bitmap(routes(m("L"), m("L / 4, Y"), m("M, L % 4"), plan))
    assert len(bitmap) == 256
    assert all(bitmap[s] == tuple(range(s // 4 * 4, s // 4 * 4 + 4)) for s in range(256))


def test_the_switch_op_replaces_slice_and_time_only() -> None:
    """The traced op's result type, and its rules run on the stream's packet and dtype too."""
    from ir.data_movement_ops import Switch
    from ir.ops import Value
    from ir.types import StreamType

    def op(stream, out_slice, out_time, config):
        return Switch(input=Value(0, stream), out_slice=m(out_slice), out_time=m(out_time), config=config)

    stream = StreamType(DType.I8, m("1"), m("1 # 2"), m("L"), m("M"), m("Q"))
    legal = op(stream, "L / 4, Y", "M, L % 4", CB(ring_size=4))
    assert legal.check() is None
    assert legal.infer_type() == StreamType(DType.I8, m("1"), m("1 # 2"), m("L / 4, Y"), m("M, L % 4"), m("Q"))
    assert op(stream, "L / 4, Y", "L % 4, M", CB(ring_size=4)).check().code == "SWITCH-15"
    odd = StreamType(DType.I8, m("1"), m("1 # 2"), m("L"), m("M"), m("N"))  # 4 bytes
    assert op(odd, "L", "M", SC.FORWARDING).check().code == "SWITCH-18"


def test_replicated_input_reads_its_own_copy() -> None:
    """An input already copied over a Slice digit needs no exchange to keep that copy."""
    assert run(("H, 4", "M", "H, 4", "M", CB(ring_size=1))) is None
    assert run(("H, 4", "M", "H / 2, 4, W", "M, H % 2", CB(ring_size=8))) is None


@pytest.mark.parametrize("name", [pytest.param(k, marks=pytest.mark.slow) if k == "cu_whole_broadcast" else k
                                  for k in sorted(ACCEPTED) if k.startswith("cu_")])
def test_bitmap_agrees_with_the_cell_enumeration(name: str) -> None:
    """(The full 256 x 256 broadcast enumerates 64k cells in Python, so it runs under -m slow.)"""
    from ir.switch.custom import checked_bitmap

    si, ti, so, to = (m(x) for x in ACCEPTED[name][:4])
    bitmap = checked_bitmap(si, ti, so, to)
    assert len(bitmap) == so.size and any(bitmap)


def test_a_wrong_bitmap_is_an_ice_finding() -> None:
    from ir.errors import InternalError
    from ir.switch.custom import bitmap_disagreement, checked_bitmap

    si, ti, so, to = m("L"), m("M"), m("L / 4, Y"), m("M, L % 4")
    bitmap = list(checked_bitmap(si, ti, so, to))
    bitmap[9] = (bitmap[9][0], bitmap[9][1], bitmap[9][2], 200)  # one lane snoops a stranger
    assert bitmap_disagreement(si, so, to, 4, tuple(bitmap)) == 9
    bitmap[9] = bitmap[9][:3]  # one lane misses a source
    assert bitmap_disagreement(si, so, to, 4, tuple(bitmap)) == 9
    with pytest.raises(InternalError):
        checked_bitmap(si, ti, so, m("L % 4, M"))


def test_design_note_lists_every_rule() -> None:
    """ir/switch/README.md's rule tables name exactly the rule IDs the code defines."""
    import re
    from pathlib import Path

    from ir.switch.rule_titles import TRANSPOSE_RULES

    note = (Path(__file__).parents[3] / "ir" / "switch" / "README.md").read_text()
    listed = set(re.findall(r"^\| ((?:SWITCH|TRANSPOSE)-\d+) \|", note, re.M))
    assert listed == set(RULES) | set(TRANSPOSE_RULES)


def test_padded_tile_axis_help_is_accepted() -> None:
    """SWITCH-11's help for a padded broadcast axis names a slot the rules accept."""
    v = check_switch(m("L"), m("M"), m("L / 8, X # 4, W"), m("M, L % 8"), CB(ring_size=8))
    assert v.code == "SWITCH-11" and "`X # 4`" in v.message
    tile = v.help.split("`")[1]
    assert tile == "4" and run(("L", "M", f"L / 8, {tile}, W", "M, L % 8", CB(ring_size=8))) is None
    # an input digit padded in out_slice is no broadcast axis: the padded-axis rule leaves it alone
    assert run(("Q # 16, Z # 16", "M", "Z # 32, Q # 8", "M", CB(ring_size=128))) is None
