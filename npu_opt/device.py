"""`@device(chip=N)`: a kernel function, traced on demand into IR with every [T] rule checked.

Tracing calls the function once with a `Context` and phantom `HbmTensor` handles built
from the parameter annotations; it records one op per stage call and never touches data.
"""

from __future__ import annotations

import copy
import inspect
import linecache
import os
from collections.abc import Callable
from typing import Any


from ir.rules.fetch_size import fetch_size_faults  # FETCH-11: checked once the adapters are known
from ir.boundary import TargetRef, target_facts
from ir.diagnostic import Violation
from ir.errors import InternalError, MappingError, NpuOptError, exception_text
from ir.kernel import Kernel, verify_kernel
from ir.location import OWN_PACKAGES, Location, tb_frames
from ir.machine import Constants, checking_against
from ir.mapping.axes import REGISTRY_NAME
from ir.ops import Final, Param, Return
from ir.rules.space import validate_type
from ir.rules.topology import pe_violation
from ir.topology import CHIP_TARGETS, DEFAULT_PE, PE_COUNTS, host_chip_fault, named_chip_counts
from ir.types import HbmType
from npu_opt.annotations import BAD_ANNOTATION, annotation_location, annotation_violation
from npu_opt.fault_owner import USER_EXITS, exit_text, interrupted, raised_by_us
from npu_opt.context import Context
from npu_opt.factory_variable_escapes import factory_escapes, shadowed_escapes
from npu_opt.result_layout import adopt_annotation
from npu_opt.params import BadParam, Leaf, build_value, param_tree
from npu_opt.runtime_scalars import refuse_scope_faults, scalar_param
from npu_opt.stagebase import Poisoned
from npu_opt.tensors import HbmTensor, TensorSpec
from npu_opt.trace import TraceResult, Tracer, tracing
from npu_opt.views import read_view, write_view
from npu_opt.resident import check_total, resident_param
from npu_opt.per_file_imports import in_scope
import sys
from ir.words import a_an

__all__ = ["device", "DeviceKernel"]


