"""`npu_opt.compile`: trace, lower, verify and emit one kernel's VISA artifact (docs/getting-started.md).

`compile_kernel` is the shared pipeline behind `npu_opt.compile` and `npu-opt compile`:
it never raises for a user refusal or an internal error, it returns an `Outcome` whose
status is `ok`, `refused` or `ice` with the diagnostics and per-stage timings.
"""

from __future__ import annotations

import functools
import hashlib
import time
import traceback
from typing import Any

import attrs

from ir.diagnostic import Diagnostic
from ir.errors import CompileError

__all__ = ["Artifact", "Outcome", "compile", "compile_kernel", "compiler_fingerprint", "ice_diagnostic",
           "npu_opt_version"]


def npu_opt_version() -> str:
    """The installed compiler version (named in ICE reports and the manifest)."""
    from npu_opt import __version__

    return __version__


@functools.cache
def compiler_fingerprint() -> str:
    """Version plus a hash of the compiler's own sources, so a cache entry made by other
    compiler code (an edited checkout with the same version number) is never reused."""
    import importlib.util
    from pathlib import Path

    digest = hashlib.sha256(npu_opt_version().encode())
    for package in ("ir", "npu_opt", "tu_ops", "visa", "backends"):
        spec = importlib.util.find_spec(package)
        roots = list(spec.submodule_search_locations or []) if spec else []
        for root in roots:
            for path in sorted(Path(root).rglob("*")):
                if path.suffix in (".py", ".lark", ".toml") and "__pycache__" not in path.parts:
                    digest.update(str(path.relative_to(root)).encode())
                    digest.update(path.read_bytes())
    return digest.hexdigest()


@attrs.frozen
class Outcome:
    """Result of compiling one kernel: status, artifact text or diagnostics, timings."""

    kernel: str
    status: str  # "ok" | "refused" | "ice"
    text: str | None
    diagnostics: tuple[Diagnostic, ...]
    warnings: tuple[Diagnostic, ...]
    timings_ms: dict[str, float]

    @property
    def code(self) -> str | None:
        return None if self.status == "ok" else ("ICE" if self.status == "ice" else self.diagnostics[0].code)


@attrs.frozen
class Artifact:
    """A compiled kernel (docs/reference/python-api.md): canonical VISA text and its parsed records."""

    text: str
    kernel: str
    target: str
    manifest_entry: dict[str, Any]
    records: tuple[Any, ...]
    warnings: tuple[Diagnostic, ...] = ()


def ice_diagnostic(kernel: str, exc: BaseException, loc: Any = None) -> Diagnostic:
    """An internal compiler error as a diagnostic: what failed, and a request to report it."""
    code = getattr(exc, "code", None)
    notes = [f"{type(exc).__name__}: {exc}".splitlines()[0]]
    if code and code not in ("ICE", "USAGE"):
        notes.insert(0, f"failing rule: {code}")
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    if frame is not None:
        notes.append(f"raised in {frame.filename.rsplit('/', 2)[-2:]!s}:{frame.lineno}")
    return Diagnostic(code="ICE", message=f"internal compiler error while compiling `{kernel}`",
                      file=getattr(loc, "file", None), line=getattr(loc, "line", None),
                      col=getattr(loc, "col", None), notes=tuple(notes),
                      help=f"this is a bug in npu-opt {npu_opt_version()}, not in your kernel; "
                           "please report it with the kernel source and this message")


def compile_kernel(kernel: Any, target: Any = "rngd", compat: bool = True,
                   dump_ir: str | None = None) -> Outcome:
    """Run the npu pipeline on one kernel; never raises for refusals or ICEs."""
    from tu_ops.target import get_target

    timings: dict[str, float] = {}
    tgt = get_target(target) if isinstance(target, str) else target
    start = time.perf_counter()
    try:
        traced = kernel.trace(tgt)
    except Exception as e:  # noqa: BLE001 - a crash while tracing is a bug of ours
        return Outcome(kernel.name, "ice", None, (ice_diagnostic(kernel.name, e),), (), timings)
    timings["trace"] = _ms(start)
    if traced.errors:
        return Outcome(kernel.name, "refused", None, traced.errors, traced.warnings, timings)
    from backends.npu import lower_kernel
    from tu_ops.lower.options import Options

    start = time.perf_counter()
    try:
        lowered = lower_kernel(traced.kernel, tgt, Options(target=tgt, compat=compat, dump_ir=dump_ir))
    except CompileError as e:
        errors = tuple(d for d in e.diagnostics if d.severity == "error")
        status = "ice" if any(d.code == "ICE" for d in errors) else "refused"
        return Outcome(kernel.name, status, None, errors, traced.warnings, timings)
    except Exception as e:  # noqa: BLE001 - LOWER-3: any exception inside lowering is an ICE
        return Outcome(kernel.name, "ice", None, (ice_diagnostic(kernel.name, e),), traced.warnings, timings)
    timings["lower"] = _ms(start)
    warnings = traced.warnings + tuple(getattr(lowered, "warnings", ()))
    start = time.perf_counter()
    try:
        lowered.verify(tgt)
        timings["verify"] = _ms(start)
        from visa.printer import print_visa

        start = time.perf_counter()
        text = print_visa(lowered, tgt)
        timings["emit"] = _ms(start)
    except Exception as e:  # noqa: BLE001 - a verifier failure after lowering is an ICE
        return Outcome(kernel.name, "ice", None, (ice_diagnostic(kernel.name, e),), warnings, timings)
    return Outcome(kernel.name, "ok", text, (), warnings, timings)


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1e3, 3)


def compile(kernel: Any, target: Any = "rngd", compat: bool = True) -> Artifact:  # noqa: A001
    """Compile a `@device` kernel to its VISA artifact; raises `CompileError` on refusal/ICE."""
    from npu_opt.device import DeviceKernel

    if not isinstance(kernel, DeviceKernel):
        raise TypeError(f"compile() takes a @device kernel, not {type(kernel).__name__}")
    outcome = compile_kernel(kernel, target, compat)
    if outcome.status != "ok":
        raise CompileError(outcome.diagnostics + outcome.warnings)
    from visa.parser import parse_visa

    artifact = parse_visa(outcome.text)
    entry = {"name": kernel.name, "qualname": f"{kernel.__module__}.{kernel.__qualname__}",
             "file": kernel.file_display, "status": "ok", "code": None,
             "artifact": f"{kernel.name}.visa",
             "sha256": hashlib.sha256(outcome.text.encode()).hexdigest(),
             "timings_ms": outcome.timings_ms}
    records = tuple(artifact.kernel.ops())
    name = target if isinstance(target, str) else target.name
    return Artifact(outcome.text, kernel.name, name, entry, records, outcome.warnings)
