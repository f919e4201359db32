"""A traced kernel: its ops in program order, a deterministic printer and an IR verifier.

The kernel carries its module's axis declaration order (`axes`), which every later
layer reads from here."""

from __future__ import annotations


import attrs

from ir.diagnostic import Diagnostic
from ir.errors import InternalError
from ir.mapping.nodes import Mapping, Symbol
from ir.ops import Final, Op, Param, Return
from ir.memo import memo

__all__ = ["Kernel", "TraceResult", "print_kernel", "used_axes", "verify_kernel"]


@attrs.frozen
class Kernel:
    """The traced graph of one `@device` function."""

    name: str
    chips: int
    ops: tuple[Op, ...]
    axes: tuple[tuple[str, int], ...] = ()  # the module's axis declarations, in order
    pe: int = 8  # processing elements per chip, `@device(pe=P)` (ir.topology)

    @property
    def params(self) -> tuple[Param, ...]:
        return tuple(op for op in self.ops if isinstance(op, Param))

    @property
    def finals(self) -> tuple[Final, ...]:
        """The final version of every in-out parameter, in parameter order."""
        return tuple(op for op in self.ops if isinstance(op, Final))

    @property
    def returns(self) -> Return | None:
        last = self.ops[-1] if self.ops else None
        return last if isinstance(last, Return) else None

    def text(self) -> str:
        return print_kernel(self)


def print_kernel(kernel: Kernel) -> str:
    """Deterministic text: one op per line, values numbered in definition order, each op's
    true facts after it, then the axis declarations (and the sizes of axes used but not
    declared). The tests read it back (`tests/kernel_text.py`)."""
    pe = "" if kernel.pe == 8 else f", pe={kernel.pe}"
    lines = [f"kernel @{kernel.name}(chip={kernel.chips}{pe}) {{"]
    lines += [f"  {op.text()}{_facts_text(op)}" for op in kernel.ops]
    declared = dict(kernel.axes)
    others = {name: size for name, size in used_axes(kernel).items() if name not in declared}
    tail = f"}} axes {_decls(declared)}"
    lines.append(tail + (f"; undeclared {_decls(others)}" if others else ""))
    return "\n".join(lines) + "\n"


def _facts_text(op: Op) -> str:
    true = [name for name, value in op.role_fields("fact") if value]
    return f" facts({', '.join(true)})" if true else ""


def _decls(axes: dict[str, int]) -> str:
    return "[" + ", ".join(f"{name}={size}" for name, size in axes.items()) + "]"


def used_axes(kernel: Kernel) -> dict[str, int]:
    """Every axis named in the kernel's types and stage mappings (name -> size), by first
    appearance."""
    out: dict[str, int] = {}
    for op in kernel.ops:
        levels = op.result.type.levels() if op.result is not None else ()
        for mapping in (*levels, *(v for _, v in op.attributes() if isinstance(v, Mapping))):
            for name, size in _mapping_symbols(mapping):
                out.setdefault(name, size)
    return out


@memo(4096)
def _mapping_symbols(mapping: Mapping) -> tuple[tuple[str, int], ...]:
    """(name, size) of every symbol of `mapping`, in text order (a tile loop's ops repeat
    the same mappings: each is walked once)."""
    stack = [mapping]
    found = []
    while stack:
        node = stack.pop()
        if isinstance(node, Symbol):
            found.append((node.name, node.axis_size))
        stack.extend(reversed(node.children()))
    return tuple(found)


def verify_kernel(kernel: Kernel) -> None:
    """Structural invariants of the IR; a failure is an internal compiler error.

    Every operand is defined before use, every value is defined once, params come first,
    and at most one `return` ends the kernel."""
    defined: set[int] = set()
    seen_other = False
    for position, op in enumerate(kernel.ops):
        if isinstance(op, Param):
            if seen_other:
                raise InternalError(f"param `{op.name}` after other ops in @{kernel.name}")
        else:
            seen_other = True
        if isinstance(op, Return) and position != len(kernel.ops) - 1:
            raise InternalError(f"return is not the last op of @{kernel.name}")
        for value in op.operands():
            if value.id not in defined:
                raise InternalError(f"{op.text()}: operand {value} used before its definition")
        if op.result is not None:
            if op.result.id in defined:
                raise InternalError(f"{op.text()}: value {op.result} defined twice")
            defined.add(op.result.id)


@attrs.frozen
class TraceResult:
    """A finished trace: the IR kernel and every diagnostic, in report order."""

    kernel: Kernel
    diagnostics: tuple[Diagnostic, ...]

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.severity == "error")

    @property
    def warnings(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.severity == "warning")
