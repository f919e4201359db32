"""Typestate and tracing behaviour of the DSL (docs/machine/index.md)."""

from __future__ import annotations

import inspect

import pytest

from ir.errors import NpuOptError
from npu_opt import *
import npu_opt

axes(A=8, B=64, E=32, R=8)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")


def codes(kernel):
    return [d.code for d in kernel.trace().diagnostics]


def line_of(fn, marker):
    """Absolute line of the first source line of `fn` containing `marker`."""
    lines, start = inspect.getsourcelines(fn.fn)
    return start + next(i for i, text in enumerate(lines) if marker in text)


@device(chip=1)
def good(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("A, B")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, B")])
    y = (ctx.main.begin(x.view())
         .fetch(m("A"), m("B"))
         .collect(m("A, B / 32"), m("B % 32"))
         .commit_trim(m("B % 32"))
         .commit(m("A, B")))
    return y.to_hbm(ctx.tdma)


def test_good_kernel_traces_clean_and_prints_deterministically():
    first, second = good.trace(), good.trace()
    assert first.diagnostics == ()
    assert first.kernel.text() == second.kernel.text()
    assert first.kernel.text().startswith("kernel @good(chip=1) {\n  %0 = param")
    assert npu_opt.check(good).ok


@device(chip=1)
def type1(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> None:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, B")])
    (ctx.main.begin(x.view())
     .fetch(m("A"), m("B"))
     .contract_outer(None, m("A"), m("B"))   # <-- TYPE-1
     .contract_packet(m("1")))


def test_type1_is_a_diagnostic_at_the_call_and_tracing_goes_on():
    diags = type1.trace().diagnostics
    assert [d.code for d in diags] == ["TYPE-1"]
    assert diags[0].line == line_of(type1, "TYPE-1")
    assert "collect" in diags[0].help


@device(chip=1)
def type7(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("A, B")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, B")])
    s = ctx.main.begin(x.view())
    f = s.fetch(m("A"), m("B"))
    s.fetch(m("A"), m("B"))                    # <-- TYPE-7
    y = f.collect(m("A, B / 32"), m("B % 32")).commit_trim(m("B % 32")).commit(m("A, B"))
    return y.to_hbm(ctx.tdma)


def test_type7_second_use_of_a_stream():
    diags = type7.trace().diagnostics
    assert [d.code for d in diags] == ["TYPE-7"]
    assert diags[0].line == line_of(type7, "TYPE-7")


@device(chip=1)
def type8(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> None:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, B")])
    ctx.main.begin(x.view()).fetch(m("A"), m("B"))   # <-- TYPE-8


def test_type8_unterminated_stream():
    diags = type8.trace().diagnostics
    assert [d.code for d in diags] == ["TYPE-8"]
    assert diags[0].line == line_of(type8, "TYPE-8")


@device(chip=1)
def type6(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> None:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, B")])
    ctx.main.begin(x.view()).fetch("A", m("B"))      # <-- TYPE-6


def test_type6_wrong_argument_kind_suggests_m():
    diags = type6.trace().diagnostics
    assert [d.code for d in diags] == ["TYPE-6"]
    assert 'm("A")' in diags[0].help


@device(chip=1)
def bad_arity(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> None:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, B")])
    ctx.main.begin(x.view()).fetch(m("A"))           # <-- TYPE-6 missing packet


def test_missing_argument_is_type6_not_typeerror():
    diags = bad_arity.trace().diagnostics
    assert [d.code for d in diags] == ["TYPE-6"]
    assert "packet" in diags[0].message
    assert diags[0].help == "the signature is `fetch(time, packet)`"  # no 'Any' annotations, no self


@device(chip=1)
def ctx1(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> None:
    x.to_dm(ctx.main, DmTensor[i8, Chip, Cluster, Slice, m("A, B")])   # <-- CTX-1


def test_dma_on_a_tensor_unit_context_is_ctx1():
    assert codes(ctx1) == ["CTX-1"]


@device(chip=3)
def space1(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> None:
    pass


@device(chip=1)
def space1_param(ctx: Context, x: HbmTensor[i8, m("2"), m("A, B")]) -> None:
    pass


def test_chip_count_mismatch_is_space1():
    assert set(codes(space1)) == {"SPACE-1"}  # rngd compiles 1, 2 or 4 chips, and Chip has size 1, not 3
    assert "legal chip counts: [1, 2, 4]" in space1.trace().diagnostics[0].notes[0]
    assert codes(space1_param) == ["SPACE-1"]


@device(chip=1)
def dma3(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> None:
    x.to_dm(ctx.tdma, DmTensor[i8, Chip, m("1 # 3"), Slice, m("A, B")])   # <-- DMA-3


def test_bad_dm_destination_reports_the_stage_rule_with_predicate_note():
    diags = dma3.trace().diagnostics
    assert [d.code for d in diags] == ["DMA-3"]
    assert any("CLUSTER-REF" in n for n in diags[0].notes)


@device(chip=1)
def two_faults(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> None:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, B")])
    ctx.main.begin(x.view()).fetch(m("A"), m("B")).commit_trim(m("B"))    # TYPE-1
    ctx.sub.begin(x.view()).fetch(m("A"), m("B")).cast(i8, m("B"))        # TYPE-1 again


def test_independent_faults_are_all_reported():
    assert codes(two_faults) == ["TYPE-1", "TYPE-1"]


@device(chip=1)
def trf7(ctx: Context, x: HbmTensor[bf16, Chip, m("A, E")]) -> None:
    x = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("A, E")])
    (ctx.sub.begin(x.view()).fetch(m("A"), m("E"))
     .collect(m("A, E / 16"), m("E % 16"))
     .to_trf(element=m("A, E")))             # <-- TRF-7


def test_element_without_lane_is_trf7_with_inferred_values_in_help():
    diags = trf7.trace().diagnostics
    assert [d.code for d in diags] == ["TRF-7"]
    assert "to_trf(m(" in diags[0].help


def test_annotation_must_be_an_hbm_tensor_of_any_element_layout():
    @device(chip=1)
    def split_digits(ctx: Context, x: HbmTensor[i8, Chip, m("A / 2, B")]) -> None:
        pass

    @device(chip=1)
    def not_hbm(ctx: Context, x: TrfTensor[i8, Chip, Cluster, Slice, m("1"), m("A")]) -> None:
        pass

    assert codes(split_digits) == []  # any HBM element layout is a legal parameter
    assert codes(not_hbm) == ["TYPE-6"]


@device(chip=1)
def unannotated(ctx: Context, x, axis) -> None:  # <-- TYPE-6 twice, at each parameter
    pass


def test_a_parameter_without_annotation_is_refused_at_the_parameter():
    diags = unannotated.trace().diagnostics
    assert [(d.code, d.line) for d in diags] == [("TYPE-6", unannotated.line + 1)] * 2
    assert all("no annotation" in d.render() for d in diags)
    line = open(__file__).read().splitlines()[unannotated.line]  # the def line
    assert [line[d.col - 1:d.col - 1 + d.length] for d in diags] == ["x", "axis"]


def test_result_must_match_annotation():
    @device(chip=1)
    def wrong_result(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("B, A")]:
        return x  # a parameter keeps its layout: only a bare to_hbm adopts the annotation's

    @device(chip=1)
    def adopted(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("B, A")]:
        return x.to_hbm(ctx.tdma)

    assert codes(wrong_result) == ["TYPE-6"]
    assert codes(adopted) == []
    (op,) = [op for op in adopted.trace().kernel.ops if op.STAGE == "to_hbm"]
    assert str(op.result.type.element) == "(B, A)"


def test_stage_calls_outside_a_trace_are_refused_clearly():
    with pytest.raises(NpuOptError):
        good(None, None)


def test_check_report_api():
    report = npu_opt.check(type1)
    assert not report.ok and report.diagnostics[0].code == "TYPE-1" and report.warnings == ()
    rendered = report.diagnostics[0].render()
    assert rendered.startswith("error[TYPE-1]: ") and "^" in rendered


@device(chip=1)
def padded_burst(ctx: Context, x: HbmTensor[i8, Chip, m("1")]) -> None:
    x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("1 # 8")])   # <-- DMA-5


def test_burst_that_ends_in_padding_is_refused_at_trace_not_an_ice():
    """Found after the differential run: the burst of `1 # 8` counts 7 padding cells, but
    padding is never transferred, so lowering built a 1-byte packet into DM and failed
    DMAOP-4 (an ICE). DMA-5 now measures the live run the burst actually moves."""
    diags = padded_burst.trace().diagnostics
    assert [d.code for d in diags] == ["DMA-5"] and "1 byte" in diags[0].message
    from npu_opt.compile_api import compile_kernel

    outcome = compile_kernel(padded_burst)
    assert outcome.status == "refused" and outcome.code == "DMA-5"


@device(chip=1)
def called_lane_mode(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")], w: HbmTensor[i8, Chip, m("R, B")]) -> None:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, B")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("R, B")])
    trf = ctx.sub.begin(w.view()).fetch(m("R"), m("B")).collect(m("R, B / 32"), m("B % 32")).to_trf()
    (ctx.main.begin(x.view()).fetch(m("A"), m("B")).collect(m("A, B / 32"), m("B % 32"))
     .contract_outer(trf, m("A"), m("B")).contract_packet(m("1")).contract_time(m("A"))
     .contract_lane(m("A"), m("R"), LaneMode.SEQUENTIAL())  # <-- TYPE-6
     .commit_trim(m("R")).commit())


def test_calling_a_lane_mode_is_type6_at_the_call_not_a_python_error():
    (d,) = called_lane_mode.trace().diagnostics
    assert (d.code, d.line) == ("TYPE-6", line_of(called_lane_mode, "# <--")), d.render()
    assert "write `LaneMode.SEQUENTIAL` without parentheses" in d.message


def test_a_dm_tensor_annotation_is_a_resident_parameter():
    @device(chip=1)
    def resident(ctx: Context, x: DmTensor[i8, Chip, Cluster, Slice, m("A")]) -> None:
        pass

    assert codes(resident) == []  # docs/parameters.md, "Resident DM parameters"
