"""Contraction Engine rules (docs/machine/contraction.md) and their derived quantities.

Kernels are examples/dot_product.py, 4b and the section 7 fixtures (loaded from examples/ and
tests/fixtures/ by `tests.kernel_files`) plus one kernel per rule without a fixture
(`kernels_contract`). Because other stages' rules are written alongside, the kernel
tests look only at the codes this family can produce.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ir.dtypes import DType
from ir.mapping.api import m
from ir.mapping.factors import factors_of
from ir.mapping.ops import Entry
from ir.ops import ContractLane, ContractOuter, ContractPacket, ContractTime, LaneMode, Value
from ir.rules.contract_geometry import accumulator_cells, lane_geometry, outer_geometry, packet_depth, trf_read_size
from ir.rules.contract_outer import check_outer
from ir.rules.contract_reducers import check_lane, check_packet, check_time
from ir.rules.time_reduction import time_reduction
from ir.types import MAIN, SUB, CStreamType, StreamType, TrfType

from tests import kernel_files as kf
from tests.ir import kernels_contract as kc
from tests.ir.tabulation import cells_tabulated

FAMILY = ("OUTER-", "PACKET-", "TIME-", "LANE-", "CTX-2", "SPACE-4")


def kernel(name: str):
    """An example, a refused fixture or a kernel of `kc.RULES`, by its function name."""
    if name in kf.example_names():
        return kf.example(name)
    if name in kf.fixture_names():
        return kf.fixture(name)
    return kc.rule(name)


def ours(diagnostics) -> list:
    """The diagnostics of this family (CTX-2 and SPACE-4 at contract_outer included)."""
    return [d for d in diagnostics if d.code.startswith(FAMILY)]


def stage_op(name: str, stage: str):
    """The traced op of a stage (the first one, in program order)."""
    result = kernel(name).trace()
    return next(op for op in result.kernel.ops if op.STAGE == stage)


def eq(a, b) -> bool:
    return a.equivalent(b)


# --- valid kernels ------------------------------------------------------------------------

VALID = [
    "dot_product_kernel", "gemv_kernel", "gemm_kernel", "gemm_i8_kernel", "gemm_bf16_kernel",
    "row_sum_kernel", "fetch_commit_simple", "base", "time_padded_kept",
]


@pytest.mark.parametrize("name", VALID)
def test_valid_examples_have_no_contraction_diagnostic(name: str) -> None:
    result = kernel(name).trace()
    assert ours(result.diagnostics) == []
    stages = [op.STAGE for op in result.kernel.ops]
    if name != "fetch_commit_simple":  # every other one really contracts: all four checks ran and passed
        assert {"contract_outer", "contract_packet", "contract_time", "contract_lane"} <= set(stages)


# --- docs/reference/diagnostics.md fixtures -------------------------------------------------------

FIXTURES = [
    ("r05a_time_mismatch", "OUTER-6"),
    ("r05b_flit_mismatch", "OUTER-4"),
    ("r05c_packed_time", "OUTER-5"),
    ("r07_time_order", "TIME-2"),
    ("r08_mixed_operands", "OUTER-1"),
    ("r11_accumulator", "LANE-6"),
    ("r12_sub_contraction", "CTX-2"),
]


@pytest.mark.parametrize(("name", "code"), FIXTURES)
def test_fixture_is_refused_with_its_rule_at_the_marked_line(name: str, code: str) -> None:
    fixture = kf.fixture(name)
    found = ours(fixture.trace().diagnostics)
    assert [d.code for d in found] == [code]
    assert found[0].line == kf.marked_line(fixture)
    assert found[0].file == fixture.file_display


def _only(name: str):
    (d,) = ours(kernel(name).trace().diagnostics)
    return d


def test_r05a_names_both_time_sizes() -> None:
    d = _only("r05a_time_mismatch")
    assert "6 steps" in d.notes[0] and "8 packets" in d.notes[0] and "`A`" in d.notes[0]


def test_r05b_help_is_the_corrected_packet() -> None:
    d = _only("r05b_flit_mismatch")
    assert "`K % 32`" in d.notes[0] and "`B % 32`" in d.notes[0]
    assert 'm("B")' in d.help


def test_r05c_names_the_packed_time_factor() -> None:
    d = _only("r05c_packed_time")
    assert "`A / 4`" in d.notes[0] and "`B / 32`" in d.notes[0] and 'm("B")' in d.help


def test_r07_help_keeps_the_stream_order() -> None:
    d = _only("r07_time_order")
    assert 'm("I % 32, J / 8 % 4")' in d.help


def test_r08_help_names_the_legal_weight_type() -> None:
    d = _only("r08_mixed_operands")
    assert "i8" in d.message and "bf16" in d.message and "as i8" in d.help


def test_r11_help_gives_the_product_and_both_ways_out() -> None:
    d = _only("r11_accumulator")
    assert "8 lanes x 8 slots x 32 columns = 2048 cells > 1024" in d.message
    assert "2048" in d.help and "1024" in d.help
    assert "at most 4 time position(s) inside the reduced factor" in d.help
    assert "at most 4 lanes" in d.help
    assert "IT = 8" in d.notes[0]


def test_r12_help_points_to_the_main_context() -> None:
    d = _only("r12_sub_contraction")
    assert "ctx.main.begin" in d.help


def test_r12_in_the_main_context_compiles() -> None:
    fixture = kf.fixture("r12_sub_contraction")
    own = kf.kernel_source(fixture)
    assert own.count("y = (ctx.sub.begin(x.view())") == 1  # the fixture streams in sub once
    source = Path(fixture.file).read_text(encoding="utf-8")
    assert source.count(own) == 1
    main = own.replace("y = (ctx.sub.begin(", "y = (ctx.main.begin(")
    fixed = kf.load_source(source.replace(own, main), "r12-in-main")
    assert ours(fixed.r12_sub_contraction.trace().diagnostics) == []


# --- one kernel per remaining rule ---------------------------------------------------------

RULE_KERNELS = [
    ("space4_slices", "SPACE-4"), ("outer3_half_flit", "OUTER-3"), ("outer7_bcast_outermost", "OUTER-7"),
    ("outer8_spread_trf", "OUTER-8"), ("outer9_rows_not_walked", "OUTER-9"),
    ("outer9_lane_in_time", "OUTER-9"), ("outer10_slice_digit", "OUTER-10"),
    ("outer11_long_walk", "OUTER-11"), ("packet2_wide", "PACKET-2"), ("packet3_three", "PACKET-3"),
    ("packet4_no_tree", "PACKET-4"), ("time1_foreign", "TIME-1"), ("time3_broadcast", "TIME-3"),
    ("time3_padding", "TIME-3"), ("time3_padded_own", "TIME-3"), ("time4_unpadded", "TIME-4"),
    ("lane2_wide", "LANE-2"), ("lane3_packet", "LANE-3"), ("lane4_columns", "LANE-4"),
    ("lane5_time", "LANE-5"), ("lane6_interleaved", "LANE-6"),
]


@pytest.mark.parametrize(("name", "code"), RULE_KERNELS)
def test_rule_kernel_is_refused_at_the_marked_line(name: str, code: str) -> None:
    rule = kc.rule(name)
    found = ours(rule.trace().diagnostics)
    assert [d.code for d in found] == [code]
    assert found[0].line == kf.marked_line(rule)


def _text(name: str) -> str:
    """Headline, caret label, notes and help of the kernel's one diagnostic, joined."""
    d = _only(name)
    return " | ".join([d.message, *d.notes, d.help or ""])


