/**
 * The script of the HTML report, run in the browser after uPlot's IIFE build: it reads the data
 * block (`<script type="application/json" id="lab-data">`) and draws, per workload, memory over time
 * and fragmentation over time (uPlot line charts), then the layout at peak of every allocator on a
 * canvas of its own: segments laid end to end in rows, in the spirit of PyTorch's memory_viz.
 *
 * Kept as plain ES2017 in a string: it is inlined into the page as is, with no bundling step.
 */
export const CLIENT_SCRIPT = `
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('lab-data').textContent);
  var COLORS = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#b07aa1', '#76b7b2', '#edc948',
    '#9c755f', '#ff9da7', '#bab0ac'];
  var LIVE = '#1f4e79', FREE = '#e4e7eb', MIXED = '#8fb0d0', EDGE = '#222';

  function bytes(v) {
    if (v == null) return '';
    var units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    var a = Math.abs(v), u = 0;
    while (a >= 1024 && u < units.length - 1) { a /= 1024; u++; }
    return (v < 0 ? '-' : '') + (u === 0 ? a.toFixed(0) : a.toFixed(a >= 100 ? 0 : a >= 10 ? 1 : 2)) + ' ' + units[u];
  }
  function percent(v) { return v == null ? '' : (v * 100).toFixed(0) + ' %'; }
  function count(v) { return v == null ? '' : Math.round(v).toLocaleString('en-US'); }

  function chartWidth(el) { return Math.max(480, Math.min(1200, el.clientWidth || 900)); }

  function lineChart(el, title, x, lines, yLabel, yFormat, yRange) {
    var series = [{ label: 'event' }];
    var columns = [x];
    lines.forEach(function (line) {
      series.push({ label: line.label, stroke: line.color, width: line.width || 1.5,
        dash: line.dash, value: function (u, v) { return yFormat(v); } });
      columns.push(line.values);
    });
    var opts = {
      title: title,
      width: chartWidth(el),
      height: 300,
      scales: { x: { time: false }, y: yRange ? { range: yRange } : {} },
      axes: [
        { label: 'event (allocations and frees, in trace order)', values: function (u, vals) { return vals.map(count); } },
        { label: yLabel, size: 80, values: function (u, vals) { return vals.map(yFormat); } }
      ],
      series: series,
      legend: { show: true },
      cursor: { drag: { x: true, y: false } }
    };
    return new uPlot(opts, columns, el);
  }

  function drawLayout(canvas, view, rows) {
    var width = canvas.width, rowHeight = 14, gap = 4;
    var ctx = canvas.getContext('2d');
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    if (!view.totalBytes) {
      ctx.fillStyle = '#666';
      ctx.font = '12px sans-serif';
      ctx.fillText('nothing reserved at peak', 8, 16);
      return;
    }
    var perPixel = view.totalBytes / (width * rows);
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

  data.workloads.forEach(function (workload, w) {
    var section = document.getElementById('workload-' + w);
    if (!section || workload.rows.length === 0) return;
    var x = workload.rows[0].series.event;
    var live = workload.rows.reduce(function (a, b) { return b.failures < a.failures ? b : a; });
    var memory = [{ label: 'live (requested bytes, peak per interval)', color: '#000', width: 2.5, values: live.series.liveBytes }];
    var frag = [];
    workload.rows.forEach(function (row, r) {
      var color = COLORS[r % COLORS.length];
      memory.push({ label: row.allocator + ' reserved', color: color, values: row.series.reservedBytes });
      frag.push({ label: row.allocator, color: color, values: row.series.externalFragmentation });
    });
    lineChart(section.querySelector('.chart-memory'), 'Memory over time: live vs reserved', x, memory, 'bytes', bytes);
    lineChart(section.querySelector('.chart-fragmentation'), 'External fragmentation over time (1 − largest free / total free)', x, frag, 'external fragmentation', percent, [0, 1]);
    var layouts = section.querySelector('.layouts');
    workload.rows.forEach(function (row, r) {
      var figure = document.createElement('figure');
      figure.className = 'layout';
      var caption = document.createElement('figcaption');
      var view = row.layoutAtPeak;
      caption.innerHTML = '<b></b> <span></span>';
      caption.firstChild.textContent = row.allocator;
      caption.lastChild.textContent = view.segments.length + (view.segments.length === 1 ? ' segment, ' : ' segments, ') +
        bytes(view.totalBytes) + ' shown: ' + bytes(view.liveBytes) + ' live in ' + count(view.blocks) +
        ' blocks, ' + bytes(view.freeBytes) + ' free; external fragmentation ' +
        percent(row.externalFragmentationAtPeak);
      var canvas = document.createElement('canvas');
      var rows = 10;
      canvas.width = chartWidth(layouts) - 2;
      canvas.height = rows * 18;
      canvas.setAttribute('aria-label', 'layout at peak of ' + row.allocator);
      figure.appendChild(caption);
      figure.appendChild(canvas);
      layouts.appendChild(figure);
      drawLayout(canvas, view, rows);
    });
  });
  document.body.setAttribute('data-rendered', 'true');
})();
`;
