"""Each record class declares its engine and its costs (tu_ops/engines.py); the schedule
and the cost counters read only those declarations.

The cycle lists below were computed by the schedule before the declarations existed (the
schedule's former if-chain on record mnemonics) and are copied here by hand: the
move to declarations must leave every record's duration as it was.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import npu_opt
from ir.errors import InternalError
from tests.kernel_files import example
from tu_ops import OP_CLASSES, TuOp, rngd
from tu_ops.engines import VECTOR, Engine
from tu_ops.target import TargetSchemaError
from visa import parse_visa
from visa.artifact import COST_KEYS
from visa.schedule import builtin_rates, parse_rates
from visa.schedule.steps import build_steps

VECTOR_ENGINE_KINDS = {"vector", "vector_rf", "vector_branch", "vector_branch_rf", "vector_pair", "vector_pair_rf",
                       "inter_slice_reduce"}


@pytest.mark.parametrize("cls", OP_CLASSES, ids=[c.MNEMONIC for c in OP_CLASSES])
def test_every_record_kind_declares_an_engine_and_its_costs(cls):
    assert isinstance(cls.ENGINE, Engine), f"{cls.MNEMONIC} declares no engine"
    assert cls.busy_cycles is not TuOp.busy_cycles, f"{cls.MNEMONIC} declares no busy cycles"
    assert cls.cost_counters is not TuOp.cost_counters, f"{cls.MNEMONIC} declares no cost counters"


def test_the_vector_engine_kinds_share_the_one_vector_engine_and_nothing_else_is_shared():
    kinds = {cls.MNEMONIC: cls.ENGINE for cls in OP_CLASSES}
    assert VECTOR_ENGINE_KINDS <= set(kinds)
    assert {kinds[k] for k in VECTOR_ENGINE_KINDS} == {VECTOR} and VECTOR.shared
    assert {k for k, e in kinds.items() if e.shared} == VECTOR_ENGINE_KINDS
    # the engines of the other records keep the timeline lanes they had
    assert {k: kinds[k].name for k in ("feed_buffer", "trf_load", "vrf_load", "contract_outer", "packet_reduce",
                                        "time_reduce", "lane_fold", "cast_op", "transpose", "commit", "dma",
                                        "dma_gather", "memset", "tensor_new")} == {
        "feed_buffer": "fetch", "trf_load": "trf", "vrf_load": "vrf_load", "contract_outer": "contraction",
        "packet_reduce": "packet_reducer", "time_reduce": "time_reducer", "lane_fold": "lane_folder",
        "cast_op": "cast", "transpose": "transpose", "commit": "commit", "dma": "dma", "dma_gather": "dma",
        "memset": "dma", "tensor_new": "dma"}


def test_a_record_class_without_declarations_is_an_internal_error():
    bare = SimpleNamespace()
    with pytest.raises(InternalError) as e:
        TuOp.busy_cycles(bare, builtin_rates("rngd"), rngd())
    assert e.value.code == "ICE"
    with pytest.raises(InternalError):
        TuOp.cost_counters(bare, rngd())


def _rates_data() -> dict:
    return {"schema": 1, "target": "rngd", "clock": {"ghz": 1.0},
            "hbm": {"chip_bytes_per_cycle": 1500, "align_bytes": 256, "unaligned_read_factor": 2,
                    "partial_write_factor": 50},
            "dm": {"chip_bytes_per_cycle": 2000, "slice_bytes_per_cycle": 128, "bank_hold_run": 16},
            "dma": {"engine_bytes_per_cycle": 256, "request_bytes": 256, "startup_cycles": 500},
            "tensor_unit": {"fetch_flits_per_cycle": 1, "fetch_bytes_per_cycle": 32, "commit_writes_per_cycle": 1,
                            "packets_per_cycle": 1, "contraction_packet_bytes": 64, "contraction_lanes": 8,
                            "command_startup_cycles": 290},
            "kernel": {"launch_cycles": 2000}}


def test_a_rates_file_with_the_old_engines_table_is_refused_saying_why():
    assert parse_rates(_rates_data())("dma", "startup_cycles") == 500
    old = {**_rates_data(), "engines": {"feed_buffer": "fetch", "shared": ["vector"]}}
    with pytest.raises(TargetSchemaError) as e:
        parse_rates(old, source="old.schedule.toml")
    assert e.value.code == "USAGE" and e.value.key == "engines"
    assert "old.schedule.toml" in str(e.value) and "declares its engine" in str(e.value)


# kernel -> (mnemonic, cycles) of every record, in artifact order, from the schedule before
# the declarations (shipped rngd rates)
BEFORE = {
    "dense_bf16_kernel": [
        ("dma", 8692), ("dma", 8692), ("dma", 756), ("feed_buffer", 256), ("trf_load", 256), ("feed_buffer", 4),
        ("vrf_load", 4), ("feed_buffer", 1024), ("contract_outer", 512), ("packet_reduce", 512),
        ("time_reduce", 512), ("lane_fold", 128), ("vector_rf", 128), ("commit", 128), ("dma", 70406)],
    "gemm_kernel": [
        ("dma", 4596), ("dma", 4596), ("feed_buffer", 128), ("trf_load", 128), ("feed_buffer", 512),
        ("contract_outer", 256), ("packet_reduce", 256), ("time_reduce", 256), ("lane_fold", 128),
        ("cast_op", 128), ("commit", 128), ("dma", 70406)],
    "transpose_tile": [("dma", 1012), ("feed_buffer", 32), ("transpose", 32), ("commit", 64), ("dma", 1012)],
    "slice_sum_i32": [("dma", 756), ("feed_buffer", 8), ("inter_slice_reduce", 8), ("commit", 8), ("dma", 501)],
    "residual_add_kernel": [("dma", 2548), ("dma", 2548), ("feed_buffer", 128), ("vector_pair", 128),
                            ("commit", 64), ("dma", 2548)],
    "masked_softmax_kernel": [
        ("dma", 508), ("feed_buffer", 128), ("vector_branch", 128), ("vrf_load", 8), ("feed_buffer", 128),
        ("vector_branch_rf", 128), ("commit", 8), ("feed_buffer", 8), ("vector_rf", 8), ("vrf_load", 8),
        ("feed_buffer", 128), ("vector_branch_rf", 128), ("commit", 128), ("dma", 508)],
    # a switching feed: TRANSPOSE's ring x time x flits (tu_ops.switch) binds it
    "gemv_switch_kernel": [
        ("dma", 8692), ("dma", 756), ("feed_buffer", 256), ("trf_load", 256), ("feed_buffer", 256),
        ("contract_outer", 128), ("packet_reduce", 128), ("time_reduce", 128), ("lane_fold", 1), ("cast_op", 1),
        ("commit", 1), ("dma", 2685)],
    # a packed commit: one flit a step
    "varlen_pack": [("dma", 6900), ("feed_buffer", 16), ("commit", 16), ("dma", 2685)],
}


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_every_record_lasts_as_long_as_before_the_declarations(name):
    artifact = parse_visa(npu_opt.compile(example(name)).text)
    steps = build_steps(artifact.kernel, builtin_rates("rngd"), rngd())
    assert [(r.mnemonic, r.cycles) for s in steps for r in s.records] == BEFORE[name]


def test_the_counters_the_records_declare_sum_to_the_cost_printed_before_the_declarations():
    # dense_bf16's cost block as printed before the declarations (the peaks come from the
    # allocations, not the records)
    artifact = parse_visa(npu_opt.compile(example("dense_bf16_kernel")).text)
    total = dict.fromkeys(COST_KEYS, 0)
    for op in artifact.kernel.ops():
        for key, value in op.cost_counters(rngd()).items():
            total[key] += value
    assert total == {"dma_commands": 4, "dma_bytes": 5275648, "feed_flits": 1284, "dm_read_bytes": 41088,
                     "dm_write_bytes": 4096, "trf_load_bytes": 8192, "mac_ops": 131072, "dm_peak_bytes": 0,
                     "trf_peak_bytes": 0}


def test_the_records_that_move_streams_between_slices_say_so_and_the_program_follows():
    assert {cls.MNEMONIC: cls.SLICE_AFTER for cls in OP_CLASSES if cls.SLICE_AFTER} == {
        "feed_buffer": "switch.out_slice", "inter_slice_reduce": "out_slice"}
    program = next(s for s in parse_visa(npu_opt.compile(example("slice_sum_i32")).text).kernel.steps
                   if hasattr(s, "ops"))
    feed, reducer, commit = program.ops
    assert reducer.MNEMONIC == "inter_slice_reduce" and feed.switch is None
    assert not program.space[2].equivalent(reducer.out_slice)   # the reducer does move them
    assert program.out_space[2] is reducer.out_slice
    assert commit.input_type.slice.equivalent(reducer.out_slice)  # the parser typed the commit there
