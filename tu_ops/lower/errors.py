"""Refusals and internal errors of the lowering (docs/ci.md, LOWER-2 and LOWER-3).

A refusal found while lowering ([L] rules, DTYPE-EMU, a dtype pair the target lacks) is a
`LoweringRefusal` carrying user diagnostics. Any other verifier failure, and any exception
inside lowering, is an internal compiler error: a Diagnostic with code `ICE`, the failing
rule ID in its notes and a help line asking for a report naming the npu-opt version.
"""

from __future__ import annotations

from typing import Any

from ir.diagnostic import Diagnostic, Violation
from ir.errors import LoweringError
from ir.location import Location, tb_frames

__all__ = ["L_CODES", "LoweringRefusal", "refusal", "ice", "ice_from_exception", "version", "stage_of"]

# rule LOWER-2: the [L] rules, plus DTYPE-EMU (docs/numerics.md), found by the npu backend.
L_CODES = frozenset({"MEM-3", "MEM-4", "FEED-11", "TRFLD-6", "CMT-5", "DMAOP-5", "DTYPE-EMU", "VIEW-10"})


def version() -> str:
    """The installed npu-opt version (named in every ICE report)."""
    try:
        from importlib.metadata import version as _v

        return _v("npu-opt")
    except Exception:  # noqa: BLE001 - not installed: the source tree's version
        return "0.1.0"


def stage_of(op: Any) -> str | None:
    """The traced stage of a lowered op (`to_dm` / `to_hbm` for a DMA by its destination)."""
    traced = getattr(op, "traced_stage", None)
    return traced() if traced is not None else None


class LoweringRefusal(LoweringError):
    """The lowering refused the kernel (or hit an ICE); `diagnostics` say why."""

    def __init__(self, diagnostics: tuple[Diagnostic, ...] | list[Diagnostic]) -> None:
        self.diagnostics = tuple(diagnostics)
        first = self.diagnostics[0] if self.diagnostics else None
        super().__init__(first.message if first else "kernel refused",
                         code=first.code if first else "ICE")


def refusal(code: str, message: str, loc: Location | None, *, stage: str | None = None,
            op: str | None = None, label: str | None = None, notes: tuple[str, ...] = (),
            help: str | None = None) -> Diagnostic:
    """A user refusal (or warning, for a `W-` code) at the user's call site."""
    return Diagnostic.from_violation(Violation(code, message, label=label, notes=tuple(notes), help=help),
                                     loc, stage, op)


def ice(rule: str | None, message: str, loc: Location | None = None, *, stage: str | None = None,
        op: str | None = None, notes: tuple[str, ...] = ()) -> Diagnostic:
    """An internal compiler error: `rule` (the failing op rule ID) goes first in the notes."""
    head = (f"failing rule: {rule}",) if rule else ()
    return refusal("ICE", f"internal compiler error: {message}", loc, stage=stage, op=op,
                   notes=head + tuple(notes),
                   help=f"this is a bug in npu-opt {version()}, not in your kernel; please report it "
                        f"with the npu-opt version ({version()}), the kernel source and this message")


def ice_from_exception(exc: BaseException, where: str, loc: Location | None = None) -> Diagnostic:
    """An ICE for an unexpected exception raised inside lowering pass `where`."""
    rule = getattr(exc, "code", None)
    rule = rule if isinstance(rule, str) and rule not in ("ICE", "USAGE") else None
    frames = tb_frames(exc.__traceback__)
    notes = [f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": "),
             f"in lowering pass `{where}`"]
    if frames:
        frame, line = frames[-1]
        notes.append(f"raised at {'/'.join(frame.f_code.co_filename.split('/')[-2:])}:{line}")
    return ice(rule, f"lowering crashed in pass `{where}`", loc, notes=tuple(notes))