def test_messages_name_the_numbers() -> None:
    assert "out_packet `E % 16` is 16 x i8 = 16 bytes" in _text("outer3_half_flit")
    assert 'use m("A, 2")' in _text("outer7_bcast_outermost")
    assert "R = 1" in _text("outer8_spread_trf") and "TRF element `H, G`" in _text("outer8_spread_trf")
    assert "does not walk `O`" in _text("outer9_rows_not_walked")
    assert "TRF lane `R`" in _text("outer9_lane_in_time")
    assert "(Slice)" in _text("outer10_slice_digit") and "drop `S % 2` from out_time" in _text("outer10_slice_digit")
    assert "9 loop entries" in _text("outer11_long_walk")
    assert "[8:0, 2:8, 2:0, 2:4, 2:0, 2:2, 2:0, 2:1, 2:0]" in _text("outer11_long_walk")
    assert "64 columns" in _text("packet2_wide") and "size 3" in _text("packet3_three")
    assert 'd = 1: m("E / 2")' in _text("packet4_no_tree")
    assert "keeps `R`" in _text("time1_foreign")
    assert "has `2`" in _text("time3_broadcast") and "has `1 # 2`" in _text("time3_padding")
    assert "`F # 8`" in _text("time4_unpadded")
    assert "size 16, not 8" in _text("lane2_wide") and 'use m("R")' in _text("lane3_packet")
    assert 'use m("A, E / 8")' in _text("lane4_columns") and 'use m("A")' in _text("lane5_time")
    assert "8 lanes x 8 slots x 32 columns = 2048" in _text("lane6_interleaved")
    assert "at most 16 columns" in _text("lane6_interleaved")


