"""The per-record tables of the VISA layer: the interpreter's steps and the re-derivation's
inverses of the lowering, each filled by one declaration next to its handler."""

from __future__ import annotations

import pytest

from visa.interp.steps import STEPS, executes
from visa.parser import OPS
from visa.unlower import RETRACES, Underivable, retrace_stage, retraces

# Records that stand outside program blocks: the walker runs them itself.
OUTSIDE_PROGRAMS = {"dma", "dma_window", "dma_into", "tensor_new", "memset", "dma_gather", "dma_scatter", "dma_shuffle",
                    "dma_spm", "dma_redistribute", "dma_relayout",
                    "scalar_load", "scalar", "guard_begin", "guard_end"}  # the last four: visa/interp/runtime.py
# Records the contract_outer step runs together with it.
RUN_WITH_CONTRACT_OUTER = {"packet_reduce", "time_reduce"}


def test_every_program_record_kind_has_an_interpreter_step() -> None:
    assert "vector" in OPS and "transpose" in OPS
    assert set(STEPS) == set(OPS) - OUTSIDE_PROGRAMS - RUN_WITH_CONTRACT_OUTER


def test_every_stage_record_kind_retraces_to_traced_ops() -> None:
    # The feed opens every program and is re-derived by visa.relower itself.
    assert set(RETRACES) == set(OPS) - OUTSIDE_PROGRAMS - {"feed_buffer"}


def test_a_second_declaration_for_one_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="`commit` already has an interpreter step: _commit_step"):
        executes("commit")(lambda ops, i, state: 1)
    with pytest.raises(ValueError, match="`commit` already has a re-derivation: _commit"):
        retraces("commit")(lambda rec, src, types, target, fresh: ())
    assert STEPS["commit"].__name__ == "_commit_step" and RETRACES["commit"].__name__ == "_commit"


def test_a_record_kind_without_an_inverse_is_underivable() -> None:
    class Stray:
        MNEMONIC = "dma"

    with pytest.raises(Underivable, match="a `dma` record has no place in a TU program"):
        retrace_stage(Stray(), None, {}, None, iter(()))
