"""The interpreter's tiled exact float kernel (visa/interp/fast/contract_jit_tiles.py), called
directly on made-up layouts and compared bit for bit with a numpy oracle written here
from the engine's sum order: per row, kept slot, output column and lane, the steps in
time order from +0, each step a tree over its g leaves whose sums add the lower half's
total (left) to the upper half's; every operation a float32 one.

The layouts exercise what the example GEMMs do not: operand groups whose sizes are not
a multiple of the tile's rows (the padded rows), interleaved groups, every leaf count,
skipped steps, slots without a partner, several columns and the widening table.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from ir.exact_kernels.compile import read_only
from tests.visa.test_interp_jit_weights import paired_weights
from visa.interp.fast import contract_jit, contract_jit_exact, contract_jit_tiles, contract_jit_weights

_NO_ROW_WEIGHTS = (np.zeros((0, 0), np.uint16), np.zeros(0, np.bool_), np.zeros(1, np.uint32), np.zeros(0, np.int64), 0,
                   np.zeros(0, np.int64), np.zeros(0, np.int64))
"""The exact kernel's per-row weight codes and stream scan, none: the laid-out weights are read."""


def _tree(x: np.ndarray) -> np.float32:
    """The adder tree over x (a power-of-two count of float32 values)."""
    while x.size > 1:
        x = (x[0::2] + x[1::2]).astype(np.float32)
    return np.float32(x[0])


def _oracle(values, weights, which, sstep, tread, rr, wofs0, g, tpad):
    """out[row, lane, slot, column]: values (rows, elements) and weights (operands,
    elements, 8 lanes) as float32."""
    rows, (slots, steps) = values.shape[0], sstep.shape
    out = np.zeros((rows, 8, slots, wofs0.size), np.float32)
    for r in range(rows):
        for kk in range(slots):
            for j in range(wofs0.size):
                for v in range(8):
                    acc = np.float32(0.0)
                    for t in range(steps):
                        if tpad.size and tpad[kk, t]:
                            continue
                        s = values[r, sstep[kk, t] + j * g:][:g]
                        e = tread[kk, t] * rr + wofs0[j]
                        acc = np.float32(acc + _tree((s * weights[which[r], e:e + g, v]).astype(np.float32)))
                    out[r, v, kk, j] = acc
    return out


def _case(rng, g: int, which: list[int], pad: bool, table: bool):
    """A random layout: 6 slots of 3 steps (slots 0/1 and 3/4 read the same stream, their
    TRF reads a constant distance apart: pairs; 2 and 5 alone), 2 columns."""
    rows, cols, rr = len(which), 2, 2 * g
    sstep = np.array([[0, 2, 4], [0, 2, 4], [1, 3, 5], [6, 8, 10], [6, 8, 10], [7, 9, 11]], np.int64) * g
    tread = np.array([[0, 1, 2], [3, 4, 5], [1, 0, 2], [2, 2, 1], [4, 4, 3], [5, 3, 0]], np.int64)
    tpad = np.zeros((6, 3), np.bool_)
    if pad:
        tpad[[0, 1], 1] = True            # a pair that skips its middle step together
        tpad[5, 0] = True
    n_elems = int(tread.max() + 1) * rr
    values = rng.uniform(-2, 2, (rows, int(sstep.max()) + cols * g)).astype(ml_dtypes.bfloat16)
    values[1::3] = values[0::3][:values[1::3].shape[0]]        # rows 3k and 3k + 1 hold the same codes
    weights = rng.uniform(-2, 2, (max(which) + 1, n_elems, 8)).astype(ml_dtypes.bfloat16).astype(np.float32)
    codes = values.view(np.uint16)
    lut = (np.arange(1 << 16, dtype=np.uint32) << 16) if table else np.zeros(1, np.uint32)
    return codes, lut, weights, np.array(which, np.int64), sstep, tread, rr, np.array([0, g], np.int64), tpad, values


