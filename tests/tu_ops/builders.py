"""Hand-built lowered kernels: examples/gemm_i8.py (`gemm_i8_kernel`) and 4b (`gemm_bf16_kernel`).

The field values are the ones examples/gemm_i8.py/4b and visa/visa.lark pin; allocation facts
follow visa/visa.lark (lowest free 8-byte aligned address, program-order liveness).
"""

from __future__ import annotations

from ir.dtypes import DType
from ir.mapping.api import m
from ir.ops import LaneMode
from ir.types import MAIN, SUB, CStreamType, DmType, HbmType, StreamType, TrfType
from tu_ops import (
    Alloc, CastOp, CellFormat, CollectFlits, CommitConversion, CommitOp, ContractOuter, Conversion,
    ConversionKind, DestKind,
    DmAllocation, DmaCommand, DmaKind, DmaOp, FeedBuffer, FeedDest, FeedElementType, FeedSource,
    KernelParam, LaneFold, LoopKind, LoweredKernel, PacketReduce, ReadShape, Ref, Region, TimeReduce,
    TrfAllocation, TrfLoad, TrfRead, TuContext, TuProgram, Width, WritePlan,
)

AXES = {"M": 512, "N": 512, "K": 128}


def mp(text: str):
    return m(text, axes=AXES)


CHIP, CLUSTER, SLICE = mp("1"), mp("1 # 2"), mp("M / 32, N / 32")
SPACE = (CHIP, CLUSTER, SLICE)


def stream(d: DType, time: str, packet: str, ctx: str = MAIN) -> StreamType:
    return StreamType(d, *SPACE, mp(time), mp(packet), ctx)


def cstream(acc: DType, d: DType, lane: str, time: str, packet: str, pre: str | None = None) -> CStreamType:
    return CStreamType(acc, d, *SPACE, mp(lane), mp(time), mp(packet), None if pre is None else mp(pre))


def dm(d: DType, element: str) -> DmType:
    return DmType(d, *SPACE, mp(element))


def hbm(d: DType, element: str) -> HbmType:
    return HbmType(d, CHIP, mp(element))


