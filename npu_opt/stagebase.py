"""Typestate machinery shared by every stage object (docs/machine/index.md).

`stage_method` wraps each legal method: it captures the user's location, refuses a
second call on a consumed stream (TYPE-7), turns a bad call signature into TYPE-6, and
hands the bound arguments to the implementation. Calling a stage method the object does
not offer is TYPE-1: recorded, and answered with a `Poisoned` object whose every method
returns itself, so tracing goes on.

A class offers the stage methods it defines or inherits (`OFFERS`), less those it
`withdrawn`s: a withdrawn method stays callable only to give its own coded refusal.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any, Iterator

import attrs

from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.location import Location, user_location
from ir.mapping.nodes import Mapping, written
from ir.ops import Value
from ir.stage_spec import spec_named
from npu_opt.annotations import did_you_mean
from npu_opt.trace import TracedStream, current, is_tracing, note_stage
from ir.words import a_an

__all__ = ["Poisoned", "StreamStage", "STAGE_AFTER", "next_stage", "stage_method", "STAGE_METHODS", "LazyStageMethod", "load_lazy_stages", "kind_error", "refuse_dead", "withdrawn",
           "conform", "adopt", "signature_text", "emit_op"]

# Every method name some stage offers; asking another stage for one of them is TYPE-1. The
# stream stages add theirs as their classes are made; these four belong to tensors and contexts.
STAGE_METHODS: set[str] = {"to_dm", "to_hbm", "view", "begin"}


class Poisoned:
    """What a refused TYPE-1/TYPE-2/TYPE-6/TYPE-7 call returns: every method returns it."""

    def __init__(self, what: str = "") -> None:
        self._what = what

    def __getattr__(self, name: str) -> Poisoned:
        if name.startswith("__"):
            raise AttributeError(name)
        return self  # a method to call, or a field of a refused struct parameter (`inputs.x.to_dm(...)`)

    def __call__(self, *args: Any, **kwargs: Any) -> Poisoned:
        return self  # a refused attribute that the kernel then calls

    def __getitem__(self, key: Any) -> Poisoned:
        return self  # a member of a refused tuple parameter, or a tile of a refused view

    def __iter__(self) -> Iterator[Any]:
        return iter(())  # a loop over a refused tuple runs no body (without this, __getitem__ never ends one)

    def __repr__(self) -> str:
        return f"<refused {self._what}>"


class StreamStage:
    """Base of the stream stage objects: a traced value, its chain, and consumption. A class
    that stands for the stream after one traced op names it in `AFTER`: a declared stage
    (ir.stage_spec) is offered after the ops it names, and its result takes the class of
    its `then`."""

    OFFERS: frozenset[str] = frozenset()
    AFTER: type | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _derive_offers(cls)
        if "AFTER" in vars(cls):
            STAGE_AFTER[cls.AFTER] = cls

    def __init__(self, value: Value, chain: TracedStream) -> None:
        self.value = value
        self.chain = chain
        self.consumed = False
        note_stage(value, self)

    @property
    def type(self) -> Any:
        return self.value.type

    def __getattr__(self, name: str) -> Any:
        declared = spec_named(name) if not name.startswith("_") else None
        if declared is not None and type(self).AFTER in declared.after:
            return stage_method(name)(functools.partial(_declared_stage, declared)).__get__(self)
        if name not in STAGE_METHODS and not name.startswith("_"):
            load_lazy_stages()  # a method of a family not loaded yet is TYPE-1, not a misspelling
        if name in STAGE_METHODS:
            return functools.partial(_not_offered, self, name)
        if not name.startswith("_") and is_tracing():
            return _misspelled(self, name)
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.value}: {self.value.type}>"


STAGE_AFTER: dict[type, type[StreamStage]] = {}  # traced op -> the stage class of its result


def next_stage(stage: StreamStage, loc: Location, op_cls: type, out_cls: type | None,
               fault: Violation | None = None, **fields: Any) -> Any:
    """Emit the op of this call (it types its own result) and wrap its result in the next
    stage object; or, when a check of the call's arguments found `fault`, refuse the call
    (which ends the chain)."""
    if fault:
        return refuse_dead(stage, loc, op_cls.STAGE, fault)
    op = emit_op(stage, loc, op_cls, **fields)
    if out_cls is None:
        return op.result
    return out_cls(op.result, stage.chain)


def emit_op(stage: Any, loc: Location, op_cls: type, **fields: Any) -> Any:
    """Emit the traced op `op_cls` on `stage`'s stream (it types its own result); the op."""
    tracer = current()
    op = op_cls.build(tracer.value, input=stage.value, loc=loc, **fields)
    tracer.emit(op)
    return op


