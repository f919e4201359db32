"""The one switch over the interpreter's speed machinery (docs/testing.md).

The interpreter is the executable spec of the artifact; besides that plain path it holds
shortcuts that compute the same bits faster: the compiled float contraction
(`contract_jit*`, numba), DMA copy notes (`copies`), pooled DM / TRF stores and scratch
arrays (`memory`), `Repeated` streams held as their distinct packets (`repeated`, `feed`),
`Front` streams held as their front four lanes (`lanes`), the integer contraction's row
de-duplication (`contract._row_split`, `trf.weight_rows`), its one large matmul split between
two threads (`halves`) and the per-record memo (`memo`).

`on()` says whether they may run. They are off when the environment variable
`NPU_OPT_INTERP_FAST` is `0` (or `false`, `no`, `off`), or inside `mode(False)` (what
`execute(..., fast=False)` uses); the interpreter then runs only its plain numpy path: every
stream written out, every row computed, fresh zeroed memories, nothing memoised.
`NPU_OPT_INTERP_JIT=0` turns off the compiled contraction only; with the switch off, it is
off whatever `NPU_OPT_INTERP_JIT` says. `mode` sets the switch for the whole process while
it is open (a concurrent run in another thread sees it too: its results are the same bits).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["ENV", "mode", "on"]

ENV = "NPU_OPT_INTERP_FAST"
"""0: the plain path only; unset or anything else: the speed machinery may run."""
_forced: list[bool] = []


def on() -> bool:
    """Whether the speed machinery may run (module docstring)."""
    if _forced:
        return _forced[-1]
    return os.environ.get(ENV, "").strip().lower() not in ("0", "false", "no", "off")


@contextmanager
def mode(fast: bool | None) -> Iterator[None]:
    """The switch set to `fast` while open (None: as the environment says)."""
    if fast is None:
        yield
        return
    _forced.append(bool(fast))
    try:
        yield
    finally:
        _forced.pop()
