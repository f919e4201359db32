"""The Vector Engine's stages on cpu buffers: each op is one `ir.vector.numerics` step
on every cell; padding cells and dead rows are set back to zero after it (the engine's
output on padding is not data; zero keeps the buffers deterministic, as the interpreter does).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir import vector_chain_ops as cops
from ir import vector_ops as vops
from ir.vector.intra_reduce import axis_padded, mapping_live, reduce_counted, reduce_stored
from ir.vector.numerics.steps import run_step
from ir.vector_reduce_ops import VectorIntraSliceReduce
from ir.vector_unit_ops import unit_op_classes

from backends.cpu import layout, moves
from backends.cpu.handlers import handles

__all__: list[str] = []


def _zero_padding(out: np.ndarray, t: Any) -> np.ndarray:
    pad_local = moves.logical_pad(layout.local_levels(t))
    rows = np.zeros(layout.n_rows(t), bool)
    rows[layout.live_rows(t)] = True
    pad = ~rows[:, None] | pad_local[None, :]
    return np.where(pad.reshape(out.shape), np.zeros((), out.dtype), out)


def _rf_operand(op: Any, vrf: np.ndarray) -> np.ndarray:
    """The VRF tensor broadcast over the stream by axis name (a per-slice move)."""
    return moves.move_local(vrf, op.rf[0].type, op.input.type).astype(vrf.dtype, copy=False)


@handles(vops.VectorFxp, vops.VectorClip, vops.VectorFxpToFp, vops.VectorFpToFxp, vops.VectorFpUnary,
         vops.VectorFpBinary, cops.VectorLogic, cops.VectorFpTernary, cops.VectorFpDiv, cops.VectorReinterpret)
def _step(op: Any, buf: np.ndarray, vrf: np.ndarray | None = None) -> np.ndarray:
    unit, name, arg, *extra = op.step()
    operand = None if vrf is None else _rf_operand(op, vrf).reshape(buf.shape)
    out = run_step(unit, name, arg, buf, *extra, operand=operand).astype(layout.storage_dtype(op.result.type.dtype),
                                                                          copy=False)
    return _zero_padding(out.reshape(buf.shape), op.result.type)


for _cls in unit_op_classes():  # the units whose traced op is made from their declaration
    handles(_cls)(_step)


@handles(vops.VectorNarrowTrim, vops.VectorWidenPad, cops.VectorNarrowSplit, cops.VectorWidenConcat)
def _way(op: Any, buf: np.ndarray) -> np.ndarray:
    """`vector_narrow_trim` / `vector_widen_pad`: the packet moves to its new mapping (the
    trimmed cells are padding; the padded ones are zero)."""
    return moves.move_local(buf, op.input.type, op.result.type)


@handles(vops.VectorInit, vops.VectorTag, vops.VectorFinal)
def _pass(op: Any, buf: np.ndarray) -> np.ndarray:
    """`vector_init`, the ZERO tag and `vector_final` leave the data as it is."""
    return buf


@handles(VectorIntraSliceReduce)
def _intra_reduce(op: Any, buf: np.ndarray) -> np.ndarray:
    """`vector_intra_slice_reduce`: the fold of `ir.vector.intra_reduce` on every slice row (of
    a padded axis: only the cells the mappings mark live in that row's slice; the interpreter
    folds by the record's Valid Count Generator configuration instead)."""
    t, out_t = op.input.type, op.result.type
    rows = buf.reshape(-1, t.time.size, t.packet.size)
    if axis_padded(op.axis, t.slice, t.time, t.packet):  # the padding is excluded cell by cell, by the mapping
        live = mapping_live(t.slice, t.time, t.packet)
        live = np.tile(live, (rows.shape[0] // t.slice.size, 1, 1))
        out = reduce_counted(op.scalar, op.op.name, rows, live, op.axis, t.time, op.out_time, op.out_packet)
    else:
        out = reduce_stored(op.scalar, op.op.name, rows, op.axis, t.time, t.packet, op.out_time, op.out_packet)
    return _zero_padding(out.reshape(layout.shape_of(out_t)), out_t)
