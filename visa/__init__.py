"""The VISA artifact: text format, printer and parser (visa/visa.lark).

The verifier is `visa.verify` (it re-derives records with the lowering's builders) and the
interpreter `visa.interp`; neither is imported here, so `import visa.interp` loads only
what the interpreter executes."""

from visa.artifact import COST_KEYS, FORMAT_VERSION, VisaArtifact, VisaTextError
from visa.cost import compute_cost
from visa.facts import renumber, with_facts
from visa.parser import parse_visa
from visa.printer import artifact_of, print_artifact, print_visa, target_hash

__all__ = [
    "COST_KEYS", "FORMAT_VERSION", "VisaArtifact", "VisaTextError", "artifact_of", "compute_cost",
    "parse_visa", "print_artifact", "print_visa", "renumber", "target_hash", "with_facts",
]
