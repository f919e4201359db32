"""Tensor DMA rules DMA-1..6 (docs/machine/dma.md) and the DMA burst."""

from __future__ import annotations


import pytest

from ir import ops
from ir.dtypes import DType
from ir.mapping import m
from ir.mapping.factors import factors_of
from ir.rules import dma as dma_rules
from ir.rules.dma import check_dma, dma_burst
from ir.types import DmType, HbmType
from tests import kernel_files as kf
from tests.ir import kernels_commit as kc
from tests.ir.tabulation import cells_tabulated

DMA_CODES = ("DMA-",)

AX_SECTION4 = {"A": 4096, "B": 8}


def _trace(source: str, name: str):
    return kc.kernel(source, name).trace()


def _mine(diagnostics) -> list[tuple[str, int | None]]:
    return [(d.code, d.line) for d in diagnostics if d.code.startswith(DMA_CODES)]


def _dma_ops(kernel) -> list[ops.Op]:
    return [op for op in kernel.ops if isinstance(op, (ops.ToDm, ops.ToHbm))]


def _hbm(dtype: DType, element, chip=None) -> HbmType:
    return HbmType(dtype, chip or m("1"), element)


def _dm(dtype: DType, element, slice_=None, cluster=None) -> DmType:
    return DmType(dtype, m("1"), cluster or m("1 # 2"), slice_ or m("1 # 256"), element)


def _to_dm(src, dst) -> ops.ToDm:
    return ops.ToDm(src=ops.Value(0, src), result=ops.Value(1, dst))


# --- the burst (docs/machine/dma.md) ---------------------------------------------------------


@pytest.mark.parametrize(("source", "dest", "axes", "cells"), [
    ("A, B", "A / 8 % 2, A % 8, B", AX_SECTION4, 128),
    ("A, B", "B, A % 16", AX_SECTION4, 1),
    ("A, B", "A, B # 8", {"A": 4096, "B": 5}, 8),
])
def test_burst_examples_of_section_4(source, dest, axes, cells):
    src, dst = _hbm(DType.I8, m(source, axes=axes)), _dm(DType.I8, m(dest, axes=axes))
    assert dma_burst(src, dst) == cells


def test_example6_to_dm_burst_is_128_cells_128_bytes():
    to_dm = _dma_ops(kf.example("fetch_commit_simple").trace().kernel)[0]
    assert dma_burst(to_dm.src.type, to_dm.result.type) == 128


def test_r13_burst_is_one_byte():
    fn, _ = kc.FIXTURES["R13"]
    to_dm = _dma_ops(kf.fixture(fn).trace().kernel)[0]
    assert dma_burst(to_dm.src.type, to_dm.result.type) == 1


def test_burst_of_a_4bit_type_may_be_a_fraction_of_a_byte():
    ax = {"A": 8, "E": 32}
    src, dst = _hbm(DType.I4, m("E, A", axes=ax)), _dm(DType.I4, m("A, E", axes=ax))
    assert dma_burst(src, dst) == 1
    assert check_dma(_to_dm(src, dst)).code == "DMA-5"


def test_example1_and_gemm_bursts():
    to_dm = _dma_ops(kf.example("dot_product_kernel").trace().kernel)[0]
    assert dma_burst(to_dm.src.type, to_dm.result.type) == 2048
    out = _dma_ops(kf.example("gemm_kernel").trace().kernel)[2]
    assert dma_burst(out.src.type, out.result.type) == 32


def test_transposing_dma_into_hbm_burst():
    back = _dma_ops(kf.example("fetch_commit_simple").trace().kernel)[1]
    assert dma_burst(back.src.type, back.result.type) == 1  # allowed: writes into HBM have no alignment rule


def test_kinds():
    ax = {"A": 8}
    h, d = _hbm(DType.I8, m("A", axes=ax)), _dm(DType.I8, m("A", axes=ax))
    assert [dma_rules.dma_kind(a, b) for a, b in ((h, d), (d, h), (d, d), (h, h))] == \
        ["HBM_TO_DM", "DM_TO_HBM", "DM_TO_DM", "HBM_TO_HBM"]


# --- valid kernels: no DMA diagnostic ------------------------------------------------------


@pytest.mark.parametrize("name", kf.example_names())
def test_examples_have_no_dma_diagnostic(name):
    result = kf.example(name).trace()
    assert _mine(result.diagnostics) == []
    dmas = _dma_ops(result.kernel)
    assert dmas, "every example moves data"
    for op in dmas:  # checked directly too, whatever the other rule families say
        assert check_dma(op) is None, op.text()