# --- hand-built ops: rules no DSL kernel reaches first, order, robustness -----------------

AX = {"A": 8, "E": 32, "R": 8, "K": 16, "L": 2, "O": 4, "X": 4, "B": 64, "W": 2**22, "Q": 3}


def mm(text: str):
    return m(text, axes=AX)


SPACE = dict(chip=mm("1"), cluster=mm("1 # 2"), slice=mm("1 # 256"))


def stream(dtype: DType, time_: str, packet: str, context: str = MAIN) -> Value:
    return Value(0, StreamType(dtype, time=mm(time_), packet=mm(packet), context=context, **SPACE))


def trf(dtype: DType, lane: str, element: str, **space) -> Value:
    return Value(1, TrfType(dtype, lane=mm(lane), element=mm(element), **{**SPACE, **space}))


def outer(s: Value, w: Value, time_: str, packet: str) -> ContractOuter:
    return ContractOuter(input=s, trf=w, time=mm(time_), packet=mm(packet))


def cstream(dtype: DType, lane: str, time_: str, packet: str, pre: str | None = None) -> Value:
    acc = DType.I32 if dtype.is_int else DType.F32
    return Value(2, CStreamType(acc, dtype, lane=mm(lane), time=mm(time_), packet=mm(packet),
                                pre_time=None if pre is None else mm(pre), **SPACE))


def code(v) -> str | None:
    return None if v is None else v.code


def test_hand_built_base_passes() -> None:
    assert check_outer(outer(stream(DType.I8, "A", "E"), trf(DType.I8, "R", "E"), "A", "E")) is None


def test_outer_2_lane_count() -> None:
    v = check_outer(outer(stream(DType.I8, "A", "E"), trf(DType.I8, "1 # 3", "E"), "A", "E"))
    assert code(v) == "OUTER-2" and "TRF-LANE" in v.notes[0]


def test_outer_11_loop_too_long() -> None:
    v = check_outer(outer(stream(DType.I8, "A", "E"), trf(DType.I8, "1", "E"), "A, W / 32", "E"))
    assert code(v) == "OUTER-11" and "1048576" in v.message


def test_outer_5_odd_time_with_two_flits() -> None:
    v = check_outer(outer(stream(DType.BF16, "Q", "K"), trf(DType.BF16, "1", "L, K"), "Q", "L, K"))
    assert code(v) == "OUTER-5" and "3 steps" in v.label


def test_space_4_cluster() -> None:
    v = check_outer(outer(stream(DType.I8, "A", "E"), trf(DType.I8, "R", "E", cluster=mm("1 # 1")), "A", "E"))
    assert code(v) == "SPACE-4" and "Cluster" in v.message


