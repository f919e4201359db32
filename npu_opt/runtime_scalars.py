"""Runtime scalars in the DSL (docs/runtime.md): `HbmScalar[T]`, `to_spm`, scalar
expressions, casts, the runtime guard `ctx.when(cond)` and tiles at a runtime start.

A kernel is traced once, with Python running every loop, so a value the host passes at
launch has no Python value while tracing. `HbmScalar[u32]` is such a parameter;
`s.to_spm(ctx.tdma)` reads it into the scalar memory and gives a `RuntimeScalar`.
Arithmetic (`+ - *`, wrapping), comparisons, `& | ^ ~` and `.cast(T)` on it record
`scalar` ops: an expression tree in the IR, never a Python number. Python's `if`,
`while`, `assert`, `and`, `or` and `not` ask for a truth value, which a runtime scalar
does not have while tracing: they are refused (RUNTIME-1) and `ctx.when(cond)` is the
construct to use. `range(n)`, a tile start or an immediate need a trace-time number
(RUNTIME-2), except a tile start at run time (docs/runtime.md#runtime-tile-starts):

`v.tile(m("T"), 64, m("T = 64 # 512, D"), i)` with `i` a `RuntimeScalar` of type `usize`
(the reference's `tile` takes a `usize`: cast others with `i.cast(usize)`) is the tile at
start 0 whose element offset grows by `i * stride` cells when the kernel runs. The view
keeps `(scalar, stride, limit)` beside its static offsets. Its users: a Tensor DMA, `to_spm`,
a redistribution or a scatter as the source (`to_dm`, `to_hbm`, `to_dm_view`, `to_hbm_view`,
...; the `window` carries the scalar), a Tensor DMA or a redistribution as the destination
(the `to_view` / `redistribute` does), a scatter into one page (`dma_scatter` does), a
stream's `begin` (the `window`; an interleaved one reads two tiles a trace-time distance
apart, else RUNTIME-2 in `npu_opt.interleave`), `commit_view` (a `to_view` the lowering
folds into the commit) and `memset` (which carries it). A runtime start of a chip, cluster
or slice tile keeps RUNTIME-2. RUNTIME-9: a start that is
not a `usize`, or whose step is not whole bytes; VIEW-13: a DM write whose step is not
whole 8-byte units. A tile of a runtime-tiled view may take a second runtime start when
both are proven in range while tracing (loop indices of trace-time bounds; else LOOP-7):
the two become one start (`_second_start`).
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Iterator
from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.location import instructions_after, user_location
from ir.loop_affine import UNPROVEN, Affine, combine, range_fault
from ir.ops import Param
from ir.runtime_ops import GuardBegin, GuardEnd, ScalarOp, ScalarLoad
from ir.runtime_types import COMPARE, INTEGER_NAMES, LOGIC, SCALAR_DTYPES, ScalarDType, ScalarType, \
    scalar_dtype
from ir.rules.runtime_tiles import START_DTYPE, runtime_tile_step
from ir.runtime_scope import scope_faults
from npu_opt.annotations import annotation_location
from npu_opt.scalars import plain_number
from npu_opt.stagebase import Poisoned, location_of
from npu_opt.trace import current
from ir.words import a_an

__all__ = ["HbmScalar", "ScalarSpec", "RuntimeScalar", "ScalarParam", "scalar_param", "when",
           "u32", "i64", "u64", "usize", "IMM_LIMIT", "refuse_call"]

u32, i64, u64, usize = (SCALAR_DTYPES[n] for n in ("u32", "i64", "u64", "usize"))
IMM_LIMIT = 1 << 47
"""A literal in a scalar expression is below 2**47 in magnitude (a VISA integer field)."""


def refuse_call(code: str, message: str, method: str, help: str | None = None, label: str | None = None) -> Poisoned:
    """Report the refusal at the user's call of `method`; a Poisoned result for a caller to return."""
    current().refuse(Violation(code, message, help=help, label=label), location_of(method), method)
    return Poisoned(method)


