"""The reference's unroll-loop examples (furiosa-opt-examples/src/unroll_loop.rs at 06dda28),
ported: a rolled Rust `for` is `ctx.loop`, an `#[unroll] for` is a Python `for`. Each kernel
moves rows of B (a column of the input's [A, B] layout) into rows of the [B, A] output."""

from typing import Any

from npu_opt import *

axes(UA=512, UB=32)

Chip = m("1")


def _row(ctx: Context, src: Any, out: Any, b: Any) -> None:
    """Row b of the transpose: column b of the input into row b of the output (HBM to HBM)."""
    column = src.tile(m("UB"), 1, m("UA, 1 # 32"), b)
    column.to_hbm_view(ctx.tdma, out.view_mut().tile(m("UB"), 1, m("1 #{!} 32, UA"), b))


def _four_rows(ctx: Context, src: Any, out: Any) -> None:
    for b in range(4):   # #[unroll] in a helper
        _row(ctx, src, out, b)


@device(chip=1)
def transpose_four_rows_rolled(ctx: Context, x: HbmTensor[i8, Chip, m("UA, UB")]) -> HbmTensor[i8, Chip, m("UB, UA")]:
    out = HbmTensor[i8, Chip, m("UB, UA")].new()
    for b in ctx.loop(4):
        _row(ctx, x.view(), out, b)
    return out


@device(chip=1)
def transpose_four_rows_unrolled(ctx: Context, x: HbmTensor[i8, Chip, m("UA, UB")]) -> HbmTensor[i8, Chip, m("UB, UA")]:
    out = HbmTensor[i8, Chip, m("UB, UA")].new()
    for b in range(4):
        _row(ctx, x.view(), out, b)
    return out


@device(chip=1)
def transpose_four_rows_helper_unrolled(ctx: Context,
                                        x: HbmTensor[i8, Chip, m("UA, UB")]) -> HbmTensor[i8, Chip, m("UB, UA")]:
    out = HbmTensor[i8, Chip, m("UB, UA")].new()
    _four_rows(ctx, x.view(), out)
    return out


@device(chip=1)
def nested_both_unrolled(ctx: Context, x: HbmTensor[i8, Chip, m("UA, UB")]) -> HbmTensor[i8, Chip, m("UB, UA")]:
    out = HbmTensor[i8, Chip, m("UB, UA")].new()
    for i in range(2):
        for _j in range(2):
            _row(ctx, x.view(), out, i)
    return out


@device(chip=1)
def nested_both_rolled(ctx: Context, x: HbmTensor[i8, Chip, m("UA, UB")]) -> HbmTensor[i8, Chip, m("UB, UA")]:
    """`nested_both_unrolled` with both levels rolled (the reference's plain nested `for`)."""
    out = HbmTensor[i8, Chip, m("UB, UA")].new()
    for i in ctx.loop(2):
        for _j in ctx.loop(2):
            _row(ctx, x.view(), out, i)
    return out
