"""Colour for terminal output, rustc-style: `error` red, `warning` yellow, `help` cyan.

`--color auto` (the default) colours only when stdout is a terminal and the NO_COLOR
environment variable is unset or empty; `always` and `never` force it.
"""

from __future__ import annotations

import os
import re
from typing import TextIO

__all__ = ["use_color", "paint"]

_RED, _YELLOW, _CYAN, _BOLD, _RESET = "\x1b[31m", "\x1b[33m", "\x1b[36m", "\x1b[1m", "\x1b[0m"
# Patterns compiled on first use (re's own cache): a warm `compile` only asks `use_color`.
_HEAD = r"(?m)^(error|warning)(\[[^\]]*\])?:"
_HELP = r"(?m)^(\s*= help:)"


def use_color(mode: str | None, out: TextIO) -> bool:
    """Whether to colour `out` for `--color mode` (None means auto)."""
    if mode == "always":
        return True
    if mode == "never":
        return False
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(out, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, enabled: bool) -> str:
    """`text` (rendered diagnostics) with its headings and help lines coloured."""
    if not enabled:
        return text

    def head(match: re.Match[str]) -> str:
        colour = _RED if match.group(1) == "error" else _YELLOW
        return f"{_BOLD}{colour}{match.group(0)}{_RESET}"

    return re.sub(_HELP, lambda m: f"{_CYAN}{m.group(1)}{_RESET}", re.sub(_HEAD, head, text))
