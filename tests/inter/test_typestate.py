"""The inter-slice reducer's typestate: where the method exists and what follows it."""

from __future__ import annotations

import pytest

import npu_opt
from ir.vector.stages import VeStage
from npu_opt import axes
from npu_opt import vector_engine  # noqa: F401 - imports the written-out classes, which fill the tables
from npu_opt.vector_pass import AFTER_INTER_CLASSES, INTER_FIRST_CLASSES, VECTOR_STAGE_CLASSES
from npu_opt.vector_stages import VectorInitStream
from tests.inter.kernels import second_reduce

NAME = "vector_inter_slice_reduce"


def test_offered_after_init_and_the_reference_stages_only():
    assert hasattr(VectorInitStream, NAME)
    offered = {stage.rust_name for (stage, scalar), cls in VECTOR_STAGE_CLASSES.items()
               if scalar == "i32" and hasattr(cls, NAME)}
    assert offered == {"Logic", "Fxp", "FxpToFp", "Widen", "FpToFxp", "Clip"}


def test_the_chain_after_an_inter_first_reduce_offers_no_second_one():
    assert not any(hasattr(cls, NAME) for cls in INTER_FIRST_CLASSES.values())
    assert hasattr(INTER_FIRST_CLASSES[(VeStage.FXP, "i32")], "vector_fxp")


def test_what_follows_the_reduce_by_order():
    inter_first, intra_first = AFTER_INTER_CLASSES[("f32", True)], AFTER_INTER_CLASSES[("f32", False)]
    assert hasattr(inter_first, "vector_intra_slice_tag") and hasattr(inter_first, "vector_final")
    assert hasattr(intra_first, "vector_final")
    for name in ("vector_intra_slice_tag", "vector_clip", NAME, "vector_fxp"):
        assert not hasattr(intra_first, name)


@pytest.mark.parametrize("how", ["called", "no arguments", "consumed"])
def test_a_second_inter_slice_reduce_after_an_inter_first_one_is_type1_however_called(how):
    """The refusal is TYPE-1 naming the InterFirst class and what it offers, whatever the
    arguments and even on a stream an earlier call consumed."""
    axes(A=512, R=4)  # the axes of tests.inter.kernels
    (d,) = npu_opt.check(second_reduce(how)).diagnostics
    assert (d.code, d.message, d.stage, d.help) == (
        "TYPE-1", "`vector_inter_slice_reduce` cannot be called on a VectorInterFirstFxpI32Stream",
        "vector_inter_slice_reduce", "see `npu-opt explain TYPE-1` for the stage order")
    assert d.notes[0] == ("VectorInterFirstFxpI32Stream offers `vector_clip`, `vector_clip_with_mode`, "
                          "`vector_filter`, `vector_final`, `vector_fxp`, `vector_fxp_to_fp`, `vector_fxp_with_mode`, "
                          "`vector_narrow_split`, `vector_narrow_trim`, `vector_reinterpret`, `vector_stash`")