@pytest.mark.parametrize("g", contract_jit_exact.TREES)
@pytest.mark.parametrize("which, pad, table", [
    ([0] * 4, False, False),
    ([0, 1, 0, 0, 1, 2, 0, 0, 1], True, False),      # groups of 5, 3 and 1 rows, interleaved
    ([3, 3, 1, 1, 1, 0], True, True),                # through the widening table
])
def test_the_tiles_give_the_oracles_bits(g, which, pad, table):
    rng = np.random.default_rng(g * 31 + len(which))
    codes, lut, weights, which_a, sstep, tread, rr, wofs0, tpad, values = _case(rng, g, which, pad, table)
    pairs, shifts = contract_jit_exact.slot_pairs(sstep, tread, tpad)
    assert (pairs[:, 1] >= 0).any() and (pairs[:, 1] < 0).any()          # both kinds run
    out = np.full((len(which), 8, 6, 2), np.nan, np.float32)
    held = np.arange(len(which))
    held[1::3] -= 1                                              # each repeat names the row it repeats
    codes, held, tread = read_only(codes, held, tread)           # as `run_float` passes them: one compiled form
    contract_jit._compiled()["exact_kernel"](
        codes, lut, not table, paired_weights(weights, shifts, rr), which_a,
        contract_jit_tiles.tile_order(which_a), held, sstep, tread, rr, wofs0, g, tpad, out, pairs,
        contract_jit_tiles.slot_quads(pairs, tread, tpad), *_NO_ROW_WEIGHTS)
    expect = _oracle(values.astype(np.float32), weights, which_a, sstep, tread, rr, wofs0, g, tpad)
    np.testing.assert_array_equal(out.view(np.uint32), expect.view(np.uint32))


def _batched_case(rng, g: int, rows: int, ms: int, pad: bool):
    """A batched GEMM's layout: slot (m, n) for `ms` stream rows m and n = 0, 1 (a pair: the
    same stream, TRF reads 3 steps apart), plus one slot alone per m; 3 steps, 2 columns.
    The pairs of every m read the same weights, each at its own stream offset."""
    steps, cols, rr = 3, 2, 2 * g
    sstep, tread = [], []
    for m_ in range(ms):
        for n in range(3):  # n = 2: a slot alone, reading other weights
            sstep.append([(m_ * (steps + cols) + t) * g for t in range(steps)])
            tread.append([n * steps + t for t in range(steps)] if n < 2 else [7 - t for t in range(steps)])
    sstep, tread = np.array(sstep, np.int64), np.array(tread, np.int64)
    tpad = np.zeros(sstep.shape, np.bool_)
    if pad:
        tpad[0::3, 1] = tpad[1::3, 1] = True  # every pair skips its middle step
    n_elems = int(tread.max() + 1) * rr
    values = rng.uniform(-2, 2, (rows, int(sstep.max()) + cols * g)).astype(ml_dtypes.bfloat16)
    weights = rng.uniform(-2, 2, (rows, n_elems, 8)).astype(ml_dtypes.bfloat16).astype(np.float32)
    return values, weights, sstep, tread, rr, np.array([0, g], np.int64), tpad


@pytest.mark.parametrize("g", [1, 8, 32])
@pytest.mark.parametrize("which, ms, pad", [
    ([0, 1, 2, 3], 4, False),                    # every row alone: four pairs a tile
    ([0, 1, 2], 5, True),                        # five pairs a weight: the second tile repeats one
    ([0, 0, 1, 2, 2, 2, 3], 4, False),           # rows alone beside groups of rows
])
def test_a_row_alone_in_its_group_tiles_its_own_slots(g, which, ms, pad):
    """A row that shares its TRF operand with no other row (a batched GEMM) takes its tiles'
    rows from its own slot pairs that read the same weights (`slot_quads`), bit for bit
    the oracle."""
    rng = np.random.default_rng(g * 7 + len(which))
    values, weights, sstep, tread, rr, wofs0, tpad = _batched_case(rng, g, len(which), ms, pad)
    pairs, shifts = contract_jit_exact.slot_pairs(sstep, tread, tpad)
    quads = contract_jit_tiles.slot_quads(pairs, tread, tpad)
    assert quads.shape[0] > 0 and (pairs[:, 1] >= 0).any() and (pairs[:, 1] < 0).any()
    which_a = np.array(which, np.int64)
    out = np.full((len(which), 8, sstep.shape[0], 2), np.nan, np.float32)
    lut = np.zeros(1, np.uint32)
    codes, held, tread_r = read_only(values.view(np.uint16), np.arange(len(which)), tread)   # as `run_float` does
    contract_jit._compiled()["exact_kernel"](
        codes, lut, True, paired_weights(weights, shifts, rr), which_a,
        contract_jit_tiles.tile_order(which_a), held, sstep, tread_r, rr, wofs0, g, tpad, out,
        pairs, quads, *_NO_ROW_WEIGHTS)
    expect = _oracle(values.astype(np.float32), weights, which_a, sstep, tread, rr, wofs0, g, tpad)
    np.testing.assert_array_equal(out.view(np.uint32), expect.view(np.uint32))


