/**
 * The script of the HTML report, run in the browser after uPlot's IIFE build: it reads the data
 * block (`<script type="application/json" id="lab-data">`) and draws, per workload:
 *
 * ```
 *  memory over time        uPlot: live, PyTorch's recorded reserved, each row's reserved
 *  fragmentation over time uPlot: each row's external fragmentation
 *  active-memory timeline  canvas: the largest allocations stacked in allocation order over the
 *                          rest (one band), as in PyTorch's memory_viz; zooms, pans, and pins its
 *                          tooltip (client-timeline.ts)
 *  layout at peak          canvas per row, every row to one scale (bytes per pixel); hover on blocks
 * ```
 *
 * The x axis is seconds since the first event when the trace has times, or events (a toggle at the
 * top redraws every chart). Byte axes tick at powers of two (1, 2, 4, 8 GiB), time axes at 1, 2, 5.
 * Rows whose results are identical to an earlier row's are drawn dashed and named `(= other)`.
 * `window.labReport.timelines[w].locate(id)` gives the page position of a drawn allocation (tests).
 *
 * Kept as plain ES2017 in a string: it is inlined into the page as is, with no bundling step.
 * `DRAW_REPORT` is the source of `drawReport(root, data)`, which draws the sections under `root`
 * from the page data (`pageData`) and may be called again on new data (the web app does, on each
 * replay): it destroys its charts and listeners first. It needs uPlot as a global or in scope.
 */
import { TIMELINE_SCRIPT } from './client-timeline';

