"""Contractions never sum padding of unknown contents (issue 28 item 4).

`#` padding holds whatever memory holds there (the reference's book: accessible, arbitrary
values); only `#{0}` is known to be zero. The cpu backend reads every padding cell as zero,
so a kernel summing `#` padding showed the right answer on cpu and visa while the chip would
add garbage. Now the adder tree refuses to sum padding its fetch read from memory (PACKET-5),
and the fix it names, a fetch mask on both operands, compiles and computes the sum. Padding
the Collect Engine adds (zero-filled) and padded time steps (skipped) stay legal."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from tests.kernel_files import load_source

PACKET = '''from npu_opt import *

axes(A=8, K=24, R=8)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")

@device(chip=1)
def NAME(ctx: Context,
         x: HbmTensor[i8, Chip, m("A, K # 32")],
         w: HbmTensor[i8, Chip, m("R, K # 32")]) -> HbmTensor[i32, Chip, m("A, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, K # 32")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("R, K # 32")])
    w_trf = (ctx.sub.begin(w.view()).fetch(m("R"), m("K # 32"))WMASK
             .collect(m("R"), m("K PAD 32")).to_trf(m("R"), m("K PAD 32")))
    y = (ctx.main.begin(x.view()).fetch(m("A"), m("K # 32"))XMASK
         .collect(m("A"), m("K PAD 32"))
         .contract_outer(w_trf, m("A"), m("K PAD 32"))
         .contract_packet(m("1"))  # sums all 32 positions
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma)
'''

TIME = '''from npu_opt import *

axes(F=6, E=32, R=8)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")

@device(chip=1)
def NAME(ctx: Context,
         x: HbmTensor[i8, Chip, m("F, E")],
         w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("F, E")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("R, E")])
    w_trf = (ctx.sub.begin(w.view()).fetch(m("R"), m("E"))
             .collect(m("R"), m("E")).to_trf(m("R"), m("E")))
    y = (ctx.main.begin(x.view()).fetch(m("F # 8"), m("E"))XMASK
         .collect(m("F PAD 8"), m("E"))
         .contract_outer(w_trf, m("F PAD 8"), m("E"))
         .contract_packet(m("1"))
         .contract_time(KEEP)  # the rows
         .contract_lane(KEEP, m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma)
'''

RNG = np.random.default_rng(4)


def _kernel(template: str, name: str, masked: bool, **more: str):
    pad = "#{0}" if masked else "#"
    text = template.replace("NAME", name).replace("PAD", pad)
    if "XMASK" in text and "K # 32" in template:
        text = text.replace("XMASK", '.fetch_mask(m("A"), m("K #{0} 32"))' if masked else "")
        text = text.replace("WMASK", '.fetch_mask(m("R"), m("K #{0} 32"))' if masked else "")
    else:
        text = text.replace("XMASK", '.fetch_mask(m("F #{0} 8"), m("E"))' if masked else "")
    for key, value in more.items():
        text = text.replace(key, value)
    return load_source(text, f"padding_sums_{name}").__dict__[name]


def _refusal(kernel, code: str, stage: str):
    (d,) = npu_opt.check(kernel).diagnostics
    assert d.code == code and d.stage == stage, d.render()
    assert "fetch_mask" in d.help and "#{0}" in d.help
    return d


def test_the_adder_tree_refuses_to_sum_hash_padding():
    d = _refusal(_kernel(PACKET, "packet_top", False), "PACKET-5", "contract_packet")
    assert "packet position 24 of `K # 32`" in d.render()


def test_collect_padding_is_zero_filled_and_summed():
    """Fetched unpadded (24 bytes), padded to the flit by collect: the engine writes zeros."""
    text = PACKET.replace('m("A, K # 32")]', 'm("A, K")]').replace(
        'fetch(m("A"), m("K # 32"))XMASK', 'fetch(m("A"), m("K"))').replace(
        'fetch(m("R"), m("K # 32"))WMASK', 'fetch(m("R"), m("K"))').replace(
        'm("R, K # 32")]', 'm("R, K")]').replace("PAD", "#").replace("NAME", "collect_padded")
    k = load_source(text, "padding_sums_collect_padded").__dict__["collect_padded"]
    assert not npu_opt.check(k).diagnostics
    x = RNG.integers(-8, 8, (8, 24)).astype(np.int8)
    w = RNG.integers(-8, 8, (8, 24)).astype(np.int8)
    np.testing.assert_array_equal(npu_opt.run(k, x, w), x.astype(np.int64) @ w.T.astype(np.int64))


def test_padded_time_steps_are_skipped_not_refused():
    """The Time Reducer skips padded steps (docs/machine/contraction.md): `F # 8` summed whole."""
    k = _kernel(TIME, "time_top", False, KEEP='m("1")')
    assert not npu_opt.check(k).diagnostics
    x = RNG.integers(-8, 8, (6, 32)).astype(np.int8)
    w = RNG.integers(-8, 8, (8, 32)).astype(np.int8)
    np.testing.assert_array_equal(npu_opt.run(k, x, w), (x.astype(np.int64) @ w.T.astype(np.int64)).sum(axis=0))


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_masked_padding_is_summed_as_zeros(backend):
    x = RNG.integers(-8, 8, (8, 24)).astype(np.int8)
    w = RNG.integers(-8, 8, (8, 24)).astype(np.int8)
    k = _kernel(PACKET, "packet_zero", True)
    np.testing.assert_array_equal(npu_opt.run(k, x, w, backend=backend),
                                  x.astype(np.int64) @ w.T.astype(np.int64))


def test_masked_time_padding_is_summed_as_zeros():
    x = RNG.integers(-8, 8, (6, 32)).astype(np.int8)
    w = RNG.integers(-8, 8, (8, 32)).astype(np.int8)
    k = _kernel(TIME, "time_zero", True, KEEP='m("1")')
    want = (x.astype(np.int64) @ w.T.astype(np.int64)).sum(axis=0)
    np.testing.assert_array_equal(npu_opt.run(k, x, w), want)
    np.testing.assert_array_equal(npu_opt.run(k, x, w, backend="visa"), want)


def test_the_packet_padding_answer_is_per_mapping():
    """The packet's answer is cached per mapping: `#`, `#{!}` and `#{0}` packets of the same
    axes are three answers, and a packet whose padding only the collect adds has none."""
    from ir.mapping import m
    from npu_opt.padding_sums import _memory_padding

    axes = {"K": 24}
    assert _memory_padding(m("K # 32", axes=axes)) is True
    assert _memory_padding(m("K #{!} 32", axes=axes)) is True
    assert _memory_padding(m("K #{0} 32", axes=axes)) is False
    assert _memory_padding(m("K", axes=axes)) is False
    assert _memory_padding(m("K # 32", axes=axes)) is True