@pytest.mark.parametrize("g", [1, 8, 32])
@pytest.mark.parametrize("pad", [False, True])
def test_a_row_alone_lays_out_its_own_weights_from_their_codes(g, pad):
    """Every row reading a TRF operand of its own (a batched GEMM): the kernel gets the
    weights as codes (operands, 8 lanes x elements) and lays each row's out just before its
    tiles, as `paired_weights` would have, bit for bit the oracle; and it finds the stream
    codes' range as it widens them (`scan`), as numpy does."""
    rng = np.random.default_rng(g * 11 + pad)
    rows = 4
    values, weights, sstep, tread, rr, wofs0, tpad = _batched_case(rng, g, rows, 5, pad)
    pairs, shifts = contract_jit_exact.slot_pairs(sstep, tread, tpad)
    quads = contract_jit_tiles.slot_quads(pairs, tread, tpad)
    n_e = weights.shape[1]
    codes = weights.astype(ml_dtypes.bfloat16).view(np.uint16)                  # (operands, elements, lanes)
    wcodes = np.ascontiguousarray(codes.transpose(0, 2, 1)).reshape(rows, -1)     # lane-major, as `gather` reads
    which = np.arange(rows, dtype=np.int64)
    out = np.full((rows, 8, sstep.shape[0], 2), np.nan, np.float32)
    scan, wscan = np.array([0, 0x7FFF], np.int64), np.array([0, 0x7FFF], np.int64)
    codes_r, held, tread_r = read_only(values.view(np.uint16), np.arange(rows), tread)   # as `_scanned` passes them
    contract_jit._compiled()["exact_kernel"](
        codes_r, np.zeros(1, np.uint32), True, np.zeros((1, 1, 16), np.float32), which,
        contract_jit_tiles.tile_order(which), held, sstep, tread_r, rr, wofs0, g, tpad, out, pairs, quads,
        wcodes, np.ones(rows, np.bool_), np.zeros(1, np.uint32), np.array(shifts, np.int64) * rr, n_e, scan, wscan)
    expect = _oracle(values.astype(np.float32), weights, which, sstep, tread, rr, wofs0, g, tpad)
    np.testing.assert_array_equal(out.view(np.uint32), expect.view(np.uint32))
    for found, codes_seen in ((scan, values.view(np.uint16)), (wscan, wcodes)):  # the ranges, found on the way
        m = codes_seen.astype(np.int64) & 0x7FFF
        assert found.tolist() == [m.max(), m[m > 0].min() - 1 if (m > 0).any() else 0x7FFF]


def test_the_tile_order_groups_rows_by_operand_and_pads_each_group():
    order = contract_jit_tiles.tile_order(np.array([2, 0, 2, 2, 0, 2, 2, 1], np.int64))
    rows = contract_jit_tiles.ROWS
    assert order.size % rows == 0
    tiles = order.reshape(-1, rows)
    operand = np.array([2, 0, 2, 2, 0, 2, 2, 1])[tiles]
    assert (operand == operand[:, :1]).all()                             # one operand a tile
    assert sorted(set(order.tolist())) == list(range(8))                 # every row, padding repeats only
    assert order[:5].tolist() == [0, 2, 3, 5, 6]                         # first use order, rows in order


def test_only_the_shifts_a_pair_reads_are_laid_out():
    """A GEMM's slots all pair at one distance: shift 0 (no pair reads it) is not a copy."""
    sstep = np.array([[0, 4], [0, 4], [8, 12], [8, 12]], np.int64)
    tread = np.array([[0, 1], [2, 3], [0, 1], [2, 3]], np.int64)
    pairs, shifts = contract_jit_exact.slot_pairs(sstep, tread, np.zeros((0, 0), np.bool_))
    assert shifts == [2] and pairs.tolist() == [[0, 1, 0], [2, 3, 0]]
    pairs, shifts = contract_jit_exact.slot_pairs(sstep[:3], tread[:3], np.zeros((0, 0), np.bool_))
    assert shifts == [0, 2] and pairs.tolist() == [[0, 1, 1], [2, -1, 0]]


