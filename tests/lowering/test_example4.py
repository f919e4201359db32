"""Example 4 (`gemm_i8_kernel`) lowers to exactly the records, commands, addresses and cost
of visa/visa.lark, and example 4b to the table of examples/gemm_bf16.py."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from backends.npu import lower_kernel
from ir.location import Location
from tests.backends.examples import EXAMPLES, example
from tests.tu_ops.builders import gemm
from tu_ops import CollectFlits, DestKind, FeedElementType, LoopKind, LoweredKernel, Region, TuContext, Width, rngd
from visa import compute_cost

# visa/visa.lark, the body of gemm_i8_kernel.visa, typed from the spec (locations apart).
SPEC_BODY = [
    ('%2 = dma src=%0 kind=HBM_TO_DM element_type=i8 aggregate=HOMOGENEOUS commands=[{part=(0, 0, 0), src_base=0, '
     'dst_base=0, packet_bytes=4096, entries=[16:4096:8388608, 16:0:524288, 4096:1:1]}] : hbm[i8, "1", "M, K"] -> '
     'dm[i8, "1", "1 # 2", "M / 32, N / 32", "M % 32, K"]', (13, 11)),
    ('%3 = dma src=%1 kind=HBM_TO_DM element_type=i8 aggregate=HOMOGENEOUS commands=[{part=(0, 0, 0), src_base=0, '
     'dst_base=4096, packet_bytes=4096, entries=[16:0:8388608, 16:4096:524288, 4096:1:1]}] : hbm[i8, "1", "N, K"] '
     '-> dm[i8, "1", "1 # 2", "M / 32, N / 32", "N % 32, K"]', (14, 11)),
    ('program 0 SUB space "1", "1 # 2", "M / 32, N / 32" {', None),
    ('  %4 = feed_buffer context=SUB source=(%3, 0, i8, "N % 32, K") conversions=[] element_type=RawInt8 '
     'shapes=[{time=[8:128, 4:1024], packet=[128:1], packet_elems=128, read_elems=8}] flits_per_packet=4 '
     'collect_flits=Flit2 beats=64 dest=(TRF_LOAD, %5) : stream[i8, "N % 8, N / 8 % 4", "K"] -> '
     'stream[i8, "N % 8, N / 8 % 4, K / 32", "K % 32"]', (15, 22)),
    ('  %5 = trf_load in=%4 element_type=RawInt8 cell_format=INT9 lanes=8 bytes_per_lane=512 region=FULL '
     'base_row=0 collect_flits=Flit2 : stream[i8, "N % 8, N / 8 % 4, K / 32", "K % 32"] -> '
     'trf[i8, "N % 8", "N / 8 % 4, K"]', (19, 15)),
    ('}', None),
    ('program 1 MAIN space "1", "1 # 2", "M / 32, N / 32" {', None),
    ('  %6 = feed_buffer context=MAIN source=(%2, 0, i8, "M % 32, K") conversions=[] element_type=RawInt8 '
     'shapes=[{time=[32:128, 4:0], packet=[128:1], packet_elems=128, read_elems=32}] flits_per_packet=4 '
     'collect_flits=Flit2 beats=256 dest=(CONTRACT_OUTER, %7) : stream[i8, "M % 32, N / 8 % 4", "K"] -> '
     'stream[i8, "M % 32, N / 8 % 4, K / 32", "K % 32"]', (20, 21)),
    ('  %7 = contract_outer stream=%6 weights=%5 stream_type=RawInt8 weight_type=RawInt8 mac_type=I32 '
     'pack_size=2 lanes=8 time_broadcast=[] trf_read={read_elems=64, width=WIDE, entries=[32:0, 8:1], '
     'packet_broadcast=1} : stream[i8, "M % 32, N / 8 % 4, K / 32", "K % 32"] -> '
     'cstream[i32, i8, "N % 8", "M % 32, N / 8 % 4, K / 64", "K % 64"]', (24, 13)),
    ('  %8 = packet_reduce in=%7 in_elems=64 depth=6 out_cols=1 : cstream[i32, i8, "N % 8", '
     '"M % 32, N / 8 % 4, K / 64", "K % 64"] -> cstream[i32, i8, "N % 8", "M % 32, N / 8 % 4, K / 64", "1"]',
     (25, 13)),
    ('  %9 = time_reduce in=%8 loops=[32:KEEP, 4:KEEP, 2:REDUCE] slots=1 mode=INTERLEAVED : cstream[i32, i8, '
     '"N % 8", "M % 32, N / 8 % 4, K / 64", "1"] -> cstream[i32, i8, "N % 8", "M % 32, N / 8 % 4", "1"]',
     (26, 13)),
    ('  %10 = lane_fold in=%9 mode=INTERLEAVED lanes=8 cols=1 cycles=128 : cstream[i32, i8, "N % 8", '
     '"M % 32, N / 8 % 4", "1"] -> stream[i32, "M % 32, N / 8 % 4", "N % 8"]', (27, 13)),
    ('  %11 = commit in=%10 valid_bytes=32 conversion=NONE write={time=[128:8], packet=[8:1]} write_bytes=32 '
     'dest=4096 : stream[i32, "M % 32, N / 8 % 4", "N % 8"] -> dm[i32, "1", "1 # 2", "M / 32, N / 32", '
     '"M % 32, N % 32"]', (28, 13)),
    ('}', None),
    ('%12 = dma src=%11 kind=DM_TO_HBM element_type=i32 aggregate=HOMOGENEOUS commands=[{part=(0, 0, 0), '
     'src_base=4096, dst_base=0, packet_bytes=128, entries=[16:8388608:65536, 16:524288:128, 32:128:2048, '
     '128:1:1]}] : dm[i32, "1", "1 # 2", "M / 32, N / 32", "M % 32, N % 32"] -> hbm[i32, "1", "M, N"]', (30, 16)),
    ('return %12', None),
]

SPEC_COST = {"dma_commands": 3, "dma_bytes": 3145728, "feed_flits": 640, "dm_read_bytes": 20480,
             "dm_write_bytes": 4096, "trf_load_bytes": 4096, "mac_ops": 131072, "dm_peak_bytes": 8192,
             "trf_peak_bytes": 4096}


@pytest.fixture(scope="module")
def gemm_i8():
    return lower_kernel(example("gemm_i8", "gemm_i8_kernel"))


def _spec_offset() -> int:
    """Our examples/gemm_i8.py has a module docstring before examples/gemm_i8.py's first line."""
    lines = (EXAMPLES / "gemm_i8.py").read_text().splitlines()
    return lines.index("from npu_opt import *")


