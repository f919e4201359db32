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
        end = start + step.duration
        for r in step.claims:
            free[r] = (end, step.index)
        slots.append(Slot(step, start, end, wait))
    return slots, found


def _resource_text(resource: str) -> str:
    if resource in ("main", "sub", "tdma"):
        return f"context {resource}"
    if resource.startswith("bank"):
        return f"DM bank {resource[4:]}"
    return f"{resource} engine"
