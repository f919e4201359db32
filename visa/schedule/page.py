"""One self-contained HTML page of a schedule: a lane per (context, engine), a bar per record.

Bars are coloured by engine; hovering shows the record's text, source line, interval and
why its step waited; the critical path has a red outline; the cycle range zooms by the
From/To inputs or by dragging across the timeline. Data, style and script are inline:
the page opens from disk with no network and no server.
"""

from __future__ import annotations

import html
import json
from typing import Any

from tu_ops.engines import ENGINES
from visa.schedule.model import MODEL_NOTE, Schedule
from visa.schedule.page_assets import SCRIPT, STYLE
from visa.schedule.report import wait_text
from visa.schedule.trace import lanes

__all__ = ["schedule_page", "page_data"]


def page_data(schedule: Schedule) -> dict[str, Any]:
    """The object the page script draws: lanes, and one bar per record."""
    order = lanes(schedule)
    index = {lane: i for i, lane in enumerate(order)}
    critical = {s.step.index for s in schedule.critical_path()}
    bars = []
    for slot in schedule.slots:
        for r in slot.step.records:
            bars.append({"ref": r.ref, "mnemonic": r.mnemonic, "engine": r.engine, "context": slot.step.context,
                         "lane": index[(slot.step.context, r.engine)], "start": slot.start,
                         "end": slot.start + r.cycles, "text": r.text, "loc": r.loc, "step": slot.step.label,
                         "wait": wait_text(schedule, slot), "critical": slot.step.index in critical})
    return {"kernel": schedule.kernel, "makespan": schedule.makespan,
            "lanes": [{"context": c, "engine": e} for c, e in order], "bars": bars,
            "colors": {engine.name: engine.color for engine in ENGINES}}


def _bounds_rows(schedule: Schedule) -> str:
    binding = schedule.binding.name
    rows = []
    for b in sorted(schedule.bounds, key=lambda b: -b.cycles):
        cls = ' class="binding"' if b.name == binding else ""
        rows.append(f"<tr{cls}><td>{html.escape(b.name)}</td><td>{b.cycles}</td><td>{html.escape(b.detail)}</td></tr>")
    return "\n".join(rows)


def schedule_page(schedule: Schedule, title: str = "") -> str:
    """The HTML text of the page."""
    payload = json.dumps(page_data(schedule)).replace("</", "<\\/")
    name = html.escape(title or schedule.kernel)
    util = schedule.utilisation()
    usage = ", ".join(f"{c} {100 * u:.1f}%" for c, u in util.items())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>schedule of {name}</title>
<style>{STYLE}</style></head>
<body>
<h1>schedule of {html.escape(schedule.kernel)} ({name}) on {html.escape(schedule.target)}:
makespan <span id="makespan">{schedule.makespan}</span> cycles</h1>
<div class="note">npu-opt schedule: {html.escape(MODEL_NOTE)}. Utilisation: {html.escape(usage)}.
Red outline: the critical path.</div>
<table class="bounds"><tr><td><b>lower bound</b></td><td><b>cycles</b></td><td></td></tr>
{_bounds_rows(schedule)}</table>
<div id="controls">cycles from <input id="from" type="number"> to <input id="to" type="number">
<button id="zoom">zoom</button> <button id="reset">reset</button> (or drag across the timeline)</div>
<div id="legend"></div>
<svg id="timeline" xmlns="http://www.w3.org/2000/svg"></svg>
<div id="tip"></div>
<script type="application/json" id="schedule-data">{payload}</script>
<script>{SCRIPT}</script>
</body></html>
"""
