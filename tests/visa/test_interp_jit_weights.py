"""The TRF operand of the interpreter's compiled float contraction
(visa/interp/fast/contract_jit_weights.py) against numpy oracles written here: which slices may
share a widened copy (`distinct`: the guess from the first touched TRF row, its check, the
digest fallback for the slices whose guess failed) and the widened bits in both layouts
(`widened`: a shift for zeros and normal bf16 codes, the conversion table for anything
else), compared with `table[codes]` and `paired_weights` (below).
"""

from __future__ import annotations

import numpy as np
import pytest

from tu_ops.enums import FeedElementType
from visa.interp.fast import contract_jit, contract_jit_weights as weights
from visa.interp.values import widen_table

BF16 = widen_table(FeedElementType.BF16)
E4M3 = widen_table(FeedElementType.F8E4M3)
SHAPE = (64, 8, 40, 4)       # lane_elems, base, n, lanes: lane l reads elements 64 l + 8 .. 64 l + 47


def _kernels() -> dict:
    kernels = contract_jit._compiled()
    assert kernels is not None                          # numba is part of the test extra
    return kernels


def _cells(rng, slices: int, per_row: int = 16, dtype=np.uint16, lo: int = 0x3F00, hi: int = 0x4000) -> np.ndarray:
    """(TRF rows, slices, per_row) random codes covering SHAPE's operand with up to eight
    lanes (normal bf16 by default)."""
    rows = (SHAPE[0] * 8) // per_row
    return rng.integers(lo, hi, (rows, slices, per_row)).astype(dtype)


def _operand(cells: np.ndarray, sl: int, shape=SHAPE) -> np.ndarray:
    """The oracle: slice sl's operand codes as (element, lane), read from its flat elements."""
    lane_elems, base, n, lanes = shape
    flat = cells[:, sl, :].reshape(-1)
    at = np.arange(lanes)[None, :] * lane_elems + base + np.arange(n)[:, None]
    return flat[at]


def _distinct(cells: np.ndarray, slices: np.ndarray) -> np.ndarray:
    touched = weights.operand_rows(*SHAPE, cells.shape[2])
    return weights.distinct(_kernels(), weights.words_of(cells), slices, touched)


def _check_sound(cells: np.ndarray, slices: np.ndarray, key: np.ndarray) -> None:
    """key[i] <= i names a copy (key[key[i]] == key[i]) whose operand bytes equal slice i's."""
    assert all(0 <= k <= i and key[k] == k for i, k in enumerate(key.tolist()))
    for i, k in enumerate(key.tolist()):
        np.testing.assert_array_equal(_operand(cells, slices[i]), _operand(cells, slices[k]))


def test_slices_equal_in_the_operand_share_a_copy_and_one_word_keeps_them_apart():
    rng = np.random.default_rng(1)
    cells = _cells(rng, 12)
    for sl in range(4, 12):
        cells[:, sl] = cells[:, sl % 4]                 # 4 distinct weights, each 3 times
    last = weights.operand_rows(*SHAPE, 16)[-1]
    cells[last, 9, 5] ^= 1                              # slice 9: its first touched row equal to 1's, one late word not
    assert 3 not in weights.operand_rows(*SHAPE, 16)    # elements 48..63: past lane 0's, before lane 1's
    cells[3, 6, 0] ^= 1                                 # slice 6 differs only in a TRF row no lane reads
    slices = np.arange(12, dtype=np.int64)
    key = _distinct(cells, slices)
    _check_sound(cells, slices, key)
    assert key.tolist() == [0, 1, 2, 3, 0, 1, 2, 3, 0, 9, 2, 3]


def test_slices_whose_guess_fails_are_sorted_out_among_themselves():
    """Every slice's first touched row is the same: the guess (slice 0) fails for all that
    differ later, and the digest and the word-for-word check still pair the equal ones."""
    rng = np.random.default_rng(2)
    cells = _cells(rng, 8)
    first = weights.operand_rows(*SHAPE, 16)[0]
    cells[first] = cells[first, :1]
    for sl in (5, 6, 7):
        cells[:, sl] = cells[:, sl - 4]                 # 5 = 1, 6 = 2, 7 = 3, none = 0
    cells[first, 4] = cells[first, 0]
    slices = np.array([3, 0, 1, 2, 4, 5, 6, 7, 1], np.int64)   # out of order, slice 1 twice
    key = _distinct(cells, slices)
    _check_sound(cells, slices, key)
    assert key.tolist() == [0, 1, 2, 3, 4, 2, 3, 0, 2]


