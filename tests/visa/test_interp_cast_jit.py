"""The interpreter's compiled f32 -> bf16 cast (`visa.interp.fast.narrow_jit`) against a numpy
oracle built another way: NaN and exponent-zero cells by their definition, every other cell
rounded by ml_dtypes (round to nearest even, overflow to infinity)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tests.visa.samples import cast_kernel
from tu_ops.program import TuProgram
from tu_ops.target import get_target
from visa.interp import drain
from visa.interp.memory import Memory

_SPECIAL = [0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00400000, 0x7F800000, 0xFF800000,
            0x7F800001, 0xFFC00000, 0x7FFFFFFF, 0xFFFFFFFF, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F8000,
            0x00800000, 0x80800000, 0x3F808000, 0x3F818000, 0x3F808001, 0x3F80FFFF, 0x007FFFFF]


def _oracle(bits: np.ndarray) -> np.ndarray:
    a = bits & 0x7FFFFFFF
    with np.errstate(invalid="ignore"):   # NaNs, set apart below
        rounded = bits.view(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
    out = np.where(a < 0x00800000, (bits >> 16) & 0x8000, rounded)
    return np.where(a > 0x7F800000, 0x7FC0, out).astype(np.uint16)


def test_the_compiled_cast_keeps_every_bit_of_the_rule():
    pytest.importorskip("numba")   # the compiled cast runs once a contraction has loaded numba
    from visa.interp.fast import narrow_jit
    cast = next(o for s in cast_kernel().steps if isinstance(s, TuProgram) for o in s.ops if o.MNEMONIC == "cast_op")
    n, steps = cast.valid_elems, cast.output_type.time.size
    rng = np.random.default_rng(28)
    bits = rng.integers(0, 1 << 32, (5, steps, n + 3), dtype=np.uint64).astype(np.uint32)
    flat = bits.reshape(-1)
    flat[:len(_SPECIAL)] = _SPECIAL
    flat[len(_SPECIAL):2 * len(_SPECIAL)] = np.array(_SPECIAL, np.uint32) ^ 0x80000000
    stream = bits[..., :n]                        # strided rows: the packets' first n cells
    got = drain.run_cast(cast, stream, Memory(get_target("rngd")))
    assert np.array_equal(got[..., :n], _oracle(stream)) and not got[..., n:].any()
    out = np.full((stream.shape[0] * steps, 16), 0xABCD, np.uint16)
    assert narrow_jit.narrow_into(stream.reshape(-1, n), out)   # numba is loaded by now
    assert np.array_equal(out[:, :n], _oracle(stream).reshape(-1, n)) and (out[:, n:] == 0xABCD).all()
