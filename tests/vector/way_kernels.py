"""Vector Engine kernels whose pass changes way by moving cells: `vector_narrow_split`,
the 4-way `steps`, then `vector_widen_concat` (or `vector_widen_pad`, when `pad`)."""

from __future__ import annotations

from npu_opt import m

from tests.vector.kernels import chain_kernel

SPLIT_TIME, SPLIT_PACKET = m("A, E / 8, E / 4 % 2", axes={"A": 8, "E": 64}), m("E % 4", axes={"E": 64})
_CONCAT = (m("A, E / 8", axes={"A": 8, "E": 64}), m("E % 8", axes={"E": 64}))


def split_kernel(dtype, steps, split=(SPLIT_TIME, SPLIT_PACKET), concat=_CONCAT, pad=False, name="vector_split"):
    """An (8, 64) tensor collected 8 per flit, split to 4-way, `steps`, widened back."""
    if pad:
        up, trim = ("vector_widen_pad", m("E % 4 # 8", axes={"E": 64})), "E % 4"
    else:
        up, trim = ("vector_widen_concat", *concat), "E % 8"
    return chain_kernel(dtype, [("vector_narrow_split", *split), *steps, up], name=name, trim=trim)
