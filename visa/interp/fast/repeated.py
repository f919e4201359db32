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

__all__ = ["Repeated", "view_reshape", "compact"]


class Repeated:
    """A stream `(rows, flits, flit elements)` held as `factored`, a read-only broadcast
    view `(rows, *time loops, flits per packet, flit elements)` whose zero-stride loops
    are the repeats."""

    def __init__(self, factored: np.ndarray, shape: tuple[int, int, int], held: np.ndarray | None = None) -> None:
        self.factored = factored
        self.shape = shape
        self.dtype = factored.dtype
        self.held = held
        """Each row's first row with the same values (a DMA's copies, `visa.interp.fast.copies`),
        or None: not known."""

    def materialize(self) -> np.ndarray:
        """The stream written out, every copy of every packet."""
        return np.ascontiguousarray(self.factored).reshape(self.shape)


def view_reshape(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    """`a.reshape(shape)` when it is a view of `a`; None when it would copy."""
    try:
        return np.reshape(a, shape, copy=False)
    except TypeError:       # numpy < 2.1 has no `copy=`: a view's shape can be set only when no copy is needed
        v = a.view()
        try:
            v.shape = shape
        except AttributeError:
            return None
        return v
    except ValueError:
        return None


def compact(x: np.ndarray, first: int = 1) -> np.ndarray:
    """`x` cut to size 1 along every axis from `first` on that it broadcasts (stride 0):
    the same values along those axes, held once."""
    cut = tuple(slice(0, 1) if k >= first and n > 1 and s == 0 else slice(None)
                for k, (n, s) in enumerate(zip(x.shape, x.strides)))
    return x[cut]
