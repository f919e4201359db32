"""What the language server knows about one kernel file, computed in its worker process.

`analyse(path, source)` imports the buffer as the file, traces every `@device` kernel it
defines (and the first candidate of each tune `Space`: the factory at its default point),
and returns plain data (JSON-ready) the server answers requests from without running user
code again:

- `diagnostics`: every refusal and warning at the user's call (1-based line and column,
  the stage's length), or the one load error of a file that does not import;
- `stages`: after each stage call, the stream or tensor type it returns (guide form and
  hover Markdown) and the stage class that holds it, whose methods completion offers;
- `mappings`: every `m("...")` literal, parsed with the file's axes, for hovers;
- `tensors`: every tensor annotation (`HbmTensor[...]`, `DmTensor[...]`...) with its bytes
  per slice and the host-array shape `run` expects.
"""

from __future__ import annotations

import ast
import functools
import linecache
import os
from pathlib import Path
from typing import Any

from driver.discover import _line_in, load_file, own_kernels
from driver.lsp.crossings import Calls, call_facts, function_defs, relocate, variable_facts, watch_helpers
from driver.lsp.reuse import KERNEL_PARTS, Reuse
from driver.lsp.supervisor import record
from driver.lsp.types_text import describe, type_markdown
from driver.mapping_report import explain, one_line
from ir.boundary import TargetRef
from ir.diagnostic import Diagnostic
from ir.host_layout import host_shape
from ir.mapping.api import m as parse_m
from ir.mapping.axes import REGISTRY_NAME
from npu_opt.compile_api import ice_diagnostic
from npu_opt.device import DeviceKernel
from npu_opt.stagebase import signature_text
from npu_opt.trace import stage_log
from npu_opt.tune import Space

__all__ = ["analyse", "diagnostic_record", "stage_classes", "TENSOR_CLASSES"]

TENSOR_CLASSES = ("HbmTensor", "DmTensor", "TrfTensor", "VrfTensor")


def diagnostic_record(d: Diagnostic, kernel: str | None = None) -> dict[str, Any]:
    """A diagnostic as the server needs it (its position in the checked file)."""
    return {"code": d.code, "message": d.message, "line": d.line, "col": d.col, "length": d.length,
            "severity": d.severity, "notes": list(d.notes), "help": d.help, "stage": d.stage,
            "kernel": kernel, "file": d.file}


def _same_file(name: str | None, path: str) -> bool:
    return name is not None and os.path.abspath(name) == path


def _kernels(module: Any, path: str) -> tuple[list[DeviceKernel], list[dict[str, Any]]]:
    """The file's kernels, then the default candidate of each tune `Space` it declares (the
    factory called with the first value of every parameter), and the USAGE records of
    factories that raised."""
    found, errors = own_kernels(module), []
    for value in list(vars(module).values()):
        if not (isinstance(value, Space) and getattr(value.factory, "__module__", None) == module.__name__):
            continue
        point = value.points()[0]
        try:
            made = value.factory(**point)
        except Exception as e:  # noqa: BLE001 - the user's factory, the user's error
            line = _line_in(e, Path(path)) or value.factory.__code__.co_firstlineno
            errors.append(record(f"the kernel factory `{value.factory.__name__}` raised {type(e).__name__} for its "
                                 f"default point {point}: {e}", line, path))
            continue
        if isinstance(made, DeviceKernel):
            found.append(made)
    return found, errors


def stage_classes(classes: set[type]) -> dict[str, dict[str, str]]:
    """class name -> {method it offers: its signature text}."""
    out: dict[str, dict[str, str]] = {}
    for cls in classes:
        methods: dict[str, str] = {}
        for name in sorted(getattr(cls, "OFFERS", ())):
            try:
                fn = getattr(cls, name)
                methods[name] = signature_text(fn)
            except (AttributeError, TypeError, ValueError):
                methods[name] = "(...)"
        out[cls.__name__] = methods
    return out


