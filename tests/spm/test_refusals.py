"""The staged gather / scatter and SPM refusals (docs/machine/spm.md): each is a coded trace
diagnostic at the call that states it."""

from __future__ import annotations

import pytest

from npu_opt import *

axes(T=200, W=32, U=4, G=256, N=16, CL=2, S=24, C=90, B=2048)

Chip = m("1")
Cluster = m("1 # 2")
OUT = DmTensor[bf16, Chip, Cluster, m("N # 64"), m("W")]


def _spm(rows, pe="1 # 4", cluster=Cluster):
    d = rows.to_dm(ctx_tdma(), DmTensor[i32, Chip, cluster, m("1 # 256"), m("N")])
    return d.to_spm(ctx_tdma(), SpmTensor[i32, Chip, cluster, m(pe), m("N")])


def ctx_tdma():
    return _CTX[0].tdma


_CTX = []      # the traced kernel's context and extra inputs, for the helpers the cases call


CASES = {
    "indexed axis not in the table": ("GATHER-7", lambda c, t, r, w: t.gather(m("N"), m("W"))),
    "payload keeps the indexed axis": ("GATHER-7", lambda c, t, r, w: t.gather(m("T"), m("T, W"))),
    "payload in another order": ("GATHER-7", lambda c, t, r, w: w.gather(m("U"), m("W, T"))),
    "indexed axes not side by side": ("GATHER-3", lambda c, t, r, w: w.gather(m("U, W"), m("T"))),
    "indexed axes out of order": ("GATHER-3", lambda c, t, r, w: w.gather(m("T, U"), m("W"))),
    "output lacks a payload axis": ("GATHER-3", lambda c, t, r, w: w.gather(m("T"), m("U, W")).by_byte_offsets(r)
                                    .to_dm(c.tdma, DmTensor[bf16, Chip, Cluster, m("N # 64"), m("W")])),
    "v0.6 gather on an inner axis": ("GATHER-3", lambda c, t, r, w: w.dma_gather_scaled(
        r, DmTensor[bf16, Chip, Cluster, m("U, N"), m("W")])),
    "byte offsets from SPM": ("GATHER-8", lambda c, t, r, w: t.gather(m("T"), m("W")).by_byte_offsets(_spm(r))),
    "positions from HBM": ("GATHER-8", lambda c, t, r, w: t.gather(m("T"), m("W")).by_positions(m("N"), r)),
    "list spread over PEs": ("GATHER-8",
                             lambda c, t, r, w: t.gather(m("T"), m("W")).by_positions(m("N"), _spm(r, pe="4"))),
    "domain not the list": ("GATHER-8",
                            lambda c, t, r, w: t.gather(m("T"), m("W")).by_positions(m("T"), _spm(r))),
    "placed cluster left out of the domain": (
        "GATHER-8", lambda c, t, r, w: t.gather(m("T"), m("W")).by_positions(m("N"), _placed(c))),
    "two indices": ("GATHER-8", lambda c, t, r, w: t.gather(m("T"), m("W")).by_positions(m("N"), _spm(r))
                    .by_positions(m("N"), _spm(r))),
    "no index": ("GATHER-8", lambda c, t, r, w: t.gather(m("T"), m("W")).to_dm(c.tdma, OUT)),
    "prefix of positions": ("GATHER-9", lambda c, t, r, w: t.gather(m("T"), m("W"))
                            .by_positions(m("N"), _spm(r)).sparse_prefix(3)),
    "prefix before the index": ("GATHER-9", lambda c, t, r, w: t.gather(m("T"), m("W")).sparse_prefix(3)),
    "prefix of a bool": ("GATHER-9", lambda c, t, r, w: t.gather(m("T"), m("W")).by_byte_offsets(r)
                         .sparse_prefix(True)),
    "two prefixes": ("GATHER-9", lambda c, t, r, w: t.gather(m("T"), m("W")).by_byte_offsets(r)
                     .sparse_prefix(3).sparse_prefix(4)),
    "SPM over 4 KiB": ("SPM-1", lambda c, t, r, w: _big(c)),
    "SPM of three PEs": ("SPM-1", lambda c, t, r, w: _spm(r, pe="1 # 3")),
    "SPM of a wrong PE count": ("SPM-2", lambda c, t, r, w: _spm(r, pe="1 # 2")),
    "SPM on other clusters": ("SPM-2", lambda c, t, r, w: r.to_dm(c.tdma, DmTensor[i32, Chip, Cluster, m("1 # 256"),
                                                                                 m("N")])
                              .to_spm(c.tdma, SpmTensor[i32, Chip, m("2"), m("1 # 4"), m("N")])),
    "SPM destination not an SpmTensor": ("TYPE-6", lambda c, t, r, w: r.to_dm(c.tdma, DmTensor[
        i32, Chip, Cluster, m("1 # 256"), m("N")]).to_spm(c.tdma, DmTensor[i32, Chip, Cluster, m("1 # 256"), m("N")])),
}


def _placed(c):
    d = _CTX_ROWS2[0].to_dm(c.tdma, DmTensor[i32, Chip, m("CL"), m("1 # 256"), m("N")])
    return d.to_spm(c.tdma, SpmTensor[i32, Chip, m("CL"), m("1 # 4"), m("N")])


