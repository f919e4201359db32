"""The visa backend keeps what a test loop would redo (issue 38 item 1): the parsed,
verified artifact per artifact digest, and the compiled text per traced kernel, so a second
`npu_opt.run(..., backend="visa")` of one kernel neither lowers nor parses; a kernel that
traces otherwise (another constant in its closure, another body) is compiled afresh.

Results are compared with numpy written here."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from backends import npu as npu_mod
from backends import visa_backend
from npu_opt import *

axes(S=2048, H=64, I=2)
Chip = m("1")
Cluster = m("1 # 2")
Slice = m("S / 8")
Rows = DmTensor[i32, Chip, Cluster, Slice, m("S % 8, H")]


def make(op: ClipBinaryOpI32):
    """x op y, element by element (two kernels of one name and signature)."""

    @device(chip=1)
    def pairwise(ctx: Context, x: HbmTensor[i32, Chip, m("S, H")],
                 y: HbmTensor[i32, Chip, m("S, H")]) -> HbmTensor[i32, Chip, m("S, H")]:
        out = (ctx.main.begin_interleaved(x.to_dm(ctx.tdma, Rows).view(), y.to_dm(ctx.tdma, Rows).view(), m("I"))
               .fetch(m("S % 8, H / 8, I"), m("H % 8"))
               .collect(m("S % 8, H / 8, I"), m("H % 8"))
               .vector_init()
               .vector_intra_slice_unzip(m("I"), m("S % 8, H / 8"))
               .vector_clip_zip(op)
               .vector_final()
               .commit_trim(m("H % 8"))
               .commit(m("S % 8, H")))
        return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("S, H")])
    return pairwise


@pytest.fixture
def spies(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    counts = {"parse": 0, "lower": 0}
    parse, lower = visa_backend.parse_visa, npu_mod.lower_kernel

    def counting_parse(*a, **k):
        counts["parse"] += 1
        return parse(*a, **k)

    def counting_lower(*a, **k):
        counts["lower"] += 1
        return lower(*a, **k)

    monkeypatch.setattr(visa_backend, "parse_visa", counting_parse)
    monkeypatch.setattr(npu_mod, "lower_kernel", counting_lower)
    visa_backend.clear_caches()
    return counts


def _arrays(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.integers(-2**20, 2**20, (2048, 64), dtype=np.int32),
            rng.integers(-2**20, 2**20, (2048, 64), dtype=np.int32))


def test_a_second_run_neither_lowers_nor_parses(spies: dict[str, int]) -> None:
    kernel = make(ClipBinaryOpI32.ADD_FXP)
    for seed in (1, 2, 3):
        x, y = _arrays(seed)
        np.testing.assert_array_equal(npu_opt.run(kernel, x, y, backend="visa"), x + y)
    assert spies == {"parse": 1, "lower": 1}


def test_a_kernel_rebuilt_alike_is_served_from_the_cache(spies: dict[str, int]) -> None:
    x, y = _arrays(4)
    for _ in range(2):
        np.testing.assert_array_equal(npu_opt.run(make(ClipBinaryOpI32.ADD_FXP), x, y, backend="visa"), x + y)
    assert spies == {"parse": 1, "lower": 1}


def test_a_changed_kernel_is_not_served_stale(spies: dict[str, int]) -> None:
    x, y = _arrays(5)
    np.testing.assert_array_equal(npu_opt.run(make(ClipBinaryOpI32.ADD_FXP), x, y, backend="visa"), x + y)
    np.testing.assert_array_equal(npu_opt.run(make(ClipBinaryOpI32.MAX), x, y, backend="visa"), np.maximum(x, y))
    assert spies == {"parse": 2, "lower": 2}