def _stage_facts(ops: Any, stages: dict[int, type], path: str) -> tuple[list[dict[str, Any]], set[type]]:
    facts, classes = [], set()
    for op in ops:
        loc, result = getattr(op, "loc", None), getattr(op, "result", None)
        if loc is None or result is None or not _same_file(loc.file, path) or not loc.col:
            continue
        if getattr(op, "STAGE", "") == "param":
            continue
        cls = stages.get(result.id)
        if cls is not None:
            classes.add(cls)
        try:
            guide, hover = describe(result.type, f".{op.STAGE}(...)")
        except (KeyError, AttributeError):
            guide, hover = str(result.type), f"**.{op.STAGE}(...)** → `{result.type}`"
        facts.append({"line": loc.line, "col": loc.col, "length": loc.length, "stage": op.STAGE,
                      "type": guide, "hover": hover, "class": cls.__name__ if cls else None})
    return facts, classes


def _trace(kernel: DeviceKernel, target: TargetRef) -> tuple[Any, dict[int, type]]:
    with stage_log() as stages:
        try:
            return kernel.trace(target), stages
        except Exception as e:  # noqa: BLE001 - the trace's own failure is an ICE, as in `check`
            return ice_diagnostic(kernel.name, e, kernel.location), stages


def _nodes(nodes: list[ast.AST]) -> tuple[list[tuple[ast.Call, str]], list[ast.Subscript]]:
    """The `m("...")` literal calls and the tensor subscripts (`HbmTensor[...]`) among a file's nodes."""
    calls, tensors = [], []
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "m" \
                and len(node.args) == 1 and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            calls.append((node, node.args[0].value))
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in TENSOR_CLASSES:
            tensors.append(node)
    return calls, tensors


@functools.lru_cache(maxsize=4096)
def _mapping_hover(text: str, axes: tuple[tuple[str, int], ...]) -> str:
    table = dict(axes)
    try:
        mapping = parse_m(text, axes=table)
        info = explain(mapping, rows=2)
    except Exception as e:  # noqa: BLE001 - a bad mapping: its error is the hover
        return f"**m(\"{text}\")**: {getattr(e, 'code', type(e).__name__)}: {e}"
    sizes = ", ".join(f"{a} = {table[a]}" for a in info["axes"] if a in table) or "no axis"
    return "\n".join([f"**m(\"{text}\")**: `{mapping}`", "", f"size {mapping.size}; axes: {sizes}", "",
                      f"explain-mapping: {one_line(info)}"])


def _span(node: ast.AST) -> dict[str, Any]:
    return {"line": node.lineno, "col": node.col_offset + 1, "end_line": node.end_lineno,
            "end_col": (node.end_col_offset or 0) + 1}


def _tensor_hover(spec: Any, text: str) -> str | None:
    resolved = spec.resolve() if hasattr(spec, "resolve") else None
    if resolved is None or not hasattr(resolved, "levels"):
        return None
    lines = [type_markdown(resolved, text)]
    if resolved.kind == "hbm":
        shape = host_shape(resolved.element)
        lines.append(f"\nhost array for `run`: shape {shape}, dtype {resolved.dtype}")
    return "\n".join(lines)


def _segment(lines: list[str], node: ast.AST) -> str:
    """The source text of a one-line node (byte columns), else its first line's rest."""
    first = lines[node.lineno - 1].encode("utf-8")
    if node.end_lineno == node.lineno:
        return first[node.col_offset:node.end_col_offset].decode("utf-8", errors="replace")
    return first[node.col_offset:].decode("utf-8", errors="replace").rstrip()


