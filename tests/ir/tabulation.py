"""Count the cells the evaluator tabulates: a deterministic stand-in for timing tests.

Checks must be symbolic (factor forms), so a test asserts how many cells were decoded
instead of how long something took (benchmarks measure time, tests never do)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ir.mapping import cells


@contextlib.contextmanager
def cells_tabulated() -> Iterator[list[int]]:
    """Yields a one-item list holding the number of positions decoded so far."""
    counter = [0]
    original = cells.finalize

    def spy(items, n, dtype=None):
        counter[0] += n
        return original(items, n) if dtype is None else original(items, n, dtype)

    cells.finalize = spy
    try:
        yield counter
    finally:
        cells.finalize = original