@pytest.mark.parametrize("name", sorted(kc.VALID_KERNELS))
def test_valid_kernels_have_no_dma_diagnostic(name):
    result = _trace(kc.VALID_KERNELS[name], name)
    assert _mine(result.diagnostics) == []
    for op in _dma_ops(result.kernel):
        assert check_dma(op) is None, op.text()


# --- refusals ------------------------------------------------------------------------------


def test_r13_fixture():
    fn, code = kc.FIXTURES["R13"]
    fixture = kf.fixture(fn)
    result = fixture.trace()
    assert code == "DMA-5"
    assert [(d.code, d.line) for d in result.diagnostics] == [("DMA-5", kf.marked_line(fixture))]  # the only one
    d = result.diagnostics[0]
    assert d.col == 11 and d.stage == "to_dm"
    assert "1 x i8 = 1 byte" in d.notes[0]


DMA_RULE_KERNELS = sorted(k for k, (code, _) in kc.RULE_KERNELS.items() if code.startswith("DMA-"))


@pytest.mark.parametrize("name", DMA_RULE_KERNELS)
def test_rule_kernels(name):
    code, src = kc.RULE_KERNELS[name]
    kernel = kc.kernel(src, name)
    result = kernel.trace()
    assert _mine(result.diagnostics) == [(code, kf.marked_line(kernel))]
    assert result.diagnostics[0].code == code


def test_every_dma_rule_has_a_kernel():
    codes = {kc.RULE_KERNELS[k][0] for k in DMA_RULE_KERNELS} | {kc.FIXTURES["R13"][1]}
    assert codes == {f"DMA-{i}" for i in range(1, 7)}


def test_dma3_reports_the_level_predicate():
    code, src = kc.RULE_KERNELS["DMA-3/capacity"]
    d = _trace(src, "DMA-3/capacity").diagnostics[0]
    assert d.code == "DMA-3" and "655360" in d.message
    assert "docs/machine/index.md predicate DM-CAP" in d.notes


def test_dma4_drop_names_the_fragment():
    _, src = kc.RULE_KERNELS["DMA-4/drop"]
    d = _trace(src, "DMA-4/drop").diagnostics[0]
    assert "`A` of the source occurs nowhere" in d.notes[0]


def test_dma6_names_the_stride():
    _, src = kc.RULE_KERNELS["DMA-6"]
    d = _trace(src, "DMA-6").diagnostics[0]
    assert "12 bytes" in d.message and "burst 8 cell(s)" in d.notes[0]


def test_into_hbm_has_no_alignment_rule():
    ax = {"A": 8, "E": 32}
    src, dst = _dm(DType.I8, m("A, E", axes=ax)), _hbm(DType.I8, m("E, A", axes=ax))
    assert dma_burst(src, dst) == 1
    assert check_dma(ops.ToHbm(src=ops.Value(0, src), result=ops.Value(1, dst))) is None


def test_rule_order_dtype_before_layout():
    ax = {"A": 8, "E": 32}
    src, dst = _hbm(DType.I8, m("E, A", axes=ax)), _dm(DType.BF16, m("A", axes=ax), slice_=m("1 # 32"))
    assert check_dma(_to_dm(src, dst)).code == "DMA-1"
    dst = _dm(DType.I8, m("A", axes=ax), slice_=m("1 # 32"))
    assert check_dma(_to_dm(src, dst)).code == "DMA-3"
    dst = _dm(DType.I8, m("A", axes=ax))
    assert check_dma(_to_dm(src, dst)).code == "DMA-4"


def test_overshooting_destination_is_a_refusal_not_an_exception():
    ax = {"A": 16}
    src, dst = _hbm(DType.I8, m("A", axes=ax)), _dm(DType.I8, m("A / 4, A % 8", axes=ax))
    found = check_dma(_to_dm(src, dst))
    assert found is not None and found.code == "DMA-4"


# --- cost ----------------------------------------------------------------------------------


def test_gemm_dma_checks_are_symbolic_and_fast():
    """Regression guard: the DMA checks of the GEMM kernel never tabulate large mappings.
    The level factor forms are computed once per mapping (and shared with the other rules);
    everything else is factor-form work."""
    dmas = _dma_ops(kf.example("gemm_kernel").trace().kernel)
    for op in dmas:  # the level factor forms, as the other stages also need them
        for t in (op.src.type, op.result.type):
            for level in t.levels():
                factors_of(level)
    dma_rules._burst.cache_clear()
    with cells_tabulated() as decoded:
        for op in dmas:
            assert check_dma(op) is None
    assert decoded[0] <= 4096
