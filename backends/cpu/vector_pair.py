"""Pair mode on cpu buffers. A pair is one array with a leading group axis of 2 over the
stream's buffer shape; the unzip gathers each group's time positions (`ir.vector.pair`),
each paired step runs `ir.vector.numerics.steps.run_step` on the groups it names, a zip
merges the groups (`ir.vector.pair.zip_values`). Padding cells are zero after every op, as
in the single-stream chain.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.vector import pair_logic_ops as plogic
from ir.vector import pair_ops as pops
from ir.vector import pair_ternary_ops as ptern
from ir.vector.numerics.steps import run_step
from ir.vector.pair import unzip_index, zip_values

from backends.cpu import layout
from backends.cpu.vector import _live_result, _rf_operand, _same_rows
from backends.cpu.handlers import handles

__all__: list[str] = []


@handles(pops.VectorUnzip)
def _unzip(op: pops.VectorUnzip, buf: np.ndarray) -> np.ndarray:
    index = unzip_index(op.input.type.time, op.split_time, op.axis_name)
    groups = np.take(buf, np.maximum(index, 0), axis=-2)  # (..., 2, S, P)
    groups = np.where((index >= 0)[..., None], groups, np.zeros((), buf.dtype))
    out = np.moveaxis(groups, -3, 0)
    return np.stack([layout.zero_padding(g, op.result.type) for g in out])


@handles(pops.PairFxp, pops.PairClip, pops.PairFpBinary, pops.PairFpUnary, ptern.PairFpTernary, pops.PairFxpToFp,
         pops.PairFpToFxp, plogic.PairLogic, plogic.PairReinterpret)
def _paired(op: Any, buf: np.ndarray, *vrfs: np.ndarray) -> np.ndarray:
    """A paired step: each named group runs the step with its own argument (and the op's mode);
    a group whose operand is a VRF tensor reads it, broadcast over the group's stream."""
    unit, name, side, a0, a1 = op.pair_step()
    t, mode = op.result.type, op.step_mode()
    reads = getattr(op, "rf_groups", lambda: 0)()
    adds = op.addends() if hasattr(op, "addends") else (0, 0)  # a paired FMA_F's c per group
    t_in = op.input.type
    live = _same_rows(t_in, t)  # then each group steps its live rows only (padded slices stay zero)
    out = []
    for g, arg in ((0, a0), (1, a1)):
        values = layout.rows_view(buf[g], t_in) if live else buf[g]
        if reads >> g & 1:
            operand = _rf_operand(op, vrfs[0]).reshape(buf[g].shape)
            operand = layout.rows_view(operand, t_in) if live else operand
            values = run_step(f"{unit}_RF", name, 0, values, operand=operand).astype(values.dtype, copy=False)
        elif side in ("BOTH", f"G{g}"):
            values = run_step(unit, name, arg, values, mode, adds[g]).astype(layout.storage_dtype(t.dtype), copy=False)
        out.append(_live_result(values, t).reshape(buf[g].shape) if live else layout.zero_padding(values, t))
    return np.stack(out)


@handles(pops.PairNarrowSplit, pops.PairWidenConcat)
def _way(op: Any, buf: np.ndarray) -> np.ndarray:
    """`vector_narrow_split` / `vector_widen_concat`: the flattened (time, packet) order is kept."""
    return buf.reshape(buf.shape[:-2] + tuple(m.size for m in (op.result.type.time, op.result.type.packet)))


@handles(pops.ZipFxp, pops.ZipClip, pops.ZipFp, plogic.ZipLogic)
def _zip(op: Any, buf: np.ndarray) -> np.ndarray:
    unit, name, _, mode, _ = op.pair_step()
    merged = zip_values(unit, name, mode, buf[0], buf[1])
    return layout.zero_padding(merged, op.result.type)


