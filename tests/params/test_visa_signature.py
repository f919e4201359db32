"""The VISA signature of in-out parameters (format version 2): printed, parsed back
unchanged, and malformed `inout` / `final` lines refused with their position."""

from __future__ import annotations

import pytest

import npu_opt
from visa import parse_visa
from visa.artifact import FORMAT_VERSION, VisaTextError
from visa.printer import print_artifact
from tests.params import kernels as k

TEXT = npu_opt.compile(k.swap_into).text


def test_signature_lines_of_an_in_out_parameter():
    assert FORMAT_VERSION == 2 and TEXT.startswith("visa 2\n")
    lines = TEXT.splitlines()
    assert '  param %1 "out" inout : hbm[i8, "1", "B, A"]' in lines
    assert "  final %1 = %4" in lines  # the DMA that wrote `out`


def test_round_trip_keeps_in_out_parameters_and_finals():
    art = parse_visa(TEXT)
    assert [p.inout for p in art.kernel.params] == [False, True]
    assert [r.id for r in art.kernel.finals] == [4]
    assert print_artifact(art) == TEXT


def test_an_unwritten_in_out_parameter_is_its_own_final():
    assert "  final %1 = %1" in npu_opt.compile(k.untouched).text.splitlines()


@pytest.mark.parametrize("old, new, message", [
    ("  final %1 = %4\n", "", "in-out parameter %1 has no `final` line"),
    ("final %1 = %4", "final %0 = %4", "must name the in-out parameters in order"),
    ("final %1 = %4", "final %1 = %44", "%44 is not defined"),
    ("final %1 = %4", "final %1 = %5", "has another type than the parameter"),
    ('"out" inout :', '"out" :', "must name the in-out parameters in order"),
])
def test_malformed_in_out_lines_are_refused(old, new, message):
    with pytest.raises(VisaTextError, match=message):
        parse_visa(TEXT.replace(old, new))


def test_a_version_1_artifact_is_refused_as_older():
    with pytest.raises(VisaTextError, match="version 1 is older than this reader.*recompile") as info:
        parse_visa(TEXT.replace("visa 2", "visa 1", 1))
    assert (info.value.line, info.value.column) == (1, 6)


def test_every_artifact_of_the_parameter_kernels_verifies():
    """`npu-opt visa --verify`: op verifiers and the re-derivation of every derived field,
    padded DMA tails included."""
    from visa.verify import verify_text
    from tests.params import kernels_struct as ks

    names = ["copy_into", "swap_into", "twice", "padded", "split", "adopted", "matmul_into", "padded_tail",
             "padded_tail_i8"]
    for kernel in [getattr(k, n) for n in names] + [ks.nested, ks.mixed_outputs]:
        verify_text(npu_opt.compile(kernel).text)
