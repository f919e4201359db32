"""Tuple, struct and view parameters (the module postpones its annotations, so every
annotation, struct fields included, is a string the trace evaluates)."""

from __future__ import annotations

from dataclasses import dataclass

import attrs
import ml_dtypes
import numpy as np

from npu_opt import *

axes(A=64, B=8)

Chip = m("1")
Cluster = m("1 # 2")
RowsDm = DmTensor[i8, Chip, Cluster, m("A / 4 # 64"), m("A % 4, B")]
BF16_HOST = np.dtype(ml_dtypes.bfloat16)


@attrs.frozen
class Pair:
    src: HbmTensor[i8, Chip, m("A, B")]
    dst: Mut[HbmTensor[i8, Chip, m("B, A")]]


@dataclass
class Nested:
    inner: tuple[HbmTensor[i8, Chip, m("A, B")], HbmTensor[i8, Chip, m("A, B")]]
    dst: HbmTensorViewMut[i8, Chip, m("A, B")]


@device(chip=1)
def tuple_in_out(ctx: Context, io: tuple[HbmTensor[i8, Chip, m("A, B")], Mut[HbmTensor[i8, Chip, m("A, B")]]]) -> None:
    """io[1][...] = io[0]."""
    io[0].to_dm(ctx.tdma, RowsDm).to_hbm(ctx.tdma, io[1])


@device(chip=1)
def struct_in_out(ctx: Context, p: Pair) -> HbmTensor[i8, Chip, m("A, B")]:
    """p.dst[...] = p.src transposed; returns p.src."""
    d = p.src.to_dm(ctx.tdma, RowsDm)
    d.to_hbm(ctx.tdma, p.dst)
    return d.to_hbm(ctx.tdma)


@device(chip=1)
def nested(ctx: Context, n: Nested, v: HbmTensorView[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("A, B")]:
    """n.dst[...] = n.inner[1]; returns v (read through a view parameter)."""
    n.inner[1].to_dm(ctx.tdma, RowsDm).to_hbm(ctx.tdma, n.dst)
    return v.to_dm(ctx.tdma, RowsDm).to_hbm(ctx.tdma)


@device(chip=1)
def bf16_into(ctx: Context, x: HbmTensor[bf16, Chip, m("A, B")], out: Mut[HbmTensor[bf16, Chip, m("A, B")]]) -> None:
    x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("A / 4 # 64"), m("A % 4, B")]).to_hbm(ctx.tdma, out)


@dataclass
class WithInt:
    x: HbmTensor[i8, Chip, m("A, B")]
    scale: int


@device(chip=1)
def struct_with_int(ctx: Context, p: WithInt) -> None:
    pass


@device(chip=1)
def write_read_only(ctx: Context, p: Pair) -> None:
    p.dst.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("B # 64"), m("A")]).to_hbm(ctx.tdma, p.src)


@device(chip=1)
def write_view(ctx: Context, x: HbmTensorView[i8, Chip, m("A, B")]) -> None:
    x.to_dm(ctx.tdma, RowsDm).to_hbm(ctx.tdma, x)


@device(chip=1)
def mixed_outputs(ctx: Context, a: HbmTensor[i8, Chip, m("A, B")], b: HbmTensor[i8, Chip, m("A, B")],
                  by_ref: Mut[HbmTensor[i8, Chip, m("A, B")]],
                  by_view: HbmTensorViewMut[i8, Chip, m("1 #{!} 2, A, B")]) -> HbmTensor[i8, Chip, m("B, A")]:
    """Both in-place forms and a returned tensor; the view's leading term is pure padding."""
    da, db = a.to_dm(ctx.tdma, RowsDm), b.to_dm(ctx.tdma, RowsDm)
    da.to_hbm(ctx.tdma, by_ref)
    db.to_hbm(ctx.tdma, by_view)
    return db.to_hbm(ctx.tdma)


@device(chip=1)
def bare_tuple(ctx: Context, io: tuple) -> None:
    pass


@device(chip=1)
def open_tuple(ctx: Context, io: tuple[HbmTensor[i8, Chip, m("A, B")], ...]) -> None:
    pass
