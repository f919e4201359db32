"""The VISA interpreter: execute a `.visa` artifact by address arithmetic (visa/visa.lark).

It runs only what the artifact says (DMA commands, read plans, conversions, flit counts,
TRF loads and walks, reduction loops, lane folds, casts, write plans, addresses) on
byte-addressed memories, using each record's IR types only to zero padding positions,
and agrees bit for bit with the `cpu` backend (docs/machine/dma.md, docs/numerics.md).

Modules: `values` (element representations, padding masks), `memory` (DM / TRF / HBM
bytes), `host` (host arrays), `rows` (live slices), one module per op family (`dma`,
`feed`, `trf`, `plan` + `contract`, `drain`) and `walker` (`execute`). The speed machinery
(compiled contractions, copy notes, pools, held streams, the memo) is all in `fast/`,
behind one switch (`shortcuts.on`); the rest reads as the plain spec and reaches a shortcut
only through the hooks of `shortcuts`, on which the modules of `fast/` register themselves.
"""

from __future__ import annotations

import visa.interp.fast  # noqa: F401 - its shortcuts register on the plain interpreter's hooks
from visa.interp.errors import InterpError
from visa.interp.walker import execute, execute_inout, resolve, run_kernel

__all__ = ["InterpError", "execute", "execute_inout", "resolve", "run_kernel"]
