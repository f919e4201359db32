"""What crosses between the open file and the helpers it calls, for the language server.

- A refusal raised inside an imported helper module (its op's place is the helper's line)
  is shown at the call in the open file's kernel that led there (`call_site`), with the
  helper's place as related information, and kept with its own place for the helper's
  document (`relocate`).
- A call of a helper function returns a stream or a tensor the open file never wrote a
  stage call for: `watch_helpers` wraps the module's helper functions (in the worker's
  child, which ends with the check) so each call records the type of what it returned, at
  the call's place in the open file.
- A variable's hover is the type of the value last assigned to it (`variable_facts`): a
  stage chain's last stage, a helper call's result, a parameter's annotation.
"""

from __future__ import annotations

import ast
import functools
import itertools
import linecache
import os
import sys
import types
from pathlib import Path
from typing import Any

from driver.lsp.positions import utf16_col
from driver.lsp.types_text import LEVELS, describe
from npu_opt.per_file_imports import is_user_module

__all__ = ["function_defs", "relocate", "watch_helpers", "variable_facts", "call_facts", "Calls"]


def function_defs(nodes: list[ast.AST]) -> dict[int, ast.FunctionDef]:
    """The function definitions among a file's `nodes` (its `ast.walk`) by their first line
    (their first decorator's): a kernel's is `defs.get(kernel.line)`."""
    defs: dict[int, ast.FunctionDef] = {}
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defs.setdefault(min([node.lineno] + [d.lineno for d in node.decorator_list]), node)  # type: ignore[arg-type]
    return defs


