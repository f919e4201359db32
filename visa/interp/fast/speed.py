"""The one switch over the interpreter's speed machinery (docs/testing.md), as the fast
modules read it: it lives with the plain interpreter (visa/interp/shortcuts.py), which asks
it before any shortcut runs.

Besides the plain path the interpreter holds shortcuts that compute the same bits faster:
the compiled float contraction (`contract_jit*`, numba), DMA copy notes (`copies`), pooled
DM / TRF stores and scratch arrays (`pool`), `Repeated` streams held as their distinct
packets (`repeated`), `Front` streams held as their front four lanes (`lanes`), the integer
contraction's row de-duplication (`row_split`), its one large matmul split between two
threads (`halves`), the float64 unary ops in kept buffers (`unary`) and the per-record memo
(`memo`). `NPU_OPT_INTERP_JIT=0` turns off the compiled contraction only; with the switch
off, it is off whatever `NPU_OPT_INTERP_JIT` says.
"""

from __future__ import annotations

from visa.interp.shortcuts import ENV, mode, on

__all__ = ["ENV", "mode", "on"]
