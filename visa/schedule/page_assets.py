"""The style of the schedule page (inlined: the page needs no network); its script is in
`page_script.py`."""

STYLE = """
body { font: 13px sans-serif; margin: 12px; background: #ffffff; color: #222; }
h1 { font-size: 17px; margin: 0 0 4px 0; }
h2 { font-size: 14px; margin: 10px 0 4px 0; }
.note { color: #555; margin-bottom: 8px; }
table.bounds { border-collapse: collapse; margin: 6px 0 10px 0; }
table.bounds td { padding: 1px 10px 1px 0; }
tr.binding td { font-weight: bold; }
#controls { margin: 6px 0; }
#controls input { width: 90px; }
#layout { display: flex; align-items: flex-start; gap: 10px; }
#details { width: 290px; min-height: 200px; border: 1px solid #ccc; padding: 6px; font: 11px monospace;
           white-space: pre-wrap; overflow-wrap: anywhere; }
#details a { color: #0b57d0; cursor: pointer; }
#details .empty { color: #777; font-family: sans-serif; }
#timeline, #memory { border: 1px solid #ccc; user-select: none; display: block; }
#memory { margin-top: 6px; cursor: crosshair; }
.lane-label, .axis-label { font: 11px monospace; fill: #333; }
.bar, .tensor { stroke: #333; stroke-width: 0.5; cursor: pointer; }
.tensor { fill-opacity: 0.75; }
.bar.critical { stroke: #d00000; stroke-width: 2.5; }
.bar.hover, .tensor.hover { stroke: #ff8c00; stroke-width: 2; }
.bar.linked, .tensor.linked { stroke: #ff8c00; stroke-width: 3; }
.bar.selected, .tensor.selected { stroke: #000000; stroke-width: 3.5; }
.bar.dim, .tensor.dim { opacity: 0.2; }
.bar:hover, .tensor:hover { opacity: 0.75; }
.tensor-label { font: 10px monospace; fill: #111; pointer-events: none; }
#brush { fill: #0b57d0; fill-opacity: 0.12; stroke: #0b57d0; stroke-dasharray: 4 2; pointer-events: none; }
#tip { position: fixed; display: none; background: #fffbe6; border: 1px solid #999; padding: 6px;
       font: 11px monospace; max-width: 900px; white-space: pre-wrap; pointer-events: none; z-index: 10; }
#legend span { display: inline-block; margin-right: 12px; }
#legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: middle; }
table.tensors { border-collapse: collapse; font: 11px monospace; }
table.tensors td, table.tensors th { padding: 1px 10px 1px 0; text-align: left; }
table.tensors tbody tr { cursor: pointer; }
table.tensors tr.selected { background: #dde8fb; }
table.tensors tr.linked { background: #ffe9cc; }
table.tensors tr.dim { color: #aaa; }
table.tensors tr.hover { outline: 1px solid #ff8c00; }
"""
