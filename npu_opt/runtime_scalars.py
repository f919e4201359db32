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
keeps `(scalar, stride, limit)` beside its static offsets. Its users: a Tensor DMA as the
source (`to_dm`, `to_hbm`, `to_dm_view`, `to_hbm_view`; the `window` carries the scalar)
or the destination (`to_dm_view`, `to_hbm_view`; the `to_view` does), and a stream's
`begin` (the `window` again), and `commit_view` as the destination (a `to_view` after
the commit, which the lowering folds into the commit). Everything else keeps RUNTIME-2:
a runtime start of a chip, cluster or slice tile, a runtime-tiled view read by anything else (an interleaved `begin`, `to_spm`, a
redistribution, a scatter) or written by anything else (`memset`, a scatter). RUNTIME-9: a start that is
not a `usize`, or whose step is not whole bytes; VIEW-13: a DM write whose step is not
whole 8-byte units. A tile of a runtime-tiled view may take a second runtime start when
both are proven in range while tracing (loop indices of trace-time bounds; else LOOP-7):
the two become one start (`_second_start`).
"""

from __future__ import annotations

import contextlib
import dis
import math
import sys
from collections.abc import Iterator
from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.location import user_location
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
           "u32", "i64", "u64", "usize", "IMM_LIMIT", "runtime_retile", "refuse_runtime_read",
           "runtime_write_refusal"]

u32, i64, u64, usize = (SCALAR_DTYPES[n] for n in ("u32", "i64", "u64", "usize"))
IMM_LIMIT = 1 << 47
"""A literal in a scalar expression is below 2**47 in magnitude (a VISA integer field)."""


def _refuse(code: str, message: str, method: str, help: str | None = None, label: str | None = None) -> Poisoned:
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
            _refuse("CTX-1", f"`to_spm` runs on the Tensor DMA engine, not on {dma!r}", "to_spm",
                    help="pass ctx.tdma: `s.to_spm(ctx.tdma)`")
            return REFUSED
        tracer = current()
        op = ScalarLoad.build(tracer.value, src=self.value, loc=location_of("to_spm"))
        tracer.emit(op)
        return RuntimeScalar(op.result)

    def _unread(self, *args: Any) -> Any:
        _refuse("RUNTIME-7", f"scalar parameter `{self.name}` is in HBM; read it before computing with it",
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
    after = [i for i in dis.get_instructions(frame.f_code) if frame.f_lasti < i.offset <= frame.f_lasti + 8]
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
            _refuse("RUNTIME-1", f"an `assert` on a runtime {self.dtype}: a kernel cannot stop at run time",
                    "assert", label="this condition is known only when the kernel runs",
                    help="check the launch value on the host before `npu_opt.run`, or guard the work with "
                         "`with ctx.when(cond):` (docs/runtime.md)")
            return True  # the assert passes: the trace goes on
        _refuse("RUNTIME-1", f"a runtime {self.dtype} has no truth value while the kernel is traced",
                "if", label="Python `if` / `while` / `and` / `or` / `not` here",
                help="guard the work with `with ctx.when(cond):` (docs/runtime.md)")
        return False

    def _no_number(self, *args: Any) -> int:
        _refuse("RUNTIME-2", f"a runtime {self.dtype} is not a number known while tracing",
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
                _refuse("RUNTIME-4", f"`{method}` of {a_an(self.dtype)} and {a_an(rhs.dtype)}: the operands of a scalar "
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
        _refuse("RUNTIME-4", f"`{method}` of a runtime {d} and {rhs!r}: the literal is not {a_an(d)} value "
                f"of the scalar immediate range (|x| < 2**47)", method,
                help=f"write a literal of {d}, or cast the scalar first")
        return None

    def _arith(op: str, method: str) -> Any:  # noqa: N805 - builds the methods below
        def fn(self: RuntimeScalar, rhs: Any) -> Any:
            if self.dtype.name == "bool":
                _refuse("RUNTIME-4", f"`{method}` on a runtime bool", method,
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
            _refuse("RUNTIME-5", f"`cast({name})`: a runtime scalar casts to an integer type only", "cast",
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


# --- tiles at a runtime start (docs/runtime.md#runtime-tile-starts) ------------------------

_TAKEN = ("a runtime tile start is taken by the `tile` of a view that a Tensor DMA copies from or into, a "
          "stream's `begin` reads or `commit_view` writes")


def runtime_retile(view: Any, method: str, level: str, index: Any, length: Any, mapping: Any, start: Any) -> Any:
    """The tile of `view` at the runtime scalar `start`, or a refusal."""
    if level != "element":
        return _refuse("RUNTIME-2", f"{_TAKEN}; `{method}` (the {level} level) needs a trace-time start", method,
                       help="tile the element level of the view a DMA copies from or into, or guard "
                            "static tiles with `ctx.when(i == k)`")
    if start.dtype.name != START_DTYPE:
        return _refuse("RUNTIME-9", f"a runtime tile start is a usize, not {a_an(start.dtype)}", method,
                       help="cast it as the reference's `i as usize`: `.tile(..., i.cast(usize))`")
    step = runtime_tile_step(view.type.element, index, length, mapping, view.WRITABLE)
    if isinstance(step, Violation):
        return _refuse(step.code, step.message, method, help=step.help)
    stride, limit = step
    if start.form is UNPROVEN:
        return _refuse("LOOP-2", "this tile start is built from a loop index in a way no check covers for "
                       "every iteration (only `+`, `-`, `*` by a constant and casts to usize are)", method,
                       help="write the start as `a * i + b`, or unroll the loop with a Python `for` (docs/loops.md)")
    fault = range_fault(start.form, limit)
    if fault is not None:
        return _refuse("LOOP-1", f"the tile start {fault}", method, label="out of range for that iteration",
                       help=f"a tile of {length} starts at 0 ..= {limit}: shorten the loop or shift the start")
    bits = view.type.dtype.bits
    if stride * bits % 8:
        return _refuse("RUNTIME-9", f"one step of the runtime start moves {stride} cells of {view.type.dtype}, "
                                    "not whole bytes", method,
                       help="tile an axis whose step holds whole bytes, or use a trace-time start")
    runtime = RuntimeStart(start, stride, limit)
    if view._runtime is not None:
        runtime = _second_start(view._runtime, runtime, method)
        if isinstance(runtime, Poisoned):
            return runtime
    return view._derive(attrs.evolve(view.type, element=mapping), view._offsets, runtime=runtime)


class RuntimeStart(tuple):
    """A view's runtime start as its `window` records it, `(scalar value, cells per step,
    largest start)`, keeping the `RuntimeScalar` (its loop form) for a second start."""

    scalar: Any

    def __new__(cls, scalar: Any, stride: int, limit: int) -> RuntimeStart:
        self = super().__new__(cls, (scalar.value, stride, limit))
        self.scalar = scalar
        return self


def _proven(start: RuntimeStart) -> bool:
    """Whether the start stays in `0 ..= limit` for every iteration, as the trace proved it
    (an affine form of loop indices with trace-time bounds)."""
    low, high = (start.scalar.form.low(), start.scalar.form.high()) if isinstance(start.scalar.form, Affine) \
        else (None, None)
    return low is not None and high is not None and 0 <= low and high <= start[2]


def _second_start(first: RuntimeStart, second: RuntimeStart, method: str) -> Any:
    """Two runtime starts of one view (a tile of a tile, as nested loops over row and column
    tiles give) as one: the window moves by `a * s1 + b * s2` cells, written as the scalar
    `a/g * s1 + b/g * s2` of `g = gcd(a, b)`-cell steps. The device checks one start against
    one limit, so each must be proven in range while tracing (LOOP-7)."""
    for zero, other in ((first, second), (second, first)):   # a tile as long as its index: start 0
        if zero[2] == 0 and _proven(zero):
            return other
    if not (_proven(first) and _proven(second)):
        return _refuse("LOOP-7", "a view tiled at two runtime starts needs both proven in range while "
                       "tracing: affine in the indices of loops with a trace-time bound", method,
                       help="copy the first tile out (`.to_dm(ctx.tdma, ...)`) and tile the copy, or "
                            "bound the loop with an int (docs/loops.md#two-runtime-starts)")
    g = math.gcd(first[1], second[1])
    parts = [r.scalar if r[1] == g else r.scalar * (r[1] // g) for r in (first, second)]
    combined = parts[0] + parts[1]
    if isinstance(combined, Refused):
        return Poisoned(method)
    return RuntimeStart(combined, g, first[2] * (first[1] // g) + second[2] * (second[1] // g))


def refuse_runtime_read(what: str) -> None:
    """RUNTIME-2 for a runtime-tiled view read by something other than a Tensor DMA, at the
    user's call being executed (the reader of a view: `begin`, a gather, ...)."""
    current().refuse(Violation("RUNTIME-2", f"{_TAKEN}; {what} needs a trace-time start",
                               help="copy the tile out with `.to_dm(ctx.tdma, ...)` first and use the copy"),
                     user_location(None), "view")


def runtime_write_refusal(what: str) -> Violation:
    """RUNTIME-2 for a write into a runtime-tiled view by something other than a Tensor DMA."""
    return Violation("RUNTIME-2", f"{_TAKEN}; {what} needs a trace-time start",
                     help="write with `src.to_dm_view(ctx.tdma, view)` / `to_hbm_view`, or guard static tiles "
                          "with `ctx.when(i == k)`")
