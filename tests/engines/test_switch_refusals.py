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
