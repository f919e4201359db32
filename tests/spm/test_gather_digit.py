"""The staged gather / scatter indexed by a digit of an axis (docs/machine/spm.md "An indexed
digit of an axis"): cpu == visa bit for bit and equal to numpy on the table read as the
axis's two digits; the records verify and print back; what stays refused is coded."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from ir.gather import GatherIndexError
from ir.kernel import print_kernel
from tests.kernel_text import parse_kernel
from npu_opt import *
from tests.spm import digit_kernels as k
from visa.parser import parse_visa
from visa.printer import print_artifact
from visa.verify import verify_text

RNG = np.random.default_rng(2702)
axes(K=20, D=8, G=16)
Chip, Cluster = m("1"), m("1 # 2")


def _both(kernel, *arrays):
    a, b = (npu_opt.run(kernel, *arrays, backend=x) for x in ("cpu", "visa"))
    assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    return a


def _i16(*shape):
    return RNG.integers(-30000, 30000, shape).astype(np.int16)


def test_the_high_digit_selects_pairs_of_rows():
    table, picks = _i16(20, 8), RNG.integers(0, 10, 16)
    out = _both(k.high_digit, table, (picks * 2 * 8 * 2).astype(np.int32))   # stride: two D rows of i16
    assert out.shape == (16, 2, 8)
    for g, p in enumerate(picks):
        assert (out[g] == table[2 * p:2 * p + 2]).all()


def test_the_low_digit_selects_one_row_of_every_block():
    table, picks = _i16(16, 8), RNG.integers(0, 4, 16)
    out = _both(k.low_digit, table, (picks * 8 * 2).astype(np.int32))
    for b in range(4):
        assert (out[b] == table[4 * b + picks]).all()


def test_a_digit_of_an_inner_axis_by_positions():
    table, picks = RNG.integers(-2**31, 2**31, (3, 20, 8)).astype(np.int32), RNG.integers(0, 4, 12).astype(np.int32)
    out = _both(k.inner_digit, table, picks)
    want = np.stack([table[:, 5 * p:5 * p + 5] for p in picks])   # N, H, K % 5, D
    assert (out == want).all()


def _scatter(kernel, cache, offsets, fresh):
    results = []
    for backend in ("cpu", "visa"):
        c = cache.copy()
        npu_opt.run(kernel, c, offsets, fresh, backend=backend)
        results.append(c)
    assert results[0].tobytes() == results[1].tobytes()
    return results[0]


def test_a_scatter_by_the_high_digit_writes_pairs_of_rows_last_write_wins():
    cache, fresh, spots = _i16(20, 8), _i16(12, 2, 8), RNG.integers(0, 10, 12)
    got = _scatter(k.scatter_high, cache, (spots * 32).astype(np.int32), fresh)
    want = cache.copy()
    for n, s in enumerate(spots):
        want[2 * s:2 * s + 2] = fresh[n]
    assert (got == want).all() and not (got == cache).all()


def test_a_scatter_by_the_low_digit_writes_every_block():
    cache, fresh, spots = _i16(16, 8), _i16(4, 12, 8), RNG.integers(0, 4, 12)
    got = _scatter(k.scatter_low, cache, (spots * 16).astype(np.int32), fresh)
    want = cache.copy()
    for n, s in enumerate(spots):
        want[4 * np.arange(4) + s] = fresh[:, n]
    assert (got == want).all()


def test_an_offset_counts_in_the_digit_stride():
    with pytest.raises(GatherIndexError, match="multiple of the 32-byte row"):
        npu_opt.run(k.high_digit, _i16(20, 8), np.full(16, 16, np.int32))   # one D row: half a K / 2 step
    with pytest.raises(GatherIndexError, match="selects row 10 of K / 2"):
        npu_opt.run(k.high_digit, _i16(20, 8), np.full(16, 320, np.int32), backend="visa")


@pytest.mark.parametrize("kernel, blocks", [(k.high_digit, None), (k.low_digit, 4), (k.inner_digit, 3),
                                            (k.scatter_high, None), (k.scatter_low, 4)])
def test_the_records_verify_print_back_and_count_the_blocks(kernel, blocks):
    text = npu_opt.compile(kernel).text
    verify_text(text)
    assert print_artifact(parse_visa(text)) == text
    assert (f" outer={blocks} " in text) if blocks else "outer=" not in text
    ir_text = print_kernel(kernel.trace().kernel)
    assert print_kernel(parse_kernel(ir_text)) == ir_text


REFUSED = {
    "a middle digit": ("GATHER-7", lambda c, t, r: t.gather(m("K / 2 % 5"), m("K, D"))),
    "payload keeps the indexed digit": ("GATHER-7", lambda c, t, r: t.gather(m("K / 2"), m("K / 2, D"))),
    "payload without the rest of the axis": ("GATHER-7", lambda c, t, r: t.gather(m("K / 2"), m("D"))),
    "a digit with another axis": ("GATHER-7", lambda c, t, r: t.gather(m("K / 2, D"), m("K % 2"))),
    "v0.6 gather of a digit": ("GATHER-3", lambda c, t, r: t.dma_gather_scaled(
        r, DmTensor[i16, Chip, Cluster, m("G # 64"), m("K % 2, D")])),
    "output without the rest of the axis": ("GATHER-3", lambda c, t, r: t.gather(m("K / 2"), m("K % 2, D"))
                                            .by_byte_offsets(r).to_dm(c.tdma, DmTensor[i16, Chip, Cluster,
                                                                                       m("G # 64"), m("D")])),
    "scatter of a middle digit": ("SCATTER-7", lambda c, t, r: t.view_mut().scatter(m("K / 2 % 5"), m("K, D"))),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_stays_refused(case):
    code, body = REFUSED[case]

    @device(chip=1)
    def kernel(ctx: Context, table: Mut[HbmTensor[i16, Chip, m("K, D")]], rows: HbmTensor[i32, Chip, m("G")]) -> None:
        body(ctx, table, rows)

    diagnostics = kernel.trace().diagnostics
    assert diagnostics and diagnostics[0].code == code, [(d.code, d.message) for d in diagnostics]
    if case == "v0.6 gather of a digit":
        assert "a digit of an axis" in diagnostics[0].message
