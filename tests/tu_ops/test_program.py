"""Programs, the LoweredKernel container, generic text, MEM-3/MEM-4 and the package surface."""

from __future__ import annotations

import attrs
import pytest

import tu_ops
from ir.dtypes import ALL_DTYPES
from ir.location import Location
from tu_ops import OP_CLASSES, DmAllocation, OpVerifyError, Ref, TrfAllocation, rngd
from tests.tu_ops.builders import gemm

# visa/visa.lark, body of gemm_i8_kernel.visa without the location comments.
EXAMPLE_4_BODY = """\
%2 = dma src=%0 kind=HBM_TO_DM element_type=i8 aggregate=HOMOGENEOUS commands=[{part=(0, 0, 0), src_base=0, dst_base=0, packet_bytes=4096, entries=[16:4096:8388608, 16:0:524288, 4096:1:1]}] : hbm[i8, "1", "M, K"] -> dm[i8, "1", "1 # 2", "M / 32, N / 32", "M % 32, K"]
%3 = dma src=%1 kind=HBM_TO_DM element_type=i8 aggregate=HOMOGENEOUS commands=[{part=(0, 0, 0), src_base=0, dst_base=4096, packet_bytes=4096, entries=[16:0:8388608, 16:4096:524288, 4096:1:1]}] : hbm[i8, "1", "N, K"] -> dm[i8, "1", "1 # 2", "M / 32, N / 32", "N % 32, K"]
program 0 SUB space "1", "1 # 2", "M / 32, N / 32" {
  %4 = feed_buffer context=SUB source=(%3, 0, i8, "N % 32, K") conversions=[] element_type=RawInt8 shapes=[{time=[8:128, 4:1024], packet=[128:1], packet_elems=128, read_elems=8}] flits_per_packet=4 collect_flits=Flit2 beats=64 dest=(TRF_LOAD, %5) : stream[i8, "N % 8, N / 8 % 4", "K"] -> stream[i8, "N % 8, N / 8 % 4, K / 32", "K % 32"]
  %5 = trf_load in=%4 element_type=RawInt8 cell_format=INT9 lanes=8 bytes_per_lane=512 region=FULL base_row=0 collect_flits=Flit2 : stream[i8, "N % 8, N / 8 % 4, K / 32", "K % 32"] -> trf[i8, "N % 8", "N / 8 % 4, K"]
}
program 1 MAIN space "1", "1 # 2", "M / 32, N / 32" {
  %6 = feed_buffer context=MAIN source=(%2, 0, i8, "M % 32, K") conversions=[] element_type=RawInt8 shapes=[{time=[32:128, 4:0], packet=[128:1], packet_elems=128, read_elems=32}] flits_per_packet=4 collect_flits=Flit2 beats=256 dest=(CONTRACT_OUTER, %7) : stream[i8, "M % 32, N / 8 % 4", "K"] -> stream[i8, "M % 32, N / 8 % 4, K / 32", "K % 32"]
  %7 = contract_outer stream=%6 weights=%5 stream_type=RawInt8 weight_type=RawInt8 mac_type=I32 pack_size=2 lanes=8 time_broadcast=[] trf_read={read_elems=64, width=WIDE, entries=[32:0, 8:1], packet_broadcast=1} : stream[i8, "M % 32, N / 8 % 4, K / 32", "K % 32"] -> cstream[i32, i8, "N % 8", "M % 32, N / 8 % 4, K / 64", "K % 64"]
  %8 = packet_reduce in=%7 in_elems=64 depth=6 out_cols=1 : cstream[i32, i8, "N % 8", "M % 32, N / 8 % 4, K / 64", "K % 64"] -> cstream[i32, i8, "N % 8", "M % 32, N / 8 % 4, K / 64", "1"]
  %9 = time_reduce in=%8 loops=[32:KEEP, 4:KEEP, 2:REDUCE] slots=1 mode=INTERLEAVED : cstream[i32, i8, "N % 8", "M % 32, N / 8 % 4, K / 64", "1"] -> cstream[i32, i8, "N % 8", "M % 32, N / 8 % 4", "1"]
  %10 = lane_fold in=%9 mode=INTERLEAVED lanes=8 cols=1 cycles=128 : cstream[i32, i8, "N % 8", "M % 32, N / 8 % 4", "1"] -> stream[i32, "M % 32, N / 8 % 4", "N % 8"]
  %11 = commit in=%10 valid_bytes=32 conversion=NONE write={time=[128:8], packet=[8:1]} write_bytes=32 dest=4096 : stream[i32, "M % 32, N / 8 % 4", "N % 8"] -> dm[i32, "1", "1 # 2", "M / 32, N / 32", "M % 32, N % 32"]
}
%12 = dma src=%11 kind=DM_TO_HBM element_type=i32 aggregate=HOMOGENEOUS commands=[{part=(0, 0, 0), src_base=4096, dst_base=0, packet_bytes=128, entries=[16:8388608:65536, 16:524288:128, 32:128:2048, 128:1:1]}] : dm[i32, "1", "1 # 2", "M / 32, N / 32", "M % 32, N % 32"] -> hbm[i32, "1", "M, N"]
return %12"""


def test_example_4_text_matches_the_artifact():
    assert gemm("i8").body_text() == EXAMPLE_4_BODY


def test_text_is_deterministic_and_ignores_loc():
    kernel = gemm("bf16")
    op = kernel.context().ops[7]
    located = attrs.evolve(op, loc=Location("examples/gemm_bf16.py", 24, 13))
    assert located == op and located.text() == op.text()
    assert located.text(locs=True) == op.text() + " ; loc examples/gemm_bf16.py:24:13"
    assert gemm("bf16").body_text() == kernel.body_text()


