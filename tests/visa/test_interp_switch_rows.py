"""A Switch Engine broadcast held as its distinct rows (visa/interp/fast/switch_rows.py) and a
bf16 contraction whose sums cannot round computed by float32 matmuls
(visa/interp/fast/contract_blas.py). Both give the bytes of the plain interpreter, of the
cpu backend and, on small integers, of the numpy oracle; a reader that does not know the
held form gets it written out."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from npu_opt.compile_api import compile_kernel
from synth import contraction
from synth.space import build
from visa import parse_visa
from visa.interp import execute_inout, shortcuts
from visa.interp.fast import contract_blas, contract_jit, switch_rows
from visa.interp.fast.repeated import Repeated
from visa.interp.steps import ProgramState

SIZES = dict(m=64, n=64, k=64)
# both operands broadcast by the Switch Engine: a's stream (BROADCAST1) feeds the
# contraction, w's the TRF load
POINT = dict(placement="4x4 of 16x16, on 1/16 of the slices, a and w by switch", trf="w", packet=16)


def _kernel():
    spec = contraction("out[m,n] = w[n,k] * a[m,k]", dtype="bf16:f32", sizes=SIZES, name="switch_rows")
    return build(spec, POINT, "<switch rows>")


_ARTIFACT: list = []


def _artifact():
    if not _ARTIFACT:
        _ARTIFACT.append(parse_visa(compile_kernel(_kernel()).text))
    return _ARTIFACT[0]


def _arrays(integers: bool) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """(host arrays w, a, out; the float64 values of w and a)."""
    rng = np.random.default_rng(7)
    if integers:
        w, a = rng.integers(-8, 9, (64, 64)).astype(np.float64), rng.integers(-8, 9, (64, 64)).astype(np.float64)
    else:   # full significands of many scales: sums that round
        w, a = rng.normal(0, 1, (64, 64)) * 2.0 ** rng.integers(-6, 7, (64, 64)), rng.normal(0, 1, (64, 64))
    arrays = [w.astype(ml_dtypes.bfloat16), a.astype(ml_dtypes.bfloat16), np.zeros((64, 64), np.float32)]
    return arrays, arrays[0].astype(np.float64), arrays[1].astype(np.float64)


def _interp(arrays: list[np.ndarray], fast: bool = True) -> np.ndarray:
    results, finals = execute_inout(_artifact(), [x.copy() for x in arrays], fast=fast)
    return np.asarray((results + finals)[-1]).view(np.uint32)


def _cpu(arrays: list[np.ndarray]) -> np.ndarray:
    return np.asarray(npu_opt.run(_kernel(), *[x.copy() for x in arrays])).view(np.uint32)


def _spy(monkeypatch: pytest.MonkeyPatch, module, name: str) -> list:
    """Record what `module.name` returns (the registered shortcut too, when it is one)."""
    seen: list = []
    fn = getattr(module, name)

    def spy(*args):
        got = fn(*args)
        seen.append(got)
        return got

    monkeypatch.setattr(module, name, spy)
    if shortcuts._SHORTCUTS.get(name) is fn:
        monkeypatch.setitem(shortcuts._SHORTCUTS, name, spy)
    return seen


def test_a_switch_broadcast_held_by_rows_gives_the_oracles_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(contract_jit.ENV, "1")
    held = _spy(monkeypatch, switch_rows, "switch_rows")
    arrays, w, a = _arrays(integers=True)
    got = _interp(arrays)
    want = (a @ w.T).astype(np.float32).view(np.uint32)     # small integers: every sum exact
    assert np.array_equal(got, want)
    assert np.array_equal(_cpu(arrays), want)
    stored = [found for found in held if found is not None]
    assert len(stored) == 2      # a's and w's switch, each held as its distinct rows
    for _, rows_held, _, out_rows in stored:
        assert np.unique(rows_held).size * 2 <= out_rows.count


def test_a_reader_that_does_not_know_the_held_form_gets_it_written_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every reader made to take written streams (`ProgramState.input` refusing the held
    forms): the switch's rows are written out (`Repeated.materialize`), the same bytes as the
    plain switch's."""
    monkeypatch.setenv(contract_jit.ENV, "1")
    written = _spy(monkeypatch, Repeated, "materialize")
    plain_input = ProgramState.input
    monkeypatch.setattr(ProgramState, "input", lambda self, ref, op, repeated=False, front=False, strided=False:
                        plain_input(self, ref, op))
    arrays, _, _ = _arrays(integers=False)
    got = _interp(arrays)
    assert len(written) == 2
    assert np.array_equal(got, _interp(arrays, fast=False))
    assert np.array_equal(got, _cpu(arrays))


@pytest.mark.parametrize("integers", [True, False])
def test_matmuls_only_when_no_sum_can_round(monkeypatch: pytest.MonkeyPatch, integers: bool) -> None:
    """Small integers: every sum exact, the matmuls run; full significands: a sum may round,
    the exact kernel runs. The bits are the plain interpreter's and the cpu backend's."""
    monkeypatch.setenv(contract_jit.ENV, "1")
    monkeypatch.setattr(contract_blas, "MIN_TERMS", 0)      # the small kernel's sums of 64 products too
    ran = _spy(monkeypatch, contract_blas, "contract")
    arrays, _, _ = _arrays(integers)
    got = _interp(arrays)
    assert len(ran) == (1 if integers else 0)
    assert np.array_equal(got, _interp(arrays, fast=False))
    assert np.array_equal(got, _cpu(arrays))


