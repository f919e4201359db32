"""Collect and TRF rules (docs/machine/collect.md), the `to_trf` defaults (3.2) and the derived values.

Fixtures R1, R4, R6 (tests/fixtures/) and the valid examples (examples/) are loaded from
their files by tests/kernel_files.py; the other rule IDs use small kernels or hand-built ops.
"""

from __future__ import annotations


import pytest

from ir import ops
from ir.dtypes import DType
from ir.mapping import m
from ir.rules.collect import (
    CollectPlan, TrfGeometry, check_collect, check_to_trf, collect_plan, infer_trf, trf_geometry,
)
from ir.types import StreamType, TrfType
from npu_opt import *  # noqa: F403 - the kernel DSL
from tests import kernel_files as kf
from tests.ir.tabulation import cells_tabulated
from ir.mapping.factors import factors_of

axes(A=8, B=64, E=32, K=64, H=16, Q=20, I=512, J=512)  # noqa: F405

MY_STAGES = frozenset({"collect", "to_trf"})
ONE, CLUSTER, SLICE = m("1"), m("1 # 2"), m("1 # 256")


def code(v) -> str | None:
    return None if v is None else v.code


def collect_op(dtype: DType, time: str, packet: str, time2: str, packet2: str,
               slice_: str = "1 # 256") -> ops.Collect:
    src = StreamType(dtype, ONE, CLUSTER, m(slice_), m(time), m(packet))
    out = StreamType(dtype, ONE, CLUSTER, m(slice_), m(time2), m(packet2))
    return ops.Collect(input=ops.Value(0, src), time=m(time2), packet=m(packet2), result=ops.Value(1, out))


def trf_op(dtype: DType, time: str, packet: str, lane: str, element: str) -> ops.ToTrf:
    src = StreamType(dtype, ONE, CLUSTER, SLICE, m(time), m(packet), "sub")
    out = TrfType(dtype, ONE, CLUSTER, SLICE, m(lane), m(element))
    return ops.ToTrf(input=ops.Value(0, src), lane=m(lane), element=m(element), result=ops.Value(1, out))


# --- the valid examples ---------------------------------------------------------------------


@pytest.mark.parametrize("name", kf.example_names())
def test_valid_examples_pass_collect_rules(name: str) -> None:
    result = kf.example(name).trace()
    assert [d.code for d in result.diagnostics if d.stage in MY_STAGES] == []
    checked = [op for op in result.kernel.ops if isinstance(op, (ops.Collect, ops.ToTrf))]
    assert checked and all(op.check() is None for op in checked)


def test_gemm_collect_and_trf_checks_are_symbolic() -> None:
    """The collect and to_trf checks of GEMM decode no cells beyond small factor tables."""
    kernel = kf.example("gemm_kernel").trace().kernel
    checked = [op for op in kernel.ops if isinstance(op, (ops.Collect, ops.ToTrf))]
    factors_of.cache_clear()
    with cells_tabulated() as decoded:
        for op in checked:
            assert op.check() is None
    assert decoded[0] <= 4096


# --- fixtures -------------------------------------------------------------------------------

FIXTURES = [
    ("r01_half_flit", "COLLECT-2", "packet is 16 x i8 = 16 bytes", 'm("B % 32")'),
    ("r04_trf_too_big", "TRF-2", "8 lanes x 16384 bytes", None),
    ("r06_three_lanes", "TRF-1", "size 3", None),
]


@pytest.mark.parametrize(("name", "rule", "label", "hint"), FIXTURES)
def test_refusal_fixtures(name: str, rule: str, label: str, hint: str | None) -> None:
    fixture = kf.fixture(name)
    (d,) = fixture.trace().diagnostics  # the first and only diagnostic
    assert d.code == rule
    assert d.line == kf.marked_line(fixture)
    assert label in d.notes[0]
    if hint:
        assert hint in d.help


def test_r01_help_is_the_fix() -> None:
    (d,) = kf.fixture("r01_half_flit").trace().diagnostics
    assert '.collect(m("A, B / 32"), m("B % 32"))' in d.help


