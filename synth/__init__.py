"""Synthesis: `npu-opt synth` turns a contraction in einsum form into a space of candidate
kernels and searches it (docs/synth.md). A package of its own on top of the DSL: nothing else
in `npu_opt` imports it.

- `spec`: the parsed contraction (`Contraction`), its dtypes, sizes and padding;
- `space`: the levers and their values, and the kernel source of one point;
- `tiling`: the geometry (placements, tile loops, the TRF / DM / VRF budgets);
- `epilogue`: bias, activation and cast after the contraction;
- `target`: `pe` and `chips`, the slices a tile has.
"""

from synth.spec import DTYPES, Contraction, contraction, parse_sizes

__all__ = ["Contraction", "DTYPES", "contraction", "parse_sizes"]
