"""Op verifiers of docs/reference/diagnostics.md: every rule ID refuses a hand-built bad op, and the ops of
examples/gemm_i8.py / 4b (and small cast / widening programs) verify cleanly."""

from __future__ import annotations

from typing import Callable

import attrs

from tests.vector.bad_ops import BAD_VECTOR
from tests.vector_pair.bad_ops import BAD_BRANCH, BAD_PAIR
from tests.vrf.bad_ops import BAD_VRF
from tests.valid_count.bad_ops import BAD_PACK
from tests.fetch_lift.bad_ops import BAD_LIFT
import pytest

from ir.dtypes import DType
from ir.errors import VerifyError
from ir.location import Location
from tu_ops import (
    OP_CLASSES, Alloc, CellFormat, CollectFlits, CommitConversion, Conversion,
    ConversionKind, DestKind, FeedDest, FeedElementType, FeedSource, LoopKind, OpVerifyError, Ref, Region, TuContext,
    TuOp, VerifyContext, Width, rngd,
)
from tests.tu_ops.builders import big_trf_load, cast_program, cstream, gemm, mp, stream, widen_program
from tests.tu_ops.transpose_cases import GOOD as GOOD_TRANSPOSE, GOOD_DOUBLED as GOOD_DOUBLED_TRANSPOSE, TRANSPOSE_BAD
from tests.tu_ops.switch_cases import SWITCH_BAD

TARGET = rngd()


def k4():
    return gemm("i8")


def op_of(kernel, n: int) -> TuOp:
    return kernel.context().ops[n]


def swap(kernel, n: int, **changes):
    """(the evolved op %n, a verify context of the kernel with it swapped in)."""
    ctx = kernel.context()
    new = attrs.evolve(ctx.ops[n], **changes)
    ops = dict(ctx.ops)
    ops[n] = new
    return new, VerifyContext(ops=ops, programs=dict(ctx.programs))


def bad(n: int, with_ctx: bool = False, kernel: Callable = k4, **changes):
    """A case: op %n of the kernel with `changes`, verified with or without the kernel context."""
    def build():
        op, ctx = swap(kernel(), n, **changes)
        return op, (ctx if with_ctx else None)
    return build


def prog_op(program: Callable, n: int, **changes):
    def build():
        ops = {op.result.id: op for op in program().ops}
        return attrs.evolve(ops[n], **changes), None
    return build


def widen_time_reduce():
    """TRED-3: IT = 128 slots of 2 interleaved columns need 2048 accumulator cells."""
    base = op_of(k4(), 9)
    pre = "K / 64, M % 32, N / 8 % 4"
    return attrs.evolve(base, loops=[(2, LoopKind.REDUCE), (32, LoopKind.KEEP), (4, LoopKind.KEEP)], slots=128,
                        input_type=cstream(DType.I32, DType.I8, "N % 8", pre, "K % 2"),
                        output_type=cstream(DType.I32, DType.I8, "N % 8", "M % 32, N / 8 % 4", "K % 2", pre=pre)), None


def lut_in_sub():
    """FEED-10: an f8e4m3 weight decoded to bf16 by a table lookup in the SUB context."""
    base = op_of(k4(), 4)
    f8 = DType.F8E4M3
    return attrs.evolve(
        base, source=attrs.evolve(base.source, dtype=f8), conversions=[Conversion(ConversionKind.LUT_F8E4M3_BF16)],
        element_type=FeedElementType.BF16, flits_per_packet=8, beats=128,
        input_type=stream(f8, "N % 8, N / 8 % 4", "K", "sub"),
        output_type=stream(DType.BF16, "N % 8, N / 8 % 4, K / 16", "K % 16", "sub")), None


def shape(feed, **changes):
    return [attrs.evolve(feed.shapes[0], **changes)]


A_FEED = op_of(k4(), 6)
W_FEED = op_of(k4(), 4)
OUTER = op_of(k4(), 7)
COMMIT = op_of(k4(), 11)
A_DMA = op_of(k4(), 2)
CMD = A_DMA.commands[0]

def window_past_its_tensor():
    """DMAOP-6: a dma_window whose source offset lies past the whole HBM source."""
    from tu_ops.dma_view import DmaWindowOp

    fields = {f.name: getattr(A_DMA, f.name) for f in attrs.fields(type(A_DMA)) if f.init}
    return DmaWindowOp(**fields, src_view=A_DMA.input_type.levels(), src_offset=1 << 30)