def test_r04_message_names_the_numbers() -> None:
    (d,) = kf.fixture("r04_trf_too_big").trace().diagnostics
    assert "131072 bytes = 8 lanes x 16384 bytes > 65536" in d.message


OTHER_FIXTURES = sorted(set(kf.fixture_names()) - {name for name, *_ in FIXTURES})


@pytest.mark.parametrize("name", OTHER_FIXTURES)
def test_other_fixtures_pass_collect_rules(name: str) -> None:
    result = kf.fixture(name).trace()
    assert [d.code for d in result.diagnostics if d.stage in MY_STAGES] == []


# --- collect plan (docs/machine/collect.md examples) ------------------------------------------------


@pytest.mark.parametrize(("dtype", "t", "p", "time2", "packet2", "flits"), [
    (DType.I8, "A", "K", "A, K / 32", "K % 32", 2),
    (DType.BF16, "A", "H", "A", "H", 1),
    (DType.I8, "A", "H", "A", "H # 32", 1),
    (DType.I32, "1", "A", "1", "A", 1),
    (DType.BF16, "A", "Q", "A, Q # 32 / 16", "Q # 32 % 16", 2),
])
def test_collect_plan(dtype: DType, t: str, p: str, time2: str, packet2: str, flits: int) -> None:
    plan = collect_plan(dtype, m(t), m(p))
    assert isinstance(plan, CollectPlan)
    assert plan.time2.equivalent(m(time2)) and plan.flit.equivalent(m(packet2))
    assert plan.flits == flits and plan.outer.size == flits
    assert plan.packet_bytes == m(p).size * dtype.bits // 8
    assert check_collect(collect_op(dtype, t, p, time2, packet2)) is None


def test_collect_plan_i32_after_widening() -> None:
    """docs/machine/collect.md: `i32` packet `[A % 8, B]`, `B = 8` -> `(T, A % 8 ; B)`."""
    plan = collect_plan(DType.I32, m("E"), m("A, H % 8"))
    assert plan.time2.equivalent(m("E, A")) and plan.flit.equivalent(m("H % 8"))


def test_collect_plan_half_bytes_is_none() -> None:
    assert collect_plan(DType.I4, m("A"), m("Q / 4")) is None


# --- COLLECT-1 .. COLLECT-5 -------------------------------------------------------------------


def test_collect_1_alignment() -> None:
    v = check_collect(collect_op(DType.I8, "A", "K % 4", "A", "K % 4 # 32"))
    assert code(v) == "COLLECT-1" and "4 x i8 = 4 bytes" in v.label
    assert code(check_collect(collect_op(DType.I4, "A", "Q / 4", "A", "Q"))) == "COLLECT-1"  # 2.5 bytes
    assert check_collect(collect_op(DType.I8, "A", "K % 8", "A", "K % 8 # 32")) is None


def test_collect_2_flit_size() -> None:
    v = check_collect(collect_op(DType.I8, "A", "K", "A, K / 16", "K % 16"))
    assert code(v) == "COLLECT-2" and 'm("K % 32")' in v.help


def test_collect_3_wrong_flit() -> None:
    v = check_collect(collect_op(DType.I8, "A", "K", "A, K % 2", "K / 2"))
    assert code(v) == "COLLECT-3" and "K % 32" in v.label


def test_collect_4_wrong_time() -> None:
    v = check_collect(collect_op(DType.I8, "A", "K", "K / 32, A", "K % 32"))
    assert code(v) == "COLLECT-4" and '.collect(m("A, K / 32"), m("K % 32"))' in v.help


def test_collect_5_digit_placed_twice() -> None:
    """Unreachable through the DSL until the Switch Engine changes Slice (docs/machine/collect.md)."""
    v = check_collect(collect_op(DType.I8, "B % 8", "K", "B % 8, K / 32", "K % 32", slice_="B"))
    assert code(v) == "COLLECT-5" and "B" in v.message