def test_body_is_artifacts_1_6(gemm_i8):
    assert gemm_i8.body_text().splitlines() == [line for line, _ in SPEC_BODY]


def test_signature_facts(gemm_i8):
    assert gemm_i8.name == "gemm_i8_kernel" and gemm_i8.chip == 1
    assert gemm_i8.axes == (("M", 512), ("N", 512), ("K", 128))
    assert [p.text() for p in gemm_i8.params] == ['param %0 "a" : hbm[i8, "1", "M, K"]',
                                                   'param %1 "w" : hbm[i8, "1", "N, K"]']
    assert [str(r) for r in gemm_i8.results] == ["%12"]


def base(k) -> LoweredKernel:
    """The lowered kernel as a plain LoweredKernel, to compare with a hand-built one."""
    return LoweredKernel(**{f.name: getattr(k, f.name) for f in attrs.fields(LoweredKernel)})


def test_equals_the_hand_built_ops(gemm_i8):
    assert base(gemm_i8) == gemm("i8")
    for got, want in zip(gemm_i8.ops(), gemm("i8").ops()):
        assert got == want


def test_cost_is_artifacts_1_6(gemm_i8):
    assert compute_cost(gemm_i8, rngd()) == SPEC_COST


def test_addresses_and_allocation(gemm_i8):
    dm = {a.tensor.id: (a.base, a.size, a.first_step, a.last_step) for a in gemm_i8.dm_allocations}
    assert dm == {2: (0, 4096, 0, 3), 3: (4096, 4096, 1, 2), 11: (4096, 4096, 3, 4)}
    (trf,) = gemm_i8.trf_allocations
    assert (trf.tensor.id, trf.lanes, trf.base_row, trf.rows, trf.first_step, trf.last_step) == (5, 8, 0, 16, 2, 3)
    feeds = [op for op in gemm_i8.ops() if op.MNEMONIC == "feed_buffer"]
    assert [f.source_base for f in feeds] == [4096, 0]


