"""Kernels for the tests, loaded from where they live rather than copied.

* `example(name)`: a kernel of examples/*.py, by its function name (`gemm_kernel`).
* `fixture(name)`: a refused kernel of tests/fixtures/refused*.py (`r01_half_flit`).
* `marked_line(kernel)`: the line of the `# <--` marker in that kernel's source, where
  its refusal must point.
* `load_source(text, name)`: a test-specific kernel module kept as a string, compiled
  under the pseudo file `<kernel:NAME>` and registered with linecache so that
  diagnostics render (and `marked_line` works) as for a real file.

Every file is imported on its own by `driver.discover.discover` (the files declare
clashing axes, so each needs its own module), once per test session.
"""

from __future__ import annotations

import functools
import linecache
import re
import sys
import types
from pathlib import Path

from npu_opt.device import DeviceKernel
from driver.discover import discover

__all__ = [
    "EXAMPLES_DIR", "FIXTURES_DIR", "example", "example_names", "fixture", "fixture_names",
    "kernel_source", "load_source", "marked_line",
]

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES_DIR = ROOT / "examples"
FIXTURES_DIR = ROOT / "tests" / "fixtures"
MARKER = "# <--"


@functools.cache
def _kernels(*files: Path) -> dict[str, DeviceKernel]:
    """The kernels of `files` by function name (each file imported as its own module)."""
    found = discover([str(f) for f in files])
    if found.errors:
        raise RuntimeError("\n".join(e.render() for e in found.errors))
    kernels = {k.name: k for k in found.kernels}
    assert len(kernels) == len(found.kernels), "two kernels share a name"
    return kernels


def _examples() -> dict[str, DeviceKernel]:
    return _kernels(*sorted(EXAMPLES_DIR.glob("*.py")))


def _fixtures() -> dict[str, DeviceKernel]:
    return _kernels(*sorted(FIXTURES_DIR.glob("refused*.py")))


def example_names() -> tuple[str, ...]:
    """The kernel names of examples/*.py, sorted."""
    return tuple(sorted(_examples()))


def fixture_names() -> tuple[str, ...]:
    """The kernel names of tests/fixtures/refused*.py, sorted."""
    return tuple(sorted(_fixtures()))


def example(name: str) -> DeviceKernel:
    """The example kernel `name` (e.g. "gemm_kernel")."""
    return _examples()[name]


def fixture(name: str) -> DeviceKernel:
    """The refused fixture kernel `name` (e.g. "r01_half_flit")."""
    return _fixtures()[name]


def _kernel_lines(kernel: DeviceKernel) -> list[str]:
    """The lines of `kernel`, from its decorator to the end of its body."""
    lines = linecache.getlines(kernel.file)
    if not lines:
        raise FileNotFoundError(f"no source for {kernel.name} in {kernel.file}")
    end = kernel.line  # kernel.line is the first decorator line, 1-based
    while end < len(lines) and lines[end - 1].lstrip().startswith("@"):
        end += 1  # the decorators, then the `def` line
    while end < len(lines) and not (lines[end].strip() and not lines[end][0].isspace()):
        end += 1  # the indented signature and body, and blank lines
    return lines[kernel.line - 1:end]


def kernel_source(kernel: DeviceKernel) -> str:
    """The source text of `kernel` (decorators, signature and body)."""
    return "".join(_kernel_lines(kernel)).rstrip() + "\n"


def marked_line(kernel: DeviceKernel) -> int:
    """1-based line (in the kernel's file) of the first `# <--` marker in `kernel`."""
    for offset, text in enumerate(_kernel_lines(kernel)):
        if MARKER in text:
            return kernel.line + offset
    raise ValueError(f"no `{MARKER}` marker in {kernel.name} ({kernel.file}:{kernel.line})")


_SOURCES: dict[str, str] = {}


@functools.cache
def load_source(text: str, name: str) -> types.ModuleType:
    """Compile `text` as a fresh module under the pseudo file `<kernel:NAME>` (once per text)."""
    if _SOURCES.setdefault(name, text) != text:
        raise ValueError(f"load_source: {name!r} is already used for another source")
    filename = f"<kernel:{name}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    module = types.ModuleType("kernel_source_" + re.sub(r"\W", "_", name))
    module.__file__ = filename
    sys.modules[module.__name__] = module
    exec(compile(text, filename, "exec"), module.__dict__)  # noqa: S102 - our own test kernels
    return module
