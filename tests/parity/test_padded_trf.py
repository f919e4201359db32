"""A TRF row padded past the read (issue 56 item 1): 16 live `i8` in a 32-byte row,
contracted with a packet that replicates one 16-element read. The sequencer leaves the
padding factor of the rows at its first value and never reads the padded half; rows it
walks step over whole padded rows. cpu == visa == numpy, exactly (the bf16 case on small
integers, whose every sum is exact in f32). It was OUTER-9."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from ir.mapping import m
from ir.mapping import ops as mops
from ir.rules.contract_geometry import divide_rows, walk_entries
from tests.parity import kernels_padded_trf as k

RNG = np.random.default_rng(56)
X = RNG.integers(-128, 128, (64, 16), dtype=np.int8)
W1 = RNG.integers(-128, 128, 16, dtype=np.int8)
W2 = RNG.integers(-128, 128, (2, 16), dtype=np.int8)
XB = RNG.integers(-16, 16, (64, 8)).astype(ml_dtypes.bfloat16)
WB = RNG.integers(-16, 16, 8).astype(ml_dtypes.bfloat16)


def _i64(a: np.ndarray) -> np.ndarray:
    return a.astype(np.int64)


CASES = {
    "padded_row_matvec": ((X, W1), (_i64(X) @ _i64(W1)).astype(np.int32)),
    "padded_rows_walked": ((X, W2), (_i64(X) @ _i64(W2).T).astype(np.int32)),
    "padded_rows_on_lanes": ((X, W2), (_i64(X) @ _i64(W2).T).astype(np.int32)),
    "padded_row_bf16": ((XB, WB), (XB.astype(np.float64) @ WB.astype(np.float64)).astype(np.float32)),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_padded_trf_row_contracts_exactly(name: str, backend: str) -> None:
    kernel = getattr(k, name)
    args, want = CASES[name]
    assert npu_opt.check(kernel).ok
    got = npu_opt.run(kernel, *args, backend=backend)
    assert got.dtype == want.dtype and np.array_equal(got, want)


def test_walked_rows_step_over_the_padding_of_each_row() -> None:
    """Rows `O, K # 32` read 16 at a time: E_outer = [O, 2 padding]; out_time `N / 4, O`
    repeats each row 16 times (stride 0) and steps O by two reads, a whole padded row."""
    axes = {"N": 64, "K": 16, "O": 2}
    e_outer = mops.split_factors(m("O, K # 32", axes=axes).factors(), 16)[0]
    got = divide_rows(m("N / 4, O", axes=axes), e_outer)
    assert [str(e) for e in mops.coalesce(walk_entries(got))] == ["16:0", "2:2"]
    (outer,) = [r for r in npu_opt.compile(k.padded_rows_walked).records if type(r).__name__ == "ContractOuter"]
    assert (outer.trf_read.read_elems, [str(e) for e in outer.trf_read.entries]) == (16, ["16:0", "2:2"])


def test_a_walk_without_padding_is_unchanged() -> None:
    """No padding factor: `divide_rows` is `divide`."""
    axes = {"A": 8, "C": 2, "E": 32}
    out_time, e_outer = m("A, C", axes=axes), m("C", axes=axes)
    assert divide_rows(out_time, e_outer) == mops.divide(out_time, e_outer)
    assert divide_rows(m("A", axes=axes), e_outer) is None


def test_a_live_row_left_unwalked_is_still_outer_9_naming_only_it() -> None:
    (found,) = npu_opt.check(k.padded_rows_one_left_out).diagnostics
    lines = Path(k.__file__).read_text(encoding="utf-8").splitlines()
    assert found.code == "OUTER-9" and "# OUTER-9" in lines[found.line - 1]
    assert "does not walk `O` of the TRF rows" in found.render() and "add `O` to out_time" in found.help