def test_ctx_2_comes_before_everything() -> None:
    op = outer(stream(DType.I8, "A", "E", context=SUB), trf(DType.BF16, "1 # 3", "E"), "A", "E % 16")
    assert code(check_outer(op)) == "CTX-2"


def test_outer_rules_in_order() -> None:
    s = stream(DType.I8, "A", "E")
    assert code(check_outer(outer(s, trf(DType.BF16, "1 # 3", "E"), "A", "E % 16"))) == "OUTER-1"
    assert code(check_outer(outer(s, trf(DType.I8, "1 # 3", "E"), "A", "E % 16"))) == "OUTER-2"
    assert code(check_outer(outer(s, trf(DType.I8, "R", "E"), "Q", "E % 16"))) == "OUTER-3"


def test_packet_1_input_packet_bytes() -> None:
    v = check_packet(ContractPacket(input=cstream(DType.I8, "R", "A", "E % 16"), packet=mm("1")))
    assert code(v) == "PACKET-1" and "16 x i8 = 16 bytes" in v.label


def test_packet_rules() -> None:
    c = cstream(DType.BF16, "1", "A", "K")
    assert check_packet(ContractPacket(input=c, packet=mm("K / 4"))) is None
    assert check_packet(ContractPacket(input=c, packet=mm("K / 4 # 16"))) is None
    assert code(check_packet(ContractPacket(input=c, packet=mm("K % 4")))) == "PACKET-4"


def test_lane_1_too_many_columns() -> None:
    op = ContractLane(input=cstream(DType.I8, "R", "A", "B", pre="A"), time=mm("A, B"), packet=mm("R"),
                      mode=LaneMode.INTERLEAVED)
    v = check_lane(op)
    assert code(v) == "LANE-1" and "64 columns" in v.label


def test_lane_sequential_geometry() -> None:
    c = cstream(DType.BF16, "1 # 2", "A", "K", pre="X, A")
    op = ContractLane(input=c, time=mm("A, 1 # 2, K / 8"), packet=mm("K % 8"), mode=LaneMode.SEQUENTIAL)
    assert check_lane(op) is None
    g = lane_geometry(c.type, op.time, op.packet, op.mode)
    assert g.f.size == 4 and eq(g.expected_packet, mm("K % 8")) and g.cycles == 32


def test_mapping_failures_are_rule_failures_not_exceptions() -> None:
    overshoot = "A, A"  # positions decode out of range: no factor form (docs/mapping-language.md)
    v = check_time(ContractTime(input=cstream(DType.I8, "R", "A", "1"), time=mm(overshoot)))
    assert code(v) == "TIME-1" and "MAP-overshoot" in v.notes[0]
    v = check_outer(outer(stream(DType.I8, "A", "E"), trf(DType.I8, "R", "E"), overshoot, "E"))
    assert code(v) is not None and code(v).startswith("OUTER-")
    v = check_lane(ContractLane(input=cstream(DType.I8, "R", "A", "1", pre="A"), time=mm(overshoot),
                                packet=mm("R"), mode=LaneMode.INTERLEAVED))
    assert code(v) == "LANE-4"


def test_large_mappings_stay_symbolic() -> None:
    """A 2^17-step time (a 2^22-cell TRF element) is checked from factor forms, no cell tables."""
    v = check_outer(outer(stream(DType.I8, "W / 32", "W % 32"), trf(DType.I8, "1", "W"), "W / 32", "W % 32"))
    assert code(v) == "OUTER-11" and "131072 iterations" in v.message  # one contiguous TRF walk
    c = cstream(DType.I8, "1", "W / 32", "1")
    assert check_time(ContractTime(input=c, time=mm("W / 65536"))) is None
    red = time_reduction(c.type.time, mm("W / 65536"))
    assert red.entries == ((64, "KEEP"), (2048, "REDUCE")) and red.inner_time == 1


