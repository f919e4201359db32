"""The interpreter's f32 -> bf16 cast (`visa.interp.fast.narrow`, issue 61 item 2) gives the
bits of the spec's case-by-case rule (`ir.float_bits`) on every bf16 upper half with each
rounding-critical lower half, plain and relu, and the commit and the Cast Engine use it."""

from __future__ import annotations

import numpy as np
import pytest

from ir.float_bits import commit_cast_relu, narrow_bf16
from tu_ops.enums import CommitConversion
from visa.interp import drain, shortcuts
from visa.interp.fast.narrow import narrowed

LOWER = np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0x1234], np.uint32)


def _every_case() -> np.ndarray:
    upper = np.arange(1 << 16, dtype=np.uint32)
    return ((upper[:, None] << 16) | LOWER).reshape(-1)   # every sign, exponent and kept significand


@pytest.mark.parametrize("relu, oracle", [(False, narrow_bf16), (True, commit_cast_relu)])
def test_every_upper_half_with_each_critical_lower_half_casts_as_the_spec(relu, oracle):
    bits = _every_case().reshape(-1, 7)[:, ::-1]          # not contiguous, blocks of every size
    got = narrowed(bits, relu)
    assert got.dtype == np.uint16 and got.shape == bits.shape
    assert np.array_equal(got, oracle(np.ascontiguousarray(bits)))


def test_anything_but_f32_bits_is_left_to_the_plain_cast():
    assert narrowed(np.zeros(4, np.int32), False) is None


def test_a_commits_cast_asks_the_shortcut(monkeypatch):
    calls = []
    spy = lambda v, relu: (calls.append(relu), narrowed(v, relu))[1]   # noqa: E731
    monkeypatch.setitem(shortcuts._SHORTCUTS, "narrow_bf16", spy)
    bits = _every_case()[:1000]
    got = drain._converted(CommitConversion.F32_TO_BF16_RELU, bits)
    assert calls == [True] and np.array_equal(got, commit_cast_relu(bits))