def _tensor_facts(nodes: list[ast.Subscript], module: Any, lines: list[str], reuse: Reuse) -> list[dict[str, Any]]:
    """Each tensor annotation's hover (an annotation of the same text in the same file
    context as the last check's is not evaluated again: driver/lsp/reuse.py)."""
    keys = [reuse.tensor_key(_segment(lines, node)) for node in nodes]
    hovers: list[Any] = [reuse.cached("tensors", key) for key in keys]
    todo = [i for i, hover in enumerate(hovers) if hover is None]
    for i, spec in zip(todo, _evaluated([nodes[i] for i in todo], module)):
        try:
            hover = _tensor_hover(spec, _segment(lines, nodes[i])) if spec is not _UNKNOWN else None
        except Exception:  # noqa: BLE001 - an annotation that does not resolve: no hover
            hover = None
        hovers[i] = hover or ""
        reuse.keep("tensors", keys[i], hovers[i])
    return [dict(_span(node), hover=hover) for node, hover in zip(nodes, hovers) if hover]


_UNKNOWN = object()


def _evaluated(nodes: list[ast.Subscript], module: Any) -> list[Any]:
    """Each annotation's value in the module's namespace (`_UNKNOWN` for one naming a
    factory's local): all of them compiled as one tuple (one `compile` per check, not one
    per annotation), else one by one."""
    if not nodes:
        return []
    scope = vars(module)
    try:
        together = ast.Expression(ast.Tuple(elts=list(nodes), ctx=ast.Load()))
        return list(eval(compile(ast.fix_missing_locations(together), "<annotations>", "eval"), scope))  # noqa: S307
    except Exception:  # noqa: BLE001 - one of them does not evaluate: each on its own
        pass
    out = []
    for node in nodes:
        try:
            out.append(eval(compile(ast.Expression(node), "<annotation>", "eval"), scope))  # noqa: S307
        except Exception:  # noqa: BLE001 - an annotation naming a factory's local: no hover
            out.append(_UNKNOWN)
    return out


def analyse(path: str, source: str, name: str, target: TargetRef = None, progress: Any = None,
            known: dict[str, Any] | None = None, early: Any = None) -> dict[str, Any]:
    """Everything the server shows for the buffer `source` of the file `path` (absolute).
    `known`: what the last check of the file computed (driver/lsp/reuse.py); the result's
    `reuse` is this check's, for the next. `early`: called with the diagnostics once every
    kernel is traced, before the hovers of the file's mappings and tensors are made."""
    lines = source.splitlines(keepends=True)
    linecache.cache[path] = (len(source), None, lines, path)  # the buffer, not the disk, for every reader
    out: dict[str, Any] = {"diagnostics": [], "stages": [], "mappings": [], "tensors": [], "variables": [],
                           "classes": {}}
    try:
        tree = ast.parse(source, path)
    except SyntaxError:
        tree = None
    if progress:
        progress(None, 1)
    module, error = load_file(Path(path), source, name)
    if error is not None:
        out["diagnostics"].append(record(error.message, error.line, error.file, code=error.code, col=error.col))
        return out
    kernels, factory_errors = _kernels(module, path)
    out["diagnostics"] += factory_errors
    reuse = Reuse(known, path, target)
    reuse.start(tree, source.splitlines(), [k.line for k in kernels])
    walked = list(ast.walk(tree)) if tree is not None else []
    _kernel_facts(kernels, module, path, target, walked, reuse, progress, out)
    if early:
        early(out["diagnostics"])
    axes = vars(module).get(REGISTRY_NAME)
    if tree is not None:
        nodes, tensors = _nodes(walked)
        key = tuple(axes.items()) if isinstance(axes, dict) else ()
        out["mappings"] = [dict(_span(node), hover=_mapping_of(text, key, reuse)) for node, text in nodes]
        out["tensors"] = _tensor_facts(tensors, module, source.splitlines(), reuse)
    out["reuse"] = reuse.finish()
    return out


def _mapping_of(text: str, axes: tuple[tuple[str, int], ...], reuse: Reuse) -> str:
    key = f"{text}\0{axes!r}"
    hover = reuse.cached("mappings", key)
    if hover is None:
        hover = _mapping_hover(text, axes)
        reuse.keep("mappings", key, hover)
    return hover