def test_gemm_contraction_checks_are_cheap() -> None:
    ops = [op for op in kernel("gemm_kernel").trace().kernel.ops if op.STAGE.startswith("contract_")]
    factors_of.cache_clear()
    with cells_tabulated() as decoded:
        assert all(op.check() is None for op in ops)
    assert decoded[0] <= 4096  # only small factor tables, never a whole mapping


# --- derived quantities pinned by examples/ ----------------------------------------------


def _geometry(name: str):
    op = stage_op(name, "contract_outer")
    return outer_geometry(op.input.type, op.trf.type, op.time, op.packet)


def _depth(name: str) -> int:
    op = stage_op(name, "contract_packet")
    return packet_depth(op.input.type.packet, op.packet)


def _reduction(name: str):
    op = stage_op(name, "contract_time")
    return time_reduction(op.input.type.time, op.time)


def _lane(name: str):
    op = stage_op(name, "contract_lane")
    return lane_geometry(op.input.type, op.time, op.packet, op.mode)


def test_example_3_gemm() -> None:
    g = _geometry("gemm_kernel")
    assert g.pack == 2 and g.read_size == 32 and g.width == "WIDE" and g.tiling == 1
    assert g.op_bcast.size == 1 and g.ot_bcast.size == 1 and g.lanes == 8
    assert g.trf_walk == (Entry(32, 0), Entry(8, 1))
    assert _depth("gemm_kernel") == 5
    red = _reduction("gemm_kernel")
    assert red.entries == ((32, "KEEP"), (4, "KEEP"), (2, "REDUCE"))
    assert red.reduced[0].factor.step == 32 and red.inner_time == 1
    lane = _lane("gemm_kernel")
    assert lane.f.size == 1 and lane.expected_packet.text() == "J % 8"


def test_example_4_i8_gemm() -> None:
    g = _geometry("gemm_i8_kernel")
    assert g.pack == 2 and g.read_size == 64 and g.read_bits == 512 and g.wide and g.width == "WIDE"
    assert g.trf_walk == (Entry(32, 0), Entry(8, 1))
    assert g.time_broadcast == () and g.packet_broadcast == 1
    assert _depth("gemm_i8_kernel") == 6
    red = _reduction("gemm_i8_kernel")
    assert red.entries == ((32, "KEEP"), (4, "KEEP"), (2, "REDUCE")) and red.slots == 1
    assert red.reduced[0].factor.step == 64  # K / 64 summed in time


def test_example_4b_bf16_gemm() -> None:
    g = _geometry("gemm_bf16_kernel")
    assert g.pack == 2 and g.read_size == 32 and g.width == "WIDE"
    assert g.trf_walk == (Entry(32, 0), Entry(16, 1))
    assert _depth("gemm_bf16_kernel") == 5
    assert _reduction("gemm_bf16_kernel").entries == ((32, "KEEP"), (4, "KEEP"), (4, "REDUCE"))


def test_example_1_dot() -> None:
    g = _geometry("dot_product_kernel")
    assert g.pack == 2 and g.read_size == 32 and g.trf_walk == (Entry(64, 1),)
    assert _depth("dot_product_kernel") == 5
    red = _reduction("dot_product_kernel")
    assert red.entries == ((64, "REDUCE"),) and red.inner_time == 1
    assert _lane("dot_product_kernel").expected_packet.text() == "1 # 8"


def test_example_5_row_sum() -> None:
    g = _geometry("row_sum_kernel")
    assert g.pack == 2 and g.read_size == 64
    assert g.trf_walk == (Entry(2, 1), Entry(8, 0))  # J / 64 walked, I % 8 a TRF broadcast
    assert _depth("row_sum_kernel") == 6
    red = _reduction("row_sum_kernel")
    assert red.entries == ((2, "REDUCE"), (8, "KEEP")) and red.inner_time == 8
    lane = _lane("row_sum_kernel")
    assert accumulator_cells(lane.mode, lane.lanes, lane.cols, red.inner_time) == 1 * 8 * 32 == 256


