"""Streams that repeat their packets: a feed whose read plan has a zero-stride time loop.

Such a feed delivers the same packets at every step of that loop (e.g. one row of
activations read once per weight column group). The interpreter then holds the stream as
its distinct packets and a broadcast view over them, `Repeated`, instead of writing every
copy out: the values are the same, and the Contraction Engine's integer path multiplies
the distinct packets only. Any other reader of the stream gets it written out in full
(`materialize`), so nothing else sees the difference.
"""

from __future__ import annotations

import numpy as np

from visa.interp.plan import _cuts
from visa.interp.shortcuts import Held
from visa.interp.strided import view_reshape  # re-exported: the plain helper the held views use

__all__ = ["Repeated", "view_reshape", "compact"]


class Repeated(Held):
    """A stream `(rows, flits, flit elements)` held as `factored`, a read-only broadcast
    view `(rows, *time loops, flits per packet, flit elements)` whose zero-stride loops
    are the repeats."""

    KIND = "repeated"

    def __init__(self, factored: np.ndarray, shape: tuple[int, int, int], held: np.ndarray | None = None,
                 sparse: bool = False, alias: np.ndarray | None = None) -> None:
        self.factored = factored
        self.shape = shape
        self.dtype = factored.dtype
        self.held = held
        """Each row's first row with the same values (a DMA's copies, `visa.interp.fast.copies`,
        or a broadcast held lazily, `visa.interp.fast.lazy`), or None: not known."""
        self.sparse = sparse
        """Only the rows `held` names (held[r] == r) are stored in `factored`; every other row
        is read from its held row (a TRF load, the float contraction's exact kernel and the
        integer one's distinct pairs do so; any other reader gets `materialize`)."""
        self.alias = alias
        """For a `factored` of one time loop: each step's first step holding the same packets
        in every row (a switch broadcast's repeats, `visa.interp.fast.switch_rows`), or None."""

    def materialize(self) -> np.ndarray:
        """The stream written out, every copy of every packet."""
        full = np.ascontiguousarray(self.factored).reshape(self.shape)
        return full[self.held] if self.sparse else full

    def natural_view(self, count: int, pattern: np.ndarray) -> np.ndarray | None:
        """The elements at `pattern` (rows first) as a view, its copies kept as zero strides,
        when the pattern reads every element in order; else None."""
        if self.sparse:
            return None
        flat = pattern.reshape(-1)
        in_order = flat.size == self.shape[1] * self.shape[2] and np.array_equal(flat, np.arange(flat.size))
        return view_reshape(self.factored, (count, *pattern.shape)) if in_order else None

    def rows(self, which: np.ndarray) -> Repeated:
        """The stream of the rows `which` (stored ones, when `sparse`), its repeats still
        held as broadcasts."""
        part = compact(self.factored)[which]
        return Repeated(np.broadcast_to(part, (len(which), *self.factored.shape[1:])), (len(which), *self.shape[1:]))

    def stored_rows(self) -> np.ndarray | None:
        return self.held if self.sparse else None

    def equal_rows(self) -> np.ndarray | None:
        return self.held

    def trf_rows_view(self, bits: int, row: np.dtype, lanes: int, nrows: int) -> np.ndarray | None:
        """The flits as a view (rows, *loops, row elements) whose loops refine both its own
        (time loops, flits per packet) and a TRF load's (lanes, rows per lane): the common split
        reshapes either side without a copy (only the stored rows defined when `sparse`). None
        when its elements are not whole bytes in flits of one row or no common split exists."""
        f = self.factored
        if bits not in (8, 16, 32) or f.shape[-1] * f.itemsize != row.itemsize or f.strides[-1] != f.itemsize:
            return None
        cuts = sorted(_cuts(f.shape[1:-1]) | _cuts((lanes, nrows)))
        if any(b % a for a, b in zip(cuts, cuts[1:])):
            return None
        loops = tuple(b // a for a, b in zip(cuts, cuts[1:]))[::-1]
        return view_reshape(f.view(np.uint8).view(row)[..., 0], (f.shape[0], *loops))


def compact(x: np.ndarray, first: int = 1) -> np.ndarray:
    """`x` cut to size 1 along every axis from `first` on that it broadcasts (stride 0):
    the same values along those axes, held once."""
    cut = tuple(slice(0, 1) if k >= first and n > 1 and s == 0 else slice(None)
                for k, (n, s) in enumerate(zip(x.shape, x.strides)))
    return x[cut]
