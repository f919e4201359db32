"""The reference's bounded MoE kernels (`moe.rs`, furiosa-opt-examples at 5ec3763, v0.9)
ported with rolled loops. Each loop runs over every expert (group) known while compiling;
a launch value says how many are active, and a runtime guard skips the rest, whose output
keeps the zeros of a `memset`.

- `groups_*`: copy groups 0 .. n-1 of an i32 [S, G, W] tensor (G = 4), the rest zero;
- `experts_*`: out[s, e, :] = weight[s, e] . activation[s] in f32 for experts e < n (bf16
  operands, a TRF load and a contraction per expert), the rest zero.

`*_rolled` is the reference's `for` (`ctx.loop`), `*_unrolled` its `#[unroll] for` (a
Python `for`). The number of experts is the module global `E` (the reference: 1024), set by
`sized(e)` in a fresh copy of this module.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from npu_opt import *
from tests.loops.sized import sized_module

E: int = globals().get("E", 8)   # experts (the reference: 1024, `sized(1024)`); small by default,
                                 # so a compile of every kernel file stays quick
axes(S=64, G=4, W=8, E=E, O=8, R=16)

Chip = m("1")
One = m("1")          # one cluster (pe=1)
Groups = HbmTensor[i32, Chip, m("S, G, W")]


def _copy_group(ctx: Context, src: Any, out: Any, g: Any, n: Any) -> None:
    with ctx.when(g < n):
        (ctx.main.begin(src.view().tile(m("G"), 1, m("1 # 4, W"), g))
         .fetch(m("1"), m("W"))
         .collect(m("1"), m("W"))
         .commit_trim(m("W"))
         .commit_view(out.view_mut().tile(m("G"), 1, m("1 #{!} 4, W"), g)))


def _groups(rolled: bool) -> Any:
    def groups(ctx: Context, x: Groups, active: HbmScalar[usize]) -> Groups:
        src = x.to_dm(ctx.tdma, DmTensor[i32, Chip, One, m("S"), m("G, W")])
        out = DmTensor[i32, Chip, One, m("S"), m("G, W")].new()
        out.view_mut().memset(ctx.sub, 0)
        n = active.to_spm(ctx.tdma)
        for g in (ctx.loop(4) if rolled else range(4)):
            _copy_group(ctx, src, out, g, n)
        return out.to_hbm(ctx.tdma, Groups)
    groups.__name__ = groups.__qualname__ = f"groups_{'rolled' if rolled else 'unrolled'}"
    return device(chip=1, pe=1)(groups)


def _expert(ctx: Context, act: Any, weights: Any, out: Any, e: Any, n: Any) -> None:
    with ctx.when(e < n):
        w_trf = (ctx.sub.begin(weights.view().tile(m("E"), 1, m(f"1 # {E}, O, R"), e))
                 .fetch(m("O"), m("R"))
                 .collect(m("O"), m("R"))
                 .to_trf(m("O"), m("R")))
        (ctx.main.begin(act.view())
         .fetch(m("1"), m("R"))
         .collect(m("1"), m("R"))
         .contract_outer(w_trf, m("1"), m("R"))
         .contract_packet(m("1"))
         .contract_time(m("1"))
         .contract_lane(m("1"), m("O"), LaneMode.INTERLEAVED)
         .commit_trim(m("O"))
         .commit_view(out.view_mut().tile(m("E"), 1, m(f"1 #{{!}} {E}, O"), e)))


def _experts(rolled: bool) -> Any:
    def experts(ctx: Context, activation: HbmTensor[bf16, Chip, m("S, R")],
                weight: HbmTensor[bf16, Chip, m("S, E, O, R")],
                active: HbmScalar[usize]) -> HbmTensor[f32, Chip, m("S, E, O")]:
        act = activation.to_dm(ctx.tdma, DmTensor[bf16, Chip, One, m("S"), m("R")])
        weights = weight.to_dm(ctx.tdma, DmTensor[bf16, Chip, One, m("S"), m("E, O, R")])
        out = DmTensor[f32, Chip, One, m("S"), m("E, O")].new()
        out.view_mut().memset(ctx.sub, 0.0)
        n = active.to_spm(ctx.tdma)
        for e in (ctx.loop(E) if rolled else range(E)):
            _expert(ctx, act, weights, out, e, n)
        return out.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("S, E, O")])
    experts.__name__ = experts.__qualname__ = f"experts_{'rolled' if rolled else 'unrolled'}"
    return device(chip=1, pe=1)(experts)


groups_rolled, groups_unrolled = _groups(True), _groups(False)
experts_rolled, experts_unrolled = _experts(True), _experts(False)


def sized(e: int) -> ModuleType:
    """This module with `e` experts."""
    return sized_module(__file__, "moe", E=e)
