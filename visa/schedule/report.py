"""A schedule as versioned JSON (the `--dump-schedule` file) and as text.

Schema `npu-opt-schedule`, version 2 (documented in the tuning guide): the kernel, the
makespan, the launch (the cycle the first command can issue), the lower bounds and the
binding one, per-context busy cycles, every step with its interval, its command start-up,
the resources it claimed, why it waited and its records (each with its own engine interval,
after the start-up, text and source location), the hazards and the critical path.
"""

from __future__ import annotations

from typing import Any

import attrs

from visa.schedule.model import CONTEXTS, MODEL_NOTE, Schedule
from visa.schedule.scheduler import Slot

__all__ = ["SCHEMA", "SCHEMA_VERSION", "schedule_json", "schedule_text", "wait_text"]

SCHEMA = "npu-opt-schedule"
SCHEMA_VERSION = 2  # 2: `launch`, a step's `startup`, records start after it


def _step_json(slot: Slot, critical: bool) -> dict[str, Any]:
    step = slot.step
    return {
        "index": step.index, "label": step.label, "context": step.context,
        "start": slot.start, "end": slot.end, "duration": step.duration, "claims": list(step.claims),
        "wait": {"kind": slot.wait.kind, "on": slot.wait.on, "what": slot.wait.what},
        "critical": critical,
        "startup": step.startup,
        "records": [{"ref": r.ref, "mnemonic": r.mnemonic, "engine": r.engine, "start": slot.start + step.startup,
                     "end": slot.start + step.startup + r.cycles, "cycles": r.cycles, "text": r.text, "loc": r.loc}
                    for r in step.records],
        "dma": attrs.asdict(step.dma) if step.dma is not None else None,
        "bank_run": attrs.asdict(step.bank_run) if step.bank_run is not None else None,
    }


def schedule_json(schedule: Schedule) -> dict[str, Any]:
    """The version-2 JSON object of a schedule."""
    critical = {s.step.index for s in schedule.critical_path()}
    busy = {c: sum(s.step.duration for s in schedule.slots if s.step.context == c) for c in CONTEXTS}
    util = schedule.utilisation()
    return {
        "schema": SCHEMA, "version": SCHEMA_VERSION, "model": MODEL_NOTE,
        "kernel": schedule.kernel, "target": schedule.target, "clock_ghz": schedule.rates("clock", "ghz"),
        "makespan": schedule.makespan, "launch": schedule.origin,
        "bounds": [attrs.asdict(b) for b in schedule.bounds], "binding": schedule.binding.name,
        "contexts": {c: {"busy": busy[c], "utilisation": round(util[c], 6)} for c in CONTEXTS},
        "steps": [_step_json(s, s.step.index in critical) for s in schedule.slots],
        "hazards": [attrs.asdict(h) for h in schedule.hazards],
        "critical_path": [s.step.index for s in schedule.critical_path()],
    }


def wait_text(schedule: Schedule, slot: Slot) -> str:
    """Why `slot` started when it did, in words."""
    w = slot.wait
    if w.kind == "none":
        return f"ready at cycle {schedule.origin}" + (" (the launch)" if schedule.origin else "")
    other = schedule.slots[w.on].step.label if w.on is not None else "?"
    if w.kind == "dependency":
        verb = "read" if w.what.startswith("WAR") else "written"
        return f"waited on a dependency: {w.what}, {verb} by {other}"
    return f"waited on a resource: {w.what}, held by {other}"


def _names(slot: Slot) -> str:
    step = slot.step
    if step.label.startswith("program"):
        run = step.bank_run
        banks = f"; longest same-bank run {run.length} (bank {run.bank})" if run is not None and run.length > 1 else ""
        startup = f"start-up {step.startup}; " if step.startup else ""
        return f"{step.label} ({startup}{', '.join(r.mnemonic for r in step.records)}{banks})"
    d = step.dma
    if d is None:
        return step.label
    penalty = f", {d.hbm_penalty}" if d.hbm_penalty else ""
    return (f"{step.label} = dma (startup {d.startup}, engine {d.engine_cycles}, HBM {d.hbm_cycles}{penalty}, "
            f"DM {d.dm_cycles} cycles)")


def schedule_text(schedule: Schedule, source: str = "") -> str:
    """The human report: makespan, bounds, critical path, per-context utilisation."""
    ghz = schedule.rates("clock", "ghz")
    span = schedule.makespan
    lines = [f"schedule of {schedule.kernel}{f' ({source})' if source else ''} on {schedule.target}",
             f"note: {MODEL_NOTE}",
             f"makespan: {span} cycles ({span / ghz / 1000:.2f} us at {ghz:g} GHz)",
             "lower bounds (could be no faster than" +
             (f"; each counts the {schedule.origin}-cycle launch):" if schedule.origin else "):")]
    binding = schedule.binding.name
    for b in sorted(schedule.bounds, key=lambda b: -b.cycles):
        mark = "  <- binding" if b.name == binding else ""
        lines.append(f"  {b.name:9} {b.cycles:>10}  {b.detail}{mark}")
    lines.append("critical path (the chain of steps reaching the last cycle):")
    for slot in schedule.critical_path():
        lines.append(f"  [{slot.start:>8}, {slot.end:>8})  {slot.step.context:5} {_names(slot)}")
        lines.append(f"  {'':22}{wait_text(schedule, slot)}")
    util = schedule.utilisation()
    lines.append("utilisation: " + "  ".join(f"{c} {100 * util[c]:.1f}%" for c in CONTEXTS))
    return "\n".join(lines)
