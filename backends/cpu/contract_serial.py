"""The contraction in furiosa-opt's host order (`CpuOptions(numerics="reference")`).

The chip sums a float contraction in two steps (docs/machine/contraction.md): an
adjacent-pair tree over each packet group, then a serial sum over the reduced time steps,
with flush-to-zero and a canonical NaN on every result. furiosa-opt's cpu backend instead
folds every output cell in one serial pass: starting from +0.0, it adds each product in
the order of the contracted factors as they stand in the pre-reduce mapping (the reduced
time factors outer, the reduced packet factors inner), with plain IEEE binary32
arithmetic: products and sums rounded to nearest, subnormal products and sums kept, the
host's NaN. Its operands are widened as the chip widens them (`Cast<f32> for bf16`,
furiosa-opt-std/src/cast.rs, calls float/bf16.rs `bf16_to_f32`): a bf16 subnormal reads
as a zero of its sign and a NaN as 0x7FC00000 (`adapters.widen`). A test ported from
furiosa-opt compares against that fold, so this module reproduces it bit for bit. Integer
sums do not depend on the order; they keep the exact path.
"""

from __future__ import annotations

import numpy as np

from ir.types import CStreamType

from backends.cpu import adapters, layout

__all__ = ["serial_fold"]


def serial_fold(packed: object, order: np.ndarray, skip: np.ndarray, result: CStreamType) -> np.ndarray:
    """The `contract_time` result of a float contraction folded serially per output cell.

    `packed` is the lazy `contract_packet` result (`backends.cpu.contract.Packed`), `order` /
    `skip` the time order of `contract_time` (`order[r, s]`: the pre-reduce time step added
    into slot `s` at reduced step `r`; `skip`: that step is padding)."""
    outer = packed.outer
    plan = outer.plan
    group = 2 ** packed.depth
    t_in = outer.type
    cols = min(packed.n2, t_in.packet.size // group)
    stream = adapters.widen(outer.stream_rows, outer.stream_dtype)  # (rows, T * P)
    trf = adapters.widen(outer.trf_rows, outer.trf_dtype)  # (rows, Lane * Element)
    n_red, slots = order.shape
    acc = np.zeros((outer.rows, t_in.lane.size, slots, packed.n2), np.float32)
    with np.errstate(all="ignore"):  # overflow and invalid results are values here, as on the host
        for r in range(n_red):
            steps, keep = order[r], ~skip[r]
            for q in range(cols * group):
                a = stream[:, plan.sidx[steps, q]]  # (rows, slots)
                b = trf[:, plan.tidx[:, steps, q]]  # (rows, lane, slots)
                x = a[:, None, :] * b
                live = keep[None, :] if plan.live is None else keep[None, :] & plan.live[:, steps, q]
                column = acc[..., q // group]
                column[...] = np.where(live[None], column + x, column)
    return layout.from_rows(acc, result)

