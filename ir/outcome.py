"""What compiling one kernel gives: an `Outcome` (ok / refused / ice), and ICE diagnostics."""

from __future__ import annotations

from typing import Any

import attrs

from ir.diagnostic import Diagnostic
from ir.errors import exception_text
from ir.interruption import from_signal_handler
from ir.location import tb_frames
from ir.version import VERSION

__all__ = ["Outcome", "ice_diagnostic"]


@attrs.frozen
class Outcome:
    """Result of compiling one kernel: status, artifact text or diagnostics, timings."""

    kernel: str
    status: str  # "ok" | "refused" | "ice"
    text: str | None
    diagnostics: tuple[Diagnostic, ...]
    warnings: tuple[Diagnostic, ...]
    timings_ms: dict[str, float]
    artifact: Any = attrs.field(default=None, eq=False, repr=False)
    """The parsed form of `text` (a `visa.VisaArtifact`, allocation facts derived) when the
    compile made it in this process: whoever needs the records uses it instead of parsing
    the text again. None for a refusal, an ICE and an outcome read back from a cache."""
    makespan: int | None = attrs.field(default=None, eq=False)
    """The schedule model's makespan of `text`, when it was worked out where the artifact
    was at hand (a compile worker; the compile cache keeps it): the manifest then needs no
    parse of the text. None when not worked out."""

    @property
    def code(self) -> str | None:
        return None if self.status == "ok" else ("ICE" if self.status == "ice" else self.diagnostics[0].code)


def ice_diagnostic(kernel: str, exc: BaseException, loc: Any = None) -> Diagnostic:
    """An internal compiler error as a diagnostic: what failed, and a request to report it.
    An exception a signal handler raised (a harness's timeout) is no error of npu-opt's:
    it is raised again here, so every `except` that reports an ICE lets it through."""
    if from_signal_handler(exc):
        raise exc
    code = getattr(exc, "code", None)
    notes = [(f"{type(exc).__name__}: {exception_text(exc)}".splitlines() or [type(exc).__name__])[0]]
    if code and code not in ("ICE", "USAGE"):
        notes.insert(0, f"failing rule: {code}")
    frames = tb_frames(exc.__traceback__)
    if frames:
        frame, line = frames[-1]
        notes.append(f"raised in {frame.f_code.co_filename.rsplit('/', 2)[-2:]!s}:{line}")
    return Diagnostic(code="ICE", message=f"internal compiler error while compiling `{kernel}`",
                      file=getattr(loc, "file", None), line=getattr(loc, "line", None),
                      col=getattr(loc, "col", None), notes=tuple(notes),
                      help=f"this is a bug in npu-opt {VERSION}, not in your kernel; "
                           "please report it with the kernel source and this message")
