"""FETCH-11, the fetch-size rule of furiosa-opt v0.8: a fetch narrower than one 8-byte SRAM
word is legal when the Fetch Adapter widens it back to whole words. The widest legal fetch
(hand-computed), kernels accepted and refused at the user's line, the lowered access size,
cpu == visa on the accepted ones, and FEED-6 on an edited record."""

from __future__ import annotations

import runpy

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from ir.rules.read_plan import fetch_volume
from tu_ops import rngd
from visa.interp import execute
from visa.parser import parse_visa
from visa.verify import verify_text


@pytest.mark.parametrize("context, in_bits, out_bits, run, want", [
    ("main", 8, 32, 4, 4),      # 4 bytes of i8 become 16 bytes of i32: whole words
    ("main", 8, 32, 2, 2),      # 2 bytes become 8
    ("main", 8, 32, 1, None),   # 1 byte becomes 4: half a word
    ("main", 8, 32, 64, 8),     # 8 x i32 fill the flit; 16 would not fit it
    ("main", 8, 8, 4, None),    # 4 bytes, nothing widens them
    ("main", 8, 8, 8, 8),
    ("main", 8, 8, 64, 32),
    ("main", 16, 32, 2, 2),     # bf16 -> f32 from 4 bytes
    ("main", 16, 16, 2, None),
    ("main", 4, 32, 8, 8),      # f4 -> f32 (lookup and cast) from 4 bytes
    ("main", 32, 32, 3, None),  # no fetch size tiles 3 elements
    ("sub", 8, 8, 8, 8),
    ("sub", 8, 8, 16, 8),       # the sub context reads 8 bytes, never more
    ("sub", 8, 8, 4, None),
    ("sub", 8, 32, 8, 8),
    ("sub", 4, 32, 16, 8),      # i4 -> i32: the one 4-byte read of the sub context
    ("sub", 4, 4, 16, 16),
])
def test_widest_legal_fetch(context, in_bits, out_bits, run, want):
    assert fetch_volume(context, in_bits, out_bits, run) == want


_KERNELS = '''
from npu_opt import *
axes(A=64, P=8, R=32, Q=4)
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")

@device(chip=1)
def narrow_i8(ctx: Context, x: HbmTensor[i8, Chip, m("A, P")]) -> HbmTensor[i8, Chip, m("A, P")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, P")])
    y = (ctx.main.begin(d.view())
         .fetch(m("A / 2, P / 4"), m("A % 2, P % 4"))   # <-- refused
         .collect(m("A / 2, P / 4"), m("[A % 2, P % 4] # 32")).commit_trim(m("A % 2, P % 4")).commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("A, P")])

@device(chip=1)
def widened_i8(ctx: Context, x: HbmTensor[i8, Chip, m("A, P")]) -> HbmTensor[i32, Chip, m("A, P")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, P")])
    y = (ctx.main.begin(d.view())
         .fetch(m("A / 2, P / 4"), m("A % 2, P % 4"))
         .fetch_cast(i32)
         .collect(m("A / 2, P / 4"), m("A % 2, P % 4")).commit_trim(m("A % 2, P % 4")).commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, P")])

@device(chip=1)
def narrow_bf16(ctx: Context, x: HbmTensor[bf16, Chip, m("R, Q")]) -> HbmTensor[bf16, Chip, m("R, Q")]:
    d = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("R, Q")])
    y = (ctx.main.begin(d.view())
         .fetch(m("R / 2, Q / 2"), m("R % 2, Q % 2"))   # <-- refused
         .collect(m("R / 2, Q / 2"), m("[R % 2, Q % 2] # 16")).commit_trim(m("R % 2, Q % 2")).commit())
    return y.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("R, Q")])

@device(chip=1)
def widened_bf16(ctx: Context, x: HbmTensor[bf16, Chip, m("R, Q")]) -> HbmTensor[f32, Chip, m("R, Q")]:
    d = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("R, Q")])
    y = (ctx.main.begin(d.view())
         .fetch(m("R / 2, Q / 2"), m("R % 2, Q % 2"))
         .fetch_cast(f32)
         .collect(m("R / 2, Q / 2"), m("[R % 2, Q % 2] # 8")).commit_trim(m("R % 2, Q % 2")).commit())
    return y.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("R, Q")])
'''


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    path = tmp_path_factory.mktemp("fetch_size") / "k.py"
    path.write_text(_KERNELS)
    return runpy.run_path(str(path)), _KERNELS.splitlines()


@pytest.mark.parametrize("name", ["narrow_i8", "narrow_bf16"])
def test_unwidened_sub_word_fetch_is_refused(kernels, name):
    ns, lines = kernels
    (d, *_) = npu_opt.check(ns[name]).diagnostics
    assert d.code == "FETCH-11", d.render()
    start = next(i for i, line in enumerate(lines, 1) if f"def {name}(" in line)
    assert d.line == next(i for i, line in enumerate(lines, 1) if i > start and "# <-- refused" in line)


def test_widened_i8_reads_four_bytes_and_agrees(kernels):
    ns, _ = kernels
    x = np.random.default_rng(11).integers(-128, 128, (64, 8), dtype=np.int64).astype(np.int8)
    text = npu_opt.compile(ns["widened_i8"]).text
    verify_text(text, rngd())
    assert "conversions=[I8_TO_I32]" in text and "read_elems=4}" in text
    cpu = npu_opt.run(ns["widened_i8"], x)
    np.testing.assert_array_equal(cpu, x.astype(np.int32))
    np.testing.assert_array_equal(execute(parse_visa(text), [x]), cpu)


def test_widened_bf16_reads_four_bytes_and_agrees(kernels):
    ns, _ = kernels
    bits = np.random.default_rng(12).integers(0x3000, 0x4800, (32, 4), dtype=np.int64).astype(np.uint16)  # normal
    x = bits.view(ml_dtypes.bfloat16)
    text = npu_opt.compile(ns["widened_bf16"]).text
    verify_text(text, rngd())
    assert "read_elems=2}" in text
    cpu = npu_opt.run(ns["widened_bf16"], x)
    np.testing.assert_array_equal(cpu.view(np.uint32), bits.astype(np.uint32) << 16)
    np.testing.assert_array_equal(execute(parse_visa(text), [x]).view(np.uint32), cpu.view(np.uint32))


def test_a_narrower_access_than_whole_words_is_refused_by_feed_6(kernels):
    ns, _ = kernels
    text = npu_opt.compile(ns["widened_i8"]).text
    with pytest.raises(Exception, match=r"FEED-6.*not whole words"):
        verify_text(text.replace("read_elems=4}", "read_elems=1}", 1), rngd())


_STRIDED = '''
from npu_opt import *
axes(A=64, B=128)
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")

@device(chip=1)
def columns(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("B, A")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, B")])
    y = (ctx.main.begin(d.view()).fetch(m("B"), m("A"))
         .collect(m("B, A / 32"), m("A % 32")).commit_trim(m("A % 32")).commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("B, A")])
'''


def test_a_strided_packet_is_read_element_by_element_outside_the_rule(tmp_path):
    """npu-opt's extension (furiosa-opt refuses strided packets): one 1-byte access each."""
    path = tmp_path / "columns.py"
    path.write_text(_STRIDED)
    kernel = runpy.run_path(str(path))["columns"]
    assert npu_opt.check(kernel).diagnostics == ()
    text = npu_opt.compile(kernel).text
    verify_text(text, rngd())
    assert "packet=[64:128], packet_elems=64, read_elems=1}" in text