@device(chip=1)  # noqa: F405
def collect_mistakes(ctx: Context, x: HbmTensor[i8, m("1"), m("A, K")]) -> None:  # noqa: F405
    x = x.to_dm(ctx.tdma, DmTensor[i8, ONE, CLUSTER, SLICE, m("A, K")])  # noqa: F405
    (ctx.main.begin(x.view()).fetch(m("A"), m("K"))
     .collect(m("A, K % 2"), m("K / 2"))
     .commit_trim(m("K % 32")).commit())
    (ctx.main.begin(x.view()).fetch(m("A"), m("K"))
     .collect(m("K / 32, A"), m("K % 32"))
     .commit_trim(m("K % 32")).commit())
    (ctx.main.begin(x.view()).fetch(m("A"), m("K % 4, K / 4"))
     .collect(m("A, K / 32"), m("K % 32"))
     .commit_trim(m("K % 32")).commit())


def test_collect_rules_through_the_dsl() -> None:
    got = [(d.code, d.stage) for d in collect_mistakes.trace().diagnostics]
    assert got == [("COLLECT-3", "collect"), ("COLLECT-4", "collect"), ("COLLECT-3", "collect")]


# --- to_trf defaults (docs/porting.md) -------------------------------------------------------


def test_infer_trf_gemm() -> None:
    """examples/gemm.py: lane `J % 8`, element `J / 8 % 4, K` (the `to_trf()` of b)."""
    lane, element = infer_trf(m("J % 8, J / 8 % 4, K / 16"), m("K % 16"), None)
    assert lane.equivalent(m("J % 8")) and element.equivalent(m("J / 8 % 4, K"))
    assert str(lane) == "J % 8" and str(element) == "(J / 8 % 4, K)"
    (trf,) = [op for op in kf.example("gemm_kernel").trace().kernel.ops if isinstance(op, ops.ToTrf)]
    assert trf.lane.equivalent(m("J % 8")) and trf.element.equivalent(m("J / 8 % 4, K"))


def test_infer_trf_matches_explicit_examples() -> None:
    """examples/row_sum.py: `to_trf(m("1"), m("J"))` is what inference gives; example 4 too."""
    for name in ("row_sum_kernel", "gemm_i8_kernel", "dot_product_kernel", "gemv_kernel"):
        (trf,) = [op for op in kf.example(name).trace().kernel.ops if isinstance(op, ops.ToTrf)]
        t = trf.input.type
        lane, element = infer_trf(t.time, t.packet, None)
        assert lane.equivalent(trf.lane) and element.equivalent(trf.element), name
    (trf,) = [op for op in kf.example("row_sum_kernel").trace().kernel.ops if isinstance(op, ops.ToTrf)]
    assert infer_trf(trf.input.type.time, trf.input.type.packet, None) == (trf.lane, trf.element)


def test_infer_trf_merged_factors_and_shared_axes() -> None:
    # `I % 32` is one factor of size 32: lane 1, not `I / 4 % 8`
    assert infer_trf(m("I % 32, K / 32"), m("K % 32"), None) == (m("1"), m("I % 32, K"))
    # a prefix sharing an axis with the packet is skipped
    lane, _ = infer_trf(m("K / 16"), m("K % 16"), None)
    assert lane == m("1")
    # only lane given: element inferred from it
    lane, element = infer_trf(m("A, K / 16"), m("K % 16"), m("A / 2"))
    assert lane == m("A / 2") and element.equivalent(m("A % 2, K"))
    # a lane that does not divide time still returns (TRF-3 refuses it later)
    lane, element = infer_trf(m("A, K / 16"), m("K % 16"), m("1 # 3"))
    assert lane.size == 3 and element.size == 11 * 16


@device(chip=1)  # noqa: F405
def element_without_lane(ctx: Context, w: HbmTensor[bf16, m("1"), m("A, K")]) -> None:  # noqa: F405
    w = w.to_dm(ctx.tdma, DmTensor[bf16, ONE, CLUSTER, SLICE, m("A, K")])  # noqa: F405
    (ctx.sub.begin(w.view()).fetch(m("A"), m("K"))
     .collect(m("A, K / 16"), m("K % 16"))
     .to_trf(element=m("A, K")))