def test_packet_example_of_9_2() -> None:
    ax = {"T": 4, "A": 8, "B": 2}
    assert packet_depth(m("A, B", axes=ax), m("A # 16", axes=ax)) == 1
    assert packet_depth(m("A, B", axes=ax), m("A", axes=ax)) == 1
    assert packet_depth(m("A, B", axes=ax), m("1", axes=ax)) == 4
    assert packet_depth(m("A, B", axes=ax), m("A, B", axes=ax)) == 0
    assert packet_depth(m("A, B", axes=ax), m("B", axes=ax)) is None
    space = dict(chip=m("1"), cluster=m("1 # 2"), slice=m("1 # 256"))
    s = StreamType(DType.BF16, time=m("T", axes=ax), packet=m("A, B", axes=ax), **space)
    w = TrfType(DType.BF16, lane=m("1"), element=m("A, B", axes=ax), **space)
    g = outer_geometry(s, w, m("T", axes=ax), m("A, B", axes=ax))
    assert g.pack == 1 and g.read_size == 16 and g.width == "NARROW" and g.trf_walk == (Entry(4, 0),)


def test_book_examples_of_9_1() -> None:
    # E = O, K; out_packet = L, K; K = 16 (bf16): R = 16 and OP_bcast = L
    s = stream(DType.BF16, "X, L", "K")
    w = trf(DType.BF16, "1", "O, K")
    op = outer(s, w, "X, O", "L, K")
    assert check_outer(op) is None
    g = outer_geometry(s.type, w.type, op.time, op.packet)
    assert g.read_size == 16 and g.op_bcast.text() == "L"
    assert g.pack == 2 and g.tiling == 4 and g.ot_bcast.text() == "O" and g.time_broadcast == (4,)
    assert g.trf_walk == (Entry(4, 0), Entry(4, 1)) and g.width == "NARROW"
    # K in time: E = K, out_packet = 1 # 16: R = 1
    assert trf_read_size(mm("K"), mm("1 # 16"), DType.BF16) == 1
    k_in_time = outer(stream(DType.BF16, "K", "1 # 16"), trf(DType.BF16, "1", "K"), "K", "1 # 16")
    assert check_outer(k_in_time) is None
    g = outer_geometry(k_in_time.input.type, k_in_time.trf.type, k_in_time.time, k_in_time.packet)
    assert g.read_size == 1 and g.trf_walk == (Entry(16, 1),) and g.packet_broadcast == 16


def test_reduce_b_inner_time() -> None:
    ax = {"A": 8, "B": 64}
    red = time_reduction(m("B / 16, A % 8", axes=ax), m("A % 8", axes=ax))
    assert red.entries == ((4, "REDUCE"), (8, "KEEP")) and red.inner_time == 8
    assert red.loops[1].stride_t == 1 and red.loops[1].stride_ot == 1 and red.reduced[0].stride_t == 8


def test_time_reduction_of_broadcast_and_padding() -> None:
    red = time_reduction(mm("2, A, 4"), mm("2, A"))
    assert red.entries == ((2, "KEEP"), (8, "KEEP"), (4, "REDUCE")) and red.inner_time == 1
    red = time_reduction(mm("4, A"), mm("2, A"))  # a BroadcastFactor split: kept part outer, reduced rest inner
    assert red.entries == ((2, "KEEP"), (2, "REDUCE"), (8, "KEEP")) and red.inner_time == 8
    assert [lp.stride_t for lp in red.loops] == [16, 8, 1] and red.loops[0].stride_ot == 8
    with pytest.raises(ValueError):
        time_reduction(mm("A, X"), mm("X, A"))


def test_geometry_functions_refuse_undefined_inputs() -> None:
    s = stream(DType.I8, "A", "E").type
    w = trf(DType.I8, "R", "E").type
    with pytest.raises(ValueError):
        outer_geometry(s, w, mm("A"), mm("E % 16"))
    with pytest.raises(ValueError):
        outer_geometry(s, w, mm("Q"), mm("E"))
