"""The plan of the interpreter's exact float contraction (`visa.interp.fast.contract_jit_tiles`,
the kernel): which kept time slots go together and how the TRF operand is laid out for it.

Two slots that read the same stream values, skip the same steps and read TRF elements a
constant distance apart (a GEMM's slots along N) are a pair (`slot_pairs`): one tree per
leaf computes both, the TRF operand laid out (element, 16), the first slot's eight lanes
then the second's, those `shift` TRF reads further on (`contract_jit_weights.lay_paired`). A slot without
a partner is computed in both halves and written once.

This module imports nothing from numba and nothing of the cpu backend.
"""

from __future__ import annotations

import functools

import numpy as np

from ir.exact_kernels.tiles import TREES

__all__ = ["LANES", "MAX_SHIFTS", "TREES", "slot_pairs"]

LANES = 8
"""The lane count of the vectorized kernel (every other count takes the general one)."""
MAX_SHIFTS = 4
"""Distinct distances between paired slots' TRF reads (one laid-out TRF copy each)."""


def slot_pairs(sstep: np.ndarray, tread: np.ndarray, tpad: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """`_slot_pairs`, remembered by the arrays' contents (a kernel's tiles repeat them),
    with only the shifts some pair reads (shift 0 only when a slot is alone or a pair's
    reads coincide): each is one laid-out copy of the TRF operand."""
    pairs, shifts = _remembered(*((a.dtype.str, a.shape, a.tobytes()) for a in (sstep, tread, tpad)))
    return pairs.copy(), list(shifts)


@functools.lru_cache(maxsize=64)
def _remembered(*arrays: tuple) -> tuple[np.ndarray, tuple[int, ...]]:
    sstep, tread, tpad = (np.frombuffer(data, dtype).reshape(shape) for dtype, shape, data in arrays)
    pairs, shifts = _slot_pairs(sstep, tread, tpad)
    used = sorted(set(pairs[:, 2].tolist()))   # only the shifts some pair reads are laid out
    pairs[:, 2] = np.searchsorted(np.array(used, np.int64), pairs[:, 2])
    return pairs, tuple(shifts[i] for i in used)


def _slot_pairs(sstep: np.ndarray, tread: np.ndarray, tpad: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """(pairs, shifts): every slot once, as (slot, partner, shift index) or (slot, -1, index
    of shift 0). Partners read the same stream steps (`sstep`), skip the same steps (`tpad`,
    empty: none) and TRF reads a constant `shift` apart (the partner's minus the slot's), at
    most `MAX_SHIFTS` distinct shifts (0 included); consecutive slots of a group pair up."""
    keys = sstep if tpad.shape[0] == 0 else np.concatenate([sstep, tpad.astype(sstep.dtype)], axis=1)
    keys = np.ascontiguousarray(keys)
    open_slot: dict[bytes, int] = {}
    shifts: list[int] = [0]
    pairs: list[tuple[int, int, int]] = []
    for kk in range(keys.shape[0]):
        gid = keys[kk].tobytes()
        first = open_slot.pop(gid, None)
        if first is None:
            open_slot[gid] = kk
            continue
        d = tread[kk] - tread[first]
        c = int(d[0])
        if bool((d == c).all()) and (c in shifts or len(shifts) < MAX_SHIFTS):
            if c not in shifts:
                shifts.append(c)
            pairs.append((first, kk, shifts.index(c)))
        else:
            pairs.append((first, -1, 0))
            open_slot[gid] = kk
    pairs += [(kk, -1, 0) for kk in open_slot.values()]
    return np.array(sorted(pairs), np.int64).reshape(-1, 3), shifts
