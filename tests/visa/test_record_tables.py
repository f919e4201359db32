"""The per-record tables of the VISA layer: the interpreter's steps and the re-derivation's
inverses of the lowering (the Vector Engine passes'), each filled by one declaration next to
its handler; every other program record declares its derived fields itself."""

from __future__ import annotations

import pytest

from visa.interp.steps import STEPS, executes
from visa.parser import OPS
from tu_ops.base import TU_OPS, TuOp
from visa.unlower import RETRACES, Underivable, relowered, retraces

# Records that stand outside program blocks: the walker runs them itself.
OUTSIDE_PROGRAMS = {"dma", "dma_window", "dma_into", "tensor_new", "memset", "dma_gather", "dma_scatter", "dma_shuffle",
                    "dma_spm", "dma_redistribute", "dma_relayout", "rf_reshape",
                    "scalar_load", "scalar", "guard_begin", "guard_end"}  # the last four: visa/interp/runtime.py
# Records the contract_outer step runs together with it.
RUN_WITH_CONTRACT_OUTER = {"packet_reduce", "time_reduce"}


def test_every_program_record_kind_has_an_interpreter_step() -> None:
    assert "vector" in OPS and "transpose" in OPS
    assert set(STEPS) == set(OPS) - OUTSIDE_PROGRAMS - RUN_WITH_CONTRACT_OUTER


PASSES = {"vector", "vector_rf", "vector_pair", "vector_pair_rf", "vector_branch", "vector_branch_rf"}


def test_every_program_record_kind_declares_its_derivation_or_retraces() -> None:
    declares = {m for m in set(OPS) - OUTSIDE_PROGRAMS if TU_OPS[m].derived is not TuOp.derived}
    assert set(RETRACES) == PASSES and not declares & PASSES
    assert declares == set(OPS) - OUTSIDE_PROGRAMS - PASSES


def test_a_second_declaration_for_one_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="`commit` already has an interpreter step: _commit_step"):
        executes("commit")(lambda ops, i, state: 1)
    with pytest.raises(ValueError, match="`vector` already has a re-derivation: _vector"):
        retraces("vector")(lambda rec, src, types, target, fresh: ())
    assert STEPS["commit"].__name__ == "_commit_step" and RETRACES["vector"].__name__ == "_vector"


def test_a_record_kind_without_an_inverse_is_underivable() -> None:
    class Stray:
        MNEMONIC = "dma"

    with pytest.raises(Underivable, match="a `dma` record has no place in a TU program"):
        relowered(Stray(), 0, {}, None, None)