def test_a_zero_sum_is_plus_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    """A row of a all -0: each of its products is -0, their sum +0 on the chip (its sums
    start from +0), where a matmul may leave -0."""
    monkeypatch.setenv(contract_jit.ENV, "1")
    monkeypatch.setattr(contract_blas, "MIN_TERMS", 0)      # the small kernel's sums of 64 products too
    ran = _spy(monkeypatch, contract_blas, "contract")
    arrays, w, a = _arrays(integers=True)
    arrays[1][5] = -0.0
    got = _interp(arrays)
    assert ran
    want = (arrays[1].astype(np.float64) @ w.T + 0.0).astype(np.float32).view(np.uint32)
    assert not want[5].any()     # +0 (bits 0), not -0
    assert np.array_equal(got, want)
    assert np.array_equal(_cpu(arrays), want)


@pytest.mark.parametrize("value, unit", [(3.0, 0), (0.75, -2), (1024.0, 10), (-40.0, 3), (1.0 + 2.0 ** -7, -7)])
def test_the_unit_of_a_code(value: float, unit: int) -> None:
    """The largest power of two dividing a value (here written out by hand)."""
    code = np.array([value], ml_dtypes.bfloat16).view(np.uint16)
    top, found = contract_blas.codes_range(code)
    assert found == unit
    assert top == int(code[0]) & 0x7FFF


def test_the_range_refuses_what_a_matmul_cannot_take() -> None:
    codes = lambda *v: np.array(v, ml_dtypes.bfloat16).view(np.uint16)  # noqa: E731
    assert contract_blas.codes_range(codes(0.0, -0.0)) is None              # every value a zero
    assert contract_blas.codes_range(codes(1.0, np.inf)) is None
    assert contract_blas.codes_range(codes(1.0, np.nan)) is None
    assert contract_blas.codes_range(np.array([1, 0x3F80], np.uint16)) is None   # a subnormal
    # 2^8 products of 2^7 x 2^7: sums up to 2^22, multiples of 1: exact; 2^11 of them reach 2^25
    assert contract_blas.no_rounding((int(codes(128.0)[0]), 0), (int(codes(128.0)[0]), 0), 1 << 8)
    assert not contract_blas.no_rounding((int(codes(128.0)[0]), 0), (int(codes(128.0)[0]), 0), 1 << 11)


def test_a_trf_load_stores_a_held_switch_without_writing_it_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """w's switch goes to the TRF load, a's to the compiled float contraction: neither is
    written out (`Repeated.materialize`), each stored row goes into the slices repeating it."""
    monkeypatch.setenv(contract_jit.ENV, "1")
    written = _spy(monkeypatch, Repeated, "materialize")
    arrays, w, a = _arrays(integers=True)
    got = _interp(arrays)
    assert np.array_equal(got, (a @ w.T).astype(np.float32).view(np.uint32))
    assert not written


def test_the_matmuls_of_rows_in_separate_parts_compute_only_their_parts_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stream rows {0, 1} meet TRF operands {0, 1, 2} only, rows {2, 3} operands {3, 4, 5}
    (two clusters, each its own blocks): two matmuls of a batch, 12 pairs, not 24; the sums
    are numpy's (small integers: no sum rounds)."""
    grids = _spy(monkeypatch, contract_blas, "pair_grid")
    rng = np.random.default_rng(3)
    k, lanes = 32, 8
    h_of = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3])
    which = np.array([0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5])
    a = rng.integers(-8, 9, (4, 1, k)).astype(ml_dtypes.bfloat16)
    wt = rng.integers(-8, 9, (6, k, lanes)).astype(np.float32)
    one = np.zeros(1, np.int64)
    parts = [(0, (one, one, one, one, one), a.view(np.uint16))]
    out = np.zeros((h_of.size, lanes, 1, 1), np.float32)
    contract_blas.contract(parts, h_of, wt, which, np.zeros((1, 1), np.int64), k, k, out)
    want = np.einsum("rk,rkl->rl", a[h_of, 0].astype(np.float64), wt[which].astype(np.float64))
    assert np.array_equal(out[:, :, 0, 0], want.astype(np.float32))
    s_rows, w_rows, _ = grids[0]
    assert s_rows.tolist() == [[0, 1], [2, 3]] and w_rows.tolist() == [[0, 1, 2], [3, 4, 5]]



@pytest.mark.parametrize("in_place", [True, False])
def test_short_sums_take_the_matmuls_only_when_the_products_land_in_place(monkeypatch: pytest.MonkeyPatch,
                                                                          in_place: bool) -> None:
    """Sums shorter than `MIN_TERMS` (here every sum; at least `MIN_TERMS_IN_PLACE` products)
    run as matmuls only when the slots and the rows run through the pairs in order (this
    kernel's slots do not: the two tests are made to answer `in_place`); else the exact
    kernel. Either way the numpy oracle's bits."""
    monkeypatch.setenv(contract_jit.ENV, "1")
    monkeypatch.setattr(contract_blas, "MIN_TERMS", 1 << 30)
    monkeypatch.setattr(contract_blas, "MIN_TERMS_IN_PLACE", 0)
    monkeypatch.setattr(contract_blas, "MIN_PRODUCTS_IN_PLACE", 0)
    monkeypatch.setattr(contract_blas, "slots_in_place", lambda *args: in_place)
    monkeypatch.setattr(contract_blas, "rows_in_place", lambda *args: in_place)
    ran = _spy(monkeypatch, contract_blas, "contract")
    arrays, w, a = _arrays(integers=True)
    got = _interp(arrays)
    assert len(ran) == (1 if in_place else 0)
    assert np.array_equal(got, (a @ w.T).astype(np.float32).view(np.uint32))
