"""Every refused kernel of docs/reference/diagnostics.md gives its rule at the marked line; the
examples give nothing (docs/reference/diagnostics.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from driver.cli import main
from driver.discover import discover

ROOT = Path(__file__).parents[2]
FIXTURES = ROOT / "tests" / "fixtures"

EXPECTED = {
    "r01_half_flit": "COLLECT-2", "r02_i8_to_bf16": "FCAST-1", "r03_commit_i9": "TYPE-2",
    "r04_trf_too_big": "TRF-2", "r05a_time_mismatch": "OUTER-6", "r05b_flit_mismatch": "OUTER-4",
    "r05c_packed_time": "OUTER-5", "r06_three_lanes": "TRF-1", "r07_time_order": "TIME-2",
    "r08_mixed_operands": "OUTER-1", "r09_narrow_commit": "TRIM-1", "r10_i32_to_bf16": "CAST-1",
    "r11_accumulator": "LANE-6", "r12_sub_contraction": "CTX-2", "r13_transposing_dma": "DMA-5",
    "r14_partial_fetch": "FETCH-3", "r16_fetch_digit_twice": "FETCH-7",
    "r17_commit_digit_twice": "COMMIT-7", "r18_sub_i4_widen": "FETCH-9",
    "r19_sub_short_read": "FETCH-8", "r20_i4_strided_packet": "FETCH-10",
}
KERNELS = {k.name: k for k in discover([str(FIXTURES)]).kernels}


def marked_line(kernel) -> int:
    lines = Path(kernel.file).read_text().splitlines()
    start = kernel.line - 1
    return start + 1 + next(i for i, text in enumerate(lines[start:]) if "# <--" in text)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_refused_kernel_reports_its_rule_at_the_marked_line(name):
    kernel = KERNELS[name]
    diagnostics = kernel.trace().diagnostics
    assert [d.code for d in diagnostics] == [EXPECTED[name]]
    assert diagnostics[0].line == marked_line(kernel)
    assert diagnostics[0].help or diagnostics[0].notes


def test_r15_passes_every_trace_rule():
    """MEM-3 is a lowering rule: the typecheck backend must accept R15."""
    assert KERNELS["r15_dm_full"].trace().diagnostics == ()


def test_every_fixture_is_covered():
    assert set(KERNELS) == set(EXPECTED) | {"r15_dm_full"}


def test_check_command_on_fixtures_and_examples(capsys):
    assert main(["check", *sorted(str(p) for p in FIXTURES.glob("refused*.py"))]) == 1
    out = capsys.readouterr().out
    assert "checked 22 kernel(s): 1 ok, 21 refused" in out
    assert main(["check", str(ROOT / "examples")]) == 0
