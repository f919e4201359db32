"""Exact host semantics of every Vector Engine op, vectorised over int32 / float32 arrays.

By family: `fxp` (the eleven fixed-point ops), `fp` (f32 add / sub / mul / div / fma),
`transcendental` (the unary float ops and their ulp tolerances), `clip_logic` (clip and
bitwise ops), `conversions` (fixed point <-> f32, reinterpret), `reduce` (the intra- and
inter-slice reducers' operators), `fold` (their fold), `modes` (argument modes). Each unit
names its numerics in its declaration (`unit_runs`, read by `steps.run_step`).
"""

from __future__ import annotations

from ir.vector.numerics.conversions import fp_to_fxp, fxp_to_fp, reinterpret_as_f32, reinterpret_as_i32
from ir.vector.numerics.transcendental import ULP_TOLERANCE, UlpTolerance

__all__ = ["fxp_to_fp", "fp_to_fxp", "reinterpret_as_f32", "reinterpret_as_i32", "ULP_TOLERANCE", "UlpTolerance"]
