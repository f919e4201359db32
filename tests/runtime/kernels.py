"""Test kernels of runtime scalars and guards (docs/runtime.md): each writes a flag per
condition, so a test reads the runtime answers as host data."""

from __future__ import annotations

from npu_opt import *

axes(A=64, F=8, W=8)

Chip = m("1")
Cluster = m("1 # 2")
Flags = DmTensor[i32, Chip, Cluster, m("A"), m("F, W")]


def raise_flag(ctx, flags, k):
    """Set every cell of flag `k` to 1."""
    flags.view_mut().tile(m("F"), 1, m("1 #{!} 8, W"), k).memset(ctx.sub, 1)


@device(chip=1)
def arithmetic(ctx: Context, a: HbmScalar[i32], b: HbmScalar[u32], c: HbmScalar[u64],
               f: HbmScalar[bool]) -> HbmTensor[i32, Chip, m("A, F, W")]:
    flags = Flags.new()
    flags.view_mut().memset(ctx.sub, 0)
    a, b, c, f = (s.to_spm(ctx.tdma) for s in (a, b, c, f))
    conditions = [
        a * 3 + 5 > 100,                        # wraps at 32 bits
        a.cast(u32) > 1000,                     # a negative i32 is a large u32
        b.cast(usize) + 1 > 4294967295,         # zero-extended: no wrap at 64 bits
        c > 4294967295,
        a.cast(i64) < -5,
        f & (b != 0),
        ~f,
        b - 10 < b,                             # wraps below 10
    ]
    for k, cond in enumerate(conditions):
        with ctx.when(cond):
            raise_flag(ctx, flags, k)
    return flags.to_hbm(ctx.tdma)


@device(chip=1)
def nested(ctx: Context, x: HbmTensor[i32, Chip, m("A, F, W")], lo: HbmScalar[i64],
           hi: HbmScalar[i64]) -> HbmTensor[i32, Chip, m("A, F, W")]:
    """Copy column group k of x when lo <= k, and inside that when k < hi; the others stay 0.
    Group 7 also gets a memset under a guard nested two deep."""
    d = x.to_dm(ctx.tdma, Flags)
    out = Flags.new()
    out.view_mut().memset(ctx.sub, 0)
    lo, hi = lo.to_spm(ctx.tdma), hi.to_spm(ctx.tdma)
    for k in range(8):
        with ctx.when(lo <= k):
            with ctx.when(hi > k):
                src = d.view().tile(m("F"), 1, m("1 # 8, W"), k)
                dst = out.view_mut().tile(m("F"), 1, m("1 #{!} 8, W"), k)
                ctx.main.begin(src).fetch(m("1"), m("W")).collect(m("1"), m("W")).commit_trim(m("W")).commit_view(dst)
    return out.to_hbm(ctx.tdma)
