"""How the lowering is found: each traced stage class declares its lowering once, and a
compile verifies the lowered kernel once per pass that produced it (never again after)."""

from __future__ import annotations

import pytest

from backends.npu import compile_kernel
from ir import ops as ir
from ir.vector import branch_ops as vector_branch_ops
from ir.vector import chain_ops as vector_chain_ops
from ir.vector import ops as vector_ops
from ir.vector import pair_logic_ops as vector_pair_logic_ops
from ir.vector import pair_ops as vector_pair_ops
from ir.vector import pair_ternary_ops as vector_pair_ternary_ops
from ir.vector import stash_ops as vector_stash_ops
from ir.data_movement_ops import Transpose
from ir.errors import InternalError
from ir.vrf_ops import ToVrf
from ir.vector.reduce_ops import VectorIntraSliceReduce
from ir.vector.inter_ops import VectorInterSliceReduce
from ir.valid_count_ops import CommitPacked, CommitValidCountPack
from tests.kernel_files import example
from tu_ops.lower.dispatch import FEED_FLITS, LOWERINGS, PRINTED_TYPES, lower_stage
from tu_ops.program import LoweredKernel

AFTER_COLLECT = {ir.ToTrf, ir.ContractOuter, ir.ContractPacket, ir.ContractTime, ir.ContractLane, ir.Cast,
                 ir.CommitTrim, ir.CommitCast, ir.Commit, Transpose, ToVrf, VectorIntraSliceReduce,
                 *(c for module in (vector_ops, vector_chain_ops) for c in vars(module).values()
                   if isinstance(c, type) and issubclass(c, vector_ops.VectorOp) and c.STAGE),  # bases name no stage
                 *vector_pair_ops.PAIR_OP_CLASSES, *vector_branch_ops.BRANCH_OP_CLASSES,
                 *vector_stash_ops.STASH_OP_CLASSES, *vector_pair_logic_ops.PAIR_LOGIC_CLASSES, VectorInterSliceReduce,
                 *vector_pair_ternary_ops.PAIR_TERNARY_CLASSES,
                 CommitValidCountPack, CommitPacked}   # folded into the CommitOp (tu_ops.lower.commit)


def test_every_stage_after_collect_declares_its_lowering():
    assert set(LOWERINGS) == AFTER_COLLECT
    assert set(FEED_FLITS) == {ir.ToTrf, ir.ContractOuter}
    assert set(PRINTED_TYPES) == {ir.ToTrf, ir.Commit, ir.View}  # inferred layouts, and views of them


def test_a_stage_without_a_lowering_is_an_internal_error():
    op = ir.Fetch(input=ir.Value(0, None), time=None, packet=None)
    with pytest.raises(InternalError, match="no lowering for stage `fetch`"):
        lower_stage(op, None)


def _flits(name: str) -> list[str]:
    outcome = compile_kernel(example(name))
    assert outcome.status == "ok"
    return [w.split("=")[1].rstrip(",") for w in outcome.text.split() if w.startswith("collect_flits=")]


def test_the_feed_packing_comes_from_the_consumer():
    assert _flits("gemm_i8_kernel") == ["Flit2"] * 3       # a 64-byte TRF row, a pair-packed contraction
    assert _flits("fetch_commit_simple") == ["Flit1"]       # feeding the commit path: the default


def test_a_compile_verifies_each_lowered_pass_output_once(monkeypatch):
    calls = []
    real = LoweredKernel.verify

    def counting(self, *args, **kwargs):
        calls.append(self.name)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(LoweredKernel, "verify", counting)
    outcome = compile_kernel(example("gemm_kernel"))
    assert outcome.status == "ok"
    assert calls == ["gemm_kernel", "gemm_kernel"]          # after lower-ops, after allocate-memory
    assert outcome.timings_ms["verify"] >= 0 and set(outcome.timings_ms) == {"trace", "lower", "verify", "emit"}
