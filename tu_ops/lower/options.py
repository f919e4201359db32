"""The one frozen `Options` object of the lowering pipeline (README.md "Passes").

Filled by the CLI (`--target`, `--no-compat`, `--dump-ir DIR`) or the Python entry points;
no environment-variable knobs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from tu_ops.target import Target, as_target, rngd

__all__ = ["Options"]


def _axes(value: Any) -> tuple[tuple[str, int], ...] | None:
    if value is None:
        return None
    items = value.items() if isinstance(value, dict) else value
    return tuple((str(k), int(v)) for k, v in items)


@attrs.frozen(kw_only=True)
class Options:
    """How to lower one kernel.

    `target`: the Target (or a built-in name / file path, converted on construction).
    `compat`: insert the target's declared emulation stages (W-DTYPE-EMU) instead of
    refusing them with DTYPE-EMU. `dump_ir`: a directory; when set, every pass writes its
    output text as `<kernel>.<nn>-<pass>.txt`. `axes`: the axis declaration order
    (`((name, size), ...)`) for the signature's `axes` line when the traced kernel does
    not carry it."""

    target: Target = attrs.field(factory=rngd, converter=as_target)
    compat: bool = True
    dump_ir: Path | None = attrs.field(default=None, converter=lambda p: None if p is None else Path(p))
    axes: tuple[tuple[str, int], ...] | None = attrs.field(default=None, converter=_axes)