class DeviceKernel:
    """A `@device` function. Use `npu_opt.check/compile/run`; it is not called directly."""

    def __init__(self, fn: Callable[..., Any], chips: int, pe: int = DEFAULT_PE) -> None:
        self.fn = fn
        self.chips = chips
        self.pe = pe
        self.name = fn.__name__
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__
        code = fn.__code__
        self.file = code.co_filename
        self.line = code.co_firstlineno

    def renamed(self, name: str) -> DeviceKernel:
        """This kernel under another name (its artifact's): a generic kernel's factory called
        twice in one file makes two kernels of one function name (driver/discover.py)."""
        twin = copy.copy(self)
        twin.name = twin.__name__ = name
        return twin

    def __repr__(self) -> str:
        pe = "" if self.pe == DEFAULT_PE else f", pe={self.pe}"
        return f"<device kernel {self.name} (chip={self.chips}{pe})>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise NpuOptError(f"{self.name} is a @device kernel; run it with npu_opt.run({self.name}, ...) "
                          "or check it with npu_opt.check", code="USAGE")

    @property
    def file_display(self) -> str:
        """The kernel's file, relative to the working directory when below it."""
        rel = os.path.relpath(self.file)
        return self.file if rel.startswith("..") else rel

    @property
    def location(self) -> Location:
        return Location(self.file, self.line, 1)

    @property
    def axes(self) -> tuple[tuple[str, int], ...]:
        """The axis declarations of the kernel's module (its `axes()` registry), in order;
        the trace records them on the kernel, where every later layer reads them."""
        declared = self.fn.__globals__.get(REGISTRY_NAME)
        return tuple(declared.items()) if isinstance(declared, dict) else ()

    def trace(self, target: TargetRef = None) -> TraceResult:
        """Trace the kernel: its IR and every diagnostic, in report order (with its file's
        own imports when the command line loaded it: npu_opt/per_file_imports.py)."""

        target = _read_target(target)
        with in_scope(self.fn.__module__), checking_against(_constants_of(target)):
            return self._trace(target)

    def _trace(self, target: TargetRef) -> TraceResult:
        tracer = Tracer(self.name, self.chips, target)
        self._check_chips(tracer, target)
        for message, fix in shadowed_escapes(self.fn, getattr(self, "factory_escapes", {})):
            tracer.refuse(Violation("USAGE", message, help=fix), self.location, None)
        params = self._parameters(tracer)
        handles, writable = self._handles(tracer, params[1:])
        check_total(tracer)
        returned = self._run_body(tracer, handles)
        if isinstance(returned, Poisoned) and returned._what == "kernel":
            for chain in tracer.chains:  # the body stopped early: open streams are not the user's fault
                chain.dead = True
        self._finals(tracer, writable)
        self._returns(tracer, returned)
        stopped = isinstance(returned, Poisoned) and returned._what == "kernel"
        refuse_scope_faults(tracer, stopped)  # RUNTIME-6, LOOP-3/4: uses across a region's edge, finals and returns too
        self._whole_kernel_checks(tracer, target)
        kernel = Kernel(self.name, self.chips, tuple(tracer.ops), self.axes, self.pe)
        try:
            verify_kernel(kernel)
        except InternalError as e:
            raise InternalError(f"IR verifier failed on @{self.name}: {e}") from e
        return TraceResult(kernel, tuple(tracer.diagnostics))

    def _check_chips(self, tracer: Tracer, target: TargetRef) -> None:
        """SPACE-1: the target runs kernels of this many chips."""
        chips = _target_chips(target)
        if self.chips not in chips:
            tracer.refuse(Violation("SPACE-1", f"@device(chip={self.chips}) is not supported by the target",
                                    label=f"legal chip counts: {sorted(chips)}",
                                    help="use a chip count the target lists (`npu-opt targets`), or a target "
                                         "with more chips: rngd-2chip, rngd-4chip"),
                          self.location, None)

    def _run_body(self, tracer: Tracer, handles: list[Any]) -> Any:
        """Call the kernel body on the parameter handles; an exception it raises becomes a
        refusal at the line that raised it, and the result a poisoned `kernel`."""
        with tracing(tracer):
            try:
                return self.fn(Context(), *handles)
            except MappingError as e:
                loc, notes = _mapping_site(e)
                tracer.refuse(Violation(e.code, e.detail.splitlines()[0], notes=notes), loc, None)
            except NpuOptError as e:
                code = e.code
                if code == "ICE" and not raised_by_us(e):  # the ICE code is npu-opt's own bugs', never the user's
                    code = "USAGE"
                tracer.refuse(Violation(code, exception_text(e)), _raise_site(e), None)
            except USER_EXITS as e:
                if interrupted(e):  # a Ctrl-C, or a signal handler's exception: not the kernel's
                    raise
                tracer.refuse(Violation("USAGE", f"the kernel raised {exit_text(e)} while being traced",
                                        help="a kernel body returns its result; it may not exit or interrupt "
                                             "the compiler"), _raise_site(e) or self.location, None)
            except BaseException as e:  # the user's own Python error inside the kernel body
                if raised_by_us(e) or interrupted(e):
                    raise  # our bug (the caller reports an ICE), or a harness's timeout: not the kernel's
                tracer.refuse(Violation("USAGE", f"the kernel raised {type(e).__name__}: {exception_text(e)}",
                                        help="fix the Python error; the trace stopped here"),
                              _raise_site(e), None)
        return Poisoned("kernel")

    def _whole_kernel_checks(self, tracer: Tracer, target: TargetRef) -> None:
        """The rules read off the finished trace: SPACE-5 (the kernel's PEs), FETCH-11 (fetch
        sizes, once every adapter is known) and TYPE-8 (streams that never reach a sink)."""
        too_big = pe_violation(tracer.ops, self.pe, target)
        if too_big is not None:
            tracer.refuse(too_big[1], too_big[0].loc, getattr(too_big[0], "STAGE", None), too_big[0])
        for fetch, found in fetch_size_faults(tracer.ops, tracer.poisoned, target):
            tracer.refuse(found, fetch.loc, fetch.STAGE, fetch)
        for chain in tracer.chains:
            if not chain.done and not chain.dead:
                tracer.refuse(Violation("TYPE-8", "this stream never reaches a sink",
                                        label="started here",
                                        help="end the chain with `.to_trf(...)` or `.commit_trim(...).commit(...)`"),
                              chain.loc, "begin")

    # --- parameters and results ---------------------------------------------------------

    def _annotation(self, value: Any, tracer: Tracer | None = None, name: str | None = None) -> Any:
        """The annotation's value; a string annotation (`from __future__ import annotations`)
        that fails to evaluate is the user's USAGE error at the parameter (`BAD_ANNOTATION`)."""
        if not isinstance(value, str):
            return value
        try:
            return eval(value, self.fn.__globals__)  # noqa: S307 - the user's own annotation
        except Exception as e:  # noqa: BLE001 - the user's annotation, the user's error
            if tracer is None:
                raise
            tracer.refuse(annotation_violation(e, value, self.fn.__globals__),
                          annotation_location(self.fn, name, self.location), None)
            return BAD_ANNOTATION

    def _parameters(self, tracer: Tracer) -> list[tuple[str, Any, Location]]:
        sig = inspect.signature(self.fn)
        out = []
        for p in sig.parameters.values():
            ann = p.annotation
            ann = None if ann is inspect.Parameter.empty else self._annotation(ann, tracer, p.name)
            out.append((p.name, ann, self.location))
        if not out:
            tracer.refuse(Violation("TYPE-6", "a @device function takes `ctx: Context` first"), self.location, None)
            return [("ctx", None, self.location)]
        return out

    def param_trees(self) -> list[Any]:
        """The parameter tree of every parameter after `ctx` (`npu_opt.params`); a struct
        field without a tensor type is a `BadParam` node."""
        sig = inspect.signature(self.fn)
        counter = [0]
        out = []
        for p in list(sig.parameters.values())[1:]:
            ann = None if p.annotation is inspect.Parameter.empty else self._annotation(p.annotation)
            out.append(param_tree(p.name, ann, self.fn.__globals__, counter))
        return out

    def _handles(self, tracer: Tracer, params: list[tuple[str, Any, Location]]) -> tuple[list[Any], list[Any]]:
        """The traced value of every parameter and the handles of the in-out leaves."""
        handles: list[Any] = []
        writable: list[Any] = []
        counter = [0]
        for name, spec, loc in params:
            if spec is BAD_ANNOTATION:
                handles.append(Poisoned(name))
                continue
            tree = param_tree(name, spec, self.fn.__globals__, counter)
            if isinstance(tree, BadParam):
                tracer.refuse(tree.violation, annotation_location(self.fn, name, loc), None)
                handles.append(Poisoned(name))
                continue
            handles.append(build_value(tree, lambda leaf: self._param(tracer, leaf, loc, writable)))
        return handles, writable

    def _param(self, tracer: Tracer, leaf: Leaf, loc: Location, writable: list[Any]) -> Any:
        if leaf.spec.form == "scalar":  # HbmScalar[T] (docs/runtime.md)
            return scalar_param(tracer, leaf, loc, self.fn)
        if getattr(leaf.spec.tensor, "kind", None) == "dm":  # a resident DM parameter (npu_opt/resident.py)
            return resident_param(tracer, leaf, annotation_location(self.fn, leaf.name.split(".")[0], loc),
                                  self.chips, writable)
        hbm = self._check_hbm_spec(tracer, leaf.spec.tensor, f"parameter `{leaf.name}`", loc)
        if hbm is None:
            return Poisoned(leaf.name)
        op = Param(name=leaf.name, index=leaf.index, result=tracer.value(hbm), loc=loc, mutable=leaf.spec.writable)
        tracer.emit(op)
        handle = HbmTensor(op.result, writable=leaf.spec.writable, label=leaf.name)
        if leaf.spec.writable:
            writable.append((op.result, handle))
        if leaf.spec.form == "tensor":
            return handle
        # a view parameter arrives as that view
        return (write_view if leaf.spec.form == "view_mut" else read_view)(handle)

    def _finals(self, tracer: Tracer, writable: list[Any]) -> None:
        """One `final` op per in-out parameter: the tensor's latest version."""
        for param, handle in writable:
            tracer.ops.append(Final.build(tracer.value, param=param, value=handle.value, loc=self.location))

    def _check_hbm_spec(self, tracer: Tracer, spec: Any, what: str, loc: Location) -> HbmType | None:
        if not isinstance(spec, TensorSpec) or spec.kind != "hbm":
            tracer.refuse(Violation("TYPE-6", f"{what} must be annotated HbmTensor[dtype, Chip, Element]",
                                    label=f"found {spec!s:.60}"), loc, None)
            return None
        t = spec.resolve()
        fault = t if isinstance(t, Violation) else (validate_type(t, self.chips) or _host_element(t, what))
        if fault is not None:
            tracer.refuse(fault, loc, None)
            return None
        return t

    def _returns(self, tracer: Tracer, returned: Any) -> None:
        ann = inspect.signature(self.fn).return_annotation
        ann = None if ann is inspect.Signature.empty else self._annotation(ann, tracer, "return")
        if ann is BAD_ANNOTATION:
            return
        specs = _result_specs(ann)
        values = returned if isinstance(returned, tuple) else (() if returned is None else (returned,))
        if any(isinstance(v, Poisoned) for v in values) or isinstance(returned, Poisoned):
            return
        if specs is None:
            tracer.refuse(Violation("TYPE-6", "the return annotation must be HbmTensor[...], a tuple of them, or None",
                                    label=f"found {ann!s:.60}"), self.location, None)
            return
        if len(values) != len(specs):
            tracer.refuse(Violation("TYPE-6", f"the kernel returns {len(values)} value(s) but its annotation "
                                    f"declares {len(specs)}"), self.location, None)
            return
        for position, (value, spec) in enumerate(zip(values, specs)):
            want = self._check_hbm_spec(tracer, spec, f"result {position}", self.location)
            if want is None:
                return
            if not isinstance(value, HbmTensor):
                tracer.refuse(Violation("TYPE-6", f"result {position} is {a_an(type(value).__name__)}, not an HBM tensor",
                                        help="move it back with `.to_hbm(ctx.tdma)`"), self.location, None)
                return
            got = value.type
            same = (got.dtype == want.dtype and got.element.equivalent(want.element)
                    and got.chip.equivalent(want.chip))
            # an inferred `to_hbm` takes the annotation's spelling too: the host array follows its terms
            if got != want and not adopt_annotation(tracer, value, want) and not same:
                tracer.refuse(Violation("TYPE-6", f"result {position} has type {got}, but the annotation says {want}",
                                        help="pass the annotated type to `.to_hbm(ctx.tdma, HbmTensor[...])`"),
                              self.location, None)
                return
        tracer.ops.append(Return(values=tuple(v.value for v in values), loc=self.location))


