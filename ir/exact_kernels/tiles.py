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
tile_8x8 = tile_4x16 = None
"""The tiles by shape, numba intrinsics made by `build`."""


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


def _make(numba, ir, rows: int, width: int):
    """The tile as a numba intrinsic `(g, a, o, s, w, ow, acc) -> None` (module docstring):
    one block of IR per leaf count of `TREES`, chosen by a switch on `g` (any other count
    takes the one-leaf tile; the callers only pass counts of `TREES`)."""

    def tile(typingctx, g, a, o, s, w, ow, acc):
        def codegen(context, builder, signature, args):
            def data(k):
                return context.make_array(signature.args[k])(context, builder, args[k]).data

            pa, i64 = data(1), ir.IntType(64)
            if isinstance(signature.args[2], numba.types.Array):     # row t at a[s + o[t]]
                po = data(2)
                firsts = [builder.gep(pa, [builder.add(args[3], builder.load(builder.gep(po, [i64(t)])))])
                          for t in range(rows)]
            else:                                                   # row t at a[o + t * s]
                firsts = [builder.gep(pa, [builder.add(args[2], builder.mul(args[3], i64(t)))]) for t in range(rows)]
            block, pacc = builder.gep(data(4), [args[5]]), data(6)
            end = builder.append_basic_block("tile_end")
            cases = {n: builder.append_basic_block(f"tile_{n}") for n in TREES}
            switch = builder.switch(args[0], cases[1])
            for n, bb in cases.items():
                switch.add_case(ir.Constant(args[0].type, n), bb)
                builder.position_at_end(bb)
                _emit(ir, builder, firsts, block, pacc, width, n)
                builder.branch(end)
            builder.position_at_end(end)
            return context.get_dummy_value()

        return numba.types.void(g, a, o, s, w, ow, acc), codegen

    return numba.extending.intrinsic(tile)


def build(numba) -> None:
    """Make the tiles (once per process), numba loaded."""
    if tile_8x8 is None:
        from llvmlite import ir  # numba's own dependency: loaded with it

        for rows, width in SHAPES:
            globals()[f"tile_{rows}x{width}"] = _make(numba, ir, rows, width)


ORDER = ()
"""No kernel of its own to compile: `build` makes the tiles, which inline into their callers."""
INLINE = ()
