"""The VISA artifact: text format, printer, parser and verifier (visa/visa.lark)."""

from visa.artifact import COST_KEYS, FORMAT_VERSION, VisaArtifact, VisaTextError
from visa.cost import compute_cost
from visa.facts import renumber, with_facts
from visa.parser import parse_visa
from visa.printer import artifact_of, print_artifact, print_visa, target_hash
from visa.verify import verify_artifact, verify_text

__all__ = [
    "COST_KEYS", "FORMAT_VERSION", "VisaArtifact", "VisaTextError", "artifact_of", "compute_cost",
    "parse_visa", "print_artifact", "print_visa", "renumber", "target_hash", "verify_artifact",
    "verify_text", "with_facts",
]
