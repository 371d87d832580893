/**
 * The active-memory timeline of the report's script (`client-script.ts` puts it inside
 * `drawReport`, whose helpers it uses): the drawn allocations stacked in allocation order over the
 * rest, as in PyTorch's memory_viz, on a canvas, with an overview strip under it.
 *
 * ```
 *  drag on the chart or on the strip   zoom to that range of x
 *  drag the strip's window, wheel      pan
 *  double-click                        the whole range again
 *  hover                               an allocation's size, times, stream and stack frames
 *  click                               pins that tooltip (click again, or Escape, to unpin)
 * ```
 *
 * The stack is drawn once per range to an offscreen canvas; hovering copies it and outlines one.
 * `window.labReport.timelines[w]` gives `range()`, `drawn` and `locate(id)` to the tests.
 * Plain ES2017 in a string, as the rest of the script (no backticks inside).
 */
export const TIMELINE_SCRIPT = `
  function drawTimeline(section, workload, w) {
    var ex = workload.explain;
    var holder = section.querySelector('.timeline');
    if (!ex || !holder) return;
    holder.innerHTML = '';
    var dpr = window.devicePixelRatio || 1;
    var width = chartWidth(holder), height = 340, stripH = 48;
    function makeCanvas(h, label) {
      var c = document.createElement('canvas');
      c.width = width * dpr; c.height = h * dpr;
      c.style.width = width + 'px'; c.style.height = h + 'px';
      if (label) c.setAttribute('aria-label', label);
      return c;
    }
    var canvas = makeCanvas(height, 'active memory timeline of ' + workload.id);
    var strip = makeCanvas(stripH, 'overview of the timeline: drag to zoom, double-click for all');
    strip.className = 'timeline-overview';
    var stack = makeCanvas(height);
    holder.appendChild(canvas);
    holder.appendChild(strip);
    var ctx = canvas.getContext('2d'), sctx = strip.getContext('2d'), kctx = stack.getContext('2d');
    ctx.scale(dpr, dpr); sctx.scale(dpr, dpr); kctx.scale(dpr, dpr);
    var left = 84, right = 12, top = 10, bottom = 44;
    var plotW = width - left - right, plotH = height - top - bottom;
    var xs = gridX(workload), n = xs.length;
    var tl = ex.timeline;
    // Stack: the rest at the bottom, then each drawn allocation in allocation order.
    var base = tl.rest.slice();
    var bottoms = tl.allocations.map(function (a) {
      var b = [];
      for (var j = a.from; j < a.to; j++) { b.push(base[j]); base[j] += a.size; }
      return b;
    });
    var ymax = 0;
    for (var j = 0; j < n; j++) if (base[j] > ymax) ymax = base[j];
    if (ymax <= 0) ymax = 1;
    ymax *= 1.05;
    var first = xs[0], last = xs[n - 1] > first ? xs[n - 1] : first + 1;
    var x0 = first, x1 = last;
    function px(x) { return left + (x - x0) / (x1 - x0) * plotW; }
    function xOf(p) { return x0 + (p - left) / plotW * (x1 - x0); }
    function py(y) { return top + plotH - y / ymax * plotH; }
    function xAt(j) { return px(xs[Math.min(j, n - 1)]); }
    function stripX(x) { return left + (x - first) / (last - first) * plotW; }
    function stripXOf(p) { return first + (p - left) / plotW * (last - first); }
    var hovered = -1, pinned = false, byteTicks = [], selecting = null;

    function polygon(c, bottom, from, to, heightOf) {
      // Only the grid points in view (and one each side) are drawn.
      var lo = Math.max(from, gridIndex(left) - 1), hi = Math.min(to, gridIndex(left + plotW) + 2);
      if (lo >= hi) return false;
      c.beginPath();
      for (var j = lo; j < hi; j++) {
        var yTop = py(bottom[j - from] + heightOf(j));
        if (j === lo) c.moveTo(xAt(j), yTop); else c.lineTo(xAt(j), yTop);
        c.lineTo(Math.max(xAt(j + 1), xAt(j) + 1), yTop);
      }
      for (var k = hi - 1; k >= lo; k--) {
        var yBottom = py(bottom[k - from]);
        c.lineTo(Math.max(xAt(k + 1), xAt(k) + 1), yBottom);
        c.lineTo(xAt(k), yBottom);
      }
      c.closePath();
      return true;
    }

    function drawStack() {
      var c = kctx;
      c.clearRect(0, 0, width, height);
      c.fillStyle = '#fff';
      c.fillRect(0, 0, width, height);
      c.save();
      c.beginPath(); c.rect(left, top - 1, plotW, plotH + 1); c.clip();
      var zeros = [];
      for (var j = 0; j < n; j++) zeros.push(0);
      c.fillStyle = REST;
      if (polygon(c, zeros, 0, n, function (j) { return tl.rest[j]; })) c.fill();
      tl.allocations.forEach(function (a, i) {
        c.fillStyle = BANDS[i % BANDS.length];
        if (polygon(c, bottoms[i], a.from, a.to, function () { return a.size; })) c.fill();
      });
      // The peak of live bytes (also marked on the line charts).
      var peakAt = ex.gridEvents.indexOf(ex.peakEvent);
      if (peakAt >= 0) {
        var xp = xAt(peakAt);
        c.setLineDash([4, 3]); c.strokeStyle = '#b42318';
        c.beginPath(); c.moveTo(xp, top); c.lineTo(xp, top + plotH); c.stroke();
        c.fillStyle = '#b42318'; c.textAlign = xp > left + plotW - 120 ? 'right' : 'left'; c.textBaseline = 'top';
        c.font = '12px system-ui, sans-serif';
        c.fillText(' peak ' + bytes(ex.liveBytes[peakAt]) + ' ', xp, top + 2);
      }
      c.restore();
      // Axes with round ticks and units.
      c.strokeStyle = '#888'; c.lineWidth = 1;
      c.beginPath(); c.moveTo(left, top); c.lineTo(left, top + plotH); c.lineTo(left + plotW, top + plotH); c.stroke();
      c.fillStyle = '#333'; c.font = '12px system-ui, sans-serif';
      c.textAlign = 'right'; c.textBaseline = 'middle';
      byteTicks = binaryTicks(ymax, plotH, 30);
      byteTicks.forEach(function (v) {
        c.fillText(tickBytes(v), left - 6, py(v));
        c.strokeStyle = '#eee'; c.beginPath(); c.moveTo(left + 1, py(v)); c.lineTo(left + plotW, py(v)); c.stroke();
      });
      c.textAlign = 'center'; c.textBaseline = 'top';
      var xIncrs = useTime(workload) ? DECIMAL : DECIMAL.filter(function (v) { return v >= 1; });
      ticks(x0, x1, plotW, 90, xIncrs).forEach(function (v) {
        c.fillText(xFormat(workload)(v), px(v), top + plotH + 6);
      });
      c.fillText(xLabel(workload), left + plotW / 2, top + plotH + 24);
      c.save(); c.translate(14, top + plotH / 2); c.rotate(-Math.PI / 2);
      c.fillText('live memory (bytes, binary units)', 0, 0); c.restore();
    }

    function draw() {
      ctx.clearRect(0, 0, width, height);
      ctx.drawImage(stack, 0, 0, width, height);
      var a = tl.allocations[hovered];
      if (a) {
        ctx.save();
        ctx.beginPath(); ctx.rect(left, top - 1, plotW, plotH + 1); ctx.clip();
        if (polygon(ctx, bottoms[hovered], a.from, a.to, function () { return a.size; })) {
          ctx.strokeStyle = '#000'; ctx.lineWidth = 2; ctx.stroke();
        }
        ctx.restore();
      }
      if (selecting) {
        ctx.fillStyle = 'rgba(31, 78, 121, 0.15)';
        var s0 = Math.min(selecting.from, selecting.to), s1 = Math.max(selecting.from, selecting.to);
        ctx.fillRect(s0, top, s1 - s0, plotH);
      }
      drawStrip();
    }

    function drawStrip() {
      var c = sctx;
      c.clearRect(0, 0, width, stripH);
      c.fillStyle = '#fff'; c.fillRect(0, 0, width, stripH);
      c.fillStyle = '#9fb4c8';
      c.beginPath(); c.moveTo(stripX(xs[0]), stripH - 2);
      for (var j = 0; j < n; j++) c.lineTo(stripX(xs[j]), stripH - 2 - base[j] / ymax * (stripH - 6));
      c.lineTo(stripX(xs[n - 1]), stripH - 2); c.closePath(); c.fill();
      var b0 = stripX(x0), b1 = stripX(x1);
      c.fillStyle = 'rgba(0, 0, 0, 0.08)';
      c.fillRect(left, 0, b0 - left, stripH); c.fillRect(b1, 0, left + plotW - b1, stripH);
      c.strokeStyle = '#1f4e79'; c.lineWidth = 1.5;
      c.strokeRect(b0, 1, Math.max(2, b1 - b0), stripH - 2);
    }

    /** Shows x from a to b (clamped to the whole range, at least two grid points wide). */
    function zoom(a, b) {
      var lo = Math.min(a, b), hi = Math.max(a, b);
      var least = (last - first) / Math.max(1, n - 1) * 2;
      if (hi - lo < least) { var mid = (lo + hi) / 2; lo = mid - least / 2; hi = mid + least / 2; }
      var span = Math.min(hi - lo, last - first);
      lo = Math.max(first, Math.min(lo, last - span));
      x0 = lo; x1 = lo + span;
      drawStack(); draw();
    }
    function reset() { zoom(first, last); }

    function gridIndex(x) {
      var lo = 0, hi = n - 1;
      while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (xAt(mid) <= x) lo = mid; else hi = mid - 1; }
      return lo;
    }
    function at(seconds, event) {
      return seconds != null ? secs(seconds) + ' (event ' + count(event) + ')' : 'event ' + count(event);
    }
    function describe(a) {
      var lines = ['<b>' + esc(bytes(a.size)) + '</b> (' + count(a.size) + ' B), block ' + a.id,
        'allocated at ' + at(a.allocSeconds, a.allocEvent),
        a.freeEvent >= 0 ? 'freed at ' + at(a.freeSeconds, a.freeEvent) : 'still live at the end',
        'stream ' + a.stream];
      if (a.frames && a.frames.length) {
        // Frames are indices into the timeline's table of frame texts.
        lines.push('<span class="frames">' + a.frames.map(function (k) {
          return esc(tl.frameTexts[k]);
        }).join('<br>') + '</span>');
      } else {
        lines.push('<i>no stack frames recorded</i>');
      }
      return lines.join('<br>');
    }
    function hit(mx, my) {
      if (mx < left || mx > left + plotW || my < top || my > top + plotH) return null;
      var j = gridIndex(mx);
      var y = (top + plotH - my) / plotH * ymax;
      if (y < tl.rest[j]) return { rest: true, j: j };
      for (var i = 0; i < tl.allocations.length; i++) {
        var a = tl.allocations[i];
        if (j < a.from || j >= a.to) continue;
        var b = bottoms[i][j - a.from];
        if (y >= b && y < b + a.size) return { index: i };
      }
      return null;
    }
    function local(target, ev) {
      var rect = target.getBoundingClientRect();
      return { x: ev.clientX - rect.left, y: ev.clientY - rect.top };
    }
    function hover(ev) {
      var p = local(canvas, ev);
      var found = hit(p.x, p.y);
      var next = found && found.index !== undefined ? found.index : -1;
      if (next !== hovered) { hovered = next; draw(); }
      if (!found) { hideTooltip(); return; }
      if (found.rest) {
        showTooltip('<b>' + esc(bytes(tl.rest[found.j])) + '</b> live in allocations not drawn one by one (' +
          count(tl.total - tl.allocations.length) + ' of ' + count(tl.total) + ' allocations)', ev);
      } else {
        showTooltip(describe(tl.allocations[found.index]), ev);
      }
    }
    function unpin() {
      if (!pinned) return;
      pinned = false;
      pinTooltip(false);
      hovered = -1; draw(); hideTooltip();
    }

    var down = null;
    canvas.addEventListener('mousedown', function (ev) {
      if (ev.button !== 0) return;
      down = local(canvas, ev);
      ev.preventDefault();
    });
    canvas.addEventListener('mousemove', function (ev) {
      var p = local(canvas, ev);
      if (down && Math.abs(p.x - down.x) > 4) {
        selecting = { from: Math.max(left, Math.min(left + plotW, down.x)), to: Math.max(left, Math.min(left + plotW, p.x)) };
        draw();
        return;
      }
      if (!pinned) hover(ev);
    });
    listen(window, 'mouseup', function (ev) {
      if (!down) return;
      var start = down;
      down = null;
      if (selecting) {
        var s = selecting;
        selecting = null;
        if (Math.abs(s.to - s.from) > 4) zoom(xOf(s.from), xOf(s.to)); else draw();
        return;
      }
      if (ev.target !== canvas) return;
      // A click: pins the tooltip of what is under it, or unpins it.
      if (pinned) { unpin(); return; }
      hover(ev);
      if (hovered >= 0 || hit(start.x, start.y)) { pinned = true; pinTooltip(true); }
    });
    canvas.addEventListener('mouseleave', function () {
      if (pinned || selecting) return;
      hovered = -1; draw(); hideTooltip();
    });
    canvas.addEventListener('dblclick', function () { unpin(); reset(); });
    canvas.addEventListener('wheel', function (ev) {
      if (x0 === first && x1 === last) return;
      ev.preventDefault();
      var delta = (Math.abs(ev.deltaX) > Math.abs(ev.deltaY) ? ev.deltaX : ev.deltaY) / plotW * (x1 - x0);
      zoom(x0 + delta, x1 + delta);
    }, { passive: false });
    listen(document, 'keydown', function (ev) { if (ev.key === 'Escape') unpin(); });

    // The strip: drag inside the window to pan, elsewhere to choose a new range.
    var stripDown = null;
    strip.addEventListener('mousedown', function (ev) {
      if (ev.button !== 0) return;
      ev.preventDefault();
      var p = local(strip, ev).x, inside = p >= stripX(x0) && p <= stripX(x1) && (x0 !== first || x1 !== last);
      stripDown = { p: p, pan: inside, x0: x0, x1: x1 };
    });
    listen(window, 'mousemove', function (ev) {
      if (!stripDown) return;
      var p = local(strip, ev).x;
      if (stripDown.pan) {
        var shift = stripXOf(p) - stripXOf(stripDown.p);
        zoom(stripDown.x0 + shift, stripDown.x1 + shift);
      } else if (Math.abs(p - stripDown.p) > 3) {
        zoom(stripXOf(Math.max(left, stripDown.p)), stripXOf(Math.min(left + plotW, Math.max(left, p))));
      }
    });
    listen(window, 'mouseup', function () { stripDown = null; });
    strip.addEventListener('dblclick', reset);

    drawStack();
    draw();
    window.labReport.timelines[w] = {
      canvas: canvas,
      strip: strip,
      byteTicks: byteTicks,
      /** Allocations drawn one by one. */
      drawn: tl.allocations.length,
      /** The range of x in view. */
      range: function () { return { from: x0, to: x1, first: first, last: last }; },
      /** Page coordinates of the middle of drawn allocation id, or null. */
      locate: function (id) {
        for (var i = 0; i < tl.allocations.length; i++) {
          var a = tl.allocations[i];
          if (a.id !== id) continue;
          var j = a.from + Math.floor((a.to - a.from) / 2);
          var rect = canvas.getBoundingClientRect();
          var x = (xAt(j) + Math.max(xAt(j + 1), xAt(j) + 1)) / 2;
          var y = py(bottoms[i][j - a.from] + a.size / 2);
          return { x: rect.left + window.scrollX + x, y: rect.top + window.scrollY + y };
        }
        return null;
      }
    };
  }
`;
