"""Disagreements the differential generator found, each reduced to a small kernel.

Every test states which side is wrong, by docs/machine/index.md / docs/ci.md, and checks the
`cpu` result against numpy as well, so a "fix" that breaks the right side is caught.
All of them are fixed; each test pins the corrected behaviour. A new disagreement is
reduced to a kernel here and fixed on the wrong side, never tolerated by the generator.
"""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from tests.differential.harness import compare, differential, load_kernel

# --- 1. DM -> HBM DMA that broadcasts along a digit the DM tensor lacks --------------------
#
# docs/machine/dma.md: a DMA is a move; "destination axes the source does not have are
# broadcast", and DMA-4 accepts it (the trace passes). The cpu backend replicates `x`
# along J. The npu lowering builds the DM -> HBM commands from the DM side's factors only
# (visa/visa.lark), so nothing iterates J: the VISA artifact writes row 0 and leaves
# row 1 zero. The npu lowering (tu_ops/dma_commands.py) is wrong; the verifier does not catch
# it because it counts the DM side's bytes. (Found by the generator as a commit that trims
# live cells, `commit_drop`, whose result DMA then broadcasts the dropped digit.)

BROADCAST_INTO_HBM = '''\
from npu_opt import *

axes(J=2, C=8)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 64")


@device(chip=1)
def bcast_into_hbm(ctx: Context, x: HbmTensor[i32, Chip, m("C")]) -> HbmTensor[i32, Chip, m("J, C")]:
    d = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("C")])
    return d.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("J, C")])
'''

# The generated kernel it was found as: the trim keeps C % 4 of C % 8, the DM result
# lacks C / 4 % 2, and the DMA to HBM `C` broadcasts it (cpu) or leaves it zero (visa).
# (Found over `C, K` in DM; stored `K / 4, C, K % 4` since FETCH-11, so that its packets
# `C, K % 4` are 32 contiguous bytes rather than runs of 2 bytes no fetch size reads.)
BROADCAST_GENERATED = '''\
from npu_opt import *

axes(C=16, K=12)

Chip = m("1")
Cluster = m("1")
Slice = m("1 # 64")


@device(chip=1)
def dk(ctx: Context,
       x: HbmTensor[i4, Chip, m("K / 4, C, K % 4")],
       w: HbmTensor[i4, Chip, m("K / 4, C, K % 4")]) -> HbmTensor[i32, Chip, m("C")]:
    x = x.to_dm(ctx.tdma, DmTensor[i4, Chip, Cluster, Slice, m("K / 4, C, K % 4")])
    w = w.to_dm(ctx.tdma, DmTensor[i4, Chip, Cluster, Slice, m("K / 4, C, K % 4")])
    w_trf = (ctx.main.begin(w.view())
             .fetch(m("K / 4"), m("C, K % 4"))
             .collect(m("K / 4"), m("C, K % 4"))
             .to_trf(m("1"), m("K / 4, C, K % 4")))
    y0 = (ctx.main.begin(x.view())
          .fetch(m("K / 4"), m("C, K % 4"))
          .collect(m("K / 4"), m("C, K % 4"))
          .contract_outer(w_trf, m("K / 4"), m("C, K % 4"))
          .contract_packet(m("C"))
          .contract_time(m("1"))
          .contract_lane(m("C / 8"), m("C % 8"), LaneMode.SEQUENTIAL)
          .commit_trim(m("C % 4"))
          .commit())
    return y0.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("C")])
'''


def test_dm_to_hbm_broadcast() -> None:
    k = load_kernel(BROADCAST_INTO_HBM)
    assert npu_opt.check(k).ok
    x = np.arange(1, 9, dtype=np.int32)
    cpu = npu_opt.run(k, x, backend="cpu")
    np.testing.assert_array_equal(cpu, np.stack([x, x]))  # the cpu backend is right
    assert compare(cpu, npu_opt.run(k, x, backend="visa")) is None


def test_dm_to_hbm_broadcast_generated() -> None:
    k = load_kernel(BROADCAST_GENERATED)
    x = np.random.default_rng(1).integers(-8, 8, (16, 12)).astype(np.int8)
    w = np.random.default_rng(2).integers(-8, 8, (16, 12)).astype(np.int8)
    host = lambda a: np.ascontiguousarray(a.reshape(16, 3, 4).transpose(1, 0, 2))  # noqa: E731 - K / 4, C, K % 4
    cpu = npu_opt.run(k, host(x), host(w), backend="cpu")
    full = np.einsum("ck,ck->c", x.astype(np.int64), w.astype(np.int64)).astype(np.int32)
    expected = full.reshape(2, 2, 4)[:, 0, :]                  # the kept digits C / 8, C % 4
    np.testing.assert_array_equal(cpu.reshape(2, 2, 4), np.stack([expected, expected], axis=1))
    assert compare(cpu, npu_opt.run(k, host(x), host(w), backend="visa")) is None


# --- 2. a DMA of exactly one byte ------------------------------------------------------------
#
# A one-element i8 result (or two i4). The lowering emits `packet_bytes=1, entries=[]`:
# visa/visa.lark drops size-1 entries, and the packet entry 1:1:1 is one
# (tu_ops/dma_commands.py: `packet = [...] if packet_bytes > 1 else []`); `npu-opt visa
# --verify` accepts it and counts prod([]) = 1 byte. The VISA interpreter
# (visa/interp/dma.py, `command {i} moves nothing`) required a non-empty entry list and
# raised, which the visa backend reported as an ICE. The interpreter was wrong (fixed: an
# empty entry list is an empty loop nest, run once: one 1-byte packet).

