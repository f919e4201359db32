"""A TRF load of a few distinct rows writes each into the first slice holding it and leaves
the copies into the other slices for later (`visa.interp.trf._store_held`,
`visa.interp.trf_later`, issue 61 item 2): a reader of those first slices sees them right
without the copies; any other reader, and a writer that does not cover the copies, sees
every slice as a plain store of each row into each slice would leave it (a numpy oracle,
cell by cell); a writer covering them drops them."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.drawn_kernels import Drawn
from npu_opt.compile_api import compile_kernel
from synth import contraction
from tu_ops.target import get_target
from visa import parse_visa
from visa.interp import execute_inout, trf
from visa.interp.fast import lazy, pool
from visa.interp.memory import Memory

ROW = np.dtype((np.void, 32))
LANES, FIRST, ROWS = 8, 3, 4
CASES = [(np.arange(0, 64, 2), np.arange(32) // 8 + 5),    # every 2nd slice, each row in 8 side by side
         (np.arange(7, 39), np.arange(32) % 4 + 1)]        # a run, rows cycling by 4


@pytest.fixture(autouse=True)
def _empty_pool(monkeypatch):
    monkeypatch.setattr(pool, "_POOL", [])   # a fresh, zero store for each test


def _loaded(slices, stored):
    """A Memory after `_store_held` of random rows, the rows, and the slices' oracle store."""
    rng = np.random.default_rng(int(slices[0]))
    held = rng.integers(0, 256, (40, LANES, ROWS, 32), dtype=np.uint8).view(ROW)[..., 0]
    mem = Memory(get_target("rngd"))
    at = trf._stepped(slices)
    dest = mem.trf_rows(0, 0, LANES, FIRST, ROWS, at).view(ROW)[..., 0]
    trf._store_held(mem, (0, 0, LANES, FIRST, ROWS), dest, slices, stored, held)
    want = np.zeros((LANES, mem.trf_bytes // 32 // LANES, mem.slices, 32), np.uint8)
    for i, s in enumerate(slices):           # the oracle: each slice's rows, cell by cell
        for lane in range(LANES):
            for r in range(ROWS):
                want[lane, FIRST + r, s] = np.frombuffer(held[stored[i], lane, r].tobytes(), np.uint8)
    return mem, want.reshape(mem.trf(0, 0, np.zeros(0, np.int64)).shape)


def _firsts(slices, stored):
    return np.array([slices[list(stored).index(v)] for v in dict.fromkeys(stored.tolist())])


@pytest.mark.parametrize("slices, stored", CASES)
def test_a_held_load_writes_first_slices_now_and_the_copies_when_read(slices, stored):
    mem, want = _loaded(slices, stored)
    firsts = _firsts(slices, stored)
    others = np.setdiff1d(slices, firsts)
    seen = mem.trf(0, 0, firsts)                         # a reader of the first slices only
    assert np.array_equal(seen[:, firsts], want[:, firsts])
    assert not seen[:, others].any()                     # their copies still wait
    assert np.array_equal(mem.trf(0, 0), want)           # any other reader: every slice


@pytest.mark.parametrize("slices, stored", CASES)
def test_a_write_makes_the_copies_first_or_drops_those_it_covers(slices, stored):
    mem, want = _loaded(slices, stored)
    others = np.setdiff1d(slices, _firsts(slices, stored))
    mem.trf_rows(0, 0, LANES, FIRST + ROWS, 2, True)     # rows apart: the copies still wait
    assert not mem.trf(0, 0, np.zeros(0, np.int64))[:, others].any()
    assert np.array_equal(mem.trf(0, 0), want)
    mem, want = _loaded(slices, stored)
    mem.trf_rows(0, 0, LANES, FIRST, ROWS - 1, True)     # part of the rows: made first
    assert np.array_equal(mem.trf(0, 0, np.zeros(0, np.int64)), want)
    mem, _ = _loaded(slices, stored)
    mem.trf_rows(0, 0, LANES, FIRST - 1, ROWS + 1, True)  # every byte they would write: dropped
    assert not mem.trf(0, 0)[:, others].any()


def test_an_integer_contraction_reads_the_first_slices_and_the_copies_are_never_made(monkeypatch):
    """`drawn_s1_4`'s layout, smaller: `w` loaded by a switch broadcast (4 slices a row), the
    integer contraction reading its distinct weight rows only (`read_weights` of some rows)."""
    spec = contraction("out[n,m] = a[m,k] * w[k,n]", dtype="i8:i32", sizes={"k": 64, "m": 64, "n": 1024},
                       name="trf_later", transpose="device")
    drawn = Drawn("trf_later", spec, {"placement": "4x16 of 256x32, on 1/4 of the slices", "trf": "w",
                                      "packet": 64}, "tiled")
    a, w, out = drawn.inputs(np.random.default_rng(3))
    monkeypatch.setattr(lazy, "LAZY_BYTES", 0)         # the broadcasts held lazily at this size
    calls: list[str] = []
    for name in ("_store_held", "_store_repeats"):
        real = getattr(trf, name)
        monkeypatch.setattr(trf, name, lambda *args, real=real, name=name: (calls.append(name), real(*args))[1])
    results, finals = execute_inout(parse_visa(compile_kernel(drawn.kernel).text), [a, w, out])
    want = (a.astype(np.int64) @ w.astype(np.int64)).T.astype(np.int32)     # the oracle: exact in int64
    assert np.array_equal((results + finals)[-1], want)
    assert calls == ["_store_held"]                      # stored once, its copies never made
