"""A broadcasting switch on the cpu backend is held as its distinct rows
(backends/cpu/switch_rows.py): fewer rows than the buffer, each spatial row mapped to one,
and the buffer they make is the engine's own output bit for bit (tests/engines' cases)."""

from __future__ import annotations

import numpy as np
import pytest

from backends.cpu import layout, switch_rows
from backends.cpu.lazy_rows import LazyRows, materialize
from ir.switch.semantics import switch_data
from tests.engines.test_switch_op import CASES, _op

BROADCASTS = ("broadcast1", "broadcast01", "custom_broadcast", "transposed_broadcast1")


def _eager(op, buf: np.ndarray) -> np.ndarray:
    """The switch written out ring by ring, padding zero (the engine's definition)."""
    t, out_t = op.input.type, op.result.type
    rings = buf.reshape(-1, t.slice.size, t.time.size, t.packet.size)
    out = np.stack([switch_data(r, t.slice, t.time, op.out_slice, op.out_time, op.config) for r in rings])
    return layout.zero_padding(out.reshape(layout.shape_of(out_t)), out_t)


@pytest.mark.parametrize("name", [n for n in BROADCASTS if n in CASES])
def test_a_broadcast_is_its_distinct_rows_and_the_engines_bits(name):
    op = _op(*CASES[name])
    t = op.input.type
    rng = np.random.default_rng(7)
    buf = layout.zero_padding(rng.integers(1, 1 << 30, layout.shape_of(t)).astype(np.int64), t)
    got = switch_rows.distinct(op, buf)
    assert isinstance(got, LazyRows)
    rows = layout.n_rows(op.result.type)
    assert got.base.shape[0] * 2 <= rows and got.row_of.shape == (rows,)
    assert np.array_equal(materialize(got), _eager(op, buf))


def test_a_switch_of_no_copies_is_written_out():
    op = _op(*CASES["transpose"])
    buf = np.arange(np.prod(layout.shape_of(op.input.type)), dtype=np.int64).reshape(layout.shape_of(op.input.type))
    assert switch_rows.distinct(op, buf) is None


@pytest.mark.parametrize("name", [n for n in BROADCASTS if n in CASES])
def test_a_second_switch_replays_its_plan_and_writes_every_cell(monkeypatch, name):
    """The gather plan is found at the op's first switch only (`_rows_plan`); a later switch
    of new values replays it, into scratch holding garbage (the arena's reused memory), and
    still gives the engine's bits: every cell written, padding and blank packets zero."""
    op = _op(*CASES[name])
    t = op.input.type
    rng = np.random.default_rng(11)
    first = layout.zero_padding(rng.integers(1, 1 << 30, layout.shape_of(t)).astype(np.int64), t)
    assert np.array_equal(materialize(switch_rows.distinct(op, first)), _eager(op, first))

    def garbage(shape, dtype):
        return np.full(shape, -7, dtype)

    def found_again(op):
        raise AssertionError("the plan is found again")

    monkeypatch.setattr(switch_rows.arena, "empty", garbage)
    monkeypatch.setattr(switch_rows, "_packet_map", found_again)
    second = layout.zero_padding(rng.integers(1, 1 << 30, layout.shape_of(t)).astype(np.int64), t)
    got = switch_rows.distinct(op, second)
    assert np.array_equal(materialize(got), _eager(op, second))
    assert not np.array_equal(materialize(got), _eager(op, first))


def test_switches_of_one_geometry_share_one_packet_map():
    """Two switch ops of the same geometry (an unrolled kernel's tiles: one op each) are
    given the same map, made once (issue 61, first-run memory: a batched kernel of 16 tiles
    kept 16 copies, 1.3 MiB); in int32, and still the engine's map."""
    first, second = _op(*CASES["broadcast1"]), _op(*CASES["broadcast1"])
    assert first is not second
    got = switch_rows._packet_map(first)
    assert switch_rows._packet_map(second)[0] is got[0]
    t = first.input.type
    ids = np.arange(t.slice.size * t.time.size).reshape(t.slice.size, t.time.size, 1)
    want = switch_data(ids, t.slice, t.time, first.out_slice, first.out_time, first.config, fill=-1)[..., 0]
    assert got[0].dtype == np.int32 and np.array_equal(got[0], want)
