"""`@device(chip=N, pe=P)` on every layer: targets, trace rules, cpu, lowering, VISA, interpreter."""

from __future__ import annotations

import hashlib
from importlib import resources

import numpy as np
import pytest

import npu_opt
from ir.errors import NpuOptError
from tests.kernel_text import parse_kernel
from npu_opt import device
from tests.topology import chip_kernels as k
from tu_ops.target import BUILTIN_TARGETS, RNGD_SHA256, for_chips, get_target, rngd
from visa import parse_visa
from visa.artifact import VisaTextError
from visa.verify import verify_text

RNG = np.random.default_rng(15)


def _i8(shape):
    return RNG.integers(-128, 128, shape).astype(np.int8)


def _codes(kernel):
    return [d.code for d in kernel.trace().diagnostics]


def _file_sha(name):
    return hashlib.sha256((resources.files("tu_ops") / "targets" / f"{name}.toml").read_bytes()).hexdigest()


def test_multi_chip_targets_ship_as_data_beside_rngd():
    assert hashlib.sha256((resources.files("tu_ops") / "targets" / "rngd.toml").read_bytes()).hexdigest() == RNGD_SHA256
    two, four = get_target("rngd-2chip"), get_target("rngd-4chip")
    assert (two.chips, four.chips) == ((1, 2), (1, 2, 4))
    assert two.file_sha256 == _file_sha("rngd-2chip") and four.file_sha256 == _file_sha("rngd-4chip")
    assert two.constants == rngd().constants and four.mac == rngd().mac
    assert for_chips(rngd(), 2) is two and for_chips(rngd(), 4) is four and for_chips(rngd(), 1) is rngd()
    assert for_chips(two, 4) is two        # only `rngd` names a family


def test_targets_command_lists_the_multi_chip_targets(capsys):
    from driver.targets_command import targets_command

    assert targets_command() == 0
    out = capsys.readouterr().out
    assert "rngd-2chip:" in out and "rngd-4chip:" in out and "chips          1, 2, 4" in out
    assert set(BUILTIN_TARGETS) == {"rngd", "rngd-2chip", "rngd-4chip"}


def test_two_chip_kernel_distributes_the_chip_axis():
    x = _i8((2, 256, 64))
    out = npu_opt.run(k.two_chip_widen, x)
    assert out.dtype == np.int32 and out.shape == (2, 64, 256)
    assert (out == np.transpose(x, (0, 2, 1)).astype(np.int32)).all()
    assert (npu_opt.run(k.two_chip_widen, x, backend="visa") == out).all()


def test_four_chip_copy_and_replicated_chips():
    x = _i8((4, 256, 64))
    out = npu_opt.run(k.four_chip_copy, x)
    assert (out == np.transpose(x, (0, 2, 1))).all()
    assert (npu_opt.run(k.four_chip_copy, x, backend="visa") == out).all()
    y = _i8((256, 64))
    assert (npu_opt.run(k.two_chip_replicated, y) == y).all()
    assert (npu_opt.run(k.two_chip_replicated, y, backend="visa") == y).all()


def test_multi_chip_artifact_names_its_target_and_hash():
    art = npu_opt.compile(k.two_chip_widen)
    assert f'target "rngd-2chip" sha256 "{_file_sha("rngd-2chip")}"' in art.text
    assert 'signature "two_chip_widen" chip 2 {' in art.text
    verify_text(art.text)
    assert parse_visa(art.text).kernel.chip == 2


def test_chip_count_the_target_lacks_is_space_1():
    assert _codes(k.three_chips) == ["SPACE-1"]
    assert [d.code for d in k.two_chip_widen.trace(get_target("rngd-2chip")).diagnostics] == []
    four = npu_opt.compile(k.four_chip_copy)
    assert 'target "rngd-4chip"' in four.text


@pytest.mark.parametrize("name", ["rngd-2chip", "rngd-4chip"])
def test_a_multi_chip_target_named_by_its_name_runs_the_chip_counts_its_file_lists(name):
    """`npu_opt.run(..., target="rngd-2chip")` and `check` take the shipped target's name as
    `compile` does: its chip counts are those its description lists (they were SPACE-1)."""
    x = _i8((2, 256, 64))
    want = np.transpose(x, (0, 2, 1)).astype(np.int32)
    assert (npu_opt.run(k.two_chip_widen, x, target=name) == want).all()
    assert [d.code for d in k.two_chip_widen.trace(name).diagnostics] == []
    four = [d.code for d in k.four_chip_copy.trace(name).diagnostics]
    assert four == ([] if 4 in get_target(name).chips else ["SPACE-1"])
    assert [d.code for d in k.three_chips.trace(name).diagnostics] == ["SPACE-1"]


def test_a_chip_holding_an_element_axis_digit_has_a_leading_dimension_of_it():
    """Chip `A / 128` with element `A % 128, B` (the reference allows the split; it was TYPE-6)."""
    assert _codes(k.chip_axis_split) == []
    x = _i8((2, 128, 64))
    np.testing.assert_array_equal(npu_opt.run(k.chip_axis_split, x), x)


def test_host_array_of_a_chip_axis_has_a_leading_dimension():
    with pytest.raises(NpuOptError, match=r"shape \(256, 64\).*needs shape \(2, 256, 64\)"):
        npu_opt.run(k.two_chip_widen, _i8((256, 64)))


@pytest.mark.parametrize("kernel", [k.one_pe, k.two_pe, k.four_pe, k.eight_pe_two_clusters])
def test_pe_kernels_run_and_agree(kernel):
    x = _i8((256, 64))
    assert (npu_opt.run(kernel, x) == x).all()
    assert (npu_opt.run(kernel, x, backend="visa") == x).all()


def test_pe_is_in_the_ir_and_the_artifact_only_when_not_8():
    traced = k.one_pe.trace().kernel
    assert traced.pe == 1 and "(chip=1, pe=1)" in traced.text()
    assert parse_kernel(traced.text()) == traced
    assert "pe=" not in k.eight_pe_two_clusters.trace().kernel.text()
    art = npu_opt.compile(k.two_pe)
    assert 'chip 1 pe 2 {' in art.text and parse_visa(art.text).kernel.pe == 2
    assert " pe " not in npu_opt.compile(k.eight_pe_two_clusters).text


def test_too_many_slices_or_clusters_for_the_pes_is_space_5():
    assert _codes(k.two_pe_too_wide) == ["SPACE-5"]
    assert _codes(k.four_pe_two_clusters) == ["SPACE-5"]
    diag = k.two_pe_too_wide.trace().diagnostics[0]
    assert "128 slices" in diag.message and diag.line == 35


def test_visa_verifier_checks_pe():
    text = npu_opt.compile(k.four_pe).text       # 256 slices of one cluster
    verify_text(text)
    with pytest.raises(VisaTextError, match="SPACE-5"):
        verify_text(text.replace("chip 1 pe 4 {", "chip 1 pe 1 {"))
    with pytest.raises(VisaTextError, match="SPACE-5"):
        verify_text(text.replace("chip 1 pe 4 {", "chip 1 pe 3 {"))


@pytest.mark.parametrize("bad", [0, 3, 16, True, "8"])
def test_pe_outside_1_2_4_8_is_usage(bad):
    with pytest.raises(NpuOptError, match="pe="):
        device(pe=bad)