# rule id (":variant" optional) -> builder of (bad op, context or None)
from tests.topology.gather_cases import GATHER_BAD  # noqa: E402 - the gather records
from tests.spm.bad_ops import SPM_BAD  # noqa: E402 - the scratchpad records
from tests.topology.redistribute_bad_ops import REDIST_BAD  # noqa: E402 - the redistribution records
from tests.runtime.runtime_cases import RUNTIME_BAD  # noqa: E402 - the runtime scalar and guard records
from tests.inter.bad_ops import BAD_INTER  # noqa: E402 - the inter-slice reduce records

BAD: dict[str, Callable] = {
    "FEED-1": bad(6, conversions=[Conversion(ConversionKind.I8_TO_I32)]),
    "FEED-1:zero-point": bad(6, conversions=[Conversion(ConversionKind.ZP_SUB, 200)]),
    "FEED-2": bad(4, dest=FeedDest(DestKind.CAST, Ref(5))),
    "FEED-3": bad(6, collect_flits=CollectFlits.Flit1),
    "FEED-3:pack-size": bad(6, True, kernel=lambda: _with(k4(), 7, pack_size=1)),
    "FEED-3:trf-rows": bad(4, True, kernel=lambda: _with(k4(), 5, bytes_per_lane=544)),
    "FEED-4": bad(6, shapes=[A_FEED.shapes[0], attrs.evolve(A_FEED.shapes[0], packet_elems=64)]),
    "FEED-5": bad(6, shapes=shape(A_FEED, time=[(32, 128), (4, 0)] + [(1, 0)] * 7)),
    "FEED-6": bad(6, shapes=shape(A_FEED, read_elems=64)),
    "FEED-6:sub": bad(4, shapes=shape(W_FEED, read_elems=16)),
    "FEED-7": bad(6, shapes=shape(A_FEED, packet=[(128, 2)])),
    "FEED-8": prog_op(widen_program, 31, shapes=[attrs.evolve(widen_program().ops[0].shapes[0], read_elems=16)]),
    "FEED-9": bad(6, shapes=shape(A_FEED, packet_elems=64)),
    "FEED-10": lut_in_sub,
    "FEED-11": bad(4, source_base=524_288 - 100),
    "FEED-12": bad(6, True, dest=FeedDest(DestKind.CONTRACT_OUTER, Ref(5))),
    "FEED-12:missing": bad(6, True, dest=FeedDest(DestKind.CONTRACT_OUTER, Ref(99))),
    # FEED-15: a same-size relabel of the tensor's levels without reshape=, or not the reshape's
    "FEED-15": bad(6, True, source=FeedSource(Ref(2), 0, DType.I8, mp("K, M % 32"))),
    "FEED-15:space": bad(6, True, input_type=attrs.evolve(A_FEED.input_type, slice=mp("N / 32, M / 32"))),
    "FEED-15:size": bad(6, True, reshape=[*A_FEED.input_type.spatial(), mp("K")]),
    "FEED-15:marked": bad(6, True, reshape=[*A_FEED.input_type.spatial(), mp("K, M % 32")]),
    "TRFLD-1": bad(5, lanes=3),
    "TRFLD-2": bad(5, cell_format=CellFormat.BF16_16),
    "TRFLD-3": bad(5, base_row=250),
    "TRFLD-4": bad(5, collect_flits=CollectFlits.Flit1),
    "TRFLD-4:odd-row": bad(5, base_row=1),
    "TRFLD-5": bad(5, input_type=stream(DType.I8, "N % 8, N / 8 % 4", "K % 32", "sub")),
    "TRFLD-6": bad(5, live_rows=[(0, 4)]),
    "COP-1": bad(7, weight_type=FeedElementType.BF16),
    "COP-2": bad(7, input_type=stream(DType.I8, "M % 32, N / 8 % 4, K / 32", "K % 32", "sub")),
    "COP-3": bad(7, pack_size=3),
    "COP-3:feed": bad(7, True, pack_size=1),
    "COP-4": bad(7, lanes=4),
    "COP-5": bad(7, trf_read=attrs.evolve(OUTER.trf_read, width=Width.NARROW)),
    "COP-6": bad(7, trf_read=attrs.evolve(OUTER.trf_read, entries=[(32, 0), (8, 1)] + [(1, 0)] * 7)),
    "COP-7": bad(7, time_broadcast=(2,)),
    "PRED-1": bad(8, in_elems=32),
    "PRED-2": bad(8, depth=7),
    "PRED-3": bad(8, out_cols=3),
    "TRED-1": bad(9, loops=[(32, LoopKind.KEEP), (4, LoopKind.KEEP), (4, LoopKind.REDUCE)]),
    "TRED-2": bad(9, slots=2),
    "TRED-3": widen_time_reduce,
    "LFOLD-1": bad(10, cols=2),
    "LFOLD-2": bad(10, output_type=stream(DType.I32, "M % 32, N / 8 % 4", "N % 4")),
    "LFOLD-3": bad(10, cycles=64),
    "CASTOP-1": prog_op(cast_program, 22, in_type=FeedElementType.I32),
    "CASTOP-2": prog_op(cast_program, 22, valid_elems=4),
    "CMT-1": bad(11, valid_bytes=12),
    "CMT-2": bad(11, conversion=CommitConversion.F32_TO_BF16),
    "CMT-3": bad(11, write=attrs.evolve(COMMIT.write, time=[(128, 8)] + [(1, 0)] * 7)),
    "CMT-4": bad(11, write=attrs.evolve(COMMIT.write, time=[(128, 1)])),
    "CMT-5": bad(11, write=attrs.evolve(COMMIT.write, time=[(129, 8)])),
    "CMT-5:dest": bad(11, dest=524_288 - 2048),
    "DMAOP-1": bad(2, element_type=DType.I32),
    "DMAOP-2": bad(2, commands=[attrs.evolve(CMD, entries=[*CMD.entries[:2], *[(1, 0, 0)] * 6, CMD.entries[-1]])]),
    "DMAOP-3": bad(2, commands=[attrs.evolve(CMD, packet_bytes=8192, entries=[*CMD.entries[:2], (8192, 1, 1)])]),
    "DMAOP-4": bad(2, commands=[attrs.evolve(CMD, packet_bytes=4, entries=[*CMD.entries[:2], (1024, 4, 4), (4, 1, 1)])]),
    "DMAOP-5": bad(2, dst_alloc=Alloc(0, 2048)),
    "DMAOP-5:hbm": bad(2, src_alloc=Alloc(0, 4096)),
    "DMAOP-6": lambda: (window_past_its_tensor(), None),
    **TRANSPOSE_BAD,
    **BAD_VECTOR,
    **SWITCH_BAD,
    **BAD_PAIR,
    **GATHER_BAD,
    **SPM_BAD,
    **REDIST_BAD,
    **RUNTIME_BAD,
    **BAD_BRANCH,
    **BAD_VRF,
    **BAD_INTER,
    **BAD_PACK,
    **BAD_LIFT,
}