def _kernel_facts(kernels: list[DeviceKernel], module: Any, path: str, target: TargetRef,
                  walked: list[ast.AST], reuse: Reuse, progress: Any, out: dict[str, Any]) -> None:
    """Each kernel's diagnostics, stage types and variable hovers into `out`, in source
    order: traced, or the last check's for a kernel whose text and context are unchanged."""
    calls: Calls = {}  # the helper calls of the kernel being traced (watch_helpers writes here)
    every: Calls = {}  # ... of every kernel so far, as one trace of all of them leaves them
    watch_helpers(module, path, calls)
    defs, kernel_names, named_at = function_defs(walked), {k.name for k in kernels}, {}
    for node in walked:  # the kernels each line names (a kernel that names another is reused with it only)
        if isinstance(node, ast.Name) and node.id in kernel_names:
            named_at.setdefault(node.lineno, set()).add(node.id)
    for kernel in kernels:
        where = defs.get(kernel.line)
        span = range(kernel.line, (where.end_lineno or kernel.line) + 1) if where is not None else ()
        key = reuse.kernel_key(kernel.line, set().union(*(named_at.get(line, ()) for line in span)))
        entry, at = reuse.kernel(key), {part: len(out[part]) for part in KERNEL_PARTS}
        if entry is None:
            if progress:
                progress(kernel.name, kernel.line)
            calls.clear()
            entry = _kernel_entry(kernel, target, where, path, calls, every)
        else:
            every.update({(line, col): (hover, length) for line, col, hover, length in entry["calls"]})
        for part in KERNEL_PARTS:
            out[part] += entry[part]
        out["classes"].update(entry["classes"])
        if entry.pop("reusable", False):  # traced now: kept as where its facts are in `out` (not a copy)
            reuse.keep_kernel(key, {"spans": {part: [at[part], len(out[part])] for part in KERNEL_PARTS},
                                    "classes": sorted(entry["classes"]), "calls": entry["calls"]})
    out["variables"] += call_facts(every)


def _kernel_entry(kernel: DeviceKernel, target: TargetRef, where: ast.FunctionDef | None, path: str,
                  calls: Calls, every: Calls) -> dict[str, Any]:
    """One kernel's facts, traced now (`calls`: the helper calls its trace records, merged
    into `every`); `reusable`: whether a later check may take them as they are."""
    result, stages = _trace(kernel, target)
    every.update(calls)
    mine = [[line, col, hover, length] for (line, col), (hover, length) in calls.items()]
    if isinstance(result, Diagnostic):
        return {"diagnostics": [diagnostic_record(result, kernel.name)], "stages": [], "classes": {},
                "variables": [], "calls": mine, "reusable": False}
    diagnostics = []
    for d in result.diagnostics:
        entry = diagnostic_record(d, kernel.name)
        if not _same_file(d.file, path):  # raised in another file: shown at the call that led there
            relocate(entry, where, kernel.line, path)
        diagnostics.append(entry)
    facts, used = _stage_facts(result.kernel.ops, stages, path)
    variables = variable_facts(where, facts, every, _parameter_hovers(kernel)) if where is not None else []
    return {"diagnostics": diagnostics, "stages": facts, "classes": stage_classes(used), "variables": variables,
            "calls": mine, "reusable": True}


def _parameter_hovers(kernel: DeviceKernel) -> dict[str, str]:
    """Each tensor parameter's hover, from its annotation."""
    out = {}
    for name, spec in getattr(kernel.fn, "__annotations__", {}).items():
        try:
            hover = _tensor_hover(spec, name) if name != "return" else None
        except Exception:  # noqa: BLE001 - an annotation that does not resolve: no hover
            hover = None
        if hover:
            out[name] = hover
    return out