@attrs.frozen
class ScalarSpec:
    """`HbmScalar[T]`: a scalar parameter annotation (a leaf of the parameter tree)."""

    raw: Any
    writable = False
    form = "scalar"

    @property
    def tensor(self) -> ScalarSpec:
        return self

    @property
    def dtype(self) -> ScalarDType | None:
        return scalar_dtype(self.raw)

    def __str__(self) -> str:
        return f"HbmScalar[{getattr(self.raw, '__name__', self.raw)}]"


class HbmScalar:
    """`HbmScalar[T]` (T: bool, i32, u32, i64, u64, usize): a value passed at launch."""

    def __class_getitem__(cls, item: Any) -> ScalarSpec:
        return ScalarSpec(item)


class ScalarParam:
    """The traced handle of an `HbmScalar` parameter: read it with `.to_spm(ctx.tdma)`."""

    def __init__(self, value: Any, name: str) -> None:
        self.value = value
        self.name = name

    def __repr__(self) -> str:
        return f"<HbmScalar {self.name}: {self.value.type}>"

    def to_spm(self, dma: Any) -> Any:
        """Read the launch value into the scalar memory (one small Tensor DMA)."""
        if type(dma).__name__ != "TensorDma":
            refuse_call("CTX-1", f"`to_spm` runs on the Tensor DMA engine, not on {dma!r}", "to_spm",
                    help="pass ctx.tdma: `s.to_spm(ctx.tdma)`")
            return REFUSED
        tracer = current()
        op = ScalarLoad.build(tracer.value, src=self.value, loc=location_of("to_spm"))
        tracer.emit(op)
        return RuntimeScalar(op.result)

    def _unread(self, *args: Any) -> Any:
        refuse_call("RUNTIME-7", f"scalar parameter `{self.name}` is in HBM; read it before computing with it",
                "to_spm", help=f"`{self.name}.to_spm(ctx.tdma)` gives the runtime scalar")
        return REFUSED

    def __bool__(self) -> bool:
        return bool(self._unread())

    def __index__(self) -> int:
        return self._unread().__index__()

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _unread
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _unread
    __hash__ = object.__hash__


def refuse_scope_faults(tracer: Any, stopped: bool = False) -> None:
    """RUNTIME-6 and LOOP-3 for every use across a region's edge, LOOP-4 for a loop body
    left early (`ir.runtime_scope`); not that last when the body `stopped` on a Python error,
    which left the loop open itself."""
    for op, found in scope_faults(tracer.ops):
        if not (stopped and found.code == "LOOP-4"):
            tracer.refuse(found, op.loc, op.STAGE, op)


def scalar_param(tracer: Any, leaf: Any, loc: Any, fn: Any) -> Any:
    """The `param` op and handle of an `HbmScalar[T]` leaf (RUNTIME-7 for another T, at
    the annotation of kernel function `fn`'s parameter)."""
    dtype = leaf.spec.dtype
    if dtype is None:
        tracer.refuse(Violation("RUNTIME-7", f"parameter `{leaf.name}`: {leaf.spec} is not a runtime scalar type",
                                help="use one of bool, i32, u32, i64, u64, usize"),
                      annotation_location(fn, leaf.name.split(".")[0], loc), None)
        return Poisoned(leaf.name)
    op = Param(name=leaf.name, index=leaf.index, result=tracer.value(ScalarType(dtype)), loc=loc)
    tracer.emit(op)
    return ScalarParam(op.result, leaf.name)


def _asserting(frame: Any) -> bool:
    """Whether the truth test running in `frame` is an `assert` statement's: the
    instruction after it raises AssertionError."""
    after = [i for i in instructions_after(frame.f_code, frame.f_lasti, 4) if i.offset <= frame.f_lasti + 8]
    return any(i.opname == "LOAD_ASSERTION_ERROR" for i in after)


