"""The traced IR's text form parses back: print(parse(x)) == x over every example and test
kernel, and lowering from parsed IR text gives the same artifact as lowering the trace."""

from __future__ import annotations

import pytest

from ir.kernel import Kernel
from tests.kernel_text import IrTextError, parse_kernel
from ir.ops import Commit, ToTrf
from driver.discover import discover
from tests.ir import kernels_contract
from tests.kernel_files import ROOT, example, example_names, fixture, fixture_names
from tests.lowering import kernels as lk
from tu_ops.lower import Options, lower
from tu_ops.target import rngd
from visa.printer import print_visa

KERNEL_FILES = [ROOT / "tests" / "backends" / f for f in ("kernels_small.py", "kernels_shapes.py",
                                                           "kernels_convert.py")]
KERNEL_FILES.append(ROOT / "tests" / "ir" / "kernels_commit.py")


def _file_kernels():
    found = discover([str(f) for f in KERNEL_FILES])
    assert not found.errors and len(found.kernels) >= 8
    return list(found.kernels)


def _contract_rule_kernels():
    module = kernels_contract.load_source(kernels_contract.RULES, "contract-rules")
    kernels = [v for v in vars(module).values() if hasattr(v, "trace") and hasattr(v, "fn")]
    assert len(kernels) >= 20
    return kernels


def _factory_kernels():
    d = lk.DTYPES
    return [lk.trf_kernel(d["i8"]), lk.contract_kernel(d["bf16"], d["bf16"], 2), lk.cast_kernel(d["i32"], d["i32"], d["i8"]),
            lk.commit_kernel(d["bf16"], context="sub"), lk.ragged_commit_kernel(), lk.relayout_kernel(),
            lk.two_cluster_kernel(), lk.transpose_kernel(3), lk.long_loop_kernel()]


def _all_kernels():
    named = [example(n) for n in example_names()] + [fixture(n) for n in fixture_names()]
    return named + _file_kernels() + _contract_rule_kernels() + _factory_kernels()


def test_every_example_and_test_kernel_prints_back_the_same_text():
    kernels = _all_kernels()
    assert len(kernels) >= 60
    for kernel in kernels:
        traced = kernel.trace().kernel
        text = traced.text()
        parsed = parse_kernel(text)
        assert isinstance(parsed, Kernel) and parsed.text() == text, kernel.name
        assert parsed.axes == traced.axes and len(parsed.ops) == len(traced.ops), kernel.name


def test_facts_travel_in_the_text():
    traced = example("gemm_i8_kernel").trace().kernel
    parsed = parse_kernel(traced.text())
    commits = [op for op in parsed.ops if isinstance(op, (Commit, ToTrf))]
    assert commits and [(getattr(op, "inferred", None), getattr(op, "inferred_lane", None)) for op in commits] == \
        [(getattr(op, "inferred", None), getattr(op, "inferred_lane", None))
         for op in traced.ops if isinstance(op, (Commit, ToTrf))]


@pytest.mark.parametrize("name", example_names())
def test_lowering_from_ir_text_gives_the_same_artifact(name):
    traced = example(name).trace().kernel
    target = rngd()
    direct = print_visa(lower(traced, Options(target=target)), target)
    from_text = print_visa(lower(parse_kernel(traced.text()), Options(target=target)), target)
    assert " ; loc " in direct and " ; loc " not in from_text    # the IR text keeps no source locations
    assert from_text == _without_locs(direct)


def _without_locs(text: str) -> str:
    return "\n".join(line.split(" ; loc ")[0] for line in text.split("\n"))


def test_lowering_a_hand_written_ir_text():
    """An IR text written here, not traced: a DM copy of an i8 vector and back."""
    text = (
        "kernel @copy(chip=1) {\n"
        "  %0 = param name='a' index=0 : hbm<i8; 1; K>\n"
        "  %1 = to_dm %0 : dm<i8; 1, 1 # 2, 1 # 256; K>\n"
        "  %2 = to_hbm %1 facts(inferred)\n"
        "}"
    )
    with pytest.raises(IrTextError, match="line 5"):
        parse_kernel(text)                                   # no axes line
    with pytest.raises(IrTextError, match="needs both a result and its type"):
        parse_kernel(text + " axes [K=64]\n")
    good = ("kernel @copy(chip=1) {\n"
            "  %0 = param name='a' index=0 : hbm<i8; 1; K>\n"
            "  %1 = to_dm %0 : dm<i8; 1, 1 # 2, 1 # 256; K>\n"
            "  %2 = to_hbm %1 : hbm<i8; 1; K> facts(inferred)\n"
            "  return %2\n"
            "} axes [K=64]\n")
    kernel = parse_kernel(good)
    assert kernel.text() == good
    lowered = lower(kernel, Options())
    assert [op.MNEMONIC for op in lowered.ops()] == ["dma", "dma"]


def test_bad_ir_text_is_a_coded_error():
    with pytest.raises(IrTextError) as info:
        parse_kernel("kernel @k(chip=1) {\n  %0 = frobnicate : hbm<i8; 1; K>\n} axes [K=8]\n")
    assert info.value.code == "USAGE" and "frobnicate" in str(info.value)
    with pytest.raises(IrTextError, match="before its definition"):
        parse_kernel("kernel @k(chip=1) {\n  %1 = to_dm %0 : dm<i8; 1, 1, 1; K>\n} axes [K=8]\n")
