"""The style and script of the schedule page (inlined: the page needs no network)."""

STYLE = """
body { font: 13px sans-serif; margin: 12px; background: #ffffff; color: #222; }
h1 { font-size: 17px; margin: 0 0 4px 0; }
.note { color: #555; margin-bottom: 8px; }
table.bounds { border-collapse: collapse; margin: 6px 0 10px 0; }
table.bounds td { padding: 1px 10px 1px 0; }
tr.binding td { font-weight: bold; }
#controls { margin: 6px 0; }
#controls input { width: 90px; }
#timeline { border: 1px solid #ccc; user-select: none; }
.lane-label { font: 11px monospace; fill: #333; }
.bar { stroke: #333; stroke-width: 0.5; }
.bar.critical { stroke: #d00000; stroke-width: 2.5; }
.bar:hover { opacity: 0.75; }
#tip { position: fixed; display: none; background: #fffbe6; border: 1px solid #999; padding: 6px;
       font: 11px monospace; max-width: 900px; white-space: pre-wrap; pointer-events: none; z-index: 10; }
#legend span { display: inline-block; margin-right: 12px; }
#legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: middle; }
"""

SCRIPT = r"""
(function () {
  const data = JSON.parse(document.getElementById('schedule-data').textContent);
  const COLORS = data.colors;  // each engine's own (tu_ops.engines)
  const LABEL_W = 160, LANE_H = 24, AXIS_H = 26, WIDTH = 1100;
  const svgNS = 'http://www.w3.org/2000/svg';
  const svg = document.getElementById('timeline');
  const tip = document.getElementById('tip');
  const from = document.getElementById('from'), to = document.getElementById('to');
  let view = [0, Math.max(data.makespan, 1)];

  function el(name, attrs, text) {
    const e = document.createElementNS(svgNS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function color(engine) { return COLORS[engine] || '#999999'; }
  function x(cycle) { return LABEL_W + (cycle - view[0]) * (WIDTH - LABEL_W) / (view[1] - view[0]); }

  function showTip(bar, ev) {
    tip.textContent = bar.text + '\n' + 'source: ' + (bar.loc || '(none)') + '\n' + bar.step + ' on ' +
      bar.context + ' / ' + bar.engine + ': cycles [' + bar.start + ', ' + bar.end + ')' +
      (bar.critical ? '  (critical path)' : '') + '\n' + bar.wait;
    tip.style.display = 'block';
    tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 420) + 'px';
    tip.style.top = (ev.clientY + 14) + 'px';
  }

  function render() {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const height = AXIS_H + data.lanes.length * LANE_H + 4;
    svg.setAttribute('width', WIDTH); svg.setAttribute('height', height);
    svg.appendChild(el('rect', {x: 0, y: 0, width: WIDTH, height: height, fill: '#ffffff', id: 'background'}));
    for (let t = 0; t <= 10; t++) {
      const c = Math.round(view[0] + (view[1] - view[0]) * t / 10);
      svg.appendChild(el('line', {x1: x(c), x2: x(c), y1: AXIS_H - 6, y2: height, stroke: '#eeeeee'}));
      svg.appendChild(el('text', {x: x(c), y: 14, 'font-size': 10, 'text-anchor': 'middle', fill: '#555'}, c));
    }
    data.lanes.forEach(function (lane, i) {
      const y = AXIS_H + i * LANE_H;
      svg.appendChild(el('text', {x: 4, y: y + 16, 'class': 'lane-label'}, lane.context + ' ' + lane.engine));
      svg.appendChild(el('line', {x1: 0, x2: WIDTH, y1: y + LANE_H, y2: y + LANE_H, stroke: '#dddddd'}));
    });
    data.bars.forEach(function (bar, i) {
      if (bar.end < view[0] || bar.start > view[1]) return;
      const x0 = Math.max(x(bar.start), LABEL_W), x1 = Math.min(x(bar.end), WIDTH);
      const rect = el('rect', {x: x0, y: AXIS_H + bar.lane * LANE_H + 3, width: Math.max(x1 - x0, 3),
                               height: LANE_H - 6, fill: color(bar.engine),
                               'class': 'bar' + (bar.critical ? ' critical' : ''), 'data-index': i,
                               'data-ref': bar.ref});
      rect.addEventListener('mouseover', function (ev) { showTip(bar, ev); });
      rect.addEventListener('mousemove', function (ev) { showTip(bar, ev); });
      rect.addEventListener('mouseout', function () { tip.style.display = 'none'; });
      svg.appendChild(rect);
    });
    from.value = view[0]; to.value = view[1];
  }

  function zoom(a, b) {
    a = Math.max(0, Math.floor(Math.min(a, b))); b = Math.ceil(Math.max(a, b));
    if (b - a < 1) b = a + 1;
    view = [a, b]; render();
  }
  document.getElementById('zoom').addEventListener('click', function () { zoom(+from.value, +to.value); });
  document.getElementById('reset').addEventListener('click', function () { zoom(0, Math.max(data.makespan, 1)); });
  let dragFrom = null;
  function cycleAt(ev) {
    const r = svg.getBoundingClientRect();
    return view[0] + (ev.clientX - r.left - LABEL_W) * (view[1] - view[0]) / (WIDTH - LABEL_W);
  }
  svg.addEventListener('mousedown', function (ev) { dragFrom = cycleAt(ev); });
  svg.addEventListener('mouseup', function (ev) {
    if (dragFrom === null) return;
    const c = cycleAt(ev);
    if (Math.abs(c - dragFrom) * (WIDTH - LABEL_W) / (view[1] - view[0]) > 5) zoom(dragFrom, c);
    dragFrom = null;
  });
  const legend = document.getElementById('legend');
  Array.from(new Set(data.bars.map(function (b) { return b.engine; }))).forEach(function (engine) {
    const s = document.createElement('span');
    const i = document.createElement('i'); i.style.background = color(engine);
    s.appendChild(i); s.appendChild(document.createTextNode(engine)); legend.appendChild(s);
  });
  render();
  window.scheduleZoom = zoom;
})();
"""
