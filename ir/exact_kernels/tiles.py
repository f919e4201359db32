"""The register tile of the exact float contractions, written in LLVM vector IR.

One tile is `rows` rows of the stream operand against one block of `width` output
columns (8 or 16 float32 lanes) for one reduced time step of `g` leaves: per leaf, in
natural order, the block's column vector is one load and each row's stream value one
broadcast; the product is an IEEE float32 `fmul` and the leaves are summed as the
engine's adder tree (each sum's left operand the lower half of its leaves, so every tree
is exactly `((p0 + p1) + (p2 + p3)) + ...` of docs/numerics.md). The tree is then added
to the row's accumulator (the time sum from +0 in stream order). No instruction carries
fast-math flags, so LLVM neither regroups nor fuses anything (the tiles only run when
every product and sum is exact in float32). Written as vectors, a tile keeps its
accumulators and tree nodes in registers and one column load serves all its rows;
LLVM's loop vectorizer does not find that in the equivalent numba loops.

Two shapes (`SHAPES`, rows x width): 8 x 8 and 4 x 16, which keep every accumulator and
tree node in the 32 vector registers for every leaf count in `TREES`. A tile is called
as `tile_8x8(g, a, o, s, w, ow, acc)` / `tile_4x16(...)`: float32 C-contiguous `a`, `w`,
`acc`; W's leaf-major block at w[ow:], the rows x width accumulators at acc. Row t's
first stream value is a[o + t * s] when `o` is an integer (the cpu backend: rows a
stride apart) and a[s + o[t]] when `o` is an int64 array (the interpreter: rows where
their packets are). Offsets are unchecked: the caller's layouts hold every element read.

`build` makes the intrinsics once numba is loaded (`compile.compiled` calls it); loading
this module loads neither numba nor llvmlite.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["INLINE", "ORDER", "SHAPES", "TREES", "build", "leaf_order", "tile_4x16", "tile_8x8"]

SHAPES = ((8, 8), (4, 16))
"""(rows, width) of the tiles."""
TREES = (1, 2, 4, 8, 16, 32, 64)
"""Leaf counts with a tile; other counts take each backend's general kernel."""
_R8W8_1 = _R8W8_2 = _R8W8_4 = _R8W8_8 = _R8W8_16 = _R8W8_32 = _R8W8_64 = None
_R4W16_1 = _R4W16_2 = _R4W16_4 = _R4W16_8 = _R4W16_16 = _R4W16_32 = _R4W16_64 = None
"""The tiles by shape and leaf count, numba intrinsics made by `build`."""


@functools.lru_cache(maxsize=None)
def leaf_order(g: int) -> np.ndarray:
    """The leaves 0..g-1 in bit-reversed order (g a power of two): the layouts store
    leaves bit-reversed, and bit reversal is its own inverse, so this also says where each
    natural leaf sits."""
    bits = g.bit_length() - 1
    out = np.array([int(format(k, f"0{bits}b")[::-1], 2) if bits else 0 for k in range(g)], np.int64)
    out.setflags(write=False)
    return out