def test_a_digest_collision_among_failed_guesses_is_checked_word_for_word(monkeypatch):
    rng = np.random.default_rng(3)
    cells = _cells(rng, 6)
    cells[:, 3] = cells[:, 1]
    kernels = _kernels()
    monkeypatch.setitem(kernels, "classes", lambda words, slices, rows, key: (key.fill(-1), key.size)[1])
    monkeypatch.setitem(kernels, "digest", lambda *args: args[-1].fill(7))
    slices = np.arange(6, dtype=np.int64)
    key = _distinct(cells, slices)
    _check_sound(cells, slices, key)
    assert key[3] == 1 or key[3] == 3


def test_the_guess_checks_every_word_of_every_touched_row():
    """Slice 1 equals slice 0 but for one word; for each touched row and each word of it in
    turn: never shared."""
    rng = np.random.default_rng(4)
    base = _cells(rng, 2)
    base[:, 1] = base[:, 0]
    touched = weights.operand_rows(*SHAPE, 16)
    for row in touched.tolist():
        for word in range(4):                           # 16 codes a row: four uint64 words
            cells = base.copy()
            cells[row, 1, 4 * word + 3] ^= 0x40
            key = _distinct(cells, np.arange(2, dtype=np.int64))
            assert key.tolist() == [0, 1], (row, word)


def _widened(cells: np.ndarray, sls: list[int], table: np.ndarray, offs: list[int]) -> tuple[np.ndarray, int, int]:
    mag = 0x7FFF if cells.itemsize == 2 else 0x7F
    touched = weights.operand_rows(*SHAPE, cells.shape[2])
    return weights.widened(_kernels(), [(cells, np.array(sls, np.int64), touched)], SHAPE, mag, table,
                           np.array(offs, np.int64))


def _oracle(cells: np.ndarray, sls: list[int], table: np.ndarray) -> np.ndarray:
    """(slices, n, lanes) f32 bits: every code through the table."""
    return np.stack([table[_operand(cells, sl).astype(np.int64)] for sl in sls])


def _bounds(cells: np.ndarray, sls: list[int], mag: int) -> tuple[int, int]:
    m = np.concatenate([_operand(cells, sl).reshape(-1) for sl in sls]).astype(np.int64) & mag
    nonzero = m[m > 0]
    return int(m.max()), int(nonzero.min()) - 1 if nonzero.size else mag


SPECIALS = {"normal": [], "subnormal": [0x0001], "nan": [0x7FC1], "inf": [0x7F80], "neg zero": [0x8000],
            "negative subnormal": [0x807F]}


