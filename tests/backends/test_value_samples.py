"""`value_samples.apart` on a move not copied yet: the places are found once per layout and
read from each new base's memory, and the answers stay numpy's."""

from __future__ import annotations

import numpy as np
import pytest

from backends.cpu import contract_fast, lazy_rows, value_samples
from backends.cpu.gathers import Gather
from backends.cpu.lazy_rows import LazyRows
from backends.cpu.moves_strided import StridedForm


def test_a_layout_read_again_takes_its_places_from_the_new_base(monkeypatch: pytest.MonkeyPatch) -> None:
    shape, steps = (8, 2, 2, 2, 16), (256, 2, 4, 8, 16)  # digit 0 (stride 256) is the candidate
    gather = Gather(tuple(range(5)), shape, (8, 8, 16, 1), None, 3, steps)
    form = StridedForm((2051,), (1,), (2,), 0, 0, True)
    made = []
    monkeypatch.setattr(lazy_rows, "gather_view", lambda lazy, g, real=lazy_rows.gather_view: made.append(g) or real(lazy, g))
    rng = np.random.default_rng(5)

    def answer(raw: np.ndarray) -> bool:
        v = np.lib.stride_tricks.as_strided(raw[:, 3:], (raw.shape[0], *shape), (raw.strides[0], *(2 * s for s in steps)))
        return not (v == v[:, :1]).all(axis=(0, *range(2, v.ndim))).all()  # numpy: some cell differs along digit 0

    drawn = rng.integers(1, 60000, (3, 2051), dtype=np.uint16)
    repeated = drawn.copy()
    view = np.lib.stride_tricks.as_strided(repeated[:, 3:], (3, *shape), (repeated.strides[0], *(2 * s for s in steps)))
    view[...] = view[:, :1].copy()
    for raw in (drawn, repeated, drawn.copy()):
        op = contract_fast._Operand(LazyRows(raw, form, raw.shape[1], raw.shape))
        assert value_samples.apart(op, gather, (0,)) == answer(raw)
    assert answer(drawn) and not answer(repeated)
    assert len(made) == 1  # the strided view made for the first base only
