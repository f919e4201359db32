"""The inter-slice reduce on cpu buffers: the fold of `ir.vector.inter_reduce` on every
(chip, cluster) ring of the (chip, cluster, slice, time, packet) buffer."""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.vector.inter_reduce import reduce_ring
from ir.vector.inter_ops import VectorInterSliceReduce

from backends.cpu import layout
from backends.cpu.handlers import handles

__all__: list[str] = []


@handles(VectorInterSliceReduce)
def _inter_reduce(op: Any, buf: np.ndarray) -> np.ndarray:
    t, out_t = op.input.type, op.result.type
    rings = np.asarray(buf).reshape(-1, t.slice.size, t.time.size, t.packet.size)
    out = np.stack([reduce_ring(op.scalar, op.op.name, ring, t.slice, t.time, op.out_slice, op.out_time)
                    for ring in rings])
    return layout.zero_padding(out.reshape(layout.shape_of(out_t)), out_t)
