"""What a check of an edited buffer may take from the check before it (issue 58: a re-check
within 300 ms on a file of many kernels).

An edit usually touches one kernel. A kernel's trace depends on its own text, on what the
file defines around it (imports, axes, constants, plain functions), on the helper modules
it imports, and on the kernels it names; so a kernel whose own text is unchanged, in a file
whose text outside its kernels is unchanged line for line, importing helper files whose
bytes are unchanged, and naming no kernel that changed, traces as it did: the check reuses
its facts (diagnostics, stage types, variable and helper-call hovers) instead of tracing it.
Only kernels defined at the file's top level are reused (a tune factory's are traced each
time), and only facts of a check that printed nothing and ran within its time limit.

The same holds for the hovers of the file's `m("...")` literals (a function of their text
and the file's axes) and of its tensor annotations (their text and what the file defines
around its kernels).

The helper files are those the file's import read, and those the last check's traces read
(a kernel or a function may import a module only when it runs).

The facts live in the worker's parent process (driver/lsp/worker.py) as plain data: a check's
forked child reads them, and sends back the keys of this check with what it computed, which
the parent keeps (one file's last check each). Opening and saving a file check it in full.
What this cannot see is state a kernel's trace leaves for another's (a module-level list one
kernel's trace appends to and another reads) or data a file reads at import (a JSON file
beside it): an edit of the kernel file's text outside its kernels, or a save, traces all again.
"""

from __future__ import annotations

import ast
import hashlib
from typing import Any

from driver.replay import digest
from ir.boundary import TargetRef
from npu_opt.per_file_imports import scope_files

__all__ = ["KERNEL_PARTS", "Reuse", "kernel_spans", "merged"]

KERNEL_PARTS = ("diagnostics", "stages", "variables")  # a kernel's facts, as lists in the result


def kernel_spans(tree: ast.Module | None) -> dict[int, tuple[int, int, str]]:
    """The file's top-level functions by their first line (their first decorator's):
    (first line, last line, name), the spans a kernel of the file may be reused by."""
    if tree is None:
        return {}
    spans = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            spans[first] = (first, node.end_lineno, node.name)
    return spans


def _digest(*parts: str) -> str:
    h = hashlib.sha1(usedforsecurity=False)
    for part in parts:
        h.update(part.encode("utf-8", errors="surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def _helper_bytes(files: list[str]) -> str:
    """A digest of each of the helper modules' `files` (`?` for one that cannot be read)."""
    return "\n".join(f"{file}\0{digest(file) or '?'}" for file in files)


class Reuse:
    """One check's view of what the last check of the file computed (`known`, from the
    parent; empty for a full check) and of what this check computed or reused (`found`,
    the parent's next `known`)."""

    def __init__(self, known: dict[str, Any] | None, path: str, target: TargetRef) -> None:
        known = known or {}
        self.known = {part: known.get(part, {}) for part in ("kernels", "mappings", "tensors")}
        self.found: dict[str, Any] = {"kernels": {}, "mappings": {}, "tensors": {}}
        self.files: list[str] = list(known.get("files", []))  # the helper files the last check ended with
        self.path, self.target = path, repr(target)
        self.spans: dict[int, tuple[int, int, str]] = {}
        self.lines: list[str] = []
        self.context = ""

    def start(self, tree: ast.Module | None, lines: list[str], kernel_lines: list[int]) -> None:
        """The file as this check sees it: `lines` (no line ends), its kernels' first lines."""
        self.spans = {line: span for line, span in kernel_spans(tree).items() if line in kernel_lines}
        self.lines = lines
        masked = list(lines)
        for first, last, _ in self.spans.values():
            masked[first - 1:last] = [""] * (last - first + 1)
        # the helper files imported now, and those the last check's traces imported (a kernel
        # or a function of the file may import a module only when it runs)
        self.files = sorted(scope_files() | set(self.files))
        self.context = _digest(self.path, self.target, "\n".join(masked), _helper_bytes(self.files))

    def finish(self) -> dict[str, Any]:
        """What the parent keeps of this check (`merged`): its keys, and the helper files its
        import and its traces read."""
        self.found["files"] = sorted(scope_files() | set(self.files))
        return self.found

    def _segment(self, first: int) -> str:
        begin, end, _ = self.spans[first]
        return "\n".join(self.lines[begin - 1:end])

    def kernel_key(self, first: int, names: set[str]) -> str | None:
        """The key of the kernel whose text starts at line `first` and names `names`; None
        for a kernel that is not reused (not at the file's top level)."""
        if first not in self.spans:
            return None
        named = sorted(line for line, (_, _, name) in self.spans.items() if name in names and line != first)
        return _digest(self.context, self._segment(first), *(self._segment(line) for line in named))

    def kernel(self, key: str | None) -> dict[str, Any] | None:
        entry = self.known["kernels"].get(key) if key else None
        if entry is not None:
            self.found["kernels"][key] = None  # type: ignore[index]  # kept: the parent has it (`merged`)
        return entry

    def keep_kernel(self, key: str | None, entry: dict[str, Any]) -> None:
        if key:
            self.found["kernels"][key] = entry

    def cached(self, part: str, key: str) -> Any:
        value = self.known[part].get(key)
        if value is not None:
            self.found[part][key] = None  # kept: the parent has it (`merged`)
        return value

    def keep(self, part: str, key: str, value: Any) -> None:
        self.found[part][key] = value

    def tensor_key(self, text: str) -> str:
        return _digest(self.context, text)


def merged(known: dict[str, Any] | None, found: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """The parent's next `known` for the file, from what the check `found`: its keys, each
    with None for a value it took from `known` (the child does not send it back), and for a
    kernel it traced, where its facts are in the check's `result` (`spans`, not a copy)."""
    known = known or {}
    out: dict[str, Any] = {"files": found.get("files", [])}
    for part, values in found.items():
        if part == "files":
            continue
        out[part] = {}
        for key, value in values.items():
            if value is None:
                value = known.get(part, {}).get(key)
            elif part == "kernels":
                value = {name: result[name][first:end] for name, (first, end) in value["spans"].items()} | \
                    {"classes": {c: result["classes"][c] for c in value["classes"]}, "calls": value["calls"]}
            if value is not None:
                out[part][key] = value
    return out