_CTX_ROWS2 = []


def _big(c):
    d = _BIG[0].to_dm(c.tdma, DmTensor[i32, Chip, Cluster, m("1 # 256"), m("B")])
    return d.to_spm(c.tdma, SpmTensor[i32, Chip, Cluster, m("1 # 4"), m("B")])


_BIG = []


@pytest.mark.parametrize("case", sorted(CASES))
def test_gather_and_spm_refusals(case):
    code, body = CASES[case]

    @device(chip=1)
    def kernel(ctx: Context, table: HbmTensor[bf16, Chip, m("T, W")], rows: HbmTensor[i32, Chip, m("N")],
               wide: HbmTensor[bf16, Chip, m("U, T, W")], rows2: HbmTensor[i32, Chip, m("CL, N")],
               big: HbmTensor[i32, Chip, m("B")]) -> None:
        _CTX[:] = [ctx]
        _CTX_ROWS2[:] = [rows2]
        _BIG[:] = [big]
        body(ctx, table, rows, wide)

    codes = [d.code for d in kernel.trace().diagnostics]
    assert codes and codes[0] == code, codes


SCATTER = {
    "payload keeps the indexed axis": ("SCATTER-7", lambda c, d, o, r, out: out.view_mut().scatter(m("C"), m("C, W"))),
    "indexed axis not in the destination": ("SCATTER-7", lambda c, d, o, r, out: out.view_mut().scatter(m("S"), m("W"))),
    "a tile of the destination": ("SCATTER-8", lambda c, d, o, r, out: out.view_mut().tile(
        m("C"), 45, m("C = 45 #{!} 90, W"), 0).scatter(m("C"), m("W"))),
    "offsets in DM": ("SCATTER-8", lambda c, d, o, r, out: out.view_mut().scatter(m("C"), m("W")).by_byte_offsets(
        o.to_dm(c.tdma, DmTensor[i32, Chip, Cluster, m("1 # 256"), m("S")]))),
    "no index": ("SCATTER-8", lambda c, d, o, r, out: out.view_mut().scatter(m("C"), m("W")).from_dm(c.tdma, d)),
    "positions from HBM": ("SCATTER-8", lambda c, d, o, r, out: out.view_mut().scatter(m("C"), m("W"))
                           .by_positions(m("S"), o)),
    "positions over another domain": ("SCATTER-3", lambda c, d, o, r, out: out.view_mut().scatter(m("C"), m("W"))
                                      .by_positions(m("N"), r.to_dm(c.tdma, DmTensor[i32, Chip, Cluster, m("1 # 256"),
                                                                                   m("N")]).to_spm(
                                          c.tdma, SpmTensor[i32, Chip, Cluster, m("1 # 4"), m("N")])).from_dm(c.tdma, d)),
    "indexed axes not side by side": ("SCATTER-4", lambda c, d, o, r, out: _wide(out).scatter(m("U, W"), m("C"))),
    "updates lack a payload axis": ("SCATTER-4", lambda c, d, o, r, out: _wide(out).scatter(m("C"), m("U, W"))
                                    .by_byte_offsets(o).from_dm(c.tdma, d)),
    "v0.6 scatter on an inner axis": ("SCATTER-4", lambda c, d, o, r, out: _wide_updates(c).dma_scatter(
        o, HbmTensor[bf16, Chip, m("U, C, W")], m("S"))),
    "read-only destination": ("PARAM-1", None),
}


def _wide(out):
    return _WIDE[0].view_mut()


def _wide_updates(c):
    return _WIDE_FRESH[0].to_dm(c.tdma, DmTensor[bf16, Chip, Cluster, m("U, S # 64"), m("W")])


_WIDE, _WIDE_FRESH = [], []   # a destination (U, C, W) and updates (U, S, W) for the inner-axis cases


@pytest.mark.parametrize("case", sorted(SCATTER))
def test_scatter_refusals(case):
    code, body = SCATTER[case]
    if body is None:
        @device(chip=1)
        def kernel(ctx: Context, fresh: HbmTensor[bf16, Chip, m("S, W")], offsets: HbmTensor[i32, Chip, m("S")],
                   cache: HbmTensor[bf16, Chip, m("C, W")]) -> None:
            d = fresh.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("S # 64"), m("W")])
            cache.view_mut().scatter(m("C"), m("W")).by_byte_offsets(offsets).from_dm(ctx.tdma, d)
    else:
        @device(chip=1)
        def kernel(ctx: Context, fresh: HbmTensor[bf16, Chip, m("S, W")], offsets: HbmTensor[i32, Chip, m("S")],
                   rows: HbmTensor[i32, Chip, m("N")], cache: Mut[HbmTensor[bf16, Chip, m("C, W")]],
                   wide: Mut[HbmTensor[bf16, Chip, m("U, C, W")]], wide_fresh: HbmTensor[bf16, Chip, m("U, S, W")]) -> None:
            _WIDE[:], _WIDE_FRESH[:] = [wide], [wide_fresh]
            d = fresh.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("S # 64"), m("W")])
            body(ctx, d, offsets, rows, cache)

    codes = [d.code for d in kernel.trace().diagnostics]
    assert codes and codes[0] == code, codes