def _read_target(target: TargetRef) -> TargetRef:
    """The target a file path or shipped name (not `rngd`: ir/machine.py's RNGD) names, so rules read its constants."""
    if not isinstance(target, (str, os.PathLike)) or str(target) == "rngd":
        return target
    from tu_ops.target import get_target  # `check` loads no tu_ops: only a named target is read
    return get_target(target)


def _constants_of(target: TargetRef) -> Constants | None:
    """The constants the trace's rules read: the target object's, or `rngd`'s (None)."""
    facts = target_facts(target)
    return facts.constants if facts is not None else None


def _target_chips(target: TargetRef) -> frozenset[int]:
    """Legal chip counts of the target: a named one's by `named_chip_counts`; a loaded one's
    its own, with every count of `CHIP_TARGETS` for `rngd` (`tu_ops.target.for_chips`)."""
    facts = target_facts(target)
    if facts is None:
        return named_chip_counts(target)
    if facts.name == "rngd":
        return frozenset(CHIP_TARGETS) | frozenset(facts.chips)
    return frozenset(facts.chips) if facts.chips else frozenset({1})


def _result_specs(ann: Any) -> tuple[Any, ...] | None:
    if ann is None or ann is type(None):
        return ()
    if isinstance(ann, TensorSpec):
        return (ann,)
    if isinstance(ann, tuple):
        return ann
    if getattr(ann, "__origin__", None) is tuple:
        return tuple(ann.__args__)
    return None