def _tree(builder, leaf, lo: int, n: int) -> list:
    """The rows' sums over leaves [lo, lo + n): a leaf is its products (`leaf(l)`, one per
    row), a wider node the sum of its lower half (left) and its upper half (right)."""
    if n == 1:
        return leaf(lo)
    left, right = _tree(builder, leaf, lo, n // 2), _tree(builder, leaf, lo + n // 2, n // 2)
    return [builder.fadd(a, b) for a, b in zip(left, right)]


def _emit(ir, builder, firsts: list, block, pacc, width: int, g: int) -> None:
    """The IR of one tile: row t's stream values from firsts[t], the leaf-major block of
    g x width floats at `block`, row t's accumulators at pacc + t * width."""
    vec, i32, i64 = ir.VectorType(ir.FloatType(), width), ir.IntType(32), ir.IntType(64)
    undef = ir.Constant(vec, ir.Undefined)
    splat = ir.Constant(ir.VectorType(i32, width), [0] * width)

    def leaf(lo: int) -> list:
        w = builder.load(builder.bitcast(builder.gep(block, [i64(lo * width)]), vec.as_pointer()), align=4)
        out = []
        for first in firsts:
            x = builder.load(builder.gep(first, [i64(lo)]))
            out.append(builder.fmul(builder.shuffle_vector(builder.insert_element(undef, x, i32(0)), undef, splat), w))
        return out

    for t, tree in enumerate(_tree(builder, leaf, 0, g)):
        at = builder.bitcast(builder.gep(pacc, [i64(t * width)]), vec.as_pointer())
        builder.store(builder.fadd(builder.load(at, align=4), tree), at, align=4)


def _make(numba, ir, rows: int, width: int, g: int):
    """The tile as a numba intrinsic `(a, o, s, w, ow, acc) -> None` (module docstring)."""

    def tile(typingctx, a, o, s, w, ow, acc):
        def codegen(context, builder, signature, args):
            def data(k):
                return context.make_array(signature.args[k])(context, builder, args[k]).data

            pa, i64 = data(0), ir.IntType(64)
            if isinstance(signature.args[1], numba.types.Array):     # row t at a[s + o[t]]
                po = data(1)
                firsts = [builder.gep(pa, [builder.add(args[2], builder.load(builder.gep(po, [i64(t)])))])
                          for t in range(rows)]
            else:                                                   # row t at a[o + t * s]
                firsts = [builder.gep(pa, [builder.add(args[1], builder.mul(args[2], i64(t)))]) for t in range(rows)]
            _emit(ir, builder, firsts, builder.gep(data(3), [args[4]]), data(5), width, g)
            return context.get_dummy_value()

        return numba.types.void(a, o, s, w, ow, acc), codegen

    return numba.extending.intrinsic(tile)


def build(numba) -> None:
    """Make the tiles (once per process), numba loaded."""
    if _R8W8_1 is None:
        from llvmlite import ir  # numba's own dependency: loaded with it

        for rows, width in SHAPES:
            for g in TREES:
                globals()[f"_R{rows}W{width}_{g}"] = _make(numba, ir, rows, width, g)


def tile_8x8(g, a, o, s, w, ow, acc):
    """The 8 x 8 tile of g leaves (a compile-time choice once inlined into a loop)."""
    if g == 32:
        _R8W8_32(a, o, s, w, ow, acc)
    elif g == 16:
        _R8W8_16(a, o, s, w, ow, acc)
    elif g == 64:
        _R8W8_64(a, o, s, w, ow, acc)
    elif g == 8:
        _R8W8_8(a, o, s, w, ow, acc)
    elif g == 4:
        _R8W8_4(a, o, s, w, ow, acc)
    elif g == 2:
        _R8W8_2(a, o, s, w, ow, acc)
    else:
        _R8W8_1(a, o, s, w, ow, acc)


def tile_4x16(g, a, o, s, w, ow, acc):
    """The 4 x 16 tile of g leaves."""
    if g == 32:
        _R4W16_32(a, o, s, w, ow, acc)
    elif g == 16:
        _R4W16_16(a, o, s, w, ow, acc)
    elif g == 64:
        _R4W16_64(a, o, s, w, ow, acc)
    elif g == 8:
        _R4W16_8(a, o, s, w, ow, acc)
    elif g == 4:
        _R4W16_4(a, o, s, w, ow, acc)
    elif g == 2:
        _R4W16_2(a, o, s, w, ow, acc)
    else:
        _R4W16_1(a, o, s, w, ow, acc)


ORDER = ("tile_8x8", "tile_4x16")
"""Compiled in this order, after `build`."""
INLINE = ORDER
"""Inlined into the loops that call them: the leaf-count choice folds away."""
