"""The packed commit (a `commit` record with `pack=`): the Commit Adapter's valid-count
packing in the sub context (docs/machine/valid-count.md).

Every time step t of every slice s keeps its first `valid_size(s, t)` cells, counted by the
record's time filters and packet clipper; the kept cells are written back to back, in
stream order, from `dest` (a slice that keeps fewer leaves the rest of its element zero).
The tensor's bytes start zero.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.valid_count import packed_rows, slice_counts
from tu_ops.valid_count import pack_to_vcg
from visa.interp.dma import DmTensor, live_parts, tensor_bytes
from visa.interp.errors import check
from visa.interp.memory import Memory, scatter
from visa.interp.rows import Rows
from visa.interp.values import value_dtype

__all__ = ["run_packed_commit"]


def run_packed_commit(op: Any, stream: np.ndarray, rows: Rows, mem: Memory) -> DmTensor:
    """Count, pack and write the stream `(rows, T, P)` into a new DM tensor at `dest`."""
    target = mem.target
    d = op.input_type.dtype
    check(stream.dtype == value_dtype(d) and d == op.output_type.dtype,
          f"a packed commit writes its {d} stream unconverted", op)
    bits = target.bits_of(d) or 0
    cells = op.valid_bytes * 8 // max(bits, 1)
    check(1 <= cells <= stream.shape[-1], f"valid_bytes {op.valid_bytes} of a {stream.shape[-1]}-cell packet", op)
    counts = slice_counts(pack_to_vcg(op.pack), rows.slice, stream.shape[1])   # (rows, T): per row's slice id
    check(int(counts.max(initial=0)) <= cells, f"the clipper counts {int(counts.max())} cells of a {cells}-cell "
          f"trimmed packet", op)
    keep = (np.arange(stream.shape[-1])[None, None, :] < counts[:, :, None]).reshape(len(counts), -1)
    values = packed_rows(stream.reshape(len(counts), -1), keep)
    size = tensor_bytes(op.output_type, target)
    check(values.shape[1] * bits <= 8 * size, f"the packer keeps {values.shape[1]} cells for a {size}-byte "
          f"tensor", op)
    check(op.dest >= 0 and op.dest % 8 == 0, f"dest {op.dest} is not an 8-byte aligned DM address", op)
    address = mem.dm_address[op.result.id]
    mem.zero_dm(live_parts(op.output_type), op.output_type.slice.size, address, size, op)
    index = np.arange(values.shape[1], dtype=np.int64)
    for (chip, cluster), sel in rows.groups():
        base = (rows.slice[sel] * mem.dm_slice + op.dest).reshape(-1, 1)
        scatter(mem.dm(chip, cluster), base, index[None], values[sel], d, bits, op, "the packed write")
    return DmTensor(address, op.output_type)