@pytest.mark.parametrize("special", list(SPECIALS))
@pytest.mark.parametrize("offs", [[], [0, 2 * 4, -4, 9 * 4]], ids=["plain", "paired"])
def test_widened_bits_are_the_tables_in_either_layout(special, offs):
    """A subnormal or a NaN among the codes (the table differs from a shift there) sends
    them through the table, else they are shifted: every bit is the table's."""
    rng = np.random.default_rng(5)
    cells = _cells(rng, 3, lo=0x0000, hi=0x7F80)
    cells[:, :, ::3] |= 0x8000                          # negative codes too
    cells[(cells & 0x7F80) == 0] |= 0x0080              # no zero exponent but the specials'
    for k, code in enumerate(SPECIALS[special]):
        at = weights.operand_rows(*SHAPE, 16)[-1 - k]
        cells[at, 2, 7] = code
    lanes = SHAPE[3] if not offs else 8
    shape = (*SHAPE[:3], lanes)
    want = np.stack([BF16[_operand(cells, sl, shape).astype(np.int64)] for sl in (2, 0)])
    got, top, low = weights.widened(_kernels(), [(cells, np.array([2, 0], np.int64),
                                                  weights.operand_rows(*shape, 16))], shape, 0x7FFF, BF16,
                                    np.array(offs, np.int64))
    if offs:
        paired = paired_weights(want.view(np.float32), [o // 4 for o in offs], 4)
        np.testing.assert_array_equal(got, paired.view(np.uint32))
    else:
        np.testing.assert_array_equal(got[0].reshape(want.shape), want)
    codes = np.stack([_operand(cells, sl, shape) for sl in (2, 0)]).reshape(-1).astype(np.int64) & 0x7FFF
    assert (top, low) == (int(codes.max()), int(codes[codes > 0].min()) - 1)


def test_a_special_code_sends_every_code_of_its_slices_through_the_table():
    """A marked table (every entry's lowest bit set): slices without a special code are
    widened by a shift, those widened together with a subnormal all through the table."""
    rng = np.random.default_rng(6)
    cells = _cells(rng, 2)
    cells[4, 1, 10] = 0x0005                             # element 74: lane 1's element 2
    marked = BF16 | np.uint32(1)
    alone, _, _ = _widened(cells, [0], marked, [])
    np.testing.assert_array_equal(alone[0].reshape(SHAPE[2], SHAPE[3]), _operand(cells, 0).astype(np.uint32) << 16)
    both, _, _ = _widened(cells, [0, 1], marked, [])
    np.testing.assert_array_equal(both[0].reshape(2, SHAPE[2], SHAPE[3]), _oracle(cells, [0, 1], marked))


def test_the_shift_is_the_tables_entry_for_zeros_and_normal_bf16_codes():
    codes = np.arange(1 << 16, dtype=np.uint32)
    exponent = codes & 0x7F80
    plain = ((codes & 0x7FFF) == 0) | ((exponent != 0) & (exponent != 0x7F80))
    np.testing.assert_array_equal(BF16[plain], codes[plain] << 16)


def test_f8_codes_always_go_through_the_table():
    rng = np.random.default_rng(7)
    cells = _cells(rng, 3, per_row=32, dtype=np.uint8, lo=0, hi=256)
    got, top, low = _widened(cells, [0, 2], E4M3, [])
    np.testing.assert_array_equal(got[0].reshape(2, SHAPE[2], SHAPE[3]), _oracle(cells, [0, 2], E4M3))
    assert (top, low) == _bounds(cells, [0, 2], 0x7F)


def test_several_groups_fill_their_own_copies():
    rng = np.random.default_rng(8)
    one, two = _cells(rng, 3), _cells(rng, 2)
    touched = weights.operand_rows(*SHAPE, 16)
    got, top, low = weights.widened(_kernels(), [(one, np.array([2], np.int64), touched),
                                                 (two, np.array([0, 1], np.int64), touched)],
                                    SHAPE, 0x7FFF, BF16, np.zeros(0, np.int64))
    want = np.concatenate([_oracle(one, [2], BF16), _oracle(two, [0, 1], BF16)])
    np.testing.assert_array_equal(got[0].reshape(want.shape), want)
    b1, b2 = _bounds(one, [2], 0x7FFF), _bounds(two, [0, 1], 0x7FFF)
    assert (top, low) == (max(b1[0], b2[0]), min(b1[1], b2[1]))


def paired_weights(wt: np.ndarray, shifts: list[int], rr: int) -> np.ndarray:
    """wt (operands, elements, 8 lanes) laid out as (shifts, operands, elements x 16): per
    shift c, element e's eight lanes, then element e + c x rr's (zeros past either end,
    which no paired read reaches). The interpreter writes this layout straight from the
    TRF codes (`contract_jit_weights.lay_paired`); this is its reference."""
    n_ops, n_e, lanes = wt.shape
    out = np.empty((len(shifts), n_ops, n_e, 2 * lanes), np.float32)   # every element written below
    out[:, :, :, :lanes] = wt[None]
    for i, c in enumerate(shifts):
        o = min(abs(c * rr), n_e)
        if c * rr >= 0:
            out[i, :, :n_e - o, lanes:] = wt[:, o:]
            out[i, :, n_e - o:, lanes:] = 0
        else:
            out[i, :, o:, lanes:] = wt[:, :n_e - o]
            out[i, :, :o, lanes:] = 0
    return out.reshape(len(shifts), n_ops, -1)
