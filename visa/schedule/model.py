"""`schedule_artifact(artifact) -> Schedule`: the makespan model of one VISA artifact.

This is a MODEL of the reference compiler's scheduler (which is closed), built from the
reference book's published rates and rules; its cycles are estimates to compare
candidates with, not device measurements.
"""

from __future__ import annotations

from typing import Any

import attrs

from tu_ops import BUILTIN_TARGETS, rngd
from visa.artifact import VisaArtifact
from visa.schedule.rates import Rates, builtin_rates
from visa.schedule.loops import fence_loops, repeat_loops
from visa.schedule.scheduler import Hazard, Slot, schedule_steps
from visa.schedule.steps import DMA_CONTEXT, build_steps

__all__ = ["Bound", "Schedule", "schedule_artifact", "busiest_context", "launch_cycles", "steps_makespan", "CONTEXTS",
           "MODEL_NOTE"]

CONTEXTS = ("main", "sub", DMA_CONTEXT)
MODEL_NOTE = ("a model of the reference scheduler (which is closed), from the book's published rates; "
              "cycles are estimates for comparing candidates, not device measurements")


@attrs.frozen
class Bound:
    """A lower bound on the makespan: `name`, `cycles`, and what it divides by what."""

    name: str
    cycles: int
    detail: str


@attrs.frozen
class Schedule:
    """The scheduled steps of one kernel, its makespan, lower bounds and critical path."""

    kernel: str
    target: str
    slots: tuple[Slot, ...]
    hazards: tuple[Hazard, ...]
    bounds: tuple[Bound, ...]
    rates: Rates
    origin: int = 0            # the cycle the first command can issue (the kernel's launch)

    @property
    def makespan(self) -> int:
        return max((s.end for s in self.slots), default=0)

    @property
    def binding(self) -> Bound:
        """The largest lower bound: what the kernel could be no faster than."""
        return max(self.bounds, key=lambda b: b.cycles)

    def critical_path(self) -> list[Slot]:
        """The chain of steps reaching the last cycle, first to last: from the step that ends
        last, each step's predecessor is the step its start waited for."""
        if not self.slots:
            return []
        slot = max(self.slots, key=lambda s: (s.end, s.step.index))
        chain = [slot]
        while slot.wait.on is not None and slot.start > self.origin:
            slot = self.slots[slot.wait.on]
            chain.append(slot)
        return chain[::-1]

    def utilisation(self) -> dict[str, float]:
        """Busy cycles over the makespan, per context (a step claiming tdma by the bank rule
        counts on its own context only)."""
        span = self.makespan or 1
        return {c: sum(s.step.duration for s in self.slots if s.step.context == c) / span for c in CONTEXTS}


def _chain_bound(slots: list[Slot], found: list[Hazard]) -> int:
    """The longest hazard chain, summing durations and ignoring every resource."""
    preds: dict[int, list[int]] = {}
    for h in found:
        preds.setdefault(h.after, []).append(h.before)
    finish: list[int] = []
    for s in slots:
        finish.append(max((finish[p] for p in preds.get(s.step.index, ())), default=0) + s.step.duration)
    return max(finish, default=0)


def _ceil(a: float, b: float) -> int:
    return int(-(-a // b)) if a else 0


def busiest_context(steps: Any, times: list[int] | None = None) -> tuple[str, int]:
    """The context with the most work and that work (the sum of its steps' durations, each
    `times[k]` times when given: a rolled loop's body runs once per iteration): a context
    runs its steps one at a time, so no schedule of `steps` is shorter."""
    times = times or [1] * len(steps)
    busy = {c: sum(s.duration * n for s, n in zip(steps, times) if s.context == c) for c in CONTEXTS}
    top = max(busy, key=lambda c: busy[c])
    return top, busy[top]


def launch_cycles(rates: Rates) -> int:
    """The cycle the kernel's first command can issue (`kernel.launch_cycles`)."""
    return int(rates("kernel", "launch_cycles"))


def steps_makespan(steps: list[Any], rates: Rates, kernel: Any) -> int:
    """The makespan of `steps`, built from `kernel`, as `schedule_artifact` schedules them (for
    a caller that built the steps itself, as tune's gate does): a rolled loop's body fenced
    and repeated its trip count of times."""
    slots, _, _ = _scheduled(steps, rates, kernel)
    return max((s.end for s in slots), default=0)


def _scheduled(steps: list[Any], rates: Rates, kernel: Any) -> tuple[list[Slot], list[Hazard], int]:
    """The slots and hazards of `steps` after the launch (and the launch's cycle): every
    rolled loop's body fenced, scheduled once and repeated its trip count of times."""
    origin = launch_cycles(rates)
    slots, found = schedule_steps(fence_loops(steps, kernel), origin)
    return repeat_loops(slots, kernel), found, origin


def lower_bounds(slots: list[Slot], found: list[Hazard], rates: Rates, origin: int = 0) -> list[Bound]:
    """Bytes over each memory's bandwidth, MACs over the contraction peak, the longest
    dependency chain and the busiest context; each after the launch (`origin`), before which
    nothing runs."""
    steps = [s.step for s in slots]
    dmas = [s.dma for s in steps if s.dma is not None]
    hbm = sum(d.hbm_bytes for d in dmas)
    dm = sum(d.dm_bytes for d in dmas)
    slice_bytes = sum(s.slice_dm_bytes for s in steps)
    mac_cycles = sum(_ceil(s.macs, s.mac_peak) for s in steps if s.macs)
    macs = sum(s.macs for s in steps)
    hbm_rate, dm_rate = rates("hbm", "chip_bytes_per_cycle"), rates("dm", "chip_bytes_per_cycle")
    slice_rate = rates("dm", "slice_bytes_per_cycle")
    top, busy = busiest_context(steps)
    return [attrs.evolve(b, cycles=b.cycles + origin) for b in (
        Bound("hbm", _ceil(hbm, hbm_rate), f"{hbm} HBM bytes / {hbm_rate:g} B per cycle"),
        Bound("dm", _ceil(dm, dm_rate), f"{dm} DM bytes moved by DMA / {dm_rate:g} B per cycle"),
        Bound("dm_slice", _ceil(slice_bytes, slice_rate),
              f"{slice_bytes} DM bytes fetched and committed per slice / {slice_rate:g} B per cycle"),
        Bound("mac", mac_cycles, f"{macs} MACs per slice at the contraction peak"),
        Bound("chain", _chain_bound(slots, found), "longest dependency chain (no resource limits)"),
        Bound("context", busy, f"busiest context ({top}): the sum of its steps"),
    )]


def schedule_artifact(artifact: VisaArtifact, *, rates: Rates | None = None, target: Any = None) -> Schedule:
    """Schedule a parsed artifact on `target` (default: the built-in target it names)."""
    if target is None:
        target = BUILTIN_TARGETS.get(artifact.target, rngd)()
    if rates is None:
        rates = builtin_rates(artifact.target) or builtin_rates("rngd")
    slots, found, origin = _scheduled(build_steps(artifact.kernel, rates, target), rates, artifact.kernel)
    return Schedule(kernel=artifact.kernel.name, target=artifact.target, slots=tuple(slots), hazards=tuple(found),
                    bounds=tuple(lower_bounds(slots, found, rates, origin)), rates=rates, origin=origin)
