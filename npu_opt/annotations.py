"""A kernel annotation that does not evaluate (`HbmTensr[...]`, a name npu-opt does not
export) is the user's USAGE error at the parameter's line, with "did you mean"."""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
from typing import Any

from ir.diagnostic import Violation
from ir.location import Location

__all__ = ["BAD_ANNOTATION", "annotation_violation", "annotation_location", "did_you_mean"]

BAD_ANNOTATION = object()  # an annotation already refused: nothing more to check about it


def did_you_mean(name: str, candidates: Any) -> str | None:
    """`did you mean `X`?` for the closest of `candidates`, or None."""
    import difflib  # a refusal's hint only: not loaded by a kernel that compiles

    close = difflib.get_close_matches(name, sorted({str(c) for c in candidates}), n=1, cutoff=0.75)
    return f"did you mean `{close[0]}`?" if close else None


def annotation_violation(e: BaseException, text: str, scope: dict[str, Any]) -> Violation:
    """USAGE: the annotation `text` raised `e` when evaluated in the kernel's module."""
    if isinstance(e, NameError) and getattr(e, "name", None):
        hint = did_you_mean(e.name, [*scope, *dir(builtins)])
        return Violation("USAGE", f"the annotation `{text}` names `{e.name}`, which is not defined",
                         help=hint or "import it (`from npu_opt import *` exports the tensor types and dtypes)")
    return Violation("USAGE", f"the annotation `{text}` raised {type(e).__name__}: {e}",
                     help="an annotation is HbmTensor[dtype, Chip, Element] (or a tuple of them for results)")


def annotation_location(fn: Any, name: str | None, default: Location) -> Location:
    """The line and column of parameter `name`'s annotation (`return`: the return one)."""
    try:
        lines, first = inspect.getsourcelines(fn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return default
    func = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if func is None:
        return default
    arg = next((a for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs] if a.arg == name), None)
    # a parameter without an annotation: point at the parameter itself, not at the decorator
    node = func.returns if name == "return" else (arg.annotation or arg) if arg is not None else None
    if node is None:
        return default
    indent = len(lines[0]) - len(lines[0].lstrip())
    return Location(default.file, first + node.lineno - 1, node.col_offset + indent + 1,
                    max((node.end_col_offset or node.col_offset + 1) - node.col_offset, 1)
                    if node.end_lineno == node.lineno else 1)