def _declared_stage(spec: Any, stage: StreamStage, loc: Location, *args: Any, **kwargs: Any) -> Any:
    """The DSL method of a declared stage: its traced op with the choices given, in the
    stage class of its `then`; a call that does not fit the choices is TYPE-6."""
    names = [f.name for f in attrs.fields(spec.op) if f.metadata.get("role") == "attr"]
    if len(args) > len(names) or set(kwargs) - set(names):
        return refuse_dead(stage, loc, spec.stage, kind_error(f"bad arguments to `{spec.stage}`",
                                                             help=f"it takes {', '.join(names) or 'nothing'}"))
    return next_stage(stage, loc, spec.op, STAGE_AFTER[spec.then], **dict(zip(names, args)), **kwargs)


def _stage_methods(cls: type) -> dict[str, Any]:
    """attribute -> the stage method it resolves to, over the class and its bases."""
    found: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        found.update({k: v for k, v in vars(klass).items() if hasattr(v, "stage_name")})
    return found


def _derive_offers(cls: type[StreamStage]) -> None:
    methods = _stage_methods(cls).values()
    cls.OFFERS = frozenset(m.stage_name for m in methods if not getattr(m, "withdrawn", False))
    STAGE_METHODS.update(m.stage_name for m in methods)


def withdrawn(name: str, why: Callable[[Any], Violation]) -> Callable[..., Any]:
    """A stage method `name` that a class declares it does not offer, and why: `OFFERS` (the
    list a TYPE-1 note gives) leaves it out, and a call is refused with `why(stage)`, a coded
    violation, instead of TYPE-1. Set it as the class attribute `name`; it also withdraws a
    method of that name a base class offers."""

    def refuse(self: StreamStage, loc: Location, *args: Any, **kwargs: Any) -> Poisoned:
        return refuse_dead(self, loc, name, why(self))

    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = f"Not offered here: a call is refused with the reason `{why.__name__}` gives."
    method = stage_method(name)(refuse)
    method.withdrawn = True  # type: ignore[attr-defined]
    return method


def conform(cls: type[StreamStage], doc: str, methods: dict[str, Any]) -> None:
    """Hold a written-out stage class to its declaration: its own stage methods become exactly
    `methods` (a unit declared after the class was generated is added), its docstring `doc`,
    and `OFFERS` is derived again."""
    for attr, value in list(vars(cls).items()):
        if hasattr(value, "stage_name") and methods.get(attr) is not value:
            delattr(cls, attr)
    for attr, fn in methods.items():
        if vars(cls).get(attr) is not fn:
            setattr(cls, attr, fn)
    cls.__doc__ = doc
    _derive_offers(cls)


def adopt(table: dict[Any, type], classes: dict[Any, type], declare: Callable[..., Any]) -> None:
    """Enter written-out stage classes (a generated module's) into `table`, each held to its
    declaration: `declare(*key)` gives the class's (name, docstring, methods)."""
    for key, cls in classes.items():
        name, doc, methods = declare(*key)
        if cls.__name__ != name:
            raise TypeError(f"{cls.__module__}.{cls.__name__} is declared as {name}: the module is stale, "
                            "regenerate it with `python -m npu_opt.gen_stage_classes`")
        conform(cls, doc, methods)
        table[key] = cls


def _offered_text(stage: StreamStage) -> str:
    return ", ".join(f"`{m}`" for m in sorted(stage.OFFERS)) or "nothing"


def _not_offered(stage: StreamStage, name: str, *args: Any, **kwargs: Any) -> Poisoned:
    tracer = current()
    loc = user_location(name)
    stage.chain.dead = True
    if not tracer.is_poisoned(stage.value):
        tracer.refuse(Violation(
            "TYPE-1", f"`{name}` cannot be called on {a_an(type(stage).__name__)}",
            label=f"{type(stage).__name__} offers {_offered_text(stage)}",
            help=_type1_help(stage, name)), loc, name)
    return Poisoned(name)


