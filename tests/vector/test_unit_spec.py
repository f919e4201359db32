"""One declaration adds a Vector Engine unit (`ir.vector.units`).

A toy element-wise unit, TOY_ABSDIFF (`|x - c|` on i32, wrapping, at the Fxp stage,
`tests/vector/toy_unit.py`), is declared by one `UnitSpec` (with the op enum and the numerics
it names; its traced op is made from it), then run through every layer that reads the
declarations: the record's verifier, the VISA text (parse, print, verify with the
re-derivation), the generated traced op and its codec, the interpreter, the numerics the cpu
backend runs (`run_step`), and, in a fresh interpreter, the DSL method end to end. Results
are compared with an exact-integer oracle. The unit is removed again after each test.
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest

import ir.vector.unit_ops as unit_ops
import npu_opt
import npu_opt.vector_stages  # noqa: F401  the DSL, the lowering and the cpu backend load before the toy unit
import tu_ops.lower.vector  # noqa: F401  is declared (each test removes it again)
import backends.cpu.vector  # noqa: F401
from ir.vector import enums as E
from ir.vector.numerics.steps import run_step
from ir.vector.units import VeOpName, VeUnit, spec_of, unregister
from tests.vector.bad_ops import GOOD, TAG, stream
from tests.vector.kernels import chain_kernel
from tests.vector.toy_unit import X, ToyOp, declare, oracle
from tu_ops import rngd
from tu_ops.vector import VeStep
from visa.interp import execute
from visa.parser import parse_visa
from visa.printer import print_artifact
from visa.verify import verify_text


@pytest.fixture
def toy():
    spec = declare()
    try:
        yield spec
    finally:
        unregister("TOY_ABSDIFF")


def test_the_declaration_derives_the_tables(toy):
    assert "TOY_ABSDIFF" in VeUnit.__members__ and "TOY_ABS_DIFF" in VeOpName.__members__
    assert spec_of("TOY_ABSDIFF") is toy and toy.rank == spec_of("FXP").rank and toy.repeatable
    from ir.vector.numerics.steps import UNITS

    assert UNITS["TOY_ABSDIFF"] == ("i32", "i32")


def test_the_record_verifier_reads_the_declaration(toy):
    step = VeStep(VeUnit.TOY_ABSDIFF, VeOpName.TOY_ABS_DIFF, -5)
    good = attrs.evolve(GOOD, steps=(TAG, step), output_type=stream(GOOD.input_type.dtype))
    assert good.first_failure(rngd(), None) is None
    for bad, code in ((attrs.evolve(step, arg=2**31), "VEOP-3"),  # not an i32
                      (attrs.evolve(step, op=VeOpName.MUL_INT), "VEOP-3"),  # not an op of the unit
                      (attrs.evolve(step, arg1=3), "VEOP-3")):  # a binary op has no second constant
        assert attrs.evolve(good, steps=(TAG, bad)).first_failure(rngd(), None).code == code
    # the Fxp adder is taken twice; and the Fxp stage may not follow Clip
    twice = (TAG, step, VeStep(VeUnit.FXP, VeOpName.ADD_FXP, 1))
    assert attrs.evolve(good, steps=twice).first_failure(rngd(), None).code == "VEOP-2"
    late = (TAG, VeStep(VeUnit.CLIP_I32, VeOpName.MAX, 0), step)
    assert attrs.evolve(good, steps=late).first_failure(rngd(), None).code == "VEOP-2"


def _toy_text() -> str:
    text = npu_opt.compile(chain_kernel(npu_opt.i32, [("vector_fxp", E.FxpBinaryOp.ADD_FXP, 7)])).text
    assert "{unit=FXP, op=ADD_FXP, arg=7}" in text
    return text.replace("{unit=FXP, op=ADD_FXP, arg=7}", "{unit=TOY_ABSDIFF, op=TOY_ABS_DIFF, arg=7}")


def test_visa_text_round_trips_verifies_and_runs(toy):
    text = _toy_text()
    artifact = parse_visa(text)
    assert print_artifact(artifact) == text
    verify_text(text, rngd())
    out = execute(artifact, [X])
    np.testing.assert_array_equal(out, oracle(X, 7))
    with pytest.raises(npu_opt.NpuOptError) as info:
        verify_text(text.replace("op=TOY_ABS_DIFF, arg=7", "op=TOY_ABS_DIFF, arg=2147483648"), rngd())
    assert info.value.code == "VEOP-3"


def test_the_numerics_the_cpu_backend_runs(toy):
    values = X.reshape(8, 8, 8)
    np.testing.assert_array_equal(run_step("TOY_ABSDIFF", "TOY_ABS_DIFF", -3, values), oracle(values, -3))
    # MODE10 swaps the operands (|c - x|, the same value); MODE00 reads the stream twice (0)
    np.testing.assert_array_equal(run_step("TOY_ABSDIFF", "TOY_ABS_DIFF", 9, values, "MODE10"), oracle(values, 9))
    np.testing.assert_array_equal(run_step("TOY_ABSDIFF", "TOY_ABS_DIFF", 9, values, "MODE00"), np.zeros_like(values))
    with pytest.raises(TypeError):
        run_step("TOY_ABSDIFF", "TOY_ABS_DIFF", 9, values.view(np.uint32))  # f32 bits: not the unit's scalar


def test_the_generated_op_encodes_its_step(toy):
    from ir import ops as ir
    from ir.dtypes import DType

    src = ir.Value(1, stream(DType.I32))
    op = unit_ops.VectorToyAbsDiff(input=src, op=ToyOp.TOY_ABS_DIFF, const=-11, result=ir.Value(2, src.type))
    assert op.step() == ("TOY_ABSDIFF", "TOY_ABS_DIFF", -11)
    assert _violations(op) == []
    assert [v.code for v in _violations(attrs.evolve(op, const=2**31))] == ["VE-CONST-1"]


def _violations(op):
    return [v for fn in type(op).RULES if (v := fn(op)) is not None]


def test_removing_the_unit_removes_it_everywhere():
    from tests.kernel_text import traced_op_classes

    declare()
    try:
        text = _toy_text()
        assert "vector_toy_absdiff" not in traced_op_classes()  # made on first use only
        made = unit_ops.VectorToyAbsDiff  # its traced op, made from the declaration
        assert traced_op_classes()["vector_toy_absdiff"] is made and made.STAGE == "vector_toy_absdiff"
    finally:
        unregister("TOY_ABSDIFF")
    assert "TOY_ABSDIFF" not in VeUnit.__members__ and "TOY_ABS_DIFF" not in VeOpName.__members__
    assert "vector_toy_absdiff" not in traced_op_classes()
    with pytest.raises(npu_opt.NpuOptError):
        parse_visa(text)


_DSL_RUN = """
from tests.vector import toy_unit as t
t.declare()  # before the DSL, the lowering and the cpu backend load
import numpy as np
import npu_opt
from tests.vector.kernels import chain_kernel, cpu_equals_visa
from npu_opt import ToyOp  # a declared unit's op enum is exported
assert ToyOp is t.ToyOp
k = chain_kernel(npu_opt.i32, [("vector_toy_absdiff", ToyOp.TOY_ABS_DIFF, 7),
                               ("vector_clip", npu_opt.ClipBinaryOpI32.MIN, 1000)])