def _host_element(t: HbmType, what: str) -> Violation | None:
    """TYPE-6: a Chip that names axes is axis digits and padding (`ir.topology.host_chip_fault`),
    so a host array has one leading dimension per chip digit. Any element layout is accepted."""
    chip_fault = host_chip_fault(t.chip, t.element)
    if chip_fault is None:
        return None
    return Violation("TYPE-6", f"{what}: {chip_fault}",
                     help="give the chips an axis or an axis digit, e.g. Chip m(\"C\") with axes(C=2): "
                          "the host array then has a leading dimension of |C|")


def _raise_site(e: BaseException) -> Location | None:
    """The innermost user frame of an exception's traceback."""
    site = None
    for frame, line in tb_frames(e.__traceback__):
        module = (frame.f_globals.get("__name__") or "").split(".")[0]
        if module not in OWN_PACKAGES:
            site = Location(frame.f_code.co_filename, line)
    return site


def _mapping_site(e: MappingError) -> tuple[Location | None, tuple[str, ...]]:
    """Where a MappingError points in the user's source: under the faulty character of the
    mapping text when the text is written literally on the calling line."""
    site = _raise_site(e)
    if site is None or e.text is None:
        return site, ()
    source = linecache.getline(site.file, site.line)
    start = source.find(e.text) if e.text else -1
    quoted = f'in m("{e.text}")'
    if start < 0 or e.column is None:
        caret = " " * ((e.column or 1) - 1) + "^"
        return site, (quoted, f"      {caret}")
    return Location(site.file, site.line, start + e.column, 1), (f"{e.category.replace('_', ' ')}", quoted)


def device(fn: Callable[..., Any] | None = None, *, chip: int = 1, pe: int = DEFAULT_PE) -> Any:
    """Mark a kernel function: `@device(chip=1, pe=8)`. `chip` is the number of chips used,
    `pe` the processing elements of each chip (1, 2, 4 or 8; docs/machine/topology.md)."""
    if isinstance(chip, bool) or not isinstance(chip, int) or chip < 1:
        raise NpuOptError(f"@device(chip=...) takes a positive int, not {chip!r}", code="USAGE")
    if isinstance(pe, bool) or pe not in PE_COUNTS:
        raise NpuOptError(f"@device(pe=...) takes one of {list(PE_COUNTS)}, not {pe!r}", code="USAGE")

    factory = sys._getframe(1)  # the code decorating the kernel (a factory function, or the module)

    def wrap(f: Callable[..., Any]) -> DeviceKernel:
        kernel = DeviceKernel(f, chip, pe)
        kernel.factory_escapes = factory_escapes(f, factory)
        return kernel

    return wrap(fn) if fn is not None else wrap