def _misspelled(stage: StreamStage, name: str) -> Poisoned:
    """TYPE-1 for a name no stage offers (`.contract_pakcet`): caret under the name, the
    methods this stage offers, and the closest of them."""
    loc = user_location(name)
    stage.chain.dead = True
    if not current().is_poisoned(stage.value):
        hint = did_you_mean(name, stage.OFFERS) or did_you_mean(name, STAGE_METHODS)
        current().refuse(Violation(
            "TYPE-1", f"{a_an(type(stage).__name__)} has no method `{name}`",
            label=f"{type(stage).__name__} offers {_offered_text(stage)}",
            help=hint or "see `npu-opt explain TYPE-1` for the stage order"), loc, name)
    return Poisoned(name)


def _type1_help(stage: StreamStage, name: str) -> str:
    if name == "commit" and "commit_trim" in stage.OFFERS:
        return "every commit is preceded by `.commit_trim(packet)`"
    if name == "contract_outer" and "collect" in stage.OFFERS:
        return "call `.collect(time, packet)` first: the Contraction Engine takes whole flits"
    return "see `npu-opt explain TYPE-1` for the stage order"


def kind_error(message: str, help: str | None = None) -> Violation:
    """A TYPE-6 violation: an argument of the wrong kind."""
    return Violation("TYPE-6", message, help=help)


def type_argument_fault(method: str, name: str, given: Any, operand: Any, holder: str) -> Violation | None:
    """TYPE-6 when an explicit type argument (the reference's `::<..>` turbofish, e.g. `trfd`
    of `contract_outer`) names another dtype than `operand` holds; None when omitted."""
    actual = getattr(getattr(operand, "type", None), "dtype", None)
    if given is None or actual is None or given == actual:
        return None
    if not isinstance(given, DType):  # "i8" or np.int8 would read as the dtype it is not
        return kind_error(f"`{name}` of `{method}` must be an npu-opt dtype such as {actual}, "
                          f"not {type(given).__name__} {given!r}", f"drop it ({holder} gives it) or pass {actual}")
    return kind_error(f"`{name}` of `{method}` is {given}, but {holder} holds {actual}",
                      f"drop it ({holder} gives it) or pass {actual}")


def mapping_argument_fault(method: str, name: str, given: Any, actual: Any, holder: str,
                           code: str = "TYPE-6") -> Violation | None:
    """`code` when an explicit mapping type argument (a Rust type parameter the operand
    already fixes, rule 2 of the porting rules) is not a mapping or not the operand's;
    None when omitted or equal cell for cell."""
    if given is None:
        return None
    if not isinstance(given, Mapping):
        return Violation(code, f"`{name}` of `{method}` is a mapping m(\"...\"), not {type(given).__name__} "
                               f"{given!r:.40}", help=f"drop it ({holder} gives it) or pass m(\"{written(actual)}\")")
    if given.equivalent(actual):
        return None
    return Violation(code, f"`{name}` of `{method}` is `{given}`, but {holder} is `{actual}`",
                     help=f"drop it ({holder} gives it) or pass m(\"{written(actual)}\")")


def trf_arguments_fault(trf: Any, lane: Any, trf_element: Any, trfd: Any) -> Violation | None:
    """TYPE-6 for `contract_outer`'s explicit `Lane`, `TrfElement`, `TrfD` (in the reference's
    order) that the TRF tensor `trf` does not hold; a lone non-mapping after the packet is
    `TrfD` (`contract_outer(trf, t, p, i8)`)."""
    if lane is not None and not isinstance(lane, Mapping) and trf_element is None and trfd is None:
        lane, trfd = None, lane
    fault = type_argument_fault("contract_outer", "trfd", trfd, trf, "the TRF tensor")
    for name, given, held in (("lane", lane, "lane"), ("trf_element", trf_element, "element")):
        fault = fault or mapping_argument_fault("contract_outer", name, given, getattr(trf.type, held),
                                                f"the TRF tensor's {held}")
    return fault