def test_op_classes_declare_name_mnemonic_and_rules():
    names = [cls.NAME for cls in OP_CLASSES]
    assert names == ["tu.feed_buffer", "tu.trf_load", "tu.vrf_load", "tu.contract_outer", "tu.packet_reduce",
                     "tu.time_reduce", "tu.lane_fold", "tu.vector", "tu.vector_rf", "tu.inter_slice_reduce", "tu.vector_pair",
                     "tu.vector_branch", "tu.vector_branch_rf",  # a tagged pass reading the VRF
                     "tu.vector_pair_rf",  # a pair-mode pass reading the VRF
                     "tu.cast_op", "tu.transpose", "tu.commit", "tu.dma", "tu.dma_window", "tu.dma_into", "tu.tensor_new",
                     "tu.memset", "tu.dma_gather", "tu.dma_scatter", "tu.dma_shuffle", "tu.dma_redistribute",
                     "tu.dma_relayout", "tu.dma_spm", "tu.rf_reshape",  # a VRF or TRF relabel
                     "tu.scalar_load", "tu.scalar", "tu.guard_begin", "tu.guard_end",  # docs/runtime.md
                     "tu.loop_begin", "tu.loop_end"]  # docs/loops.md
    for cls in OP_CLASSES:
        assert cls.__doc__ and cls.RULES and attrs.has(cls)
        assert all(callable(check) and check.rule_code for check in cls.RULES)


def test_ops_are_frozen():
    op = gemm("i8").context().ops[5]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        op.lanes = 4  # type: ignore[misc]


def test_operands_and_walk():
    kernel = gemm("i8")
    ctx = kernel.context()
    assert ctx.ops[4].operands() == [Ref(3)]          # a feed reads its source tensor
    assert ctx.ops[7].operands() == [Ref(6), Ref(5)]  # stream, weights
    assert [op.result.id for op in kernel.ops()] == list(range(2, 13))
    assert [p.sink.result.id for p in kernel.programs()] == [5, 11]
    assert ctx.program_of(Ref(2)) is None and ctx.program_of(Ref(7)).index == 1


def test_mem_3_refuses_over_subscribed_dm():
    kernel = gemm("i8")
    huge = DmAllocation(tensor=Ref(99), base=8192, size=524_288 - 4096, first_step=3, last_step=3)
    with pytest.raises(OpVerifyError) as info:
        attrs.evolve(kernel, dm_allocations=[*kernel.dm_allocations, huge]).verify(rngd())
    assert info.value.code == "MEM-3"


def test_mem_3_refuses_overlapping_live_tensors():
    kernel = gemm("i8")
    clash = DmAllocation(tensor=Ref(98), base=0, size=8, first_step=0, last_step=0)
    with pytest.raises(OpVerifyError) as info:
        attrs.evolve(kernel, dm_allocations=[*kernel.dm_allocations, clash]).verify(rngd())
    assert info.value.code == "MEM-3"


def test_mem_4_refuses_over_subscribed_trf():
    kernel = gemm("i8")
    extra = TrfAllocation(tensor=Ref(97), lanes=8, base_row=16, rows=250, first_step=3, last_step=3)
    with pytest.raises(OpVerifyError) as info:
        attrs.evolve(kernel, trf_allocations=[*kernel.trf_allocations, extra]).verify(rngd())
    assert info.value.code == "MEM-4"


def test_package_surface():
    assert sorted(tu_ops.__all__) == [
        "Aggregate", "Alloc", "BUILTIN_TARGETS", "CELL_FORMATS", "CastOp", "CellFormat", "CollectFlits",
        "CommitConversion", "CommitOp", "Constants", "ContractOuter", "Conversion", "ConversionKind",
        "DestKind", "DmAllocation", "DmaCommand", "DmaEntry", "DmaKind", "DmaOp",
        "EmulationPath", "FeedBuffer", "FeedDest", "FeedElementType",
        "FeedSource", "KernelParam", "LaneFold", "LaneMode", "LoopKind", "LoweredKernel", "MacEntry",
        "OP_CLASSES", "OpVerifyError", "PacketReduce", "PairEntry", "RNGD_SHA256", "ReadShape", "Ref",
        "Region", "Target", "TargetSchemaError", "TimeLoop", "TimeReduce", "TransposeOp", "TrfAllocation",
        "TrfLoad", "TrfRead", "TuContext", "TuOp", "TuProgram", "VeOpName", "VeStep", "VeUnit", "VectorEngineOp",
        "VerifyContext", "Width", "WritePlan",
        "ZeroPointEntry", "aggregate_of", "canonical_json",
        "get_target", "inner_time", "load_target", "mapping_text", "parse_target_data", "rngd",
        "target_sha256", "type_text", "value_text",
    ]
    for name in tu_ops.__all__:
        assert getattr(tu_ops, name) is not None


def test_feed_element_names():
    # docs/reference/diagnostics.md FeedElementType, one per type.
    assert {str(d): tu_ops.FeedElementType.of(d).name for d in ALL_DTYPES} == {
        "bf16": "BF16", "f32": "F32", "i8": "RawInt8", "i4": "RawInt4", "u8": "U8",
        "i16": "I16", "i32": "I32", "f8e4m3": "F8E4M3", "f8e5m2": "F8E5M2",
        "f4e2m1": "F4E2M1", "i9": "Int9", "i5": "Int5",
    }


def test_ir_type_kinds_are_structural():
    load = gemm("i8").context().ops[5]
    with pytest.raises(TypeError, match="trf_load: input_type must be a stream type"):
        attrs.evolve(load, input_type=load.output_type)
    with pytest.raises(TypeError):
        attrs.evolve(load, result=5)
