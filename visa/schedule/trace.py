"""A schedule in the Chrome trace-event format (opened by Perfetto and chrome://tracing).

One process per kernel, one thread per (context, engine) lane, one complete event (`X`)
per record: `ts`/`dur` in microseconds at the rates' clock, the record's text, source
location, step and wait reason in `args`.
"""

from __future__ import annotations

from typing import Any

from tu_ops.engines import ENGINES
from visa.schedule.model import CONTEXTS, MODEL_NOTE, Schedule
from visa.schedule.report import wait_text

__all__ = ["trace_json", "lanes"]


def lanes(schedule: Schedule) -> list[tuple[str, str]]:
    """The (context, engine) lanes that have a record: contexts main, sub, tdma; engines in
    pipeline order."""
    seen = {(s.step.context, r.engine) for s in schedule.slots for r in s.step.records}
    return sorted(seen, key=lambda ce: (_rank(CONTEXTS, ce[0]), _rank(_ENGINES, ce[1]), ce))


_ENGINES = tuple(engine.name for engine in ENGINES)


def _rank(order: tuple[str, ...], name: str) -> int:
    return order.index(name) if name in order else len(order)


def trace_json(schedule: Schedule) -> dict[str, Any]:
    """The trace-event object of a schedule."""
    us = 1.0 / (schedule.rates("clock", "ghz") * 1000.0)
    tid = {lane: i + 1 for i, lane in enumerate(lanes(schedule))}
    events: list[dict[str, Any]] = [{"name": "process_name", "ph": "M", "pid": 1, "tid": 0,
                                     "args": {"name": f"{schedule.kernel} (npu-opt schedule model)"}}]
    for (context, engine), t in tid.items():
        events.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": t, "args": {"name": f"{context} {engine}"}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": 1, "tid": t, "args": {"sort_index": t}})
    critical = {s.step.index for s in schedule.critical_path()}
    for slot in schedule.slots:
        for r in slot.step.records:
            events.append({
                "name": f"{r.ref} {r.mnemonic}", "cat": r.engine, "ph": "X", "pid": 1,
                "tid": tid[(slot.step.context, r.engine)], "ts": (slot.start + slot.step.startup) * us,
                "dur": r.cycles * us,
                "args": {"text": r.text, "loc": r.loc, "step": slot.step.label, "start_cycle": slot.start,
                         "cycles": r.cycles, "critical": slot.step.index in critical,
                         "wait": wait_text(schedule, slot)},
            })
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"kernel": schedule.kernel, "makespan_cycles": schedule.makespan, "model": MODEL_NOTE}}
