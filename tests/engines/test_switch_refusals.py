"""Every refusal of the reference's switch verifier, as a kernel of ours: each case of
tests/ir/switch (`REFUSED`, which `REFERENCE_FIXTURES` maps the reference's negative
fixtures to) becomes a kernel that fetches that Slice and Time and calls `.switch`; the
first diagnostic is the case's rule, at the line of the `switch` call, on every backend
entry point (check, cpu run, compile)."""

from __future__ import annotations

import re

import pytest

import npu_opt
from ir.errors import CompileError
from npu_opt.compile_api import compile_kernel
from tests.differential.harness import load_kernel
from tests.ir.switch.test_switch_rules import REFERENCE_FIXTURES, REFUSED

SWITCH_LINE = 13

# A case whose kernel meets an earlier rule: 192 slices (a slice2 of 3) is no legal Slice
# size, so the DMA that makes the tensor refuses it before any switch can (DMA-3).
SHADOWED = {"slice2_not_pow2": ("DMA-3", 10)}

TEMPLATE = '''from npu_opt import *

axes(L=256, M=16, H=64, N=4, Q=8, Z=8, W=2, X=2, Y=4, V=1024, U=128, R=3, P=8)

Chip = m("1")
Cluster = m("1 # 2")

@device(chip=1)
def refused_{name}(ctx: Context, x: HbmTensor[i8, Chip, m("{live}, {time}, P")]) -> HbmTensor[i8, Chip, m("{live}, {time}, P")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("{slice}"), m("{time}, P")])
    y = (ctx.main.begin(x.view())
         .fetch(m("{time}"), m("P"))
         .switch(m("{out_slice}"), m("{out_time}"), SwitchConfig.{config!r})
         .collect(m("{out_time}"), m("P # 32"))
         .commit_trim(m("P"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("{live}, {time}, P")])
'''


def kernel_source(name: str) -> str:
    in_slice, in_time, out_slice, out_time, config, _ = REFUSED[name]
    text = repr(config).removeprefix("SwitchConfig.")
    return TEMPLATE.format(name=name, live=re.sub(r" # \d+", "", in_slice), slice=in_slice, time=in_time,
                           out_slice=out_slice, out_time=out_time, config=_Raw(text))


class _Raw(str):
    def __repr__(self) -> str:
        return str(self)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_kernel(name: str) -> None:
    code, line = SHADOWED.get(name, (REFUSED[name][-1], SWITCH_LINE))
    kernel = load_kernel(kernel_source(name))
    first = npu_opt.check(kernel).diagnostics[0]
    assert (first.code, first.line) == (code, line), first.render()
    with pytest.raises(CompileError) as e:
        npu_opt.run(kernel, backend="cpu")
    assert e.value.diagnostics[0].code == code
    outcome = compile_kernel(kernel)
    assert outcome.status == "refused" and outcome.diagnostics[0].code == code


def test_every_reference_refusal_is_a_kernel_here() -> None:
    assert {case for case, _ in REFERENCE_FIXTURES.values() if case in REFUSED} == \
        {case for case, _ in REFERENCE_FIXTURES.values() if not case.startswith("collect:")}


@pytest.mark.parametrize("config", [
    "SwitchConfig.BROADCAST1(4, 64)",                    # positional fields
    "SwitchConfig.BROADCAST1(slice1=4)",                 # a missing field
    "SwitchConfig.BROADCAST1(slice1=4, slice0=64, time0=1)",  # an unknown field
    "SwitchConfig.TRANSPOSE(slice1=32, slice0=2.0)",     # not an integer
    "SwitchConfig.BROADCAST2",                           # no such variant
    "SwitchConfig.CUSTOM_BROADCAST",                     # a data variant not called
    "3",                                                 # not a SwitchConfig at all
])
def test_malformed_config_is_switch_1_at_the_call(config: str) -> None:
    from tests.engines.switch_kernels import source

    src = source("broadcast1").replace("SwitchConfig.BROADCAST1(slice1=4, slice0=64)", config)
    diagnostics = npu_opt.check(load_kernel(src)).diagnostics
    assert [(d.code, d.line) for d in diagnostics] == [("SWITCH-1", SWITCH_LINE)]


def test_switch_is_offered_exactly_where_the_reference_allows_it() -> None:
    """After fetch and each fetch adapter (the reference's CanApplySwitch); then only collect."""
    from npu_opt import stages

    offering = {name for name in stages.__all__ if "switch" in getattr(stages, name).OFFERS}
    assert offering == {"FetchStream", "FetchTableLookupStream", "FetchCastStream", "FetchZeroPointSubStream"}
    assert stages.SwitchStream.OFFERS == {"collect"}


def test_switch_after_collect_is_type_1() -> None:
    from tests.engines.switch_kernels import source

    src = source("transpose")
    switch = '         .switch(m("A / 64, A % 2, A / 2 % 32"), m("B"), SwitchConfig.TRANSPOSE(slice1=32, slice0=2))\n'
    collect = '         .collect(m("B"), m("C # 32"))\n'
    assert switch in src and collect in src
    src = src.replace(switch, "@@").replace(collect, switch).replace("@@", collect)
    first = npu_opt.check(load_kernel(src)).diagnostics[0]
    assert (first.code, first.line) == ("TYPE-1", SWITCH_LINE + 1)
