"""The list scheduler: hazards between steps, then start and end cycles; the makespan.

Hazards are found on memory locations in one pass over the steps in body order: a read
waits for the last overlapping write (RAW), a write for the overlapping reads since then
(WAR) and for the last overlapping write (WAW). Each memory keeps one entry per range
still visible; a write drops the entries it fully covers (the writer is ordered after
all of them, so later hazards reach them through it), which keeps the work linear in
the number of steps for a kernel that reuses its memory.

Steps then start in body order, each as early as its hazards allow and as soon as every
resource it claims is free (a context runs its steps one at a time, in order; a claimed
shared resource is handed from step to step in body order), and none before `origin`,
the cycle the kernel's first command can issue. A step's `wait` says what
its start waited for: a `dependency` (the hazard, on which location) or a `resource`
(which one, held by which step).

A store into the TRF and a contraction reading it on the other context share the TRF's
banks (both halves live in them), and a read wins a bank: where the two overlap in time the
store ends later by the contraction's `trf_blocks` (its reads that miss the read cache,
steps.trf_read_blocks), whichever of the two was placed first.
"""

from __future__ import annotations

from typing import Iterable

import attrs

from visa.schedule.steps import Access, Step

__all__ = ["Hazard", "Slot", "Wait", "hazards", "schedule_steps"]


@attrs.frozen
class Hazard:
    """Step `after` must start after step `before` ends: `kind` RAW/WAR/WAW on `location`."""

    before: int
    after: int
    kind: str
    location: str


@attrs.frozen
class Wait:
    """Why a step started when it did: `kind` "dependency", "resource" or "none"."""

    kind: str
    on: int | None = None      # the step it waited for
    what: str = ""             # the hazard ("RAW on dm[0, 4096) (%2)") or the resource ("context main")


@attrs.frozen
class Slot:
    """A scheduled step: [start, end) cycles and why it started then."""

    step: Step
    start: int
    end: int
    wait: Wait


class _Memory:
    """The visible accesses of one memory space: (lo, hi) -> [last writer, readers since]."""

    def __init__(self) -> None:
        self.ranges: dict[tuple[int, int], list] = {}

    def touch(self, step: int, acc: Access) -> list[Hazard]:
        found: list[Hazard] = []
        where = acc.text()
        for (lo, hi), (writer, readers) in self.ranges.items():
            if lo >= acc.hi or acc.lo >= hi:
                continue
            if writer is not None and writer != step:
                found.append(Hazard(writer, step, "WAW" if acc.write else "RAW", where))
            if acc.write:
                found += [Hazard(r, step, "WAR", where) for r in readers if r != step]
        if acc.write:
            self.ranges = {k: v for k, v in self.ranges.items() if not (acc.lo <= k[0] and k[1] <= acc.hi)}
            self.ranges[(acc.lo, acc.hi)] = [step, []]
        else:
            entry = self.ranges.setdefault((acc.lo, acc.hi), [None, []])
            entry[1].append(step)
        return found


def hazards(steps: Iterable[Step]) -> list[Hazard]:
    """Every RAW / WAR / WAW hazard between the steps, in body order of the later step."""
    spaces: dict[str, _Memory] = {}
    out: list[Hazard] = []
    for step in steps:
        # reads first: a step reading and writing one range depends on the earlier writer only
        for acc in sorted(step.accesses, key=lambda a: a.write):
            out += spaces.setdefault(acc.space, _Memory()).touch(step.index, acc)
    return out


def schedule_steps(steps: list[Step], origin: int = 0) -> tuple[list[Slot], list[Hazard]]:
    """Start and end of every step (in body order, none before `origin`) and the hazards that
    ordered them."""
    found = hazards(steps)
    preds: dict[int, list[Hazard]] = {}
    for h in found:
        preds.setdefault(h.after, []).append(h)
    free: dict[str, tuple[int, int]] = {}     # resource -> (free at, holder)
    slots: list[Slot] = []
    banked: dict[str, list[int]] = {}         # context -> its TRF stores and contractions, in order
    for step in steps:
        dep = max(preds.get(step.index, ()), key=lambda h: (slots[h.before].end, -h.before), default=None)
        dep_ready = slots[dep.before].end if dep is not None else origin
        res = max(step.claims, key=lambda r: free.get(r, (origin, -1))[0], default=None)
        res_ready, holder = free.get(res, (origin, -1)) if res is not None else (origin, -1)
        start = max(dep_ready, res_ready, origin)
        if start == origin:
            wait = Wait("none")
        elif dep is not None and dep_ready >= res_ready:
            wait = Wait("dependency", dep.before, f"{dep.kind} on {dep.location}")
        else:
            wait = Wait("resource", holder, _resource_text(res))
        end = start + step.duration + _yield_banks(step, start, start + step.duration, slots, free, banked)
        for r in step.claims:
            free[r] = (end, step.index)
        slots.append(Slot(step, start, end, wait))
    return slots, found


def _writes_trf(step: Step) -> bool:
    return any(a.space == "trf" and a.write for a in step.accesses) and step.context in ("main", "sub")


def _beside(start: int, end: int, order: list[int], slots: list[Slot]) -> list[int]:
    """The slots of `order` (one context's, ending in order) overlapping [start, end)."""
    out = []
    for i in reversed(order):
        if slots[i].end <= start:
            break
        if slots[i].start < end:
            out.append(i)
    return out


def _yield_banks(step: Step, start: int, end: int, slots: list[Slot], free: dict[str, tuple[int, int]],
                 banked: dict[str, list[int]]) -> int:
    """Cycles `step` (a TRF store) waits for the bank reads of contractions beside it; if
    `step` is a contraction, the stores placed beside it end later by its blocked cycles
    (their claims too, when they still hold them). The other context only: one context runs
    its commands one at a time."""
    if not (_writes_trf(step) or step.trf_blocks):
        return 0
    beside = [i for context, order in banked.items() if context != step.context
              for i in _beside(start, end, order, slots)]
    banked.setdefault(step.context, []).append(len(slots))
    if _writes_trf(step):
        return sum(slots[i].step.trf_blocks for i in beside)
    if step.trf_blocks:
        for i in (i for i in beside if _writes_trf(slots[i].step)):
            later = attrs.evolve(slots[i], end=slots[i].end + step.trf_blocks)
            slots[i] = later
            for r in later.step.claims:
                if free.get(r, (0, -1))[1] == later.step.index:
                    free[r] = (later.end, later.step.index)
    return 0


def _resource_text(resource: str) -> str:
    if resource in ("main", "sub", "tdma"):
        return f"context {resource}"
    if resource.startswith("bank"):
        return f"DM bank {resource[4:]}"
    return f"{resource} engine"