class RuntimeScalar:
    """A scalar known only at run time: a traced `scalar<T>` value."""

    RUNTIME_SCALAR = True  # read by the stage methods and `plain_number` (RUNTIME-2)

    def __init__(self, value: Any, form: Any = None) -> None:
        self.value = value
        self.form = form   # what the loop indices make of it (ir.loop_affine); None: no index reaches it

    @property
    def dtype(self) -> ScalarDType:
        return self.value.type.dtype

    def __repr__(self) -> str:
        return f"<runtime {self.dtype} {self.value}>"

    __hash__ = object.__hash__

    # --- refusals: no Python value while tracing ---------------------------------------

    def __bool__(self) -> bool:
        if _asserting(sys._getframe(1)):  # the reference's runtime `assert!` (runtime_panic)
            refuse_call("RUNTIME-1", f"an `assert` on a runtime {self.dtype}: a kernel cannot stop at run time",
                    "assert", label="this condition is known only when the kernel runs",
                    help="check the launch value on the host before `npu_opt.run`, or guard the work with "
                         "`with ctx.when(cond):` (docs/runtime.md)")
            return True  # the assert passes: the trace goes on
        refuse_call("RUNTIME-1", f"a runtime {self.dtype} has no truth value while the kernel is traced",
                "if", label="Python `if` / `while` / `and` / `or` / `not` here",
                help="guard the work with `with ctx.when(cond):` (docs/runtime.md)")
        return False

    def _no_number(self, *args: Any) -> int:
        refuse_call("RUNTIME-2", f"a runtime {self.dtype} is not a number known while tracing",
                "range", label="a loop count, an index or an immediate must be a trace-time int",
                help="loop over the static bound and guard each iteration: "
                     "`for i in range(N): with ctx.when(i < n): ...`")
        return 0

    __index__ = __int__ = __float__ = _no_number

    # --- expression nodes --------------------------------------------------------------

    def _emit(self, op: str, rhs: Any, dtype: ScalarDType | None, method: str) -> Any:
        other, imm = None, None
        if isinstance(rhs, RuntimeScalar):
            if rhs.dtype != self.dtype:
                refuse_call("RUNTIME-4", f"`{method}` of {a_an(self.dtype)} and {a_an(rhs.dtype)}: the operands of a scalar "
                        "operation have one type", method, help=f"cast one side: `x.cast({self.dtype})`")
                return REFUSED
            other = rhs.value
        elif isinstance(rhs, (Poisoned, Refused)):
            return REFUSED
        elif rhs is not None:
            imm = self._literal(rhs, method)
            if imm is None:
                return REFUSED
        tracer = current()
        built = ScalarOp.build(tracer.value, lhs=self.value, rhs=other, op=op, imm=imm,
                               dtype=dtype or self.dtype, loc=location_of(method))
        tracer.emit(built)
        form = combine(op, self.form, rhs.form if isinstance(rhs, RuntimeScalar) else None, imm,
                       op == "CAST" and built.dtype.name == START_DTYPE)
        return RuntimeScalar(built.result, form)

    def _literal(self, rhs: Any, method: str) -> int | None:
        value = plain_number(rhs)
        d = self.dtype
        if isinstance(value, bool) and d.name == "bool":
            return int(value)
        if isinstance(value, int) and not isinstance(value, bool) and d.name != "bool" \
                and d.min <= value <= d.max and abs(value) < IMM_LIMIT:
            return value
        refuse_call("RUNTIME-4", f"`{method}` of a runtime {d} and {rhs!r}: the literal is not {a_an(d)} value "
                f"of the scalar immediate range (|x| < 2**47)", method,
                help=f"write a literal of {d}, or cast the scalar first")
        return None

    def _arith(op: str, method: str) -> Any:  # noqa: N805 - builds the methods below
        def fn(self: RuntimeScalar, rhs: Any) -> Any:
            if self.dtype.name == "bool":
                refuse_call("RUNTIME-4", f"`{method}` on a runtime bool", method,
                        help="cast it to an integer type first: `b.cast(u32)`")
                return REFUSED
            return self._emit(op, rhs, None, method)
        return fn

    def _rarith(op: str, method: str) -> Any:  # noqa: N805 - a literal on the left
        def fn(self: RuntimeScalar, lhs: Any) -> Any:
            if op == "ADD" or op == "MUL":
                return getattr(self, f"__{op.lower()}__")(lhs)
            zero = self.__mul__(0)   # lhs - self as (self * 0 + lhs) - self
            if isinstance(zero, Refused):
                return zero
            base = zero._emit("ADD", lhs, None, method)
            return base if isinstance(base, Refused) else base._emit("SUB", self, None, method)
        return fn

    def _binary(op: str) -> Any:  # noqa: N805 - a comparison gives a bool, a logic op the operands' type
        def fn(self: RuntimeScalar, rhs: Any) -> Any:
            if op in LOGIC:
                return self._emit(op, rhs, None, LOGIC[op])
            return self._emit(op, rhs, SCALAR_DTYPES["bool"], COMPARE[op])
        return fn

    __add__, __sub__, __mul__ = _arith("ADD", "+"), _arith("SUB", "-"), _arith("MUL", "*")
    __radd__, __rsub__, __rmul__ = _rarith("ADD", "+"), _rarith("SUB", "-"), _rarith("MUL", "*")
    __lt__, __le__, __gt__ = _binary("LT"), _binary("LE"), _binary("GT")
    __ge__, __eq__, __ne__ = _binary("GE"), _binary("EQ"), _binary("NE")
    __and__, __or__, __xor__ = _binary("AND"), _binary("OR"), _binary("XOR")
    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__

    def __invert__(self) -> Any:
        """`~b`: logical not of a bool, bitwise not of an integer."""
        return self._emit("NOT", None, None, "~")

    def cast(self, dtype: Any) -> Any:
        """Rust's `x as T` among the integer types (and from bool): wraps to T's width;
        i32 -> i64 sign-extends, u32 -> usize zero-extends, i64 -> u32 keeps the low 32 bits."""
        target = scalar_dtype(dtype)
        if target is None or target.name not in INTEGER_NAMES:
            name = getattr(dtype, "__name__", None) or str(dtype)
            refuse_call("RUNTIME-5", f"`cast({name})`: a runtime scalar casts to an integer type only", "cast",
                    help=f"cast to one of {', '.join(INTEGER_NAMES)}; compare to get a bool (`x != 0`); "
                         "a float needs a value known while tracing")
            return REFUSED
        return self._emit("CAST", None, target, "cast")

    del _arith, _rarith, _binary


