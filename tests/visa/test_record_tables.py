"""The per-record tables of the VISA layer: the interpreter's steps, each filled by one
declaration next to its handler; every program record, the Vector Engine passes included,
declares its derived fields itself (`TuOp.derived`), and nothing goes back through the lowering."""

from __future__ import annotations

import pytest

from visa.interp.steps import STEPS, executes
from visa.parser import OPS
from tu_ops.base import TU_OPS, TuOp
from visa.relower import Underivable, expected_program

# Records that stand outside program blocks: the walker runs them itself.
OUTSIDE_PROGRAMS = {"dma", "dma_window", "dma_into", "tensor_new", "memset", "dma_gather", "dma_scatter", "dma_shuffle",
                    "dma_spm", "dma_redistribute", "dma_relayout", "rf_reshape",
                    "scalar_load", "scalar", "guard_begin", "guard_end",  # these four: visa/interp/runtime.py
                    "loop_begin", "loop_end"}  # ir/regions.py LoopRun
# Records the contract_outer step runs together with it.
RUN_WITH_CONTRACT_OUTER = {"packet_reduce", "time_reduce"}


def test_every_program_record_kind_has_an_interpreter_step() -> None:
    assert "vector" in OPS and "transpose" in OPS
    assert set(STEPS) == set(OPS) - OUTSIDE_PROGRAMS - RUN_WITH_CONTRACT_OUTER


PASSES = {"vector", "vector_rf", "vector_pair", "vector_pair_rf", "vector_branch", "vector_branch_rf"}


def test_every_program_record_kind_declares_its_derivation() -> None:
    declares = {m for m in set(OPS) - OUTSIDE_PROGRAMS if TU_OPS[m].derived is not TuOp.derived}
    assert declares == set(OPS) - OUTSIDE_PROGRAMS and PASSES <= declares


def test_a_second_declaration_for_one_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="`commit` already has an interpreter step: _commit_step"):
        executes("commit")(lambda ops, i, state: 1)
    assert STEPS["commit"].__name__ == "_commit_step"


def test_a_record_kind_without_a_derivation_is_underivable() -> None:
    class Stray:
        MNEMONIC = "dma"

        def derived(self, at):
            return None

    class Feed:
        MNEMONIC = "feed_buffer"

        def derived(self, at):
            return self

    class Program:
        ops, context = (Feed(), Stray()), None

    with pytest.raises(Underivable, match="a `dma` record has no place in a TU program"):
        expected_program(Program(), {}, None)