@pytest.mark.parametrize("dtype, mag", [(np.uint16, 0x7FFF), (np.uint8, 0x7F)])
def test_the_stream_scan_names_repeated_rows_and_bounds_the_stored_ones(dtype, mag):
    rng = np.random.default_rng(int(mag))
    codes = rng.integers(0, np.iinfo(dtype).max, (9, 4200)).astype(dtype)      # past one 512-word block
    codes[2] = codes[1]
    codes[3] = codes[1]                                          # a run of three equal rows
    codes[6] = codes[4]                                          # equal, not consecutive: scanned again
    codes[8] = codes[7]
    codes[8, 4199] ^= 1                                          # differs in its last code only
    held = contract_jit.held_rows(codes)
    top, low = contract_jit._compiled()["_held_bounds"](*read_only(codes, mag, held))   # as `_stream_range` passes them
    assert held.tolist() == [0, 1, 1, 1, 4, 5, 6, 7, 8]
    m = codes.astype(np.int64) & mag
    assert top == m.max() and low == (m[m > 0].min() - 1 if (m > 0).any() else mag)


@pytest.mark.parametrize("dtype, mag", [(np.uint16, 0x7FFF), (np.uint8, 0x7F)])
@pytest.mark.parametrize("fill", ["random", "zeros", "signed_zeros", "one_tiny", "one_large"])
def test_the_code_scans_match_numpy(dtype, mag, fill):
    """`_bounds` and `_held_bounds` (largest masked code, smallest nonzero one minus one,
    `mag` when every code is a zero) against numpy, on each code width's own loop."""
    rng = np.random.default_rng(int(mag) + len(fill))
    codes = rng.integers(0, np.iinfo(dtype).max, (6, 1000)).astype(dtype)
    sign = dtype(mag + 1)
    if fill != "random":
        codes[:] = 0
    if fill == "signed_zeros":
        codes[:, ::2] = sign
    if fill == "one_tiny":
        codes[4, 999] = sign | dtype(1)
    if fill == "one_large":
        codes[0, 0] = dtype(mag)
    held = np.array([0, 0, 2, 3, 3, 5], np.int64)               # rows 1 and 4 repeat others: not scanned
    kernels = contract_jit._compiled()
    for got, rows in ((kernels["_bounds"](codes, mag), range(6)),
                      (kernels["_held_bounds"](*read_only(codes, mag, held)), [0, 2, 3, 5])):
        m = codes[list(rows)].astype(np.int64) & mag
        want = (int(m.max()), int(m[m > 0].min() - 1) if (m > 0).any() else mag)
        assert (int(got[0]), int(got[1])) == want


def test_slot_quads_are_grouped_once_per_slots(monkeypatch: pytest.MonkeyPatch) -> None:
    """A contraction's slots are the same every run: `slot_quads` groups them once (2 ms a
    run on `drawn_s1_3`'s 2048 slots) and hands each run its own writable copy."""
    grouped = []
    real = contract_jit_tiles._grouped
    monkeypatch.setattr(contract_jit_tiles, "_grouped", lambda *a: grouped.append(1) or real(*a))
    contract_jit_tiles._slot_quads.cache_clear()
    sstep = np.zeros((8, 3), np.int64)           # 8 slots reading the same stream steps: 4 pairs
    tread = np.zeros((8, 3), np.int64)           # of the same TRF reads, partners 7 reads further on
    tread[1::2] += 7
    pairs, _ = contract_jit_exact.slot_pairs(sstep, tread, np.zeros((0, 0), np.bool_))
    runs = [contract_jit_tiles.slot_quads(pairs.copy(), tread.copy(), np.zeros((0, 0), np.bool_)) for _ in range(2)]
    assert grouped == [1] and runs[0].shape == (1, 4)   # the 4 pairs one tile
    assert np.array_equal(runs[0], runs[1]) and runs[0] is not runs[1] and runs[0].flags.writeable
    assert np.array_equal(runs[0], real(pairs, tread, np.zeros((0, 0), np.bool_)))
