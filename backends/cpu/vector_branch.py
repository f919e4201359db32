"""Branched operands on cpu buffers: the execution ids come from the stream at its tag (the
op's `tagged` operand, `ir.vector.branching.tag_ids`); `branch_step` runs the op per slot.
On the 4-way float path the ids of a flit's front four cells follow the trimmed packet."""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.vector import branch_ops as bops
from ir.vector import stash_ops as sops
from ir.vector.branching import branch_step, stash_step, tag_ids

from backends.cpu import compact, layout
from backends.cpu.compact import Compact
from backends.cpu.vector import _live_result, _masked, _rf_operand, _rf_rows, _same_rows
from backends.cpu.handlers import handles

__all__: list[str] = []


def _on_rows(op: Any, pairs: list[tuple[np.ndarray, Any]], compute: Any) -> np.ndarray:
    """`compute(*arrays)` on the buffers of `pairs` (buffer, type; the stream's first) and the
    result of `op`: on their live rows only when every one has the result's slices (the
    padded slices stay zero), else on the whole buffers; padding cells set back to zero."""
    out_t = op.result.type
    dtype = layout.storage_dtype(out_t.dtype)
    if all(_same_rows(t, out_t) for _, t in pairs):
        rows = [compact.rows_of(b if isinstance(b, Compact) else b.reshape(layout.shape_of(t)), t) for b, t in pairs]
        out = compute(*rows).astype(dtype, copy=False).reshape(rows[0].shape)
        if isinstance(pairs[0][0], Compact):  # the stream held its live rows only: so does the result
            return compact.make(_masked(out, out_t), out_t)
        return _live_result(out, out_t).reshape(layout.shape_of(out_t))
    return layout.zero_padding(compute(*(compact.full(b) for b, _ in pairs)).astype(dtype, copy=False), out_t)


def _branched(op: Any, buf: np.ndarray, tagged: np.ndarray, *read: np.ndarray) -> np.ndarray:
    """`read`: the VRF tensor of the rf slot (`op.rf`), or the stashed buffer (`op.stashed`)."""
    scalar = "f32" if op.tagged.type.dtype.name == "F32" else "i32"
    pairs = [(buf, op.input.type), (tagged, op.tagged.type)]
    if op.port_reads_stash():  # the stash holds the stream as `vector_stash` saw it
        pairs.append((read[-1], op.stashed[0].type))
    elif op.port() is not None:  # the rf slot: the VRF tensor broadcast over the stream by axis name
        pairs.append((compact.make(_rf_rows(op, read[0]), op.input.type) if isinstance(buf, Compact)
                      else _rf_operand(op, read[0]).reshape(buf.shape), op.input.type))

    def compute(values: np.ndarray, at_tag: np.ndarray, *port_values: np.ndarray) -> np.ndarray:
        ids = tag_ids(at_tag, op.cmps, scalar)  # branch_step follows a trim or a split (follow_way)
        port = None
        if port_values:
            port = (*op.port(), port_values[0], op.port_arg1()) if op.port_reads_stash() else \
                (*op.port(), port_values[0])
        return branch_step(op.unit(), op.op_name(), values, ids, op.slots(), port, op.mode_name(),
                           op.port_reads_stash())

    return _on_rows(op, pairs, compute)


def _stash_read(op: Any, buf: np.ndarray, stashed: np.ndarray) -> np.ndarray:
    """`op(stream, stashed)` (under the op's mode; FMA_F with its `c`): the stash holds the
    stream as `vector_stash` saw it."""
    return _on_rows(op, [(buf, op.input.type), (stashed, op.stashed.type)],
                    lambda values, kept: stash_step(op.unit(), op.op_name(), op.mode_name(), op.arg1(), values, kept))


handles(*bops.BRANCH_OP_CLASSES, compact=True)(_branched)
handles(*sops.STASH_READS, compact=True)(_stash_read)


@handles(sops.VectorStash, compact=True)
def _stash(op: Any, buf: np.ndarray) -> np.ndarray:
    """`vector_stash` passes the stream on unchanged; its snapshot is the buffer itself."""
    return buf