def when(cond: Any) -> Any:
    """`with ctx.when(cond):` the work traced in the block is done only when the runtime
    bool `cond` holds (docs/runtime.md)."""
    return _guard(cond, location_of("when"))


class Refused:
    """What a refused scalar expression gives: every operation on it gives it again,
    silently (its fault is reported once), and a guard on it guards nothing."""

    RUNTIME_SCALAR = False

    def _same(self, *args: Any) -> Refused:
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _same
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _same
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = __invert__ = cast = _same
    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        return False

    def __index__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "<refused runtime scalar>"


REFUSED = Refused()


@contextlib.contextmanager
def _guard(cond: Any, loc: Any) -> Iterator[None]:
    tracer = current()
    if isinstance(cond, (Poisoned, Refused)):
        yield
        return
    if not isinstance(cond, RuntimeScalar) or cond.dtype.name != "bool":
        what = f"a runtime {cond.dtype}" if isinstance(cond, RuntimeScalar) else type(cond).__name__
        help = ("compare it: `ctx.when(n > 0)`" if isinstance(cond, RuntimeScalar)
                else "a condition known while tracing is a Python `if`")
        tracer.refuse(Violation("RUNTIME-3", f"`ctx.when` takes a runtime bool, not {what}", help=help), loc, "when")
        yield
        return
    begin = GuardBegin.build(tracer.value, cond=cond.value, loc=loc)
    tracer.emit(begin)
    try:
        yield
    finally:
        tracer.emit(GuardEnd.build(tracer.value, begin=begin.result, loc=loc))
