"""The `visa` backend: compile with the npu pipeline, then run the VISA artifact (docs/testing.md).

`run` compiles the kernel (`backends.npu.compile_kernel`: trace, lower, verify,
emit), parses the emitted text back (`visa.parse_visa`) and executes that parsed artifact
in the VISA interpreter (`visa.interp.execute`), so what runs is exactly what a `.visa`
file says, not the traced IR. A refused kernel (any [T] or [L] rule) or an internal
compiler error raises `CompileError` before any data is read; an emitted artifact the
interpreter cannot execute is an internal compiler error too.

A test loop runs one kernel many times: the backend keeps, in this process, the emitted text
per traced kernel (`backends.npu.lowering_key`: the kernel is traced on every call, so one
whose code, closure or globals changed traces otherwise and is compiled afresh) and the
parsed, verified artifact per digest of its text, so a repeat neither lowers nor parses.
Both are small LRU maps (`CACHED` entries each); `clear_caches()` empties them.
"""

from __future__ import annotations

from collections.abc import Sequence
from hashlib import sha256
from typing import Any

from backends import inout
from backends.cpu.host import returns_tuple
from backends.cpu.lru import Lru
from backends.npu import NpuBackend, compile_kernel, lowering_key
from ir.boundary import Traceable
from ir.diagnostic import Diagnostic
from ir.errors import CompileError
from ir.outcome import ice_diagnostic
from tu_ops.target import Target, TargetLike, as_target, for_chips
from visa import parse_visa
from visa.artifact import VisaArtifact
from visa.interp import InterpError, execute_inout

__all__ = ["VisaBackend", "clear_caches"]

CACHED = 64
_TEXTS = Lru(CACHED)  # lowering_key -> emitted text
_PARSED = Lru(CACHED)  # sha256 of the text -> parsed artifact


def clear_caches() -> None:
    """Forget every kept text and artifact."""
    _TEXTS.clear()
    _PARSED.clear()


class VisaBackend:
    """npu lowering + the VISA reference interpreter; agrees with `cpu` bit for bit."""

    name = "visa"
    executes = True

    def diagnostics(self, kernel: Traceable, target: TargetLike = "rngd") -> tuple[Diagnostic, ...]:
        """Every refusal and warning of the trace and the lowering (as the npu backend)."""
        return NpuBackend().diagnostics(kernel, target)

    def compile(self, kernel: Traceable, target: TargetLike = "rngd") -> VisaArtifact:
        """The parsed `VisaArtifact` of `kernel`; CompileError for a refusal or an ICE."""
        tgt = _kernel_target(target, kernel)
        try:
            traced = kernel.trace(tgt)
        except Exception:  # noqa: BLE001 - compile_kernel traces again and reports the crash as an ICE
            traced = None
        key = lowering_key(traced.kernel, tgt) if traced is not None and not traced.errors else None
        text = _TEXTS.get(key) if key is not None else None
        if text is None:
            outcome = compile_kernel(kernel, target, traced=traced)
            if outcome.status != "ok" or outcome.text is None:
                raise CompileError(outcome.diagnostics)
            text = outcome.text
            if key is not None:
                _TEXTS.put(key, text)
        digest = sha256(text.encode()).hexdigest()
        artifact = _PARSED.get(digest)
        if artifact is None:
            artifact = parse_visa(text)
            _PARSED.put(digest, artifact)
        return artifact

    def run(self, kernel: Traceable, arrays: Sequence[Any], target: TargetLike = "rngd") -> Any:
        """Results as host arrays, then the in-out arrays written in place (`backends.inout`)."""
        artifact = self.compile(kernel, target)
        params = artifact.kernel.params
        call = inout.prepare(kernel, [(p.name, p.type, p.inout) for p in params], arrays, target)
        try:
            results, finals = execute_inout(artifact, call.flat, _kernel_target(target, kernel))
            return inout.finish(call, results, finals, returns_tuple(kernel))
        except InterpError as e:  # the compiler emitted an artifact that does not execute: a bug of ours
            raise CompileError((ice_diagnostic(kernel.name, e),)) from e


def _kernel_target(target: TargetLike, kernel: Traceable) -> Target:
    """The target the kernel was compiled for (`tu_ops.target.for_chips`)."""
    return for_chips(as_target(target), kernel.chips)
