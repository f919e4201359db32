"""The makespan model of a VISA artifact: steps, hazards, a list scheduler, lower bounds.

It is a model of the reference compiler's closed scheduler, built from the reference
book's published rates (`tu_ops/targets/<target>.schedule.toml`); it reads a parsed
artifact only.
"""

from visa.schedule.model import CONTEXTS, MODEL_NOTE, Bound, Schedule, schedule_artifact
from visa.schedule.rates import Rates, builtin_rates, load_rates, parse_rates

__all__ = ["Bound", "CONTEXTS", "MODEL_NOTE", "Rates", "Schedule", "builtin_rates", "load_rates", "parse_rates",
           "schedule_artifact"]
