"""The `_at` forms of the on-chip transfers (npu_opt.addresses): furiosa-opt's `to_dm_at`,
`commit_at` (also after `commit_valid_count_pack`), `to_vrf_at`, `to_trf_at(TrfAddress)`,
`dma_gather_scaled_at` and `to_dm_pcopy_at`.
Each compiles to the VISA of its address-free twin and runs as it does; its address is
checked (TYPE-6, ADDR-1, TRF-2 for a TRF half) and then not used: npu-opt places on-chip
tensors itself, so two tensors given one address do not alias (kd-explicit-addresses)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import npu_opt
from npu_opt import *
from tests.npu_opt.test_typestate import line_of
from visa.interp import execute
from visa.parser import parse_visa

axes(A=16, E=64, N=8, T=40, G=64, Z=8192, P=5, Q=10)

Chip = m("1")
Cluster = m("1 # 2")
One = m("1 # 64")
X = DmTensor[i8, Chip, Cluster, One, m("A, E")]
W = DmTensor[i8, Chip, Cluster, One, m("N, E")]
Y = DmTensor[i32, Chip, Cluster, One, m("A, N")]


def _gemm_add(at: bool):
    """y[a, n] = sum_e x[a, e] * w[n, e] + b[n] (i32), copied once more DM -> DM."""

    def body(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")], w: HbmTensor[i8, Chip, m("N, E")],
             b: HbmTensor[i32, Chip, m("N")]) -> HbmTensor[i32, Chip, m("A, N")]:
        if at:
            x = x.to_dm_at(ctx.tdma, X, 0)
            w = w.view().to_dm_at(ctx.tdma, W, address=1024)
        else:
            x = x.to_dm(ctx.tdma, X)
            w = w.view().to_dm(ctx.tdma, W)
        b = b.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, One, m("N")])
        w = ctx.sub.begin(w.view()).fetch(m("N"), m("E")).collect(m("N, E / 32"), m("E % 32"))
        w_trf = w.to_trf_at(TrfAddress.SECOND_HALF) if at else w.to_trf()    # lane and element inferred
        b = ctx.sub.begin(b.view()).fetch(m("1"), m("N")).collect(m("1"), m("N"))
        b_vrf = b.to_vrf_at(ctx.sub, m("N"), address=0) if at else b.to_vrf(ctx.sub, m("N"))
        y = (ctx.main.begin(x.view())
             .fetch(m("A"), m("E"))
             .collect(m("A, E / 32"), m("E % 32"))
             .contract_outer(w_trf, m("A"), m("E"))
             .contract_packet(m("1"))
             .contract_time(m("A"))
             .contract_lane(m("A"), m("N"), LaneMode.INTERLEAVED)
             .vector_init()
             .vector_intra_slice_tag(TagMode.ZERO)
             .vector_fxp(FxpBinaryOp.ADD_FXP, b_vrf)
             .vector_final()
             .commit_trim(m("N")))
        y = y.commit_at(m("A, N"), 2048) if at else y.commit(m("A, N"))
        y = y.to_dm_pcopy_at(ctx.sub, Y, 4096) if at else y.to_dm_pcopy(ctx.sub, Y)
        return y.to_dm_at(ctx.tdma, Y, 8192).to_hbm(ctx.tdma) if at else y.to_dm(ctx.tdma, Y).to_hbm(ctx.tdma)

    body.__name__ = "gemm_add"
    return device(chip=1)(body)


def _gather(at: bool):
    """64 rows of a 40-row i8 table, one per slice, at the i32 byte offsets of `index`."""

    def body(ctx: Context, table: HbmTensor[i8, Chip, m("T, E")],
             index: HbmTensor[i32, Chip, m("G")]) -> HbmTensor[i8, Chip, m("G, E")]:
        dst = DmTensor[i8, Chip, Cluster, m("G"), m("E")]
        v = table.dma_gather_scaled_at(index, dst, 0) if at else table.dma_gather_scaled(index, dst)
        return v.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("G, E")])

    body.__name__ = "gather"
    return device(chip=1)(body)


def _packed(at: bool):
    """Rows of 10 i32 cells in 16-cell slots written back to back (the packed commit)."""

    def body(ctx: Context, x: HbmTensor[i32, Chip, m("G, P # 8, Q # 16")]) -> HbmTensor[i32, Chip, m("G, P, Q")]:
        x = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("G"), m("P # 8, Q # 16")])
        y = (ctx.sub.begin(x.view()).fetch(m("P # 8, Q # 16 / 8"), m("Q # 16 % 8"))
             .collect(m("P # 8, Q # 16 / 8"), m("Q # 16 % 8")).commit_trim(m("Q # 16 % 8"))
             .commit_valid_count_pack())
        y = y.commit_at(0) if at else y.commit()
        return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("G, P, Q")])

    body.__name__ = "packed"
    return device(chip=1)(body)


RNG = np.random.default_rng(7)
GEMM_ARGS = (RNG.integers(-128, 128, (16, 64), dtype=np.int8), RNG.integers(-128, 128, (8, 64), dtype=np.int8),
             RNG.integers(-2**20, 2**20, 8, dtype=np.int32))
ROWS = RNG.integers(0, 40, 64)
GATHER_ARGS = (RNG.integers(-128, 128, (40, 64), dtype=np.int8), (ROWS * 64).astype(np.int32))
CASES = {
    "gemm_add": (_gemm_add, GEMM_ARGS,
                 lambda x, w, b: x.astype(np.int32) @ w.astype(np.int32).T + b[None]),
    "gather": (_gather, GATHER_ARGS, lambda table, index: table[index // 64]),
    "packed": (_packed, (RNG.integers(-2**31, 2**31, (64, 5, 10), dtype=np.int64).astype(np.int32),), lambda x: x),
}


def _without_locations(text: str) -> str:
    return re.sub(r" ; loc \S+", "", text)


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_at_form_compiles_to_its_twins_visa_and_runs_as_numpy(case):
    make, args, oracle = CASES[case]
    at, twin = npu_opt.compile(make(True)).text, npu_opt.compile(make(False)).text
    assert _without_locations(at) == _without_locations(twin)
    want = oracle(*args)
    np.testing.assert_array_equal(npu_opt.run(make(True), *args), want)
    np.testing.assert_array_equal(execute(parse_visa(at), list(args)), want)


@device(chip=1)
def same_address(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                 w: HbmTensor[i8, Chip, m("N, E")]) -> tuple[HbmTensor[i8, Chip, m("A, E")],
                                                             HbmTensor[i8, Chip, m("N, E")]]:
    a = x.to_dm_at(ctx.tdma, X, 0)
    b = w.to_dm_at(ctx.tdma, W, 0)          # the same address while `a` is live: no alias
    return a.to_hbm(ctx.tdma), b.to_hbm(ctx.tdma)


def test_two_tensors_given_one_address_do_not_alias():
    """kd-explicit-addresses: furiosa-opt would place `b` over `a`; npu-opt places both."""
    x, w = GEMM_ARGS[:2]
    for got, want in zip(npu_opt.run(same_address, x, w), (x, w)):
        np.testing.assert_array_equal(got, want)


@device(chip=1)
def refused(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")], w: HbmTensor[i8, Chip, m("N, Z")],
            b: HbmTensor[i32, Chip, m("N")]) -> None:
    x.to_dm_at(ctx.tdma, X, 12)                                       # <-- misaligned
    x.to_dm_at(ctx.tdma, X, -8)                                       # <-- negative
    x.to_dm_at(ctx.tdma, X, 524288 - 1016)                            # <-- past the DM
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, One, m("N, Z")])
    (ctx.sub.begin(w.view()).fetch(m("N"), m("Z")).collect(m("N, Z / 32"), m("Z % 32"))
     .to_trf_at(m("N"), m("Z"), TrfAddress.FIRST_HALF))             # <-- half
    b = b.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, One, m("N")])
    ctx.sub.begin(b.view()).fetch(m("1"), m("N")).collect(m("1"), m("N")).to_trf_at(0)  # <-- trf kind
    ctx.sub.begin(b.view()).fetch(m("1"), m("N")).collect(m("1"), m("N")).to_vrf_at(8176)  # <-- vrf end


def test_each_refusal_is_at_the_users_line_with_its_code():
    found = [(d.code, d.line) for d in npu_opt.check(refused).diagnostics]
    marks = [("ADDR-1", "misaligned"), ("TYPE-6", "negative"), ("ADDR-1", "past the DM"), ("TRF-2", "half"),
             ("TYPE-6", "trf kind"), ("ADDR-1", "vrf end")]
    assert found == [(code, line_of(refused, f"<-- {mark}")) for code, mark in marks]
    half = next(d for d in npu_opt.check(refused).diagnostics if d.code == "TRF-2")
    assert "TrfAddress.FIRST_HALF" in half.message and "65536 bytes" in half.message
