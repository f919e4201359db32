"""A bf16 kernel run again on the cpu backend replays what its first run found (issue 61
item 2): the switch's gather plan (backends/cpu/switch_rows.py `_rows_plan`), folded into
the fetch before it (`_fold`: the fetch's output never written), the distinct rows as a
view when they run in order, the no-rounding guard on the cells the layouts read. Every run
equals the numpy oracle bit for bit and a backend that found nothing yet and writes the
fetch out, on new values each time, whichever path (BLAS or the exact cores) the values
choose."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from backends.cpu import CpuBackend, CpuOptions, arena, contract_blas, switch_rows
from benchmarks.drawn_kernels import pinned
from tests.backends.oracles import f32_to_bf16_bits

BOTH_BY_SWITCH = pinned("both_by_switch", "out[n,m] = a[m,k] * w[n,k]", "bf16:f32", {"k": 128, "m": 512, "n": 256},
                        {"placement": "32x8 of 8x64, a and w by switch", "trf": "a", "packet": 16, "pieces": 2},
                        "gemm")


def _rounding(arrays: list[np.ndarray], rng: np.random.Generator) -> list[np.ndarray]:
    """Operands whose sums round (BLAS may not run), as bf16 patterns in the arrays' dtype."""
    out = []
    for a in arrays[:-1]:
        v = rng.integers(-255, 256, a.shape) * 2.0 ** rng.integers(-8, 9, a.shape)
        out.append(f32_to_bf16_bits(v.astype(np.float32)).view(a.dtype))
    return [*out, np.zeros_like(arrays[-1])]


def test_runs_again_replay_the_first_runs_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    d = BOTH_BY_SWITCH
    maps, used, folds = [], [], []
    packet_map, blas, fold = switch_rows._packet_map, contract_blas.contract, switch_rows._fold
    monkeypatch.setattr(switch_rows, "_packet_map", lambda op: maps.append(op) or packet_map(op))
    monkeypatch.setattr(switch_rows, "_fold", lambda *a: folds.append(fold(*a)) or folds[-1])
    monkeypatch.setattr(contract_blas, "contract", lambda *a: used.append(blas(*a) is not None) or blas(*a))
    backend = CpuBackend(CpuOptions(threads=1, blas_threads=1))
    for seed, kind in ((0, "exact"), (1, "rounds"), (2, "exact")):
        rng = np.random.default_rng(seed)
        arrays = d.inputs(rng) if kind == "exact" else _rounding(d.inputs(rng), rng)
        got = [a.copy() for a in arrays]
        backend.run(d.kernel, tuple(got))
        fresh = [a.copy() for a in arrays]
        with monkeypatch.context() as m:  # a backend and plans that found nothing yet, the fetch written out
            m.setattr(switch_rows, "_PLANS", switch_rows.ByObject())
            m.setattr(switch_rows, "_fold", lambda *a: None)
            CpuBackend(CpuOptions(threads=1, blas_threads=1)).run(d.kernel, tuple(fresh))
        np.testing.assert_array_equal(got[-1].view(np.uint32), fresh[-1].view(np.uint32))
        if kind == "exact":
            want = np.asarray(d.oracle(*arrays), np.float32) + np.float32(0)  # the chip's +0
            np.testing.assert_array_equal(got[-1].view(np.uint32), want.view(np.uint32))
            assert used[-1] and used[-2], "BLAS ran on both backends"
        else:
            assert not used[-1] and not used[-2], "sums that round: the exact cores ran"
    # the first backend found its 2 switches' plans at its first run only; each fresh one anew
    assert len(maps) == 2 + 3 * 2 and len(set(map(id, maps[:2]))) == 2
    assert not any(op is first for op in maps[2:] for first in maps[:2])
    assert len(folds) == 2 and all(f is not None for f in folds)  # both switches gather from their fetch's base


def test_a_run_again_finds_no_pairing_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second run of a bf16 kernel takes each contraction's route (its class pairs, their
    grouping, the take index: `blas_route.route`) and each operand's distinct rows
    (`contract_jit.distinct_rows`) as its first run found them: the BLAS path and the row
    classes sort nothing again (no `np.unique`), and the result is the oracle's."""
    d = BOTH_BY_SWITCH
    backend = CpuBackend(CpuOptions(threads=1, blas_threads=1))
    rng = np.random.default_rng(4)
    arrays = d.inputs(rng)
    backend.run(d.kernel, tuple(a.copy() for a in arrays))
    callers = []
    unique = np.unique
    monkeypatch.setattr(np, "unique", lambda *a, **k: callers.append(sys._getframe(1).f_code.co_filename)
                        or unique(*a, **k))
    again = [a.copy() for a in arrays]
    backend.run(d.kernel, tuple(again))
    found = [c for c in callers if c.endswith(("contract_blas.py", "blas_route.py", "contract_jit.py"))]
    assert not found, found
    want = np.asarray(d.oracle(*arrays), np.float32) + np.float32(0)
    np.testing.assert_array_equal(again[-1].view(np.uint32), want.view(np.uint32))


PADDED_WINDOW = pinned("padded_window", "out[b,m,n] = w[b,n,k] * a[b,m,k]", "bf16:f32",
                       {"b": 48, "k": 64, "m": 128, "n": 32},
                       {"placement": "2x4 of 64x8, 16 batch elements side by side, on 1/2 of the slices, a and w by "
                                     "switch", "trf": "w", "packet": 16, "pieces": 2}, "batched")


def test_a_padded_window_zeroes_its_buffer_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A window whose type pads its cells (a tile of 16 of the 48 batch elements, its type
    `1 # 3` of them) zeroes a buffer once: the later tiles and the next run take the same
    scratch back, zero around the cells they write (`arena.empty_noted`; other makers of
    the same size take buffers with no note first), and every run is the oracle's."""
    monkeypatch.setattr(arena, "MIN_BYTES", 1 << 10)  # this small kernel's buffers from the arena too
    zeroed: list[list[bool]] = []
    noted = arena.empty_noted

    def spy(shape: tuple[int, ...], dtype: np.dtype, note: object) -> tuple[np.ndarray, bool]:
        found = noted(shape, dtype, note)
        if note[:2] == ("zero around", "window"):
            zeroed[-1].append(found[1])
        return found

    monkeypatch.setattr(arena, "empty_noted", spy)
    d = PADDED_WINDOW
    backend = CpuBackend(CpuOptions(threads=1, blas_threads=1))
    for seed in range(2):
        zeroed.append([])
        arrays = d.inputs(np.random.default_rng(seed))
        got = [a.copy() for a in arrays]
        backend.run(d.kernel, tuple(got))
        want = np.asarray(d.oracle(*arrays), np.float32) + np.float32(0)
        np.testing.assert_array_equal(got[-1].view(np.uint32), want.view(np.uint32))
    assert zeroed[0][:2] == [False, False] and all(zeroed[0][2:]) and len(zeroed[0]) == 6  # a and w, 3 tiles
    assert zeroed[1] == [True] * 6
