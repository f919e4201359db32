"""The interpreter's speed machinery, in one place, behind one switch (`speed.on()`).

The interpreter (visa/interp/) is the executable spec of the artifact and reads on its
own; everything here computes the same bits faster and is turned off as a whole by
`NPU_OPT_INTERP_FAST=0` or `execute(..., fast=False)` (`speed`, tests/visa/test_interp_plain.py):
the compiled float contraction (`contract_jit*`), DMA copy notes (`copies`), DMA broadcasts
held lazily in DM (`lazy`), pooled
stores (`pool`), `Repeated` streams held as their distinct packets (`repeated`), `Front`
streams held as their front lanes (`lanes`), the float64 unary ops in kept buffers
(`unary`), the Cast Engine's f32 -> bf16 in one compiled pass (`narrow_jit`), the Transpose
Engine on a broadcast's distinct rows (`transpose_rows`), a drain held as a view of its
accumulator for its commit (`lane_view`) and the per-record memo (`memo`).

The plain interpreter imports nothing from here (tests/test_layers.py): a shortcut registers
itself on a hook of visa/interp/shortcuts.py, which the plain code asks by name. Importing
this package registers them all (visa/interp/__init__.py does).
"""

from visa.interp.fast import copies, lane_view, lazy, memo, narrow_jit, switch_rows, transpose_rows, unary  # noqa: F401 - each registers its shortcuts
