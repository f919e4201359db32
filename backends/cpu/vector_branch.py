"""Branched operands on cpu buffers: the execution ids come from the stream at its tag (the
op's `tagged` operand, `ir.vector.branching.tag_ids`); `branch_step` runs the op per slot.
On the 4-way float path the ids of a flit's front four cells follow the trimmed packet."""

from __future__ import annotations

from typing import Any

import numpy as np

from ir import vector_branch_ops as bops
from ir import vector_stash_ops as sops
from ir.vector.branching import branch_step, stash_step, tag_ids

from backends.cpu import layout
from backends.cpu.vector import _rf_operand, _zero_padding
from backends.cpu.handlers import handles

__all__: list[str] = []


def _branched(op: Any, buf: np.ndarray, tagged: np.ndarray, *read: np.ndarray) -> np.ndarray:
    """`read`: the VRF tensor of the rf slot (`op.rf`), or the stashed buffer (`op.stashed`)."""
    scalar = "f32" if op.tagged.type.dtype.name == "F32" else "i32"
    ids = tag_ids(tagged, op.cmps, scalar)  # branch_step follows a trim or a split (follow_way)
    port = None
    if op.port_reads_stash():  # the stash holds the stream as `vector_stash` saw it
        port = (*op.port(), read[-1], op.port_arg1())
    elif op.port() is not None:  # the rf slot: the VRF tensor broadcast over the stream by axis name
        port = (*op.port(), _rf_operand(op, read[0]).reshape(buf.shape))
    out = branch_step(op.unit(), op.op_name(), buf, ids, op.slots(), port, op.mode_name(), op.port_reads_stash())
    return _zero_padding(out.astype(layout.storage_dtype(op.result.type.dtype), copy=False), op.result.type)


def _stash_read(op: Any, buf: np.ndarray, stashed: np.ndarray) -> np.ndarray:
    """`op(stream, stashed)` (under the op's mode; FMA_F with its `c`): the stash holds the
    stream as `vector_stash` saw it."""
    out = stash_step(op.unit(), op.op_name(), op.mode_name(), op.arg1(), buf, stashed)
    return _zero_padding(out.astype(layout.storage_dtype(op.result.type.dtype), copy=False), op.result.type)


handles(*bops.BRANCH_OP_CLASSES)(_branched)
handles(*sops.STASH_READS)(_stash_read)


@handles(sops.VectorStash)
def _stash(op: Any, buf: np.ndarray) -> np.ndarray:
    """`vector_stash` passes the stream on unchanged; its snapshot is the buffer itself."""
    return buf