export const DRAW_REPORT = `
function drawReport(root, data) {
  'use strict';
  if (root.labReportDestroy) root.labReportDestroy();
  var plots = [], cleanups = [];
  function listen(target, type, listener) {
    target.addEventListener(type, listener);
    cleanups.push(function () { target.removeEventListener(type, listener); });
  }
  // The rows' lines: no red or pink among them, PyTorch's recorded line is the one red line.
  var PYTORCH = '#d62728';
  var COLORS = ['#4e79a7', '#f28e2b', '#59a14f', '#b07aa1', '#76b7b2', '#edc948', '#9c755f',
    '#17becf', '#bcbd22', '#6b6ecf', '#7f7f7f', '#1f3a93'];
  var BANDS = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#b07aa1', '#76b7b2', '#edc948',
    '#9c755f', '#ff9da7', '#86bcb6', '#a0cbe8', '#ffbe7d', '#8cd17d', '#f1ce63', '#d4a6c8'];
  var LIVE = '#1f4e79', FREE = '#e4e7eb', MIXED = '#8fb0d0', EDGE = '#222', REST = '#cfd3d8';
  var tooltip = root.querySelector('#lab-tooltip');
  var axisMode = 'time';
  window.labReport = { charts: [], timelines: [] };

  var UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  function bytes(v) {
    if (v == null) return '';
    var a = Math.abs(v), u = 0;
    while (a >= 1024 && u < UNITS.length - 1) { a /= 1024; u++; }
    return (v < 0 ? '-' : '') + (u === 0 ? a.toFixed(0) : a.toFixed(a >= 100 ? 0 : a >= 10 ? 1 : 2)) + ' ' + UNITS[u];
  }
  /** A tick: no trailing zeros (4 GiB, 512 MiB, 1.5 GiB). */
  function tickBytes(v) {
    if (v === 0) return '0';
    var a = Math.abs(v), u = 0;
    while (a >= 1024 && u < UNITS.length - 1) { a /= 1024; u++; }
    return (v < 0 ? '-' : '') + (+a.toFixed(2)) + ' ' + UNITS[u];
  }
  function percent(v) { return v == null ? '' : (v * 100).toFixed(0) + ' %'; }
  function count(v) { return v == null ? '' : Math.round(v).toLocaleString('en-US'); }
  function secs(v) { return v == null ? '' : (+v.toPrecision(6)) + ' s'; }
  /**
   * Byte ticks: 0 and powers of two (1, 2, 4, 8 GiB), from the largest at most max down, each at
   * least minGap pixels above the next (0 keeps its place: a power too close to it is dropped).
   */
  function binaryTicks(max, pixels, minGap) {
    var out = [];
    if (!(max > 0)) return [0];
    var v = Math.pow(2, Math.floor(Math.log2(max)));
    if (v * 2 <= max) v *= 2;
    var last = null;
    for (; v >= 1; v /= 2) {
      var gap = (last === null ? minGap : (last - v) / max * pixels);
      if (gap < minGap) break;
      if (v / max * pixels < minGap) break;
      out.push(v);
      last = v;
    }
    out.push(0);
    return out.reverse();
  }
  var DECIMAL = [];
  for (var e = -6; e < 16; e++) [1, 2, 5].forEach(function (m) { DECIMAL.push(+(m * Math.pow(10, e)).toPrecision(1)); });
  var PERCENT_INCRS = [0.05, 0.1, 0.2, 0.25, 0.5, 1];

  function chartWidth(el) { return Math.max(200, Math.min(1200, el.clientWidth || 900)); }
  function useTime(workload) { return axisMode === 'time' && !!workload.explain && !!workload.explain.gridSeconds; }
  function xLabel(workload) {
    return useTime(workload) ? 'time (s since the first event)' : 'event (allocations and frees, in trace order)';
  }
  function xFormat(workload) { return useTime(workload) ? secs : count; }

  // A pinned tooltip (the timeline's, on a click) stays until it is unpinned.
  var tooltipPinned = false;
  function pinTooltip(on) {
    tooltipPinned = on;
    tooltip.classList.toggle('pinned', on);
  }
  function showTooltip(html, ev) {
    if (tooltipPinned) return;
    tooltip.innerHTML = html;
    tooltip.style.display = 'block';
    var x = ev.pageX + 14, y = ev.pageY + 14;
    var w = tooltip.offsetWidth;
    if (x + w > window.scrollX + document.documentElement.clientWidth - 8) x = ev.pageX - w - 14;
    tooltip.style.left = x + 'px';
    tooltip.style.top = y + 'px';
  }
  function hideTooltip() { if (!tooltipPinned) tooltip.style.display = 'none'; }
  function esc(text) {
    return String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  }

  /** Memory and fragmentation hold their value between samples: steps, not slopes. */
  var stepped = uPlot.paths.stepped({ align: 1 });

  /** Tables of [x, ...ys] joined on x, for series sampled at different points. */
  /** x of the peak of live bytes on the current axis, or null. */
  function peakX(workload) {
    var ex = workload.explain;
    if (!ex) return null;
    var j = ex.gridEvents.indexOf(ex.peakEvent);
    return j < 0 ? null : gridX(workload)[j];
  }

  /** A uPlot hook drawing a dashed vertical line at the peak of live bytes. */
  function peakMarker(workload) {
    var x = peakX(workload);
    return function (u) {
      if (x == null) return;
      var px = u.valToPos(x, 'x', true);
      var ctx = u.ctx;
      ctx.save();
      ctx.setLineDash([4, 3]); ctx.strokeStyle = '#b42318'; ctx.lineWidth = 1;
      ctx.beginPath(); ctx.moveTo(px, u.bbox.top); ctx.lineTo(px, u.bbox.top + u.bbox.height); ctx.stroke();
      ctx.restore();
    };
  }

  /** A y axis of bytes: ticks at 0 and powers of two, kept in record.byteTicks (tests read them). */
  function byteAxis(record) {
    return { splits: function (u, axis, min, max) {
      var pixels = u.bbox.height / (window.devicePixelRatio || 1);
      record.byteTicks = binaryTicks(max, pixels, 30);
      return record.byteTicks;
    } };
  }

  function lineChart(el, title, workload, tables, lines, yLabel, yFormat, yTicks, yAxis, yRange) {
    var joined = tables.length === 1 ? tables[0] : uPlot.join(tables);
    var series = [{ label: useTime(workload) ? 'time' : 'event', value: function (u, v) { return xFormat(workload)(v); } }];
    lines.forEach(function (line) {
      series.push({ label: line.label, stroke: line.color, width: line.width || 1.5, dash: line.dash,
        spanGaps: true, paths: stepped, value: function (u, v) { return yFormat(v); } });
    });
    var opts = {
      title: title,
      width: chartWidth(el),
      height: 300,
      scales: { x: { time: false }, y: { range: yRange || function (u, min, max) { return [0, max > 0 ? max * 1.05 : 1]; } } },
      axes: [
        { label: xLabel(workload), incrs: useTime(workload) ? DECIMAL : undefined,
          values: function (u, vals) { return vals.map(xFormat(workload)); } },
        { label: yLabel, size: 80, incrs: yAxis.incrs, splits: yAxis.splits,
          values: function (u, vals) { return vals.map(yTicks); } }
      ],
      series: series,
      legend: { show: true },
      cursor: { drag: { x: true, y: false } },
      hooks: { draw: [peakMarker(workload)] }
    };
    el.innerHTML = '';
    var plot = new uPlot(opts, joined, el);
    plots.push(plot);
    return plot;
  }

  function rowX(workload, r) {
    var row = workload.rows[r];
    return useTime(workload) ? workload.explain.rowSeconds[r] : row.series.event;
  }
  function gridX(workload) {
    return useTime(workload) ? workload.explain.gridSeconds : workload.explain.gridEvents;
  }
  /** A row as the table names it (with its note: the tuned row's setting), and whose lines it shares. */
  function rowName(row) {
    return row.allocator + (row.note ? ' (' + row.note + ')' : '') + (row.sameAs ? ' (= ' + row.sameAs + ')' : '');
  }

  function drawMemory(section, workload) {
    var tables = [], lines = [];
    var ex = workload.explain;
    if (ex) {
      var t = [gridX(workload), ex.liveBytes];
      lines.push({ label: 'live (requested bytes, peak per interval)', color: '#000', width: 2.5 });
      if (ex.recordedReserved) {
        t.push(ex.recordedReserved);
        lines.push({ label: 'PyTorch reserved (recorded)', color: PYTORCH, width: 2.5, dash: [8, 4] });
      }
      tables.push(t);
    }
    workload.rows.forEach(function (row, r) {
      tables.push([rowX(workload, r), row.series.reservedBytes]);
      lines.push({ label: rowName(row) + ' reserved', color: COLORS[r % COLORS.length],
        dash: row.sameAs ? [3, 5] : undefined, width: row.sameAs ? 2.5 : 1.5 });
    });
    var record = {};
    record.plot = lineChart(section.querySelector('.chart-memory'), 'Memory over time: live vs reserved',
      workload, tables, lines, 'memory (bytes, binary units)', bytes, tickBytes, byteAxis(record));
    return record;
  }

  function drawFragmentation(section, workload) {
    var tables = [], lines = [];
    workload.rows.forEach(function (row, r) {
      tables.push([rowX(workload, r), row.series.externalFragmentation]);
      lines.push({ label: rowName(row), color: COLORS[r % COLORS.length],
        dash: row.sameAs ? [3, 5] : undefined, width: row.sameAs ? 2.5 : 1.5 });
    });
    lineChart(section.querySelector('.chart-fragmentation'),
      'External fragmentation over time (1 − largest free / total free)', workload, tables, lines,
      'external fragmentation (%)', percent, percent, { incrs: PERCENT_INCRS }, [0, 1]);
  }

  /** Ticks of [min, max] from increments: the smallest increment leaving at least minGap px. */
  function ticks(min, max, pixels, minGap, incrs) {
    var span = max - min, incr = incrs[incrs.length - 1];
    for (var i = 0; i < incrs.length; i++) {
      if (span / incrs[i] * minGap <= pixels) { incr = incrs[i]; break; }
    }
    var out = [];
    for (var v = Math.ceil(min / incr) * incr; v <= max + incr * 1e-9; v += incr) out.push(+v.toPrecision(12));
    return out;
  }

${TIMELINE_SCRIPT}
  function drawLayouts(section, workload) {
    drawLayoutSet(section.querySelector('.layouts'), section.querySelector('.layout-scale'),
      workload.rows.map(function (row) {
        return { name: rowName(row), label: row.allocator, view: row.layoutAtPeak, segments: row.segments,
          extra: '; external fragmentation ' + percent(row.externalFragmentationAtPeak) };
      }), 'Every allocator to one scale: ');
    var oom = workload.oom && section.querySelector('.oom-layouts');
    if (oom) {
      drawLayoutSet(oom, section.querySelector('.oom-scale'), workload.oom.layouts.map(function (item) {
        return { name: item.name, label: item.name, view: item.view, extra: '' };
      }), 'both to one scale: ');
    }
  }

  /**
   * Segments of a layout at the peak, and for a pool how they relate to the table's column: that
   * counts the segments allocated in the window (cudaMalloc calls, and expandable growths), not
   * those restored from the recording's starting state.
   */
  function segmentsText(n, decisions) {
    var text = count(n) + (n === 1 ? ' segment' : ' segments') + ' at the peak';
    if (!decisions) return text;
    var notes = [];
    if (decisions.restored > 0) notes.push(count(decisions.restored) + ' from the starting state');
    var grown = count(decisions.grown) + (decisions.grown === 1 ? ' growth' : ' growths');
    notes.push(decisions.acquired === 0 && decisions.grown > 0
      ? 'the table counts the ' + grown + ' in the window'
      : 'the table counts the ' + count(decisions.acquired) + ' allocated in the window' +
        (decisions.grown > 0 ? ' and ' + grown : ''));
    return text + ' (' + notes.join('; ') + ')';
  }

  // Layouts of items ({ name, label, view, segments?, extra }) in container, all to one scale.
  function drawLayoutSet(container, scale, items, scaleText) {
    container.innerHTML = '';
    var width = chartWidth(container) - 2, rowHeight = 14, gap = 4, maxRows = 10;
    var largest = 0;
    items.forEach(function (item) { largest = Math.max(largest, item.view.totalBytes); });
    // One scale for every layout: the largest fills maxRows rows of the width.
    var perPixel = largest > 0 ? largest / (width * maxRows) : 1;
    if (scale) scale.textContent = scaleText + '1 pixel = ' + bytes(perPixel) +
      ', one row = ' + bytes(perPixel * width) + '.';
    items.forEach(function (item) {
      var view = item.view;
      var rows = Math.max(1, Math.ceil(view.totalBytes / (perPixel * width)));
      var figure = document.createElement('figure');
      figure.className = 'layout';
      var caption = document.createElement('figcaption');
      caption.innerHTML = '<b></b> <span></span>';
      caption.firstChild.textContent = item.name;
      caption.lastChild.textContent = segmentsText(view.segments.length, item.segments) + ', ' +
        bytes(view.totalBytes) + ' shown: ' + bytes(view.liveBytes) + ' live in ' + count(view.blocks) +
        ' blocks, ' + bytes(view.freeBytes) + ' free' + item.extra;
      var canvas = document.createElement('canvas');
      canvas.width = width;
      canvas.height = rows * (rowHeight + gap);
      canvas.setAttribute('aria-label', 'layout of ' + item.label);
      figure.appendChild(caption);
      figure.appendChild(canvas);
      container.appendChild(figure);
      drawLayout(canvas, view, rows, perPixel, rowHeight, gap);
      canvas.addEventListener('mousemove', function (ev) {
        var rect = canvas.getBoundingClientRect();
        var x = ev.clientX - rect.left, r = Math.floor((ev.clientY - rect.top) / (rowHeight + gap));
        var at = (r * width + x) * perPixel, position = 0;
        for (var s = 0; s < view.segments.length; s++) {
          var segment = view.segments[s];
          if (at < position + segment.size) {
            var offset = at - position, text = 'free';
            var run = null;
            for (var i = 0; i < segment.runs.length; i += 3) {
              if (offset >= segment.runs[i] && offset < segment.runs[i] + segment.runs[i + 1]) {
                run = segment.runs.slice(i, i + 3);
                break;
              }
            }
            if (run) text = (run[2] === 0 ? 'free' : run[2] === 1 ? 'live' : 'live and free blocks too small to draw apart') +
              ': ' + bytes(run[1]) + ' at offset ' + bytes(run[0]);
            showTooltip('<b>' + esc(item.label) + '</b>, segment ' + (s + 1) + ' of ' + view.segments.length +
              ' (' + esc(bytes(segment.size)) + (segment.pool ? ', ' + esc(segment.pool) + ' pool' : '') +
              ', address 0x' + segment.address.toString(16) + ')<br>' + esc(text), ev);
            return;
          }
          position += segment.size;
        }
        hideTooltip();
      });
      canvas.addEventListener('mouseleave', hideTooltip);
    });
  }

  function drawLayout(canvas, view, rows, perPixel, rowHeight, gap) {
    var width = canvas.width;
    var ctx = canvas.getContext('2d');
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    if (!view.totalBytes) {
      ctx.fillStyle = '#666';
      ctx.font = '12px sans-serif';
      ctx.fillText('nothing reserved', 8, 12);
      return;
    }
    function span(start, size, color) {
      var from = start / perPixel, to = (start + size) / perPixel;
      if (to - from < 1) to = from + 1;
      ctx.fillStyle = color;
      while (from < to) {
        var row = Math.floor(from / width);
        if (row >= rows) break;
        var x = from - row * width;
        var w = Math.min(to - from, width - x);
        ctx.fillRect(x, row * (rowHeight + gap), w, rowHeight);
        from += w;
      }
    }
    var position = 0;
    view.segments.forEach(function (segment) {
      span(position, segment.size, FREE);
      for (var i = 0; i < segment.runs.length; i += 3) {
        var state = segment.runs[i + 2];
        if (state === 0) continue;
        span(position + segment.runs[i], segment.runs[i + 1], state === 1 ? LIVE : MIXED);
      }
      var edge = position / perPixel;
      var row = Math.floor(edge / width);
      if (row < rows) {
        ctx.fillStyle = EDGE;
        ctx.fillRect(edge - row * width, row * (rowHeight + gap) - 1, 2, rowHeight + 2);
      }
      position += segment.size;
    });
  }

  function drawAll() {
    plots.forEach(function (plot) { plot.destroy(); });
    plots = [];
    pinTooltip(false);
    hideTooltip();
    window.labReport.charts = [];
    window.labReport.timelines = [];
    data.workloads.forEach(function (workload, w) {
      var section = root.querySelector('#workload-' + w);
      if (!section || workload.rows.length === 0) return;
      window.labReport.charts[w] = { memory: drawMemory(section, workload) };
      drawFragmentation(section, workload);
      drawTimeline(section, workload, w);
    });
  }

  function drawEverything() {
    data.workloads.forEach(function (workload, w) {
      var section = root.querySelector('#workload-' + w);
      if (section && workload.rows.length > 0) drawLayouts(section, workload);
    });
    drawAll();
  }

  drawEverything();
  // Charts are drawn to the page's width: a window made narrower or wider draws them again.
  var drawnWidth = document.documentElement.clientWidth, resizing = null;
  listen(window, 'resize', function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () {
      if (document.documentElement.clientWidth === drawnWidth) return;
      drawnWidth = document.documentElement.clientWidth;
      drawEverything();
    }, 150);
  });
  Array.prototype.forEach.call(root.querySelectorAll('input[name="x-axis"]'), function (input) {
    listen(input, 'change', function () {
      if (!input.checked) return;
      axisMode = input.value;
      drawAll();
    });
  });
  root.labReportDestroy = function () {
    clearTimeout(resizing);
    cleanups.forEach(function (cleanup) { cleanup(); });
    plots.forEach(function (plot) { plot.destroy(); });
    plots = [];
    root.labReportDestroy = null;
  };
  root.dataset.rendered = 'true';
}
`;

/** The page's script: the function above, run on the page's data block. */
export const CLIENT_SCRIPT = `${DRAW_REPORT}
drawReport(document.body, JSON.parse(document.getElementById('lab-data').textContent));
`;
