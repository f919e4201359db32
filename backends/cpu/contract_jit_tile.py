"""The register tiles of the exact float kernel (`backends.cpu.contract_jit_exact`),
written in LLVM IR, and the loop over the spatial rows that drives them.

One tile is `TILE_ROWS[vw]` rows of A against one block of `vw` (8 or 16) output
columns of W for one reduced time step: for every leaf l, in natural order, W's
columns are one vector load and each row's A value one broadcast; the product is an
IEEE float32 `fmul` and the adder tree is built leaf by leaf as a binary counter (a
new product is added to the stack's top while their spans are equal, the lower leaves
always the left operand), so every tree is exactly `((p0 + p1) + (p2 + p3)) + ...` of
docs/numerics.md. The tree's sum is then added to the tile's accumulator (acc + tree:
the time sum from +0 in stream order). No instruction carries fast-math flags, so LLVM
neither regroups nor fuses anything (and a fused multiply-add would give the same bits
anyway: the kernel only runs when every product is exact in float32,
`contract_float.exact_f32`). The compiler does not vectorize the equivalent numba
loops reliably; written as vectors, a tile keeps its accumulators and tree nodes in
registers, and each W vector serves all its rows.

Loading this module loads neither numba nor llvmlite: `contract_jit._compiled` calls
`build` once numba is imported, which makes the tiles, then compiles `tiles` (its disk
cache keyed on this file, where the tiles are written).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.contract_jit_exact import TI, TREES

__all__ = ["INLINE", "ORDER", "build", "tiles"]

TILE_ROWS = {8: TI, 16: TI // 2}
"""Rows of A per tile by vector width: 8 x 8 and 4 x 16 keep every accumulator and tree
node of a tile in the 32 vector registers."""
_NAMES = {(vw, g): f"_T{vw}_{g}" for vw in TILE_ROWS for g in TREES}
_T8_1 = _T8_2 = _T8_4 = _T8_8 = _T8_16 = _T8_32 = _T8_64 = None
_T16_1 = _T16_2 = _T16_4 = _T16_8 = _T16_16 = _T16_32 = _T16_64 = None
"""The tiles by vector width and leaf count, numba intrinsics made by `build`."""


def _emit(ir, builder, pa, oa, sa, pw, ow, pc, vw: int, g: int) -> None:
    """The IR of one tile (see the module): A rows at pa + oa + t * sa, W's leaf-major
    block of `vw` columns at pw + ow, the rows x vw accumulators at pc; `ir` is llvmlite.ir."""
    ti = TILE_ROWS[vw]
    vec, i64 = ir.VectorType(ir.FloatType(), vw), ir.IntType(64)
    splat = ir.Constant(ir.VectorType(ir.IntType(32), vw), [0] * vw)
    empty = ir.Constant(vec, ir.Undefined)
    bases = [builder.add(oa, builder.mul(sa, i64(t))) for t in range(ti)]
    stacks: list[list[tuple[ir.Value, int]]] = [[] for _ in range(ti)]
    for leaf in range(g):
        wv = builder.load(builder.bitcast(builder.gep(pw, [builder.add(ow, i64(leaf * vw))]), vec.as_pointer()),
                          align=4)
        for t in range(ti):
            x = builder.load(builder.gep(pa, [builder.add(bases[t], i64(leaf))]))
            node = (builder.fmul(builder.shuffle_vector(builder.insert_element(empty, x, i64(0)), empty, splat), wv), 1)
            stack = stacks[t]
            while stack and stack[-1][1] == node[1]:  # equal spans: the lower leaves on the left
                left, span = stack.pop()
                node = (builder.fadd(left, node[0]), 2 * span)
            stack.append(node)
    for t in range(ti):
        (tree, _), = stacks[t]
        at = builder.bitcast(builder.gep(pc, [i64(t * vw)]), vec.as_pointer())
        builder.store(builder.fadd(builder.load(at, align=4), tree), at, align=4)


def _tile(numba, ir, vw: int, g: int):
    """The tile of `vw` columns and `g` leaves as a numba intrinsic `(a, oa, sa, w, ow,
    acc) -> None`, the arrays float32 and C-contiguous, the offsets uint64 (unchecked:
    the caller's layouts hold every element it reads)."""

    def tile(typingctx, a, oa, sa, w, ow, acc):
        def codegen(context, builder, signature, args):
            ptr = [context.make_array(signature.args[k])(context, builder, args[k]).data for k in (0, 3, 5)]
            _emit(ir, builder, ptr[0], args[1], args[2], ptr[1], args[4], ptr[2], vw, g)
            return context.get_dummy_value()

        return numba.types.void(a, oa, sa, w, ow, acc), codegen

    return numba.extending.intrinsic(tile)


def build(numba) -> None:
    """Make the tiles (once), numba imported."""
    if _T8_1 is None:
        from llvmlite import ir  # numba's own dependency: loaded with it

        for (vw, g), name in _NAMES.items():
            globals()[name] = _tile(numba, ir, vw, g)


def _tile8(g, fa, oa, sa, fw, ow, acc):
    """The 8-column tile of g leaves."""
    if g == 32:
        _T8_32(fa, oa, sa, fw, ow, acc)
    elif g == 16:
        _T8_16(fa, oa, sa, fw, ow, acc)
    elif g == 64:
        _T8_64(fa, oa, sa, fw, ow, acc)
    elif g == 8:
        _T8_8(fa, oa, sa, fw, ow, acc)
    elif g == 4:
        _T8_4(fa, oa, sa, fw, ow, acc)
    elif g == 2:
        _T8_2(fa, oa, sa, fw, ow, acc)
    else:
        _T8_1(fa, oa, sa, fw, ow, acc)


def _tile16(g, fa, oa, sa, fw, ow, acc):
    """The 16-column tile of g leaves."""
    if g == 32:
        _T16_32(fa, oa, sa, fw, ow, acc)
    elif g == 16:
        _T16_16(fa, oa, sa, fw, ow, acc)
    elif g == 64:
        _T16_64(fa, oa, sa, fw, ow, acc)
    elif g == 8:
        _T16_8(fa, oa, sa, fw, ow, acc)
    elif g == 4:
        _T16_4(fa, oa, sa, fw, ow, acc)
    elif g == 2:
        _T16_2(fa, oa, sa, fw, ow, acc)
    else:
        _T16_1(fa, oa, sa, fw, ow, acc)


def tiles(fa, fw, ca, cw, na, nr, ni, nj, g, vw, fold, out, order, k0, k1):
    """out[row, i, j, n] for the spatial rows order[k0:k1]: A gathered per class as
    (class, NA, I padded to TI, R, g) and W as (class, N, column block, R, g, vw) (with
    `fold`: (class, 1, column block, R, g, vw), the columns c = n * J + j), both float32
    with the leaves in natural order (R = nr steps); ca / cw each row's class. NA is 1
    when A reads the same cells at every batch position n (always so with `fold`). Per
    row, batch position and column block, the tiles each sum the time steps from +0 in
    stream order."""
    nn = out.shape[3]
    nw, cols = (1, nn * nj) if fold else (nn, nj)
    nb = (cols + vw - 1) // vw
    ip = (ni + TI - 1) // TI * TI
    ti = 8 if vw == 8 else 4  # TILE_ROWS[vw]
    acc = np.empty(ti * vw, np.float32)
    ug, unr, uvw = np.uint64(g), np.uint64(nr), np.uint64(vw)
    sa = unr * ug
    for k in range(k0, k1):
        row = order[k]
        for n in range(nw):
            an = n if na > 1 else 0
            for jb in range(nb):
                ow0 = np.uint64(((cw[row] * nw + n) * nb + jb) * nr) * ug * uvw
                for i in range(0, ip, ti):
                    acc[:] = np.float32(0.0)
                    oa0 = np.uint64(((ca[row] * na + an) * ip + i) * nr) * ug
                    for r in range(unr):
                        if vw == 8:
                            _tile8(g, fa, oa0 + r * ug, sa, fw, ow0 + r * ug * uvw, acc)
                        else:
                            _tile16(g, fa, oa0 + r * ug, sa, fw, ow0 + r * ug * uvw, acc)
                    for t in range(min(ti, ni - i)):
                        for v in range(min(vw, cols - jb * vw)):
                            c = jb * vw + v
                            if fold:
                                out[row, i + t, c % nj, c // nj] = acc[t * vw + v]
                            else:
                                out[row, i + t, c, n] = acc[t * vw + v]


ORDER = ("_tile8", "_tile16", "tiles")
"""Compiled in this order (`contract_jit._compiled`), after `build`."""
INLINE = ("_tile8", "_tile16")