def _helper_functions(helper: str, line: int) -> tuple[str | None, set[str]]:
    """The name of the innermost function of file `helper` holding `line`, and the names of
    the file's top-level functions."""
    try:
        tree = ast.parse("".join(linecache.getlines(helper)), helper)
    except (SyntaxError, ValueError):
        return None, set()
    inner, top = None, {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= line <= (node.end_lineno or 0):
            if inner is None or node.lineno >= inner.lineno:
                inner = node
    return (inner.name if inner else None), top


def _called_name(node: ast.Call) -> ast.AST | None:
    return node.func if isinstance(node.func, (ast.Name, ast.Attribute)) else None


def _name_span(func: ast.AST) -> tuple[int, int, int]:
    """(line, 1-based byte column, length) of the called name (`f` of `f(...)`, `g` of `m.g(...)`)."""
    if isinstance(func, ast.Attribute):
        return func.end_lineno or func.lineno, (func.end_col_offset or 0) - len(func.attr) + 1, len(func.attr)
    assert isinstance(func, ast.Name)
    return func.lineno, func.col_offset + 1, len(func.id)


def call_site(kernel: ast.FunctionDef | None, helper: str, line: int) -> tuple[int, int, int] | None:
    """Where the kernel calls into the helper file whose `line` raised: a call of the function
    holding that line, else the first call of any of the file's functions; None when the
    kernel calls none (the refusal is then shown at the kernel)."""
    if kernel is None:
        return None
    inner, top = _helper_functions(helper, line)
    calls = sorted((n for n in ast.walk(kernel) if isinstance(n, ast.Call) and _called_name(n) is not None),
                   key=lambda n: (n.lineno, n.col_offset))

    def name_of(call: ast.Call) -> str:
        func = call.func
        return func.attr if isinstance(func, ast.Attribute) else func.id  # type: ignore[union-attr]

    for wanted in ([inner] if inner else []) + [None]:
        for call in calls:
            if name_of(call) == wanted or (wanted is None and name_of(call) in top):
                return _name_span(call.func)
    return None


def relocate(entry: dict[str, Any], kernel: ast.FunctionDef | None, fallback_line: int, path: str) -> None:
    """A diagnostic record raised in another file: shown at the call that led there (or at
    the kernel's line), with the other file's place as related information and as `origin`
    (for that file's own document)."""
    helper = os.path.abspath(entry["file"])
    line, col, length = entry["line"] or 1, entry["col"], entry["length"] or 1
    site = call_site(kernel, helper, line)
    text = linecache.getline(helper, line).rstrip("\n")
    start = utf16_col(text, (col or 1) - 1) if col else 0
    end = utf16_col(text, (col or 1) - 1 + length) if col else len(text)
    where = f"{Path(helper).name}:{line}" + (f":{col}" if col else "")
    entry["related"] = [{"uri": Path(helper).as_uri(), "line0": line - 1, "start": start, "end": end,
                         "message": f"raised here, in {where}"}]
    entry["origin"] = {"path": helper, "line": line, "col": col, "length": length}
    if site is None:
        entry.update(line=fallback_line, col=1, length=1)
    else:
        entry.update(line=site[0], col=site[1], length=site[2])
    entry["from"] = {"path": path, "line": entry["line"]}


def _type_of(value: Any) -> Any:
    t = getattr(value, "type", None)
    return t if getattr(t, "kind", None) in LEVELS and hasattr(t, "levels") else None


Calls = dict[tuple[int, int], tuple[str, int]]  # (line, column) of a helper call -> (hover, name length)


def watch_helpers(module: Any, path: str, calls: Calls) -> None:
    """Wrap every helper function the module holds (a function of another user module) so
    a call from the file `path` records the hover of what it returned at the call's
    (line, 1-based column). Only in a process that ends with the check."""
    for name, value in list(vars(module).items()):
        if not isinstance(value, types.FunctionType):
            continue
        file = value.__code__.co_filename  # (the helper's module is out of sys.modules: the file's import scope)
        if os.path.abspath(file) != path and is_user_module(types.SimpleNamespace(__file__=file)):
            vars(module)[name] = _watched(value, path, calls)


def _watched(fn: types.FunctionType, path: str, calls: Calls) -> Any:
    @functools.wraps(fn)
    def helper(*args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        frame = sys._getframe(1)
        t = _type_of(result)
        if t is not None and os.path.abspath(frame.f_code.co_filename) == path:
            where = next(itertools.islice(frame.f_code.co_positions(), frame.f_lasti // 2, None), None)
            if where and where[0] and where[2] is not None:
                calls[(where[0], where[2] + 1)] = (describe(t, f"{fn.__name__}(...)")[1], len(fn.__name__))
        return result
    return helper


def variable_facts(kernel: ast.FunctionDef, stages: list[dict[str, Any]], calls: Calls,
                   params: dict[str, str]) -> list[dict[str, Any]]:
    """Every use of a variable of the kernel whose value has a type: the hover of the value
    last assigned to it (its line before the use), or of its parameter annotation."""
    by_place = {(f["line"], f["col"]): f for f in stages}
    assigned: dict[str, list[tuple[int, str]]] = {n: [(kernel.lineno, h)] for n, h in params.items()}
    names = []
    for node in ast.walk(kernel):
        if isinstance(node, ast.Name):
            names.append(node)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Call) and _called_name(node.value) is not None:
            func = node.value.func
            called = calls.get((node.value.lineno, node.value.col_offset + 1)) if isinstance(func, ast.Name) else None
            fact = None if called else by_place.get(_name_span(func)[:2])
            hover = called[0] if called else fact["hover"] if fact else None
            if hover:
                assigned.setdefault(node.targets[0].id, []).append((node.lineno, hover))
    for found in assigned.values():
        found.sort(key=lambda x: x[0])
    out = []
    for node in names:
        before = [h for line, h in assigned.get(node.id, ()) if line <= node.lineno]
        if before:
            out.append({"line": node.lineno, "col": node.col_offset + 1, "end_line": node.end_lineno,
                        "end_col": (node.end_col_offset or 0) + 1, "hover": f"`{node.id}`: " + before[-1]})
    return out


def call_facts(calls: Calls) -> list[dict[str, Any]]:
    """The hover of each helper call's name: the type it returned."""
    return [{"line": line, "col": col, "end_line": line, "end_col": col + length, "hover": hover}
            for (line, col), (hover, length) in calls.items()]
