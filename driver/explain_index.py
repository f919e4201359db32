"""`npu-opt explain` without a code: the index of every diagnostic code, by the stage that
raises it."""

from __future__ import annotations

from typing import Any

from ir.codes import CODES

__all__ = ["code_list"]

_PHASE_TITLES = {"trace": "trace-time rules (check)", "lower": "lowering", "verify": "op verifiers (lowered ops)",
                 "mapping": "mapping expressions", "cli": "command line", "internal": "internal",
                 "run": "run time (cpu backend, VISA interpreter)"}


def code_list() -> str:
    """Every code, grouped by the stage that raises it, one `CODE  title` line each."""
    groups: dict[str, list[Any]] = {}
    for info in CODES.values():
        groups.setdefault(info.phase, []).append(info)
    lines = []
    for phase, infos in groups.items():
        lines.append(f"{_PHASE_TITLES.get(phase, phase)}:")
        lines.extend(f"  {i.code:25} {i.title}" for i in infos)
        lines.append("")
    lines.append("npu-opt explain CODE prints the page of one code.")
    return "\n".join(lines) + "\n"
