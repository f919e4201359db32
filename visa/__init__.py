"""The VISA artifact: text format, printer and parser (visa/visa.lark).

The verifier is `visa.verify` (it re-derives records with the lowering's builders) and the
interpreter `visa.interp`; neither is imported here, so `import visa.interp` loads only
what the interpreter executes. The names below are imported on first use (PEP 562): a
compile prints artifacts and never loads the parser."""

from __future__ import annotations

import importlib
from typing import Any

_LAZY: dict[str, str] = {
    **dict.fromkeys(["COST_KEYS", "FORMAT_VERSION", "VisaArtifact", "VisaTextError"], "visa.artifact"),
    "compute_cost": "visa.cost",
    **dict.fromkeys(["renumber", "with_facts"], "visa.facts"),
    "parse_visa": "visa.parser",
    **dict.fromkeys(["artifact_of", "print_artifact", "print_visa", "target_hash"], "visa.printer"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'visa' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "COST_KEYS", "FORMAT_VERSION", "VisaArtifact", "VisaTextError", "artifact_of", "compute_cost",
    "parse_visa", "print_artifact", "print_visa", "renumber", "target_hash", "with_facts",
]
