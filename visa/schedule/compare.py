"""Two schedules side by side: the makespan ratio and the steps whose intervals changed.

Steps are matched by body position (the tuning loop changes one lever, so the candidates
usually have the same steps); steps beyond the shorter kernel are listed as added or
removed.
"""

from __future__ import annotations

from typing import Any

from visa.schedule.model import MODEL_NOTE, Schedule

__all__ = ["compare_json", "compare_text"]


def compare_json(a: Schedule, b: Schedule) -> dict[str, Any]:
    """Makespans, their ratio b / a, and each step whose start, end or context differs."""
    changed = []
    for i in range(max(len(a.slots), len(b.slots))):
        sa = a.slots[i] if i < len(a.slots) else None
        sb = b.slots[i] if i < len(b.slots) else None
        ia = None if sa is None else (sa.step.label, sa.step.context, sa.start, sa.end)
        ib = None if sb is None else (sb.step.label, sb.step.context, sb.start, sb.end)
        if ia != ib:
            changed.append({"index": i, "a": _side(sa), "b": _side(sb)})
    return {"model": MODEL_NOTE, "a": {"kernel": a.kernel, "makespan": a.makespan, "binding": a.binding.name},
            "b": {"kernel": b.kernel, "makespan": b.makespan, "binding": b.binding.name},
            "ratio": b.makespan / a.makespan if a.makespan else None, "changed": changed}


def _side(slot: Any) -> dict[str, Any] | None:
    if slot is None:
        return None
    return {"label": slot.step.label, "context": slot.step.context, "start": slot.start, "end": slot.end,
            "duration": slot.step.duration, "wait": slot.wait.kind}


def _interval(side: dict[str, Any] | None) -> str:
    if side is None:
        return "(absent)"
    return f"{side['label']} {side['context']} [{side['start']}, {side['end']})"


def compare_text(a: Schedule, b: Schedule, name_a: str = "A", name_b: str = "B") -> str:
    data = compare_json(a, b)
    ratio = data["ratio"]
    if ratio is None:
        verdict = "A has an empty schedule"
    elif ratio < 1:
        verdict = f"B is {a.makespan / b.makespan:.2f}x faster"
    elif ratio > 1:
        verdict = f"B is {ratio:.2f}x slower"
    else:
        verdict = "same makespan"
    lines = [f"note: {MODEL_NOTE}",
             f"A {name_a}: makespan {a.makespan} cycles (bound by {a.binding.name})",
             f"B {name_b}: makespan {b.makespan} cycles (bound by {b.binding.name})",
             f"ratio B/A: {ratio:.4f} -- {verdict}" if ratio is not None else verdict,
             f"changed intervals ({len(data['changed'])}):"]
    for c in data["changed"]:
        lines.append(f"  step {c['index']:>3}: {_interval(c['a'])}  ->  {_interval(c['b'])}")
    return "\n".join(lines)
