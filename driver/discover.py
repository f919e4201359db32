"""Find `@device` kernels in files and directories, importing each file safely.

A file that cannot be loaded (bad path, Python syntax error, an exception while
importing such as a MappingError from a module-level `m()`) becomes a `LoadError` with
the file and line; the other files are still loaded (docs/reference/cli.md).

Discovery rule: a file named on the command line is loaded as given (it must be a `.py`
file); a directory is walked for `*.py` files in sorted order, skipping `__main__.py`,
test files (`test_*.py`, `*_test.py`, `conftest.py`: named on the command line they load),
hidden directories, `__pycache__`, `build`, `dist`, `node_modules`, `site-packages`,
`venv`, `env` and any directory holding a `pyvenv.cfg` (a virtual environment). The same
file named twice is loaded once. A module beside a kernel file named like one of
npu-opt's top-level packages (`ir`, `visa`, `tu_ops`, `backends`, `npu_opt`) is reported
as a clash: rename it.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import sys
from collections import Counter
from pathlib import Path

import attrs

from ir.errors import MappingError, exception_text
from ir.location import OWN_PACKAGES, tb_frames
from npu_opt.fault_owner import USER_EXITS, exit_text, interrupted
from npu_opt.device import DeviceKernel
from npu_opt.per_file_imports import loading
from driver.replay import walk_strings
from npu_opt.per_file_imports import is_user_module

_OURS = Path(__file__).resolve().parents[1]  # where npu-opt's six packages are installed, side by side

__all__ = ["LoadError", "Found", "discover", "module_name_for", "load_file", "own_kernels"]


@attrs.frozen
class LoadError:
    """A path or file that could not be loaded."""

    file: str
    message: str
    line: int | None = None
    col: int | None = None
    code: str = "USAGE"

    def render(self) -> str:
        where = self.file + (f":{self.line}" if self.line else "") + (f":{self.col}" if self.line and self.col else "")
        return f"error[{self.code}]: {self.message}\n  --> {where}"

    def to_json(self) -> dict:
        return {"file": self.file, "code": self.code, "message": self.message}


@attrs.frozen
class Found:
    """Kernels found in the given paths, and the files that failed to load."""

    kernels: tuple[DeviceKernel, ...]
    errors: tuple[LoadError, ...]
    files: tuple[str, ...]
    unfiltered: int = 0  # kernels found before `--filter`

    def nothing_found(self, paths: list[str], pattern: str | None) -> LoadError | None:
        """The USAGE error of a run that found no kernel to check (None when it found some,
        or when a load error already explains why)."""
        if self.kernels or self.errors:
            return None
        where = ", ".join(paths)
        if self.unfiltered:
            message = f"--filter {pattern!r} matches none of the {self.unfiltered} kernel(s) found in {where}"
        elif self.files:
            message = f"no @device kernel in the {len(self.files)} Python file(s) found in {where}"
        else:
            message = f"no Python file found in {where} (hidden, build and virtual-environment " \
                      f"directories, __main__.py and test files are skipped)"
        return LoadError(where, message)


def module_name_for(path: Path) -> str:
    """A dotted module name from a path (`examples/gemm.py` -> `examples.gemm`)."""
    try:
        rel = path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        rel = Path(path.name)
    parts = [p for p in rel.with_suffix("").parts if p not in ("", ".")]
    name = ".".join(p.replace("-", "_") for p in parts) or "kernel"
    top = name.split(".")[0]
    loaded = sys.modules.get(top)  # someone else's than the user's (the installation's, npu-opt's)?
    if top in OWN_PACKAGES or top in sys.stdlib_module_names or (loaded is not None and not is_user_module(loaded)):
        name = "user." + name  # keep user frames distinguishable from npu-opt's own (and `types.py`
        # from replacing the standard library's `types` in sys.modules)
    return name


def load_file(path: Path, source: str | None = None, name: str | None = None) -> tuple[object | None, LoadError | None]:
    """Import the kernel file `path` (or, given `source`, that text as the file: an editor's
    unsaved buffer, driver/lsp) as module `name` (default: `module_name_for(path)`)."""
    name = name or module_name_for(path)
    display = str(path)
    if path.suffix != ".py":
        return None, LoadError(display, "not a Python file: npu-opt loads kernels from .py files")
    try:
        if source is None:
            source = path.read_text(encoding="utf-8-sig")  # a byte-order mark is allowed, as by `import`
        # dont_inherit: the file is compiled with its own `__future__` imports only, as
        # `import` compiles it. Inheriting this module's `annotations` import would turn every
        # annotation into a string, and one naming a variable of an enclosing function (a
        # kernel made by a factory) could no longer be evaluated.
        code = compile(source, str(path), "exec", dont_inherit=True)
    except SyntaxError as e:
        return None, LoadError(display, f"Python syntax error: {e.msg}", e.lineno, e.offset)
    except (OSError, UnicodeDecodeError) as e:
        return None, LoadError(display, f"cannot read the file: {e}")
    clash = _shadowed(path)
    if clash is not None:
        return None, clash
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader=None, origin=str(path)))
    module.__file__ = str(path)
    sys.modules[name] = module
    try:
        with loading(name, str(path.parent.resolve())):
            exec(code, module.__dict__)  # noqa: S102 - loading the user's kernel file is the point
    except MappingError as e:
        line = _line_in(e, path)
        return None, LoadError(display, f"{e.code} while importing: {e.detail}"
                               + (f" in m(\"{e.text}\")" if e.text else ""), line)
    except USER_EXITS as e:  # sys.exit(), os._exit() or an interrupt raised by the file itself
        if interrupted(e):
            raise
        return None, LoadError(display, f"importing the file raised {exit_text(e)}; a kernel file may not exit "
                               "while it is imported", _line_in(e, path))
    except BaseException as e:  # noqa: BLE001 - any import-time failure of user code is exit 2
        if interrupted(e):  # a harness's timeout while the file was imported: not the file's error
            raise
        return None, LoadError(display, f"importing the file raised {type(e).__name__}: {exception_text(e)}",
                               _line_in(e, path))
    return module, None


def _shadowed(path: Path) -> LoadError | None:
    """A module beside the kernel named like one of npu-opt's top-level packages (`ir.py`,
    `visa/`...): in npu-opt's process the package would win or be broken by it, so the
    clash is reported instead of a confusing ImportError."""
    for package in sorted(OWN_PACKAGES):
        for candidate in (path.parent / f"{package}.py", path.parent / package / "__init__.py"):
            if not candidate.is_file():
                continue
            if candidate.parent.resolve() == (_OURS / package).resolve():
                continue  # npu-opt's own package (a checkout of npu-opt itself)
            return LoadError(str(path), f"`{candidate.relative_to(path.parent)}` beside this file has the name "
                                        f"of npu-opt's package `{package}`, which npu-opt itself imports; rename "
                                        f"your module (e.g. `my_{package}`) so both can be imported")
    return None


def _line_in(e: BaseException, path: Path) -> int | None:
    line = None
    for frame, lineno in tb_frames(e.__traceback__):
        if Path(frame.f_code.co_filename).resolve() == path.resolve():
            line = lineno
    return line


def own_kernels(module: object) -> list[DeviceKernel]:
    """The `@device` kernels `module` defines (not those it imports), in source order. Kernels
    that share a name (a generic kernel's factory called twice, docs/porting.md) are each
    named after the module-level name they are bound to (the first, when bound twice)."""
    bound: dict[int, tuple[str, DeviceKernel]] = {}
    for name, k in vars(module).items():
        if isinstance(k, DeviceKernel) and k.fn.__module__ == module.__name__:
            bound.setdefault(id(k), (name, k))
    counts = Counter(k.name for _, k in bound.values())
    own = [k.renamed(name) if counts[k.name] > 1 else k for name, k in bound.values()]
    return sorted(own, key=lambda k: k.line)


def discover(paths: list[str], pattern: str | None = None) -> Found:
    """Load every file under `paths` and collect its kernels, in file then source order."""
    found, missing = walk_strings(paths)
    files = [Path(f) for f in found]
    errors = [LoadError(raw, "no such file or directory") for raw in missing]
    kernels: list[DeviceKernel] = []
    unfiltered = 0
    for path in files:
        module, error = load_file(path)
        if error is not None:
            errors.append(error)
            continue
        own = own_kernels(module)
        unfiltered += len(own)
        kernels.extend(k for k in own if pattern is None or fnmatch.fnmatchcase(k.name, pattern))
    return Found(tuple(kernels), tuple(errors), tuple(str(f) for f in files), unfiltered)
