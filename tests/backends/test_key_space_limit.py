"""The fetch lift and the contraction's outer plan key their cells on `keys.joint_frag`
(backends/cpu/fetch_lift.py, contract_plan.py): when the joint factor form of the levels
needs a table past the mapping limit (an axis padded and split over two digits with another
axis between), they key on each level's own fragments, as moves do, instead of refusing a
kernel the compiler accepts with MAP-limit. The limit is lowered for the test so that a
16-cell table is past it (the real one is 2**20 cells)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import ir.mapping.structural as structural
from backends.cpu import contract_plan
from backends.cpu.fetch_lift import fetch_lift
from ir.dtypes import DType
from ir.mapping import m
from ir.mapping.factors import factors_of
from ir.types import StreamType

AXES = {"M": 10, "N": 4}           # M # 12 over two digits: 4 * hi + lo < 10 is no product


def _m(text: str):
    return m(text, axes=AXES)


@pytest.fixture(autouse=True)
def _fresh_factor_forms():
    factors_of.cache_clear()   # factor forms are cached: none found under the other limit is reused
    yield
    factors_of.cache_clear()


def _limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(structural, "TAB_CELL_LIMIT", 16)


def test_a_fetch_lift_past_the_table_limit_is_keyed_on_the_levels(monkeypatch: pytest.MonkeyPatch) -> None:
    one = _m("1")
    src = StreamType(DType.I32, one, one, one, _m("M # 12 / 4, N"), _m("M # 12 % 4"))   # time (hi, N); packet lo
    dst = StreamType(DType.I32, one, one, one, _m("N, M # 12 / 4"), _m("M # 12 % 4"))
    op = SimpleNamespace(input=SimpleNamespace(type=src), result=SimpleNamespace(type=dst), STAGE="fetch_slice_lift")
    hi, n, lo = np.meshgrid(np.arange(3), np.arange(4), np.arange(4), indexing="ij")
    buf = np.where(4 * hi + lo < 10, 100 * (4 * hi + lo) + n, 0).astype(np.int32).reshape(1, 1, 1, 12, 4)
    want = buf.reshape(3, 4, 4).transpose(1, 0, 2).reshape(1, 1, 1, 12, 4)   # the same cells, N outer
    _limit(monkeypatch)                                              # (hi, N, lo) needs 48 cells
    np.testing.assert_array_equal(fetch_lift(op, buf), want)


def test_the_outer_plan_past_the_table_limit_is_keyed_on_the_levels(monkeypatch: pytest.MonkeyPatch) -> None:
    lane, element = _m("M # 12 / 4"), _m("N, M # 12 % 4")
    args = (4, 4, 1, 1, 4, lane, element, _m("N"), _m("M # 12 % 4"))    # t = o, the whole packet a flit
    make = contract_plan._outer_plan.__wrapped__
    _limit(monkeypatch)                                              # (lane, element) needs 48 cells
    got = make(*args)
    l, o, q = np.meshgrid(np.arange(3), np.arange(4), np.arange(4), indexing="ij")
    live = 4 * l + q < 10
    np.testing.assert_array_equal(got.live, live)
    np.testing.assert_array_equal(np.where(live, got.tidx, -1), np.where(live, l * 16 + o * 4 + q, -1))
    np.testing.assert_array_equal(got.sidx, np.arange(16).reshape(4, 4))