def test_every_record_keeps_the_users_location(gemm_i8):
    offset = _spec_offset()
    records = [op for op in gemm_i8.ops()]
    wants = [loc for _, loc in SPEC_BODY if loc is not None]
    assert len(records) == len(wants)
    for op, (line, col) in zip(records, wants):
        assert isinstance(op.loc, Location) and Path(op.loc.file).name == "gemm_i8.py"
        assert (op.loc.line, op.loc.col) == (line + offset, col), op.text()


def test_weight_feed_is_the_v03_regression(gemm_i8):
    """examples/gemm_i8.py: (RawInt8, Flit2, TRF_LOAD) lowers and verifies."""
    w_feed = gemm_i8.programs()[0].ops[0]
    assert (w_feed.element_type, w_feed.collect_flits, w_feed.dest.kind) == (
        FeedElementType.RawInt8, CollectFlits.Flit2, DestKind.TRF_LOAD)
    w_feed.verify(rngd(), gemm_i8.context())


def test_example_4b_table():
    k = lower_kernel(example("gemm_bf16", "gemm_bf16_kernel"))
    assert base(k) == gemm("bf16")
    (sub, main) = k.programs()
    w_feed, w_load = sub.ops
    assert sub.context is TuContext.SUB and main.context is TuContext.MAIN
    assert (w_feed.element_type, w_feed.conversions, [str(e) for e in w_feed.shapes[0].time],
            [str(e) for e in w_feed.shapes[0].packet], w_feed.flits_per_packet, w_feed.collect_flits,
            w_feed.beats, w_feed.dest.kind) == (FeedElementType.BF16, (), ["8:128", "4:1024"], ["128:1"], 8,
                                                CollectFlits.Flit2, 128, DestKind.TRF_LOAD)
    assert (w_load.element_type.name, w_load.cell_format.name, w_load.lanes, w_load.bytes_per_lane,
            w_load.collect_flits, w_load.region) == ("BF16", "BF16_16", 8, 1024, CollectFlits.Flit2, Region.FULL)
    feed, outer, pred, tred, fold, commit = main.ops
    assert (feed.element_type, feed.conversions, [str(e) for e in feed.shapes[0].time],
            [str(e) for e in feed.shapes[0].packet], feed.collect_flits, feed.beats, feed.dest.kind) == (
        FeedElementType.BF16, (), ["32:128", "4:0"], ["128:1"], CollectFlits.Flit2, 512, DestKind.CONTRACT_OUTER)
    assert (outer.stream_type, outer.weight_type, outer.mac_type, outer.pack_size, outer.lanes,
            outer.trf_read.read_elems, outer.trf_read.width, [str(e) for e in outer.trf_read.entries]) == (
        FeedElementType.BF16, FeedElementType.BF16, FeedElementType.F32, 2, 8, 32, Width.WIDE, ["32:0", "16:1"])
    assert (pred.in_elems, pred.depth, pred.out_cols) == (32, 5, 1)
    assert [(lp.size, lp.kind) for lp in tred.loops] == [(32, LoopKind.KEEP), (4, LoopKind.KEEP),
                                                          (4, LoopKind.REDUCE)]
    assert tred.slots == 1 and (fold.mode.name, fold.lanes, fold.cols) == ("INTERLEAVED", 8, 1)
    assert (commit.valid_bytes, commit.conversion.name, [str(e) for e in commit.write.time],
            [str(e) for e in commit.write.packet]) == (32, "NONE", ["128:8"], ["8:1"])
    assert len(k.dma_ops()) == 3
