"""A tensor or view method called with arguments its signature cannot take is TYPE-6 at the
user's call, as a stream stage's is (npu_opt.method_arguments): the pre-v0.9 DM address of
furiosa-opt's book (`to_dm(ctx.tdma, DmTensor[...], 0)`), a tile missing its start, a memset
given one value too many. It was USAGE, quoting Python's TypeError with our class's name."""

from __future__ import annotations

import npu_opt
from npu_opt import *
from tests.npu_opt.test_typestate import line_of

axes(A=512)

Chip = m("1")
Row = DmTensor[i32, Chip, m("1 # 2"), m("A / 8 # 256"), m("A % 8")]


@device(chip=1)
def with_an_address(ctx: Context, x: HbmTensor[i32, Chip, m("A")]) -> HbmTensor[i32, Chip, m("A")]:
    d = x.to_dm(ctx.tdma, Row, 0)                          # <-- address
    return d.to_hbm(ctx.tdma)


@device(chip=1)
def tile_without_start(ctx: Context, x: HbmTensor[i32, Chip, m("A")]) -> HbmTensor[i32, Chip, m("A")]:
    d = x.to_dm(ctx.tdma, Row)
    d.view().tile(m("A % 8"), 4, m("A % 8 = 4 # 8"))      # <-- no start
    d.view_mut().memset(ctx.sub, 0, 1)                     # <-- one more
    return d.to_hbm(ctx.tdma)


def test_an_extra_dm_address_is_type_6_at_the_call():
    (d,) = npu_opt.check(with_an_address).diagnostics
    assert (d.code, d.line) == ("TYPE-6", line_of(with_an_address, "<-- address"))
    assert d.message == "bad arguments to `to_dm`: too many positional arguments"
    assert d.help == "the signature is `to_dm(dma, dst=None)`"


def test_the_trace_goes_on_after_a_method_with_bad_arguments():
    found = [(d.code, d.line, d.message) for d in npu_opt.check(tile_without_start).diagnostics]
    assert found == [
        ("TYPE-6", line_of(tile_without_start, "<-- no start"),
         "bad arguments to `tile`: missing a required argument: 'start'"),
        ("TYPE-6", line_of(tile_without_start, "<-- one more"),
         "bad arguments to `memset`: too many positional arguments"),
    ]

