"""The paired FMA_F in the DSL, beside the other pair ops of `npu_opt.vector_pair`.

`vector_fp_ternary(FpTernaryOp.FMA_F, (a0, c0), (a1, c1))` on a 4-way f32 pair runs
`group * a + c`, rounded once, with each group's own constants (None or `()` skips a group);
`vector_fp_ternary_with_mode(op, mode, g0, g1)` reads one TernaryArgMode inside each group
(0 the group's stream, 1 its `a`, 2 its `c`). A group operand is a pair of numbers: a VRF
tensor is VRF-7 (FMA_F has no register-file read), a branched layout VE-TAG-3 (a pair has no
tags), anything else TYPE-6; a constant that is no f32 is VE-CONST-2 and the FMA ALU is
claimed for both groups (VE-ALU-1).
"""

from __future__ import annotations

import numbers
from typing import Any

from ir.vector import pair_ternary_ops as ptern
from ir.location import Location
from ir.vector import enums as E
from npu_opt.stagebase import Poisoned, kind_error, refuse_dead, stage_method
from npu_opt.vector_chain_methods import op_and_mode
from npu_opt.vector_pass import S, _operands, _pair_step, vrf_unread

__all__ = ["fp_ternary", "fp_ternary_mode"]


def _fma_operand(value: Any) -> tuple[bool, Any]:
    """(ok, operand) of a group of a paired FMA_F: `(a, c)` numbers, or None / `()` (skipped)."""
    if value is None or value == ():
        return True, None
    ok = isinstance(value, tuple) and len(value) == 2 and all(
        isinstance(v, (numbers.Integral, float)) and not isinstance(v, bool) for v in value)
    return ok, (float(value[0]), float(value[1])) if ok else value


def _ternary(stage: Any, loc: Location, op: Any, mode: Any, group0: Any, group1: Any) -> Any:
    name = "vector_fp_ternary" + ("_with_mode" if mode is not None else "")
    got = op_and_mode(stage, loc, name, E.FpTernaryOp, op, mode, E.TernaryArgMode)
    if isinstance(got, Poisoned):
        return got
    op, mode = got
    got = _operands(stage, loc, name, *(g[0] if isinstance(g, tuple) and g else g for g in (group0, group1)))
    if isinstance(got, Poisoned):  # a branched or VRF operand, a refused call's value (VE-TAG-3, TYPE-6)
        return got
    if any(getattr(c, "tensor", None) is not None for c in got):  # FMA_F has no register-file read
        return refuse_dead(stage, loc, name, vrf_unread(name))
    (ok0, a), (ok1, b) = _fma_operand(group0), _fma_operand(group1)
    if not (ok0 and ok1):
        return refuse_dead(stage, loc, name, kind_error(
            f"a group operand of `{name}` is a pair `(a, c)` of constants (`x * a + c`), or None to skip the group, "
            f"not {type(group0 if not ok0 else group1).__name__}", help="e.g. `(2.0, 1.0)` for `x * 2 + 1`"))
    return _pair_step(stage, loc, ptern.PairFpTernary, S.FP, op.alu, op=op, c0=a, c1=b, mode=mode)


@stage_method("vector_fp_ternary")
def fp_ternary(self: Any, loc: Location, op: Any, group0: Any, group1: Any) -> Any:
    """Float cluster FMA_F on each group: `group * a + c`, rounded once, with the group's `(a, c)`
    (None skips a group)."""
    return _ternary(self, loc, op, None, group0, group1)


@stage_method("vector_fp_ternary_with_mode")
def fp_ternary_mode(self: Any, loc: Location, op: Any, mode: Any, group0: Any, group1: Any) -> Any:
    """`vector_fp_ternary` with a TernaryArgMode read inside each group (0 the group's stream, 1
    its a, 2 its c: MODE102 is `a * group + c`)."""
    return _ternary(self, loc, op, mode, group0, group1)