cpu_equals_visa(k, t.X)  # the text parses back to itself and verifies; the interpreter equals the cpu backend
np.testing.assert_array_equal(npu_opt.run(k, t.X), np.minimum(t.oracle(t.X, 7), 1000))
print("ran")
"""


def test_a_declared_unit_is_a_dsl_method_end_to_end():
    """Declared before the DSL is built (as a built-in unit is), the unit is a stage method:
    traced, run on the cpu backend, lowered, printed, verified and interpreted."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-c", _DSL_RUN], capture_output=True, text=True, env=env, cwd=root,
                          timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "ran", done.stderr[-2000:]


def test_the_doc_walks_unit_declares_beside_the_toy(toy):
    """docs/reference/adding-an-op.md declares ABS_DIFF at the Fxp stage; the toy unit's names
    (TOY_ABSDIFF, TOY_ABS_DIFF, vector_toy_absdiff) leave room for it, so both declare at once."""
    from ir.vector.units import UnitSpec, elementwise, register
    from ir.vector.variants import RustEnum, Unit

    class AbsDiffOp(RustEnum):
        ABS_DIFF = Unit("AbsDiff")

        @property
        def alu(self) -> E.RngdAlu:
            return E.RngdAlu.FXP_ADD

    register(UnitSpec("ABS_DIFF", spec_of("FXP").stage, AbsDiffOp, "i32", arg="i32", arity=2,
                      fn=lambda op: {"ABS_DIFF": lambda x, c: abs(x - c)}[op], methods=("vector_abs_diff",),
                      codec=elementwise("ir.vector.unit_ops:VectorAbsDiff")))
    try:
        assert {"ABS_DIFF", "TOY_ABSDIFF"} <= set(VeUnit.__members__)
        assert {"ABS_DIFF", "TOY_ABS_DIFF"} <= set(VeOpName.__members__)
        assert spec_of("ABS_DIFF").rank == toy.rank
    finally:
        unregister("ABS_DIFF")
    assert "ABS_DIFF" not in VeOpName.__members__ and "TOY_ABS_DIFF" in VeOpName.__members__
