"""Exact host semantics of every Vector Engine op, vectorised over int32 / float32 arrays.

By family: `fxp` (the eleven fixed-point ops), `fp` (f32 add / sub / mul / div / fma),
`transcendental` (the unary float ops and their ulp tolerances), `clip_logic` (clip and
bitwise ops), `conversions` (fixed point <-> f32), `reduce` (the intra- and
inter-slice reducers' operators), `fold` (their fold), `modes` (argument modes). Each unit
names its numerics in its declaration (`unit_runs`, read by `steps.run_step`).
"""

from __future__ import annotations

from ir.vector.numerics.transcendental import ULP_TOLERANCE, UlpTolerance

__all__ = ["ULP_TOLERANCE", "UlpTolerance"]
