"""Element-wise stages through the executor (tests/backends/kernels_convert.py), checked
against docs/numerics.md's vectors: table lookup, i4 widening, Cast Engine narrowing."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from ir import convert as cv
from ir.dtypes import bf16, f32
from ir.errors import NpuOptError
from backends.cpu import adapters
from npu_opt.run import run
from tests.backends import kernels_convert as k

# docs/numerics.md, "Encode (cast(f8e5m2))": f32 bits -> code (the reference's rounding).
E5M2_ENCODE = [
    (0x3F800000, 0x3C), (0x3F900000, 0x3D), (0xBF900000, 0xBD), (0x3FB00000, 0x3E),
    (0x3F880000, 0x3C), (0x47600000, 0x7B), (0x47700000, 0x7C), (0x47800000, 0x7C),
    (0x4E6E6B28, 0x7C), (0x7F800000, 0x7C), (0x7FC00000, 0x7E), (0x80000000, 0x80),
    (0x38800000, 0x04), (0x37800000, 0x01), (0x37C00000, 0x02), (0x38200000, 0x03),
    (0x38600000, 0x04), (0x38700000, 0x04), (0x37000000, 0x01), (0x3699999A, 0x00),
]


def test_table_lookup_e4m3_to_bf16_every_code() -> None:
    codes = np.arange(256, dtype=np.uint8)
    out = run(k.lut_e4m3, codes)
    assert out.dtype == np.dtype(ml_dtypes.bfloat16) and out.shape == (256,)
    bits = out.view(np.uint16)
    # every finite f8e4m3 value is exact in bf16: the upper half of its exact f32 decode
    exact = (codes.view(ml_dtypes.float8_e4m3fn).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    nan = (codes & 0x7F) == 0x7F
    np.testing.assert_array_equal(bits[~nan], exact[~nan])
    assert set(bits[nan].tolist()) == {0x7FC0}
    assert [bits[c] for c in (0x01, 0x38, 0xB8, 0x7E)] == [0x3B00, 0x3F80, 0xBF80, 0x43E0]
    np.testing.assert_array_equal(run(k.lut_e4m3, codes.view(ml_dtypes.float8_e4m3fn)).view(np.uint16), bits)


def test_fetch_cast_i4_to_i32_sign_extends() -> None:
    x = np.tile(np.arange(-8, 8, dtype=np.int8), 16)
    out = run(k.widen_i4, x)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, x.astype(np.int32))


def test_i4_values_out_of_range_are_usage() -> None:
    x = np.zeros(256, np.int8)
    x[3] = 8
    with pytest.raises(NpuOptError, match="i4") as info:
        run(k.widen_i4, x)
    assert info.value.code == "USAGE"


@pytest.mark.parametrize("start", range(0, len(E5M2_ENCODE), 8))
def test_cast_f32_to_e5m2_vectors(start: int) -> None:
    rows = E5M2_ENCODE[start:start + 8]
    rows += [(0, 0)] * (8 - len(rows))
    x = np.array([r[0] for r in rows], np.uint32)
    out = run(k.narrow_e5m2, x.view(np.float32))
    assert out.dtype == np.dtype(ml_dtypes.float8_e5m2)
    assert out.view(np.uint8).tolist() == [r[1] for r in rows]
    np.testing.assert_array_equal(run(k.narrow_e5m2, x).view(np.uint8), out.view(np.uint8))


@pytest.mark.parametrize("src, dst, stage", [("f32", "bf16", "cast"), ("f32", "bf16", "commit_cast_relu"),
                                             ("bf16", "f32", "fetch_cast")])
def test_a_conversion_taken_a_block_at_a_time_equals_the_whole_buffers(src, dst, stage, monkeypatch) -> None:
    """The cpu backend converts a large buffer a block of cells at a time (issue 61: no
    temporaries of the whole padded buffer's size): the same bits as `ir.convert` on the
    whole buffer at once, on every special pattern (NaNs, subnormals, ties, infinities) and
    a block size that does not divide the buffer."""
    dtypes = {"f32": (f32, np.uint32), "bf16": (bf16, np.uint16)}
    (s, bits), (d, _) = dtypes[src], dtypes[dst]
    rng = np.random.default_rng(3)
    special = np.array([0, 0x80000000, 1, 0x807FFFFF, 0x7F800000, 0xFF800000, 0x7FC00001, 0xFFFFFFFF,
                        0x3F808000, 0x3F818000, 0x7F7FFFFF, 0x00800000], np.uint64).astype(bits)
    buf = np.concatenate([special, rng.integers(0, np.iinfo(bits).max, 4000, dtype=np.uint64).astype(bits)])
    buf = buf.reshape(4, -1)
    want = np.asarray(cv.convert(buf, s, d, stage))  # the oracle: the whole buffer at once.reshape(buf.shape)
    monkeypatch.setattr(adapters, "_BLOCK", 333)
    got = adapters._convert(buf, s, d, stage)
    assert got.shape == buf.shape
    np.testing.assert_array_equal(got.view(want.dtype), want)
