"""Run one kernel source through every backend and classify the outcome.

`differential(source, seed)` loads the source as its own module (`driver.discover`) and
returns an `Outcome` whose `kind` is

- `agree`: the trace and the lowering accept it, and the `cpu` backend and the VISA
  interpreter (npu lowering -> VISA text -> parse -> execute) return bit-identical arrays;
- `refused`: refused at trace time, with the same diagnostic codes from `npu_opt.check`,
  `run(..., backend="cpu")` and the npu pipeline, each code documented (`ir.codes.CODES`
  and an `npu-opt explain` page);
- `lowering_refused`: passes the trace, refused by an [L] rule of the lowering (MEM-3, ...),
  while the `cpu` backend runs it.

Anything else raises `Disagreement` with the kernel source in its message: different
results, different refusal codes, an ICE, a crash of either executor, a lowering refusal
under a [T] rule.
"""

from __future__ import annotations

import atexit
import hashlib
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import attrs
import numpy as np

import npu_opt
from ir.codes import CODES
from ir.errors import CompileError

__all__ = ["Disagreement", "Outcome", "differential", "load_kernel", "run_visa", "traced_once"]

_TMP = Path(tempfile.mkdtemp(prefix="npu_opt_diff_"))
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)


class Disagreement(AssertionError):
    """The backends disagree (or one of them crashed) on a generated kernel."""


@attrs.frozen
class Outcome:
    kind: str  # "agree" | "refused" | "lowering_refused"
    code: str | None = None


def load_kernel(source: str) -> Any:
    """The single `@device` kernel of `source`, loaded as its own module."""
    from driver.discover import discover

    digest = hashlib.sha1(source.encode()).hexdigest()[:16]
    path = _TMP / f"diffk_{digest}.py"
    path.write_text(source, encoding="utf-8")
    found = discover([str(path)])
    sys.modules.pop(f"diffk_{digest}", None)
    if found.errors or len(found.kernels) != 1:
        raise Disagreement(f"generated source does not load: {[e.render() for e in found.errors]}\n{source}")
    return found.kernels[0]


def traced_once(kernel: Any) -> Any:
    """`kernel` with its `trace` kept per target: `differential` asks for the same trace five
    times (check, the inputs, the npu pipeline, the cpu and the visa backend), and a trace of a
    loaded file costs a scope switch over every loaded module (npu_opt/per_file_imports.py).
    The traces are immutable IR, and each backend still lowers and runs it on its own; that
    tracing is deterministic is tests/npu_opt/test_ir_determinism.py's."""
    traces: dict[Any, Any] = {}
    real = kernel.trace

    def trace(target: Any = None) -> Any:
        try:
            key = ("target", target)
            hash(key)
        except TypeError:  # an unhashable target: traced every time, as before
            return real(target)
        if key not in traces:
            traces[key] = real(target)
        return traces[key]

    kernel.trace = trace
    return kernel


def _fail(source: str, seed: int | None, what: str) -> Disagreement:
    return Disagreement(f"{what}\n\n--- kernel source (input seed {seed}) ---\n{source}")


def run_visa(kernel: Any, arrays: list[np.ndarray]) -> Any:
    """The `visa` backend: npu lowering -> VISA text -> parse -> interpret."""
    return npu_opt.run(kernel, *[a.copy() for a in arrays], backend="visa")  # in-out arrays are written


def _codes(diags) -> tuple[str, ...]:
    return tuple(d.code for d in diags)


def _documented(code: str) -> bool:
    from driver.explain import page

    return code in CODES and page(code) is not None


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def compare(cpu: Any, visa: Any) -> str | None:
    """None when both results are bit-identical, else a description of the first difference."""
    cpu_t = cpu if isinstance(cpu, tuple) else (cpu,)
    visa_t = visa if isinstance(visa, tuple) else (visa,)
    if len(cpu_t) != len(visa_t):
        return f"cpu returned {len(cpu_t)} result(s), visa {len(visa_t)}"
    for k, (a, b) in enumerate(zip(cpu_t, visa_t)):
        if a is None or b is None:
            if a is not b:
                return f"result {k}: cpu {a!r}, visa {b!r}"
            continue
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"result {k}: cpu {a.dtype}{a.shape}, visa {b.dtype}{b.shape}"
        ba, bb = _bits(a), _bits(b)
        bad = np.argwhere(ba != bb)
        if len(bad):
            rows = [f"  at {tuple(int(i) for i in ix)}: cpu {hex(int(ba[tuple(ix)]))}, "
                    f"visa {hex(int(bb[tuple(ix)]))}" for ix in bad[:8]]
            return f"result {k} ({a.dtype}{a.shape}): {len(bad)} of {ba.size} elements differ\n" + "\n".join(rows)
    return None


def differential(source: str, seed: int = 0) -> Outcome:
    """Classify `source` on every backend (see the module doc); raise `Disagreement`."""
    from npu_opt.compile_api import compile_kernel
    from tests.differential.strategies import make_inputs

    kernel = traced_once(load_kernel(source))
    report = npu_opt.check(kernel)
    try:
        arrays = make_inputs(kernel, seed)
    except Exception:  # noqa: BLE001 - a refused kernel may have no clean signature
        if report.ok:
            raise
        arrays = []
    outcome = compile_kernel(kernel)
    if outcome.status == "ice":
        raise _fail(source, seed, "internal compiler error:\n" + "\n".join(d.render() for d in outcome.diagnostics))

    if not report.ok:
        codes = _codes(report.diagnostics)
        try:
            npu_opt.run(kernel, *arrays, backend="cpu")
        except CompileError as e:
            if _codes(e.diagnostics) != codes:
                raise _fail(source, seed, f"check() refuses with {codes}, the cpu backend with "
                                          f"{_codes(e.diagnostics)}") from None
        else:
            raise _fail(source, seed, f"check() refuses with {codes}, the cpu backend runs it")
        if outcome.status != "refused" or _codes(outcome.diagnostics) != codes:
            raise _fail(source, seed, f"check() refuses with {codes}, the npu pipeline gives "
                                      f"{outcome.status} {_codes(outcome.diagnostics)}")
        try:
            run_visa(kernel, arrays)
        except CompileError as e:
            if _codes(e.diagnostics) != codes:
                raise _fail(source, seed, f"check() refuses with {codes}, the visa backend with "
                                          f"{_codes(e.diagnostics)}") from None
        else:
            raise _fail(source, seed, f"check() refuses with {codes}, the visa backend runs it")
        for code in codes:
            if not _documented(code):
                raise _fail(source, seed, f"refusal code {code} has no explain page")
        return Outcome("refused", codes[0])

    try:
        cpu = npu_opt.run(kernel, *[a.copy() for a in arrays], backend="cpu")
    except Exception as e:  # noqa: BLE001 - the trace accepted it: any failure is a bug
        raise _fail(source, seed, f"check() accepts it but the cpu backend raised {type(e).__name__}: {e}") from e

    if outcome.status == "refused":
        code = outcome.diagnostics[0].code
        info = CODES.get(code)
        if info is None or info.phase != "lower" or not _documented(code):
            raise _fail(source, seed, f"check() accepts it but lowering refuses it with {code} "
                                      f"(phase {getattr(info, 'phase', None)}): only [L] rules may")
        return Outcome("lowering_refused", code)

    try:
        visa = run_visa(kernel, arrays)
    except Exception as e:  # noqa: BLE001
        raise _fail(source, seed, f"the visa backend raised {type(e).__name__}: {e}") from e
    diff = compare(cpu, visa)
    if diff is not None:
        raise _fail(source, seed, "cpu and visa disagree: " + diff)
    return Outcome("agree")