def _with(kernel, n: int, **changes):
    """The kernel with op %n evolved (for cases that need a changed neighbour)."""
    steps = []
    for step in kernel.steps:
        if hasattr(step, "ops"):
            step = attrs.evolve(step, ops=[attrs.evolve(o, **changes) if o.result.id == n else o for o in step.ops])
        elif step.result.id == n:
            step = attrs.evolve(step, **changes)
        steps.append(step)
    return attrs.evolve(kernel, steps=steps)


ALL_RULES = sorted({fn.rule_code for cls in OP_CLASSES for fn in cls.RULES})


def test_every_rule_has_a_bad_op():
    assert sorted({case.split(":")[0] for case in BAD}) == ALL_RULES


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_op_refused_by_exactly_its_rule(case):
    op, ctx = BAD[case]()
    error = op.first_failure(TARGET, ctx)
    assert error is not None, f"{case}: op verified"
    assert error.code == case.split(":")[0], f"{case}: refused by {error.code}: {error.message}"
    with pytest.raises(VerifyError) as info:
        op.verify(TARGET, ctx)
    assert info.value.code == error.code


@pytest.mark.parametrize("kind", ["i8", "bf16"])
def test_examples_4_and_4b_verify(kind):
    kernel = gemm(kind)
    kernel.verify(TARGET)
    for op in kernel.ops():
        assert op.first_failure(TARGET) is None, op.text()


def test_small_programs_verify():
    for program in (cast_program(), widen_program()):
        for op in program.ops:
            op.verify(TARGET)
    big_trf_load().verify(TARGET)
    GOOD_TRANSPOSE.verify(TARGET)
    GOOD_DOUBLED_TRANSPOSE.verify(TARGET)


def test_example_4_pinned_fields():
    ops = gemm("i8").context().ops
    w_feed, w_load, a_feed, outer = ops[4], ops[5], ops[6], ops[7]
    assert (w_feed.element_type, w_feed.conversions, w_feed.collect_flits, w_feed.beats, w_feed.dest.kind) == (
        FeedElementType.RawInt8, (), CollectFlits.Flit2, 64, DestKind.TRF_LOAD)
    assert [str(e) for e in w_feed.shapes[0].time] == ["8:128", "4:1024"]
    assert (w_load.cell_format, w_load.lanes, w_load.bytes_per_lane, w_load.region) == (
        CellFormat.INT9, 8, 512, Region.FULL)
    assert (a_feed.beats, a_feed.dest.kind, outer.trf_read.width, outer.trf_read.read_elems) == (
        256, DestKind.CONTRACT_OUTER, Width.WIDE, 64)


