"""The register tile of the exact float kernel (`backends.cpu.contract_jit_exact`), written
in LLVM IR, and the loop over the spatial rows that drives it.

One tile is `TI` rows of A against one block of `VW` output columns of W for one
reduced time step: for every leaf l, in natural order, W's `VW` columns are one vector
load and each row's A value one broadcast; the product is an IEEE float32 `fmul` and
the adder tree is built leaf by leaf as a binary counter (a new product is added to the
stack's top while their spans are equal, the lower leaves always the left operand), so
every tree is exactly `((p0 + p1) + (p2 + p3)) + ...` of docs/numerics.md. The tree's
sum is then added to the tile's accumulator (acc + tree: the time sum from +0 in stream
order). No instruction carries fast-math flags, so LLVM neither regroups nor fuses
anything (and a fused multiply-add would give the same bits anyway: the kernel only runs
when every product is exact in float32, `contract_float.exact_f32`). The compiler does
not vectorize the equivalent numba loops reliably; written as vectors, the tile keeps
its accumulators and tree nodes in registers, and each W vector serves `TI` rows.

Loading this module loads neither numba nor llvmlite: `contract_jit._compiled` calls
`build` once numba is imported, which makes the tiles, then compiles `tiles` (its disk
cache keyed on this file, where the tiles are written).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.contract_jit_exact import TI, TREES, VW

__all__ = ["build", "tiles"]

_T1 = _T2 = _T4 = _T8 = _T16 = _T32 = _T64 = None
"""The tiles by leaf count, numba intrinsics made by `build`."""


def _emit(ir, builder, pa, oa, sa, pw, ow, pc, g: int) -> None:
    """The IR of one tile (see the module): A rows at pa + oa + t * sa, W's leaf-major
    block at pw + ow, the TI x VW accumulators at pc; `ir` is llvmlite.ir."""
    vec, i64 = ir.VectorType(ir.FloatType(), VW), ir.IntType(64)
    splat = ir.Constant(ir.VectorType(ir.IntType(32), VW), [0] * VW)
    empty = ir.Constant(vec, ir.Undefined)
    bases = [builder.add(oa, builder.mul(sa, i64(t))) for t in range(TI)]
    stacks: list[list[tuple[ir.Value, int]]] = [[] for _ in range(TI)]
    for leaf in range(g):
        wv = builder.load(builder.bitcast(builder.gep(pw, [builder.add(ow, i64(leaf * VW))]), vec.as_pointer()),
                          align=4)
        for t in range(TI):
            x = builder.load(builder.gep(pa, [builder.add(bases[t], i64(leaf))]))
            node = (builder.fmul(builder.shuffle_vector(builder.insert_element(empty, x, i64(0)), empty, splat), wv), 1)
            stack = stacks[t]
            while stack and stack[-1][1] == node[1]:  # equal spans: the lower leaves on the left
                left, span = stack.pop()
                node = (builder.fadd(left, node[0]), 2 * span)
            stack.append(node)
    for t in range(TI):
        (tree, _), = stacks[t]
        at = builder.bitcast(builder.gep(pc, [i64(t * VW)]), vec.as_pointer())
        builder.store(builder.fadd(builder.load(at, align=4), tree), at, align=4)


def _tile(numba, ir, g: int):
    """The tile of `g` leaves as a numba intrinsic `(a, oa, sa, w, ow, acc) -> None`, the
    arrays float32 and C-contiguous, the offsets uint64 (unchecked: the caller's layouts
    hold every element it reads)."""

    def tile(typingctx, a, oa, sa, w, ow, acc):
        def codegen(context, builder, signature, args):
            ptr = [context.make_array(signature.args[k])(context, builder, args[k]).data for k in (0, 3, 5)]
            _emit(ir, builder, ptr[0], args[1], args[2], ptr[1], args[4], ptr[2], g)
            return context.get_dummy_value()

        return numba.types.void(a, oa, sa, w, ow, acc), codegen

    return numba.extending.intrinsic(tile)


def build(numba) -> None:
    """Make the tiles (once), numba imported."""
    global _T1, _T2, _T4, _T8, _T16, _T32, _T64
    if _T1 is None:
        from llvmlite import ir  # numba's own dependency: loaded with it

        _T1, _T2, _T4, _T8, _T16, _T32, _T64 = (_tile(numba, ir, g) for g in TREES)


def tiles(fa, fw, ca, cw, na, nr, ni, nj, g, out, order, k0, k1):
    """out[row, i, j, n] for the spatial rows order[k0:k1]: A gathered per class as
    (class, NA, I padded to TI, R, g) and W as (class, N, column block, R, g, VW), both
    float32 with the leaves in natural order (R = nr steps); ca / cw each row's class. NA is 1 when A
    reads the same cells at every batch position n. Per row, batch position and column
    block, the tiles of TI rows each sum the time steps from +0 in stream order."""
    nn = out.shape[3]
    nb = (nj + VW - 1) // VW
    ip = (ni + TI - 1) // TI * TI
    acc = np.empty(TI * VW, np.float32)
    ug, unr, uvw = np.uint64(g), np.uint64(nr), np.uint64(VW)
    sa = unr * ug
    for k in range(k0, k1):
        row = order[k]
        for n in range(nn):
            an = n if na > 1 else 0
            for jb in range(nb):
                ow0 = np.uint64(((cw[row] * nn + n) * nb + jb) * nr) * ug * uvw
                for i in range(0, ip, TI):
                    acc[:] = np.float32(0.0)
                    oa0 = np.uint64(((ca[row] * na + an) * ip + i) * nr) * ug
                    for r in range(unr):
                        oa, ow = oa0 + r * ug, ow0 + r * ug * uvw
                        if g == 32:
                            _T32(fa, oa, sa, fw, ow, acc)
                        elif g == 16:
                            _T16(fa, oa, sa, fw, ow, acc)
                        elif g == 64:
                            _T64(fa, oa, sa, fw, ow, acc)
                        elif g == 8:
                            _T8(fa, oa, sa, fw, ow, acc)
                        elif g == 4:
                            _T4(fa, oa, sa, fw, ow, acc)
                        elif g == 2:
                            _T2(fa, oa, sa, fw, ow, acc)
                        else:
                            _T1(fa, oa, sa, fw, ow, acc)
                    for t in range(min(TI, ni - i)):
                        for v in range(min(VW, nj - jb * VW)):
                            out[row, i + t, jb * VW + v, n] = acc[t * VW + v]