def gemm(kind: str = "i8") -> LoweredKernel:
    """examples/gemm_i8.py (`kind="i8"`) or 4b (`kind="bf16"`), lowered as the spec pins it."""
    i8 = kind == "i8"
    d = DType.I8 if i8 else DType.BF16
    acc = DType.I32 if i8 else DType.F32
    et = FeedElementType.RawInt8 if i8 else FeedElementType.BF16
    mac = FeedElementType.I32 if i8 else FeedElementType.F32
    nbytes = d.bits // 8
    flit = 32 // nbytes                      # elements per flit: 32 (i8) or 16 (bf16)
    tile = 32 * 128 * nbytes                 # bytes of an "X % 32, K" DM tile
    a_hbm, w_hbm = hbm(d, "M, K"), hbm(d, "N, K")
    a_dm, w_dm = dm(d, "M % 32, K"), dm(d, "N % 32, K")
    c_dm, c_hbm = dm(acc, "M % 32, N % 32"), hbm(acc, "M, N")
    packet = min(tile, 4096)
    split = [(tile // packet, packet, packet)] if tile > packet else []
    a_dma = DmaOp(result=Ref(2), src=Ref(0), kind=DmaKind.HBM_TO_DM, element_type=d, input_type=a_hbm,
                  output_type=a_dm, src_alloc=Alloc(0, 512 * 128 * nbytes), dst_alloc=Alloc(0, tile),
                  commands=[DmaCommand(part=(0, 0, 0), src_base=0, dst_base=0, packet_bytes=packet,
                                       entries=[(16, tile, 8388608), (16, 0, 524288), *split, (packet, 1, 1)])])
    w_dma = DmaOp(result=Ref(3), src=Ref(1), kind=DmaKind.HBM_TO_DM, element_type=d, input_type=w_hbm,
                  output_type=w_dm, src_alloc=Alloc(0, 512 * 128 * nbytes), dst_alloc=Alloc(tile, tile),
                  commands=[DmaCommand(part=(0, 0, 0), src_base=0, dst_base=tile, packet_bytes=packet,
                                       entries=[(16, 0, 8388608), (16, tile, 524288), *split, (packet, 1, 1)])])
    # program 0 (SUB): the weight load, the reference's v0.3 failure.
    w_time2 = f"N % 8, N / 8 % 4, K / {flit}"
    w_feed = FeedBuffer(
        result=Ref(4), context=TuContext.SUB, source=FeedSource(Ref(3), 0, d, mp("N % 32, K")),
        conversions=(), element_type=et,
        shapes=[ReadShape(time=[(8, 128), (4, 1024)], packet=[(128, 1)], packet_elems=128, read_elems=8 // nbytes)],
        flits_per_packet=128 // flit, collect_flits=CollectFlits.Flit2, beats=8 * 4 * (128 // flit) // 2,
        dest=FeedDest(DestKind.TRF_LOAD, Ref(5)),
        input_type=stream(d, "N % 8, N / 8 % 4", "K", SUB), output_type=stream(d, w_time2, f"K % {flit}", SUB),
        source_base=tile)
    w_load = TrfLoad(
        result=Ref(5), input=Ref(4), element_type=et, cell_format=CellFormat.INT9 if i8 else CellFormat.BF16_16,
        lanes=8, bytes_per_lane=4 * 128 * nbytes, region=Region.FULL, base_row=0,
        collect_flits=CollectFlits.Flit2, input_type=w_feed.output_type,
        output_type=TrfType(d, *SPACE, mp("N % 8"), mp("N / 8 % 4, K")), live_rows=())
    # program 1 (MAIN): the contraction.
    a_time2 = f"M % 32, N / 8 % 4, K / {flit}"
    r = 64 if i8 else 32                     # R: 64 bytes, a WIDE read
    out_time = f"M % 32, N / 8 % 4, K / {r}"
    a_feed = FeedBuffer(
        result=Ref(6), context=TuContext.MAIN, source=FeedSource(Ref(2), 0, d, mp("M % 32, K")),
        conversions=(), element_type=et,
        shapes=[ReadShape(time=[(32, 128), (4, 0)], packet=[(128, 1)], packet_elems=128, read_elems=32 // nbytes)],
        flits_per_packet=128 // flit, collect_flits=CollectFlits.Flit2, beats=32 * 4 * (128 // flit) // 2,
        dest=FeedDest(DestKind.CONTRACT_OUTER, Ref(7)),
        input_type=stream(d, "M % 32, N / 8 % 4", "K"), output_type=stream(d, a_time2, f"K % {flit}"),
        source_base=0)
    outer = ContractOuter(
        result=Ref(7), stream=Ref(6), weights=Ref(5), stream_type=et, weight_type=et, mac_type=mac,
        pack_size=2, lanes=8, time_broadcast=(),
        trf_read=TrfRead(read_elems=r, width=Width.WIDE, entries=[(32, 0), (128 // r * 4, 1)], packet_broadcast=1),
        input_type=a_feed.output_type, output_type=cstream(acc, d, "N % 8", out_time, f"K % {r}"))
    reduce_p = PacketReduce(result=Ref(8), input=Ref(7), in_elems=r, depth=r.bit_length() - 1, out_cols=1,
                            input_type=outer.output_type, output_type=cstream(acc, d, "N % 8", out_time, "1"))
    reduce_t = TimeReduce(result=Ref(9), input=Ref(8), loops=[(32, LoopKind.KEEP), (4, LoopKind.KEEP),
                                                               (128 // r, LoopKind.REDUCE)],
                          slots=1, mode=LaneMode.INTERLEAVED, input_type=reduce_p.output_type,
                          output_type=cstream(acc, d, "N % 8", "M % 32, N / 8 % 4", "1", pre=out_time))
    fold = LaneFold(result=Ref(10), input=Ref(9), mode=LaneMode.INTERLEAVED, lanes=8, cols=1, cycles=128,
                    input_type=reduce_t.output_type, output_type=stream(acc, "M % 32, N / 8 % 4", "N % 8"))
    commit = CommitOp(result=Ref(11), input=Ref(10), valid_bytes=32, conversion=CommitConversion.NONE,
                      write=WritePlan(time=[(128, 8)], packet=[(8, 1)]), write_bytes=32, dest=tile,
                      input_type=fold.output_type, output_type=c_dm)
    out_dma = DmaOp(result=Ref(12), src=Ref(11), kind=DmaKind.DM_TO_HBM, element_type=acc, input_type=c_dm,
                    output_type=c_hbm, src_alloc=Alloc(tile, 4096), dst_alloc=Alloc(0, 512 * 512 * 4),
                    commands=[DmaCommand(part=(0, 0, 0), src_base=tile, dst_base=0, packet_bytes=128,
                                         entries=[(16, 8388608, 65536), (16, 524288, 128), (32, 128, 2048),
                                                  (128, 1, 1)])])
    return LoweredKernel(
        name=f"gemm_{kind}_kernel", axes=tuple(AXES.items()),
        params=[KernelParam(Ref(0), "a", a_hbm), KernelParam(Ref(1), "w", w_hbm)],
        steps=[a_dma, w_dma,
               TuProgram(index=0, context=TuContext.SUB, space=SPACE, ops=[w_feed, w_load]),
               TuProgram(index=1, context=TuContext.MAIN, space=SPACE,
                         ops=[a_feed, outer, reduce_p, reduce_t, fold, commit]),
               out_dma],
        results=[Ref(12)],
        dm_allocations=[DmAllocation(tensor=Ref(2), base=0, size=tile, first_step=0, last_step=3),
                        DmAllocation(tensor=Ref(3), base=tile, size=tile, first_step=1, last_step=2),
                        DmAllocation(tensor=Ref(11), base=tile, size=4096, first_step=3, last_step=4)],
        trf_allocations=[TrfAllocation(tensor=Ref(5), lanes=8, base_row=0, rows=4 * 128 * nbytes // 32,
                                       first_step=2, last_step=3)],
    )


def cast_program() -> TuProgram:
    """A small valid MAIN chain exercising CastOp: f32 feed -> cast to bf16 -> commit (design)."""
    axes = {"I": 64, "J": 8}
    q = lambda t: m(t, axes=axes)  # noqa: E731
    space = (q("1"), q("1 # 2"), q("I"))
    f32, bf16 = DType.F32, DType.BF16
    st = lambda d, t, p: StreamType(d, *space, q(t), q(p), MAIN)  # noqa: E731
    feed = FeedBuffer(
        result=Ref(21), context=TuContext.MAIN, source=FeedSource(Ref(20), 0, f32, q("J")), conversions=(),
        element_type=FeedElementType.F32,
        shapes=[ReadShape(time=[], packet=[(8, 1)], packet_elems=8, read_elems=8)],
        flits_per_packet=1, collect_flits=CollectFlits.Flit1, beats=1,
        dest=FeedDest(DestKind.CAST, Ref(22)), input_type=st(f32, "1", "J"), output_type=st(f32, "1", "J"),
        source_base=0)
    cast = CastOp(result=Ref(22), input=Ref(21), in_type=FeedElementType.F32, out_type=FeedElementType.BF16,
                  valid_elems=8, input_type=feed.output_type, output_type=st(bf16, "1", "J # 16"))
    commit = CommitOp(result=Ref(23), input=Ref(22), valid_bytes=16, write=WritePlan(time=[], packet=[(8, 1)]),
                      write_bytes=16, dest=64, input_type=st(bf16, "1", "J # 16"),
                      output_type=DmType(bf16, *space, q("J")))
    return TuProgram(index=0, context=TuContext.MAIN, space=space, ops=[feed, cast, commit])


def widen_program() -> TuProgram:
    """examples/widening_copy.py (`fetch_commit_simple`): an i8 feed widened to I32 and committed (Flit1, COMMIT)."""
    axes = {"A": 4096, "B": 8}
    q = lambda t: m(t, axes=axes)  # noqa: E731
    space = (q("1"), q("1 # 2"), q("A / 16"))
    i8, i32 = DType.I8, DType.I32
    st = lambda d, t, p: StreamType(d, *space, q(t), q(p), MAIN)  # noqa: E731
    element = q("A / 8 % 2, A % 8, B")
    feed = FeedBuffer(
        result=Ref(31), context=TuContext.MAIN, source=FeedSource(Ref(30), 0, i8, element),
        conversions=[Conversion(ConversionKind.I8_TO_I32)], element_type=FeedElementType.I32,
        shapes=[ReadShape(time=[(2, 64)], packet=[(64, 1)], packet_elems=64, read_elems=8)],
        flits_per_packet=8, collect_flits=CollectFlits.Flit1, beats=16,
        dest=FeedDest(DestKind.COMMIT, Ref(32)), input_type=st(i8, "A / 8 % 2", "A % 8, B"),
        output_type=st(i32, "A / 8 % 2, A % 8", "B"), source_base=0)
    commit = CommitOp(result=Ref(32), input=Ref(31), valid_bytes=32, write=WritePlan(time=[(16, 8)], packet=[(8, 1)]),
                      write_bytes=32, dest=128, input_type=feed.output_type, output_type=DmType(i32, *space, element))
    return TuProgram(index=0, context=TuContext.MAIN, space=space, ops=[feed, commit])


def big_trf_load() -> TrfLoad:
    """A 64 KiB TRF load: 8 lanes x 8 KiB of i8 (fits rngd's TRF exactly)."""
    axes = {"L": 8, "X": 8192}
    q = lambda t: m(t, axes=axes)  # noqa: E731
    space = (q("1"), q("1 # 2"), q("1 # 64"))
    return TrfLoad(result=Ref(41), input=Ref(40), element_type=FeedElementType.RawInt8, cell_format=CellFormat.INT9,
                   lanes=8, bytes_per_lane=8192, collect_flits=CollectFlits.Flit2,
                   input_type=StreamType(DType.I8, *space, q("L, X / 32"), q("X % 32"), SUB),
                   output_type=TrfType(DType.I8, *space, q("L"), q("X")))
