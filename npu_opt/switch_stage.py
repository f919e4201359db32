"""The argument check of the `switch` stage method: a `config` that is not a well-formed
`SwitchConfig` value (an uncalled data variant, a plain value) is SWITCH-1 at the user's
line, before any op is built; a config produced by a refused call is a silent fault."""

from __future__ import annotations

from typing import Any

from ir.diagnostic import Violation
from ir.errors import TypeCheckError
from ir.switch.config import as_switch_config
from npu_opt.stagebase import Poisoned

__all__ = ["switch_fault"]


def switch_fault(config: Any) -> Violation | None:
    """None for a SwitchConfig value; else the SWITCH-1 violation that says how to write one."""
    if isinstance(config, Poisoned):
        return Violation("", "argument comes from a refused call")
    try:
        as_switch_config(config)
    except TypeCheckError as e:
        return Violation(e.code, str(e), help="e.g. `SwitchConfig.FORWARDING` or "
                                              "`SwitchConfig.BROADCAST1(slice1=4, slice0=64)`")
    return None
