"""The script of the schedule page (inlined: the page needs no network).

It draws the `schedule-data` object (`page.page_data`): the operator lanes, the memory view
(a tensor is a box over its lifetime in cycles and its address range) and the tensor table;
it keeps one state (cycle range, memory, address range, selection) and redraws from it.
`window.scheduleViewer` reads that state and sets it, for a test or the console.
"""

SCRIPT = r"""
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('schedule-data').textContent);
  const COLORS = data.colors;  // each engine's own (tu_ops.engines)
  const LABEL_W = 170, LANE_H = 24, AXIS_H = 26, WIDTH = 1100, MEM_H = 240, MEM_PAD = 8, DRAG = 5;
  const RIGHT = WIDTH - 30;  // the last cycle's x (its tick label fits)
  const svgNS = 'http://www.w3.org/2000/svg';
  function $(id) { return document.getElementById(id); }
  const timeline = $('timeline'), memory = $('memory'), tip = $('tip'), details = $('details');
  const from = $('from'), to = $('to'), addrFrom = $('addr-from'), addrTo = $('addr-to'), spaceSel = $('space');
  const FULL = [0, Math.max(data.makespan, 1)];
  const barOf = {};
  data.bars.forEach(function (b, i) { barOf[b.ref] = i; });
  const spaces = {};  // memory -> its full address range (over the tensors placed in it)
  data.tensors.forEach(function (t) {
    if (t.lo === null) return;
    const r = spaces[t.space] || (spaces[t.space] = [0, 1]);
    r[1] = Math.max(r[1], t.hi);
  });
  const spaceNames = Object.keys(spaces).sort(function (a, b) { return data.spaces.indexOf(a) - data.spaces.indexOf(b); });
  const state = {cycles: FULL.slice(), space: spaceNames[0] || null,
                 addresses: spaceNames.length ? spaces[spaceNames[0]].slice() : [0, 1], selected: null};
  let lastDown = null;  // where the mouse went down last: a click that ends a drag is no click

  function el(name, attrs, text) {
    const e = document.createElementNS(svgNS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function color(engine) { return COLORS[engine] || '#999999'; }
  function x(cycle) { return LABEL_W + (cycle - state.cycles[0]) * (RIGHT - LABEL_W) / (state.cycles[1] - state.cycles[0]); }
  function memTop() { return AXIS_H + MEM_PAD; }
  function y(addr) { return memTop() + (addr - state.addresses[0]) * MEM_H / (state.addresses[1] - state.addresses[0]); }
  function cycleAt(svg, ev) {
    const r = svg.getBoundingClientRect();
    return state.cycles[0] + (ev.clientX - r.left - LABEL_W) * (state.cycles[1] - state.cycles[0]) / (RIGHT - LABEL_W);
  }
  function addrAt(ev) {
    const r = memory.getBoundingClientRect();
    return state.addresses[0] + (ev.clientY - r.top - memTop()) * (state.addresses[1] - state.addresses[0]) / MEM_H;
  }
  function unit(t) { return t.unit ? t.unit + 's' : ''; }
  function tensorName(t) { return t.name + (t.param ? ' "' + t.param + '"' : ''); }
  function where(t) { return t.lo === null ? t.space.toUpperCase() : t.space.toUpperCase() + ' [' + t.lo + ', ' + t.hi + ') ' + unit(t); }
  function tensorColor(t) {
    const w = t.writers.length ? data.bars[barOf[t.writers[0]]] : null;
    return w ? color(w.engine) : '#bbbbbb';
  }

  // --- selection -----------------------------------------------------------------------
  function linked(s) {  // the operators and tensors connected to node `s` (the selection by default)
    if (s === undefined) s = state.selected;
    const ops = new Set(), tensors = new Set();
    if (s === null) return {ops: ops, tensors: tensors};
    if (s.kind === 'op') {
      ops.add(s.index);
      data.bars[s.index].tensors.forEach(function (t) { tensors.add(t); });
    } else {
      tensors.add(s.index);
      const t = data.tensors[s.index];
      t.writers.concat(t.readers).forEach(function (ref) { if (ref in barOf) ops.add(barOf[ref]); });
    }
    return {ops: ops, tensors: tensors};
  }
  function mark(node, kind, index, links) {
    const s = state.selected;
    if (s === null) return;
    const set = kind === 'op' ? links.ops : links.tensors;
    node.classList.add(s.kind === kind && s.index === index ? 'selected' : set.has(index) ? 'linked' : 'dim');
  }
  function select(kind, index) { state.selected = index === null ? null : {kind: kind, index: index}; render(); }

  function showTip(text, ev) {
    tip.textContent = text;
    tip.style.display = 'block';
    tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 420) + 'px';
    tip.style.top = (ev.clientY + 14) + 'px';
  }
  function hover(node, text, kind, index) {  // the tip, and the nodes connected to it outlined
    node.addEventListener('mouseover', function (ev) {
      showTip(text, ev);
      const links = linked({kind: kind, index: index});
      document.querySelectorAll('[data-kind]').forEach(function (n) {
        const set = n.dataset.kind === 'op' ? links.ops : links.tensors;
        if (set.has(+n.dataset.index)) n.classList.add('hover');
      });
    });
    node.addEventListener('mousemove', function (ev) { showTip(text, ev); });
    node.addEventListener('mouseout', function () {
      tip.style.display = 'none';
      document.querySelectorAll('.hover').forEach(function (n) { n.classList.remove('hover'); });
    });
  }
  function barText(bar) {
    return bar.text + '\n' + 'source: ' + (bar.loc || '(none)') + '\n' + bar.step + ' on ' + bar.context + ' / ' +
      bar.engine + ': cycles [' + bar.start + ', ' + bar.end + ')' + (bar.critical ? '  (critical path)' : '') +
      '\n' + bar.wait;
  }
  function tensorText(t) {
    return tensorName(t) + ' : ' + t.type + '\n' + where(t) + '\nlive: steps ' + t.first_step + '..' + t.last_step +
      ', cycles [' + t.start + ', ' + t.end + ')\nwritten by ' + (t.writers.join(', ') || '(the caller)') +
      '; read by ' + (t.readers.join(', ') || '(nothing in the kernel)');
  }

  // --- drawing -------------------------------------------------------------------------
  function grid(svg, height) {
    svg.appendChild(el('rect', {x: 0, y: 0, width: WIDTH, height: height, fill: '#ffffff', 'class': 'background'}));
    for (let t = 0; t <= 10; t++) {
      const c = Math.round(state.cycles[0] + (state.cycles[1] - state.cycles[0]) * t / 10);
      svg.appendChild(el('line', {x1: x(c), x2: x(c), y1: AXIS_H - 6, y2: height, stroke: '#eeeeee'}));
      svg.appendChild(el('text', {x: x(c), y: 14, 'font-size': 10, 'text-anchor': 'middle', fill: '#555'}, c));
    }
  }
  function clear(svg) { while (svg.firstChild) svg.removeChild(svg.firstChild); }

  function renderTimeline(links) {
    clear(timeline);
    const height = AXIS_H + data.lanes.length * LANE_H + 4;
    timeline.setAttribute('width', WIDTH); timeline.setAttribute('height', height);
    grid(timeline, height);
    data.lanes.forEach(function (lane, i) {
      const top = AXIS_H + i * LANE_H;
      timeline.appendChild(el('text', {x: 4, y: top + 16, 'class': 'lane-label'}, lane.context + ' ' + lane.engine));
      timeline.appendChild(el('line', {x1: 0, x2: WIDTH, y1: top + LANE_H, y2: top + LANE_H, stroke: '#dddddd'}));
    });
    data.bars.forEach(function (bar, i) {
      if (bar.end < state.cycles[0] || bar.start > state.cycles[1]) return;
      const x0 = Math.max(x(bar.start), LABEL_W), x1 = Math.min(x(bar.end), RIGHT);
      const rect = el('rect', {x: x0, y: AXIS_H + bar.lane * LANE_H + 3, width: Math.max(x1 - x0, 3),
                               height: LANE_H - 6, fill: color(bar.engine),
                               'class': 'bar' + (bar.critical ? ' critical' : ''), 'data-index': i,
                               'data-kind': 'op', 'data-ref': bar.ref});
      mark(rect, 'op', i, links);
      hover(rect, barText(bar), 'op', i);
      timeline.appendChild(rect);
    });
  }

  function renderMemory(links) {
    clear(memory);
    const height = AXIS_H + MEM_H + 2 * MEM_PAD;
    memory.setAttribute('width', WIDTH); memory.setAttribute('height', height);
    grid(memory, height);
    if (state.space === null) {
      memory.appendChild(el('text', {x: LABEL_W, y: AXIS_H + 30, 'class': 'axis-label'},
                            'no tensor of this kernel has an address in DM, TRF or VRF'));
      return;
    }
    const a = state.addresses, u = data.tensors.find(function (t) { return t.space === state.space; });
    memory.appendChild(el('text', {x: 4, y: 14, 'class': 'axis-label'}, state.space.toUpperCase() + ' (' + unit(u) + ')'));
    for (let t = 0; t <= 4; t++) {
      const v = Math.round(a[0] + (a[1] - a[0]) * t / 4);
      memory.appendChild(el('line', {x1: LABEL_W - 4, x2: WIDTH, y1: y(v), y2: y(v), stroke: '#f0f0f0'}));
      memory.appendChild(el('text', {x: LABEL_W - 6, y: y(v) + 4, 'text-anchor': 'end', 'class': 'axis-label'}, v));
    }
    const top = memTop(), bottom = memTop() + MEM_H;
    data.tensors.forEach(function (t, i) {
      if (t.space !== state.space || t.end < state.cycles[0] || t.start > state.cycles[1] ||
          t.hi <= a[0] || t.lo >= a[1]) return;
      const x0 = Math.max(x(t.start), LABEL_W), x1 = Math.min(x(t.end), RIGHT);
      const y0 = Math.max(y(t.lo), top), y1 = Math.min(y(t.hi), bottom);
      const rect = el('rect', {x: x0, y: y0, width: Math.max(x1 - x0, 3), height: Math.max(y1 - y0, 2),
                               fill: tensorColor(t), 'class': 'tensor', 'data-index': i, 'data-kind': 'tensor',
                               'data-name': t.name});
      mark(rect, 'tensor', i, links);
      hover(rect, tensorText(t), 'tensor', i);
      memory.appendChild(rect);
      if (x1 - x0 > 30 && y1 - y0 > 12) {
        memory.appendChild(el('text', {x: x0 + 3, y: y0 + 11, 'class': 'tensor-label'}, tensorName(t)));
      }
    });
  }

  function link(kind, index, text) {
    const a = document.createElement('a');
    a.textContent = text; a.dataset.kind = kind; a.dataset.index = index;
    a.addEventListener('click', function (ev) { ev.preventDefault(); select(kind, index); });
    return a;
  }
  function renderDetails() {
    while (details.firstChild) details.removeChild(details.firstChild);
    const s = state.selected;
    function line(text) { details.appendChild(document.createTextNode(text + '\n')); }
    function links(title, items) {
      details.appendChild(document.createTextNode(title));
      if (!items.length) details.appendChild(document.createTextNode(' (none)'));
      items.forEach(function (item, k) {
        details.appendChild(document.createTextNode(k ? ', ' : ' '));
        details.appendChild(item);
      });
      details.appendChild(document.createTextNode('\n'));
    }
    if (s === null) {
      const p = document.createElement('span'); p.className = 'empty';
      p.textContent = 'Click an operator or a tensor to see its lifetime, its context and what it is connected to.';
      details.appendChild(p);
      return;
    }
    if (s.kind === 'op') {
      const b = data.bars[s.index];
      line('operator ' + b.ref + ' ' + b.mnemonic);
      line('context: ' + b.context + ', engine ' + b.engine + ' (' + b.step + ')');
      line('lifetime: cycles [' + b.start + ', ' + b.end + ')' + (b.critical ? ', on the critical path' : ''));
      line('source: ' + (b.loc || '(none)'));
      line(b.wait);
      const reads = [], writes = [];
      b.tensors.forEach(function (i) {
        const t = data.tensors[i];
        (t.writers.indexOf(b.ref) >= 0 ? writes : reads).push(link('tensor', i, tensorName(t)));
      });
      links('reads:', reads);
      links('writes:', writes);
      line('\n' + b.text);
    } else {
      const t = data.tensors[s.index];
      line('tensor ' + tensorName(t));
      line('type: ' + t.type);
      line('memory: ' + where(t) + (t.lanes ? ' of ' + t.lanes + ' lanes' : ''));
      line('lifetime: cycles [' + t.start + ', ' + t.end + '), steps ' + t.first_step + '..' + t.last_step);
      line('context: ' + (t.contexts.join(', ') || '(none)'));
      links('written by:', t.writers.filter(function (r) { return r in barOf; }).map(function (r) { return link('op', barOf[r], r + ' ' + data.bars[barOf[r]].mnemonic); }));
      links('read by:', t.readers.filter(function (r) { return r in barOf; }).map(function (r) { return link('op', barOf[r], r + ' ' + data.bars[barOf[r]].mnemonic); }));
    }
  }

  function renderList(links) {
    const body = $('tensor-rows');
    while (body.firstChild) body.removeChild(body.firstChild);
    data.tensors.forEach(function (t, i) {
      const tr = document.createElement('tr');
      tr.dataset.index = i; tr.dataset.name = t.name; tr.dataset.kind = 'tensor';
      [tensorName(t), where(t), '[' + t.start + ', ' + t.end + ')', t.contexts.join(', '),
       (t.writers.join(', ') || '-') + ' -> ' + (t.readers.join(', ') || '-'), t.type].forEach(function (text) {
        const td = document.createElement('td'); td.textContent = text; tr.appendChild(td);
      });
      mark(tr, 'tensor', i, links);
      tr.addEventListener('click', function () { select('tensor', i); });
      hover(tr, tensorText(t), 'tensor', i);
      body.appendChild(tr);
    });
  }

  function render() {
    const links = linked();
    renderTimeline(links);
    renderMemory(links);
    renderDetails();
    renderList(links);
    from.value = state.cycles[0]; to.value = state.cycles[1];
    addrFrom.value = state.addresses[0]; addrTo.value = state.addresses[1];
  }

  // --- zoom, brush, reset --------------------------------------------------------------
  function range(a, b) {
    let lo = Math.max(0, Math.floor(Math.min(a, b))), hi = Math.ceil(Math.max(a, b));
    if (hi - lo < 1) hi = lo + 1;
    return [lo, hi];
  }
  function zoom(a, b) { state.cycles = range(a, b); render(); }
  function brush(c0, c1, a0, a1) { state.cycles = range(c0, c1); state.addresses = range(a0, a1); render(); }
  function reset() {
    state.cycles = FULL.slice();
    if (state.space !== null) state.addresses = spaces[state.space].slice();
    render();
  }
  $('zoom').addEventListener('click', function () {
    state.addresses = range(+addrFrom.value, +addrTo.value);
    zoom(+from.value, +to.value);
  });
  $('reset').addEventListener('click', reset);
  spaceNames.forEach(function (name) {
    const o = document.createElement('option'); o.value = name; o.textContent = name.toUpperCase(); spaceSel.appendChild(o);
  });
  spaceSel.disabled = spaceNames.length < 2;
  spaceSel.addEventListener('change', function () {
    state.space = spaceSel.value; state.addresses = spaces[state.space].slice(); render();
  });

  function clicks(svg) {  // a click (not the end of a drag) selects what it hits, or clears the selection
    svg.addEventListener('click', function (ev) {
      if (lastDown !== null && Math.max(Math.abs(ev.clientX - lastDown.x), Math.abs(ev.clientY - lastDown.y)) > DRAG) return;
      const d = ev.target.dataset || {};
      select(d.kind || null, d.kind ? +d.index : null);
    });
  }
  let drag = null;
  [timeline, memory].forEach(function (svg) {
    svg.addEventListener('mousedown', function (ev) { lastDown = {x: ev.clientX, y: ev.clientY}; });
  });
  timeline.addEventListener('mousedown', function (ev) { drag = {svg: timeline, x: ev.clientX, c: cycleAt(timeline, ev)}; });
  timeline.addEventListener('mouseup', function (ev) {
    if (drag === null || drag.svg !== timeline) return;
    if (Math.abs(ev.clientX - drag.x) > DRAG) { zoom(drag.c, cycleAt(timeline, ev)); }
    drag = null;
  });
  memory.addEventListener('mousedown', function (ev) {
    if (state.space === null) return;
    drag = {svg: memory, x: ev.clientX, y: ev.clientY, c: cycleAt(memory, ev), a: addrAt(ev)};
  });
  memory.addEventListener('mousemove', function (ev) {
    if (drag === null || drag.svg !== memory) return;
    const r = memory.getBoundingClientRect();
    let box = $('brush');
    if (box === null) { box = el('rect', {id: 'brush'}); memory.appendChild(box); }
    box.setAttribute('x', Math.min(drag.x, ev.clientX) - r.left); box.setAttribute('y', Math.min(drag.y, ev.clientY) - r.top);
    box.setAttribute('width', Math.abs(ev.clientX - drag.x)); box.setAttribute('height', Math.abs(ev.clientY - drag.y));
  });
  memory.addEventListener('mouseup', function (ev) {
    if (drag === null || drag.svg !== memory) return;
    const box = $('brush');
    if (box !== null) box.remove();
    if (Math.abs(ev.clientX - drag.x) > DRAG && Math.abs(ev.clientY - drag.y) > DRAG) {
      brush(drag.c, cycleAt(memory, ev), drag.a, addrAt(ev));
    } else if (Math.abs(ev.clientX - drag.x) > DRAG) {
      zoom(drag.c, cycleAt(memory, ev));
    }
    drag = null;
  });
  clicks(timeline); clicks(memory);
  window.addEventListener('mouseup', function (ev) {  // a drag released outside the views ends there
    if (drag === null || ev.target.closest('svg') === drag.svg) return;
    const box = $('brush');
    if (box !== null) box.remove();
    drag = null;
  });
  document.addEventListener('keydown', function (ev) { if (ev.key === 'Escape') select(null, null); });

  const legend = $('legend');
  Array.from(new Set(data.bars.map(function (b) { return b.engine; }))).forEach(function (engine) {
    const s = document.createElement('span');
    const i = document.createElement('i'); i.style.background = color(engine);
    s.appendChild(i); s.appendChild(document.createTextNode(engine)); legend.appendChild(s);
  });
  render();

  function nameOf(s) { return s === null ? null : s.kind === 'op' ? data.bars[s.index].ref : data.tensors[s.index].name; }
  window.scheduleViewer = {
    state: function () {
      const links = linked();
      return {cycles: state.cycles.slice(), space: state.space, addresses: state.addresses.slice(),
              selected: state.selected === null ? null : {kind: state.selected.kind, name: nameOf(state.selected)},
              linked: {ops: Array.from(links.ops).map(function (i) { return data.bars[i].ref; }).sort(),
                       tensors: Array.from(links.tensors).map(function (i) { return data.tensors[i].name; }).sort()}};
    },
    select: function (kind, name) {
      const i = kind === 'op' ? barOf[name] : data.tensors.findIndex(function (t) { return t.name === name; });
      select(kind, i === undefined || i < 0 ? null : i);
    },
    zoom: zoom, brush: brush, reset: reset,
  };
})();
"""