def test_trf_7_help_shows_inferred_values() -> None:
    (d,) = element_without_lane.trace().diagnostics
    assert d.code == "TRF-7" and 'm("A")' in d.help and 'm("K")' in d.help


# --- TRF-1 .. TRF-6 ---------------------------------------------------------------------------


def test_trf_rules() -> None:
    t, p = "A, K / 16", "K % 16"
    assert check_to_trf(trf_op(DType.BF16, t, p, "A", "K")) is None
    assert check_to_trf(trf_op(DType.BF16, t, p, "A / 2", "A % 2, K")) is None
    assert check_to_trf(trf_op(DType.BF16, t, p, "1", "A, K")) is None
    assert code(check_to_trf(trf_op(DType.BF16, t, p, "1 # 3", "A, K"))) == "TRF-1"
    v = check_to_trf(trf_op(DType.BF16, "K / 16", p, "1 # 8", "K"))
    assert code(v) == "TRF-3" and v.help.startswith('e.g. .to_trf(m("1"), m("K")) ')
    v = check_to_trf(trf_op(DType.BF16, "Q", p, "1 # 8", "Q, K % 16"))  # a pair element: no parentheses
    assert code(v) == "TRF-3" and '.to_trf(m("1"), m("Q, K % 16")) ' in v.help
    v = check_to_trf(trf_op(DType.BF16, t, p, "A % 4", "A / 4, K"))
    assert code(v) == "TRF-4" and "A / 2" in v.label
    v = check_to_trf(trf_op(DType.BF16, t, p, "A", "K % 16, K / 16"))
    assert code(v) == "TRF-5" and '.to_trf(m("A"), m("K"))' in v.help
    v = check_to_trf(trf_op(DType.F32, "A, K / 8", "K % 8", "A", "K"))
    assert code(v) == "TRF-6"


def test_trf_2_capacity_and_whole_bytes() -> None:
    v = check_to_trf(trf_op(DType.BF16, "A, I / 16, K / 16", "I % 16, K % 16", "A", "I, K"))
    assert code(v) == "TRF-2" and "524288 bytes = 8 lanes x 65536 bytes > 65536" in v.message
    assert check_to_trf(trf_op(DType.BF16, "A, I % 64, K / 16", "K % 16", "A", "I % 64, K")) is None
    v = check_to_trf(trf_op(DType.I4, "A", "K", "A", "K = 63"))
    assert code(v) == "TRF-2" and "31.5 bytes" in v.label


@device(chip=1)  # noqa: F405
def trf_f32(ctx: Context, w: HbmTensor[bf16, m("1"), m("A, H")]) -> None:  # noqa: F405
    w = w.to_dm(ctx.tdma, DmTensor[bf16, ONE, CLUSTER, SLICE, m("A, H")])  # noqa: F405
    (ctx.sub.begin(w.view()).fetch(m("A"), m("H"))
     .fetch_cast(f32)  # noqa: F405
     .collect(m("A, H / 8"), m("H % 8"))
     .to_trf())


def test_trf_6_through_the_dsl() -> None:
    assert [(d.code, d.stage) for d in trf_f32.trace().diagnostics] == [("TRF-6", "to_trf")]


# --- TRF geometry --------------------------------------------------------------------------


def test_trf_geometry_examples() -> None:
    """examples/gemm_i8.py / 4b: 8 lanes, 512 (i8) or 1024 (bf16) bytes per lane, Flit2."""
    for name, per_lane in (("gemm_i8_kernel", 512), ("gemm_bf16_kernel", 1024), ("gemm_kernel", 512)):
        (trf,) = [op for op in kf.example(name).trace().kernel.ops if isinstance(op, ops.ToTrf)]
        t = trf.input.type
        g = trf_geometry(t.dtype, t.time, trf.lane, trf.element)
        assert g == TrfGeometry(lanes=8, bytes_per_lane=per_lane, collect_flits=2), name
    assert trf_geometry(DType.BF16, m("A, K / 16"), m("A"), m("K % 16")).collect_flits == 1
    assert trf_geometry(DType.BF16, m("A"), m("1 # 3"), m("K")) is None