ONE_BYTE_RESULT = '''\
from npu_opt import *

axes(K=64)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 64")


@device(chip=1)
def i8_dot(ctx: Context,
           x: HbmTensor[i8, Chip, m("K")],
           w: HbmTensor[i8, Chip, m("K")]) -> HbmTensor[i8, Chip, m("1")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("K")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("1"), m("K"))
             .collect(m("K / 32"), m("K % 32"))
             .to_trf(m("1"), m("K")))
    y = (ctx.main.begin(x.view())
         .fetch(m("1"), m("K"))
         .collect(m("K / 32"), m("K % 32"))
         .contract_outer(w_trf, m("1"), m("K"))
         .contract_packet(m("1"))
         .contract_time(m("1"))
         .contract_lane(m("1"), m("1 # 8"), LaneMode.INTERLEAVED)
         .cast(i8, m("1 # 32"))
         .commit_trim(m("1 # 8"))
         .commit(m("1 # 8")))
    return y.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("1")])
'''


def test_one_byte_result_dma() -> None:
    k = load_kernel(ONE_BYTE_RESULT)
    x = np.arange(64, dtype=np.int8) - 32
    w = np.ones(64, np.int8)
    cpu = npu_opt.run(k, x, w, backend="cpu")
    total = int(x.astype(np.int64).sum())                      # -32 -> i8 wrap of the i32 sum
    np.testing.assert_array_equal(cpu, np.array([np.int8(((total + 128) % 256) - 128)]))
    assert compare(cpu, npu_opt.run(k, x, w, backend="visa")) is None


# --- 3. an i4 DMA into HBM whose burst is one nibble -----------------------------------------
#
# DM -> HBM transfers have no alignment rule (docs/machine/dma.md, design 5), so the trace used to
# accept a transposing i4 DMA whose burst is one 4-bit cell, and the npu lowering then raised
# `InternalError: DMA packet of 4 bits is not whole bytes` -- an ICE for a trace-valid kernel,
# which LOWER-3 forbids. Byte commands cannot write half a byte, so DMA-5 now also refuses a
# sub-byte burst (or stride) into HBM at trace time, identically on every backend.

I4_NIBBLE_BURST = '''\
from npu_opt import *

axes(A=2, B=16)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 64")


@device(chip=1)
def i4_transpose(ctx: Context, x: HbmTensor[i4, Chip, m("A, B")]) -> HbmTensor[i4, Chip, m("B, A")]:
    d = x.to_dm(ctx.tdma, DmTensor[i4, Chip, Cluster, Slice, m("A, B")])
    return d.to_hbm(ctx.tdma, HbmTensor[i4, Chip, m("B, A")])
'''


# The generator's shrunk example: a GEMV whose i4 result holds one nibble per slice, so the
# DMA gathering the four rows into HBM `I` has a one-nibble burst too.
I4_GEMV_PER_SLICE = '''\
from npu_opt import *

axes(I=4, K=32)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("I # 64")


@device(chip=1)
def dk(ctx: Context,
       x: HbmTensor[i8, Chip, m("I, K")],
       w: HbmTensor[i8, Chip, m("K")]) -> HbmTensor[i4, Chip, m("I")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("K")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("1"), m("K"))
             .collect(m("1"), m("K"))
             .to_trf(m("1"), m("K")))
    y0 = (ctx.main.begin(x.view())
          .fetch(m("1"), m("K"))
          .collect(m("1"), m("K"))
          .contract_outer(w_trf, m("1"), m("K"))
          .contract_packet(m("1"))
          .contract_time(m("1"))
          .contract_lane(m("1"), m("1 # 8"), LaneMode.INTERLEAVED)
          .cast(i4, m("1 # 64"))
          .commit_trim(m("1 # 16"))
          .commit())
    return y0.to_hbm(ctx.tdma, HbmTensor[i4, Chip, m("I")])
'''


def test_i4_result_with_a_one_nibble_burst_into_hbm() -> None:
    outcome = differential(I4_NIBBLE_BURST)      # raised on the ICE before the fix
    assert (outcome.kind, outcome.code) == ("refused", "DMA-5")
    diagnostics = npu_opt.check(load_kernel(I4_NIBBLE_BURST)).diagnostics
    assert [d.code for d in diagnostics] == ["DMA-5"] and "whole bytes" in diagnostics[0].message


def test_i4_gemv_one_nibble_per_slice() -> None:
    outcome = differential(I4_GEMV_PER_SLICE, seed=3)
    assert (outcome.kind, outcome.code) == ("refused", "DMA-5")


def test_i4_transpose_with_paired_nibbles_still_compiles() -> None:
    """The refusal is only for odd bursts: moving pairs of nibbles into HBM agrees cpu == visa."""
    paired = I4_NIBBLE_BURST.replace('axes(A=2, B=16)', 'axes(A=2, B=16)').replace(
        'm("B, A")]:', 'm("A, B")]:').replace('HbmTensor[i4, Chip, m("B, A")])', 'HbmTensor[i4, Chip, m("A, B")])')
    assert differential(paired).kind == "agree"
