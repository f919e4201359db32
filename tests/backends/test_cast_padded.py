"""First-run memory of a cast (issue 61): the narrowed packets placed straight into their
padded flits (`adapters._place`), and an affine gather checked a block at a time on a view
(`gathers._affine`), each against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from backends.cpu import adapters, gathers


@pytest.mark.parametrize("dtype, p, q", [(np.uint16, 8, 16), (np.uint8, 8, 32), (np.uint16, 4, 16), (np.uint16, 3, 6)])
def test_packets_are_placed_with_a_zero_tail(dtype: type, p: int, q: int) -> None:
    rng = np.random.default_rng(3)
    part = rng.integers(1, 200, (37, p)).astype(dtype)
    out = np.full((37, q), 7, dtype)
    adapters._place(out, part)
    np.testing.assert_array_equal(out, np.concatenate([part, np.zeros((37, q - p), dtype)], axis=1))


def test_affinity_is_checked_a_block_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gathers, "_CHECK_BLOCK", 8)
    grid = np.add.outer(np.arange(6) * 40, np.arange(5) * 3)[:, :, None] + np.arange(4) + 11
    view = np.broadcast_to(grid[:, None], (6, 2, 5, 4)).astype(np.int32)[:, :, :, :]
    assert gathers._affine(view) == (11, (40, 0, 3, 1))
    broken = view.copy()
    broken[5, 1, 4, 3] += 1  # the last cell, in the last block compared
    assert gathers._affine(broken) is None
