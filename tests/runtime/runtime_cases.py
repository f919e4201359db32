"""Hand-built runtime records each refused by its rule, RUNTIME-8 or LOOP-5 (tests/tu_ops/test_verifiers.py)."""

from __future__ import annotations

from typing import Any, Callable

from ir.runtime_types import SCALAR_DTYPES, ScalarType
from tu_ops.base import Ref, VerifyContext
from tu_ops.runtime import GuardBeginOp, GuardEndOp, LoopBeginOp, LoopEndOp, ScalarLoadOp, ScalarOpKind, ScalarRecord

U32, BOOL = ScalarType(SCALAR_DTYPES["u32"]), ScalarType(SCALAR_DTYPES["bool"])
USIZE = ScalarType(SCALAR_DTYPES["usize"])


def _scalar(**fields: Any) -> Callable[[], tuple[Any, None]]:
    base = {"result": Ref(3), "op": ScalarOpKind.ADD, "lhs": Ref(1), "input_type": U32, "output_type": U32}
    return lambda: (ScalarRecord(**{**base, **fields}), None)


def _end_of_a_load() -> tuple[Any, VerifyContext]:
    load = ScalarLoadOp(result=Ref(2), src=Ref(1), input_type=BOOL, output_type=BOOL)
    end = GuardEndOp(result=Ref(3), begin=Ref(2), input_type=BOOL, output_type=BOOL)
    return end, VerifyContext(ops={2: load})


def _loop(**fields: Any) -> Callable[[], tuple[Any, None]]:
    base = {"result": Ref(2), "start": 0, "stop": 4, "input_type": USIZE, "output_type": USIZE}
    return lambda: (LoopBeginOp(**{**base, **fields}), None)


def _loop_end_of_a_guard() -> tuple[Any, VerifyContext]:
    guard = GuardBeginOp(result=Ref(2), cond=Ref(1), input_type=BOOL, output_type=BOOL)
    end = LoopEndOp(result=Ref(3), begin=Ref(2), input_type=USIZE, output_type=USIZE)
    return end, VerifyContext(ops={2: guard})


RUNTIME_BAD: dict[str, Callable[[], tuple[Any, Any]]] = {
    "RUNTIME-8": _scalar(rhs=Ref(2), imm=5),
    "RUNTIME-8:no-operand": _scalar(),
    "RUNTIME-8:imm-range": _scalar(imm=-1),
    "RUNTIME-8:compare-type": _scalar(op=ScalarOpKind.LT, imm=3),
    "RUNTIME-8:cast-to-bool": _scalar(op=ScalarOpKind.CAST, output_type=BOOL),
    "RUNTIME-8:load-type": lambda: (ScalarLoadOp(result=Ref(2), src=Ref(1), input_type=U32, output_type=BOOL), None),
    "RUNTIME-8:guard-int": lambda: (GuardBeginOp(result=Ref(2), cond=Ref(1), input_type=U32, output_type=U32), None),
    "RUNTIME-8:end-of-a-load": _end_of_a_load,
    "LOOP-5": _loop(stop=0),                       # no iteration
    "LOOP-5:index-type": _loop(input_type=U32, output_type=U32),
    "LOOP-5:stop-and-bound": _loop(bound=Ref(1)),
    "LOOP-5:neither": _loop(stop=None),
    "LOOP-5:end-of-a-guard": _loop_end_of_a_guard,
}