# --- FEED-2 as data ------------------------------------------------------------------------

E = FeedElementType
SPEC_FEED_2 = {
    DestKind.TRF_LOAD: {E.BF16, E.RawInt8, E.RawInt4, E.F8E4M3, E.F8E5M2},
    DestKind.CONTRACT_OUTER: {E.BF16, E.RawInt8, E.RawInt4, E.Int9, E.Int5, E.F8E4M3, E.F8E5M2},
    DestKind.CAST: {E.I32, E.F32},
    DestKind.VECTOR: {E.I32, E.F32},  # the Vector Engine holds i32 and f32
    DestKind.VECTOR_PAIR: {E.I32, E.F32},  # and so does its pair mode
    DestKind.VECTOR_BRANCH: {E.I32, E.F32},  # and a tagged pass
    DestKind.COMMIT: {E.BF16, E.F32, E.I32, E.I16, E.U8, E.RawInt8, E.RawInt4, E.F8E4M3, E.F8E5M2, E.F4E2M1},
    DestKind.TRANSPOSE: {E.BF16, E.F32, E.I32, E.I16, E.U8, E.RawInt8, E.RawInt4, E.F8E4M3, E.F8E5M2, E.F4E2M1},
    DestKind.VRF_LOAD: {E.I32, E.F32},  # the VRF holds the Vector Engine's scalars
    DestKind.INTER_SLICE_REDUCE: {E.I32, E.F32},  # the inter-slice reducer, first in its pass
}


def test_feed_2_table_is_the_spec():
    assert {k: set(k.op_class.FEED_ELEMENTS) for k in DestKind} == SPEC_FEED_2


@pytest.mark.parametrize("kind", sorted(SPEC_FEED_2, key=lambda k: k.name))
@pytest.mark.parametrize("flits", list(CollectFlits))
@pytest.mark.parametrize("et", list(FeedElementType))
def test_feed_2_and_flit_matrix(et, flits, kind):
    """FEED-2 and FEED-3's Flit2 rule over every (element_type, collect_flits, dest kind)."""
    op = attrs.evolve(W_FEED, element_type=et, collect_flits=flits, dest=FeedDest(kind, Ref(5)))
    accepted = op._feed_2(TARGET, None) is None
    assert accepted == (et in SPEC_FEED_2[kind])
    flit_ok = flits is CollectFlits.Flit1 or kind in (DestKind.TRF_LOAD, DestKind.CONTRACT_OUTER)
    problem = op._feed_3(TARGET, None)
    assert (problem is None or "Flit2 delivery" not in problem) == flit_ok


@pytest.mark.parametrize("kind", [DestKind.TRF_LOAD, DestKind.CONTRACT_OUTER])
def test_reference_v0_3_failure_is_legal(kind):
    """The reference refused (RawInt8, Flit2, TRF_LOAD); npu-opt accepts it and its twin."""
    feed = W_FEED if kind is DestKind.TRF_LOAD else A_FEED
    assert (feed.element_type, feed.collect_flits, feed.dest.kind) == (E.RawInt8, CollectFlits.Flit2, kind)
    assert feed.first_failure(TARGET, k4().context()) is None


# --- errors and contexts ---------------------------------------------------------------------


def test_error_carries_code_loc_and_op():
    loc = Location("kernels/gemm.py", 19, 15)
    op = attrs.evolve(op_of(k4(), 5), lanes=3, loc=loc)
    with pytest.raises(OpVerifyError) as info:
        op.verify(TARGET)
    e = info.value
    assert (e.code, e.loc, e.op) == ("TRFLD-1", loc, op)
    assert "trf_load" in e.message and e.notes and e.notes[0].startswith("in op `%5 = trf_load")


def test_feed_12_refuses_a_second_feed_into_one_op():
    kernel = k4()
    program = kernel.programs()[1]
    twin = attrs.evolve(program.ops[0], result=Ref(50))
    ctx = kernel.context()
    ctx.ops[50] = twin
    ctx.programs[50] = program
    crowded = attrs.evolve(program, ops=[program.ops[0], twin, *program.ops[1:]])
    for op in crowded.ops:
        ctx.programs[op.result.id] = crowded
    error = twin.first_failure(TARGET, ctx)
    assert error is not None and error.code == "FEED-12"


def test_contextless_rules_skip_neighbours():
    op = attrs.evolve(OUTER, pack_size=1)
    problem = op._cop_3(TARGET, None)
    assert problem is None
    assert op._cop_3(TARGET, k4().context()) is not None


def test_sub_feed_context_from_program():
    w_feed = op_of(k4(), 4)
    assert w_feed.context is TuContext.SUB and w_feed.first_failure(TARGET, k4().context()) is None
