"""The exact-arithmetic kernel library the cpu backend and the VISA interpreter both call.

Their compiled float contractions (`backends.cpu.contract_jit`, `visa.interp.fast.contract_jit`)
are each other's cross-check and read their operands from different places (gathered
rows; fed packets and TRF bytes), but compute the same sums the same way: `compile`
loads numba once per process (one threshold, `JIT_MIN`; one disk cache, `cache_dir`) and
compiles every kernel module in place, `tiles` is the register tile both exact kernels
are built from (the engine's adder tree written as LLVM vector IR), and `sums` the
products, adder tree, accumulation and flush both general kernels run. No module here
imports numba or llvmlite until a contraction asks for them.
"""
