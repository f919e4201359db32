"""The VISA artifact: text format, printer and parser (visa/visa.lark).

The verifier is `visa.verify` (it re-derives records with the lowering's builders) and the
interpreter `visa.interp`; neither is imported here, so `import visa.interp` loads only
what the interpreter executes. The names below are imported on first use (PEP 562): a
compile prints artifacts and never loads the parser."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ir.lazy_exports import lazy_export

if TYPE_CHECKING:
    from visa.artifact import COST_KEYS, FORMAT_VERSION, VisaArtifact, VisaTextError
    from visa.cost import compute_cost
    from visa.facts import renumber, with_facts
    from visa.parser import parse_visa
    from visa.printer import artifact_of, print_artifact, print_visa, target_hash


def __getattr__(name: str) -> Any:
    return lazy_export(__name__, name)


__all__ = [
    "COST_KEYS", "FORMAT_VERSION", "VisaArtifact", "VisaTextError", "artifact_of", "compute_cost",
    "parse_visa", "print_artifact", "print_visa", "renumber", "target_hash", "with_facts",
]
