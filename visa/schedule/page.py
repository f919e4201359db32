"""One self-contained HTML page of a schedule: operators and tensors over cycles.

The timeline has a lane per (context, engine) and a bar per record (the operators), coloured
by engine, the critical path outlined in red. The memory view below it shares its cycle axis:
each tensor with an address (`page_tensors`) is a box over its lifetime and its address range
in DM, TRF or VRF; the tensor table lists every tensor, HBM ones too. Hovering shows a node's
text; clicking one selects it: the operators and tensors connected to it are highlighted, the
others dimmed, and the side panel lists its lifetime, context and connected nodes. Dragging
across the timeline zooms the cycles; dragging a box in the memory view (the brush) zooms the
cycles and the addresses together; the range inputs set both, reset restores them. Data,
style and script are inline: the page opens from disk with no network and no server.
"""

from __future__ import annotations

import html
import json
from typing import Any

from tu_ops.engines import ENGINES
from visa.schedule.model import MODEL_NOTE, Schedule
from tu_ops.program import LoweredKernel
from visa.schedule.page_assets import STYLE
from visa.schedule.page_script import SCRIPT
from visa.schedule.page_tensors import tensor_nodes
from visa.schedule.report import wait_text
from visa.schedule.trace import lanes

__all__ = ["schedule_page", "page_data"]


def page_data(schedule: Schedule, kernel: LoweredKernel | None = None) -> dict[str, Any]:
    """The object the page script draws: lanes, one bar per record and, given the scheduled
    `kernel`, its tensors (each bar lists the tensors its record reads or writes)."""
    tensors, links = tensor_nodes(schedule, kernel) if kernel is not None else ([], {})
    order = lanes(schedule)
    index = {lane: i for i, lane in enumerate(order)}
    critical = {s.step.index for s in schedule.critical_path()}
    bars = []
    for slot in schedule.slots:
        for r in slot.step.records:
            bars.append({"ref": r.ref, "mnemonic": r.mnemonic, "engine": r.engine, "context": slot.step.context,
                         "lane": index[(slot.step.context, r.engine)], "start": slot.start,
                         "end": slot.start + r.cycles, "text": r.text, "loc": r.loc, "step": slot.step.label,
                         "wait": wait_text(schedule, slot), "critical": slot.step.index in critical,
                         "tensors": links.get(r.ref, [])})
    return {"kernel": schedule.kernel, "makespan": schedule.makespan,
            "lanes": [{"context": c, "engine": e} for c, e in order], "bars": bars,
            "tensors": tensors, "spaces": ["dm", "trf", "vrf"],
            "colors": {engine.name: engine.color for engine in ENGINES}}


def _bounds_rows(schedule: Schedule) -> str:
    binding = schedule.binding.name
    rows = []
    for b in sorted(schedule.bounds, key=lambda b: -b.cycles):
        cls = ' class="binding"' if b.name == binding else ""
        rows.append(f"<tr{cls}><td>{html.escape(b.name)}</td><td>{b.cycles}</td><td>{html.escape(b.detail)}</td></tr>")
    return "\n".join(rows)


def schedule_page(schedule: Schedule, title: str = "", kernel: LoweredKernel | None = None) -> str:
    """The HTML text of the page (with the tensors of `kernel`, the artifact's, when given)."""
    payload = json.dumps(page_data(schedule, kernel)).replace("</", "<\\/")
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
Red outline: the critical path. Click an operator or a tensor to select it.</div>
<table class="bounds"><tr><td><b>lower bound</b></td><td><b>cycles</b></td><td></td></tr>
{_bounds_rows(schedule)}</table>
<div id="controls">cycles from <input id="from" type="number"> to <input id="to" type="number">,
addresses from <input id="addr-from" type="number"> to <input id="addr-to" type="number"> of
<select id="space"></select> <button id="zoom">zoom</button> <button id="reset">reset</button>
(drag across the timeline to zoom the cycles, a box in the memory view to zoom both)</div>
<div id="legend"></div>
<div id="layout"><div id="details"></div>
<div id="views"><svg id="timeline" xmlns="http://www.w3.org/2000/svg"></svg>
<svg id="memory" xmlns="http://www.w3.org/2000/svg"></svg></div></div>
<h2>tensors</h2>
<table class="tensors" id="tensors"><thead><tr><th>tensor</th><th>memory</th><th>live cycles</th><th>context</th>
<th>written by -&gt; read by</th><th>type</th></tr></thead><tbody id="tensor-rows"></tbody></table>
<div id="tip"></div>
<script type="application/json" id="schedule-data">{payload}</script>
<script>{SCRIPT}</script>
</body></html>
"""
