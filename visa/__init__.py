"""The VISA artifact: text format, printer and parser (visa/visa.lark).

The verifier is `visa.verify` (it re-derives records with the lowering's builders) and the
interpreter `visa.interp`; neither is imported here, so `import visa.interp` loads only
what the interpreter executes. The names below are imported on first use (PEP 562): a
compile prints artifacts and never loads the parser."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ir.lazy_exports import LazyExports

if TYPE_CHECKING:
    from visa.artifact import COST_KEYS, FORMAT_VERSION, VisaArtifact, VisaTextError
    from visa.cost import compute_cost
    from visa.facts import renumber, with_facts
    from visa.parser import parse_visa
    from visa.printer import artifact_of, print_artifact, print_visa, target_hash


_EXPORTS = LazyExports()  # the same names, loaded at run time on first use


@_EXPORTS.loader
def _visa_artifact() -> dict[str, Any]:
    from visa.artifact import COST_KEYS, FORMAT_VERSION, VisaArtifact, VisaTextError
    return locals()


@_EXPORTS.loader
def _visa_cost() -> dict[str, Any]:
    from visa.cost import compute_cost
    return locals()


@_EXPORTS.loader
def _visa_facts() -> dict[str, Any]:
    from visa.facts import renumber, with_facts
    return locals()


@_EXPORTS.loader
def _visa_parser() -> dict[str, Any]:
    from visa.parser import parse_visa
    return locals()


@_EXPORTS.loader
def _visa_printer() -> dict[str, Any]:
    from visa.printer import artifact_of, print_artifact, print_visa, target_hash
    return locals()



def __getattr__(name: str) -> Any:
    return _EXPORTS.get(__name__, name)


__all__ = [
    "COST_KEYS", "FORMAT_VERSION", "VisaArtifact", "VisaTextError", "artifact_of", "compute_cost",
    "parse_visa", "print_artifact", "print_visa", "renumber", "target_hash", "with_facts",
]
