"""The bytes of a pooled TRF store that an earlier run left behind, as row ranges of some
slices (`visa.interp.memory.Memory`: a run reuses a finished run's store, and must see zeros
wherever it has not written).

A span `(lo, hi, s)` is rows `lo .. hi - 1` (rows of the whole store, every lane's) of the
slices `range(*s)`, or of every slice when `s` is None. A run records the rows each TRF load
writes with the slices it writes them in (a placement on 1/2 of the slices writes every
second one), so the next run's load of the same rows into the same slices finds nothing to
zero: its writes cover the span. A write first zeroes what it does not cover of the spans
its rows meet, and nothing else: spans of other rows stay until a later write covers them or
a reader asks for the store (`zero`). Before, the whole row range was zeroed in every slice
at the first write (12.6 MB a run of a 2048-row, 256-slice kernel on half the slices).
"""

from __future__ import annotations

import numpy as np

__all__ = ["Span", "covered_slices", "cut", "zero"]

Span = tuple[int, int, tuple[int, int, int] | None]


def covered_slices(at: slice, n: int) -> tuple[int, int, int] | None:
    """`at` (a slice of the `n` slices) as a span's slices: None when it is every slice."""
    s = at.indices(n)
    return None if s == (0, n, 1) else s


def cut(stale: list[Span], lo: int, hi: int, covered: tuple[int, int, int] | None | bool,
        n: int) -> tuple[list[Span], list[Span]]:
    """(the spans still stale, the spans to zero now) when rows [lo, hi) are about to be
    written, every byte of them in the slices `covered` (a span's slices; True: every
    slice; False: none: the writer may leave any byte as it is)."""
    kept: list[Span] = []
    now: list[Span] = []
    for a, b, s in stale:
        if b <= lo or hi <= a:
            kept.append((a, b, s))
            continue
        kept += [(x, y, s) for x, y in ((a, lo), (hi, b)) if x < y]
        if covered is True:
            continue
        inside = max(a, lo), min(b, hi)
        now += [(*inside, r) for r in _minus(s, None if covered is False else covered, n)]
    return kept, now


def _minus(s: tuple[int, int, int] | None, covered: tuple[int, int, int] | None, n: int) -> list:
    """Span slices holding every slice of `s` (None: all `n`) outside `covered` (None: no
    slice is covered): none, one stepped range, or `s` itself when the rest is not one."""
    if covered is None:
        return [s]
    mask = np.zeros(n, np.bool_)
    mask[slice(*s) if s is not None else slice(None)] = True
    mask[slice(*covered)] = False
    rest = np.flatnonzero(mask)
    if not rest.size:
        return []
    step = int(rest[1] - rest[0]) if rest.size > 1 else 1
    if np.array_equal(rest, rest[0] + step * np.arange(rest.size)):
        return [(int(rest[0]), int(rest[-1]) + 1, step)]
    return [s]


def zero(data: np.ndarray, spans: list[Span]) -> None:
    """Zero `spans` of a store (rows, slices, row bytes)."""
    for lo, hi, s in spans:
        if s is None:
            data[lo:hi] = 0
        else:
            data[lo:hi, slice(*s)] = 0
