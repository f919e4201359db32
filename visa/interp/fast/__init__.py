"""The interpreter's speed machinery, in one place, behind one switch (`speed.on()`).

The interpreter (visa/interp/) is the executable spec of the artifact and reads on its
own; everything here computes the same bits faster and is turned off as a whole by
`NPU_OPT_INTERP_FAST=0` or `execute(..., fast=False)` (`speed`, tests/visa/test_interp_plain.py):
the compiled float contraction (`contract_jit*`), DMA copy notes (`copies`), pooled
stores (`pool`), `Repeated` streams held as their distinct packets (`repeated`), `Front`
streams held as their front lanes (`lanes`) and the per-record memo (`memo`).
"""