def stage_method(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Wrap a stream stage method with location capture, TYPE-7 and TYPE-6 handling.

    The implementation is called as `impl(self, loc, *args, **kwargs)`."""

    def decorate(impl: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(impl)
        params = list(sig.parameters.values())
        public = sig.replace(parameters=[params[0], *params[2:]])

        @functools.wraps(impl)
        def wrapper(self: StreamStage, *args: Any, **kwargs: Any) -> Any:
            tracer = current()
            loc = user_location(name)
            if self.consumed:
                tracer.refuse(Violation(
                    "TYPE-7", f"this {type(self).__name__} was already consumed by an earlier call",
                    label="a stream object can be used by exactly one method call",
                    help="chain the calls, or start another stream with `begin`"), loc, name)
                return Poisoned(name)
            self.consumed = True
            try:
                bound = public.bind(self, *args, **kwargs)
            except TypeError as e:
                self.chain.dead = True
                tracer.refuse(kind_error(f"bad arguments to `{name}`: {e}",
                                         help=f"the signature is `{name}{_public_text(public)}`"), loc, name)
                return Poisoned(name)
            arguments = (*bound.args[1:], *bound.kwargs.values())
            if any(isinstance(a, Poisoned) for a in arguments):   # refused where it was made: reported there
                self.chain.dead = True
                return Poisoned(name)
            if any(getattr(a, "RUNTIME_SCALAR", False) is True for a in arguments):
                self.chain.dead = True  # docs/runtime.md: an immediate is part of the instruction
                tracer.refuse(Violation(
                    "RUNTIME-2", f"an argument of `{name}` is a runtime scalar",
                    label="a stage's immediates are encoded in the instruction: they must be known while tracing",
                    help="pick the constant with a Python `if` on trace-time values, or guard one call per "
                         "constant with `ctx.when(...)`"), loc, name)
                return Poisoned(name)
            return impl(self, loc, *bound.args[1:], **bound.kwargs)

        wrapper.__signature__ = public  # type: ignore[attr-defined]
        wrapper.stage_name = name  # type: ignore[attr-defined]
        return wrapper

    return decorate


class LazyStageMethod:
    """A stage method whose module loads on first use: `vector_init = LazyStageMethod("vector_init",
    _vector_stages)` in a class body, `_vector_stages` a function that imports the module (a
    whole family of stage classes, ~0.1 s to import) and returns it. The function runs when
    the attribute is first read; the real method then replaces this placeholder on every class
    that holds it, so the classes end as if it had been assigned directly. `stage_name` makes
    the placeholder count in `OFFERS` meanwhile, and `load_lazy_stages` runs every such
    function before a name is judged no stage method's (tests/npu_opt/test_lazy_stages.py
    holds the placeholders to the modules)."""

    def __init__(self, name: str, load: Callable[[], ModuleType]) -> None:
        self.stage_name = name
        self.load = load
        self.owners: list[tuple[type, str]] = []
        LAZY_STAGE_LOADERS.add(load)

    def __set_name__(self, owner: type, attr: str) -> None:
        self.owners.append((owner, attr))

    def resolve(self) -> Any:
        """The real method, now set on every class that held this placeholder."""
        real = getattr(self.load(), self.stage_name)
        for owner, attr in self.owners:
            if vars(owner).get(attr) is self:
                setattr(owner, attr, real)
        return real

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        return self.resolve().__get__(obj, owner)


LAZY_STAGE_LOADERS: set[Callable[[], ModuleType]] = set()


def load_lazy_stages() -> None:
    """Import every module a `LazyStageMethod` loads (their stage method names join `STAGE_METHODS`)."""
    for load in sorted(LAZY_STAGE_LOADERS, key=lambda fn: fn.__qualname__):
        load()


def _public_text(sig: inspect.Signature) -> str:
    """`(time, packet, mode)`: the user's parameters (defaults kept), without `self` and
    without our annotations (strings such as 'Any' under postponed evaluation)."""
    params = [p.replace(annotation=inspect.Parameter.empty) for p in list(sig.parameters.values())[1:]]
    return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))


def signature_text(method: Callable[..., Any]) -> str:
    """The user's signature of a stage method, as TYPE-6's help writes it: `(time, packet)`."""
    return _public_text(inspect.signature(method))


def location_of(method: str) -> Location:
    """The user's location for a call that is not a stream stage (DMA, begin)."""
    return user_location(method)


def refuse_call(violation: Violation, method: str) -> Poisoned:
    """Report `violation` at the user's call of `method` (not a stream stage); its Poisoned result."""
    current().refuse(violation, location_of(method), method)
    return Poisoned(method)


def refuse_dead(stage: "StreamStage", loc: Location, name: str, violation: Violation) -> Poisoned:
    """A refusal that ends the chain here (no TYPE-8, no cascade): reported once, unless the
    stage's value is already poisoned by an earlier error."""
    stage.chain.dead = True
    tracer = current()
    if violation.code and not tracer.is_poisoned(stage.value):
        tracer.refuse(violation, loc, name)
    return Poisoned(name)
