/**
 * The active-memory timeline, as in PyTorch's memory_viz: the drawn allocations stacked in
 * allocation order over the rest (one grey band), on a canvas, with an overview strip under it.
 *
 * ```
 *  drag on the chart or on the strip   zoom to that range of x
 *  drag the strip's window, wheel      pan
 *  double-click                        the whole range again
 *  hover                               an allocation's size, times, stream and stack frames
 *  click, tap                          pins that tooltip (again, Escape or a tap elsewhere: unpin)
 *  the keys of timeline-keys.ts        the same from the keyboard (the canvas takes the focus)
 * ```
 *
 * Pointer events serve the mouse, a pen and a finger alike: a finger's sideways drag zooms.
 *
 * The stack is drawn once per range to an offscreen canvas; hovering copies it and outlines one.
 */
import { formatBytes, formatCount, formatTickBytes, formatTickSeconds } from '../units';
import {
  type Axis,
  binaryTicks,
  chartWidth,
  DECIMAL,
  gridX,
  ticks,
  usesTime,
  xFormat,
  xLabel,
} from './axes';
import { h, lines } from './dom';
import type { TimelineAllocation, WorkloadData } from './report-data';
import { TIMELINE_KEYS, timelineKeys } from './timeline-keys';
import type { Tooltip } from './tooltip';

/** The drawn allocations' colours, in turn, and the band of the rest. */
const BANDS = (
  '#4e79a7 #f28e2b #59a14f #e15759 #b07aa1 #76b7b2 #edc948 #9c755f #ff9da7 #86bcb6 ' +
  '#a0cbe8 #ffbe7d #8cd17d #f1ce63 #d4a6c8'
).split(' ');
const REST = '#cfd3d8';
const HEIGHT = 340;
const STRIP_HEIGHT = 48;
const LEFT = 84;
const RIGHT = 12;
const TOP = 10;
const BOTTOM = 44;

/** A drawn timeline, as the tests drive it. */
export interface TimelineHandle {
  readonly canvas: HTMLCanvasElement;
  readonly strip: HTMLCanvasElement;
  readonly byteTicks: number[];
  /** Allocations drawn one by one. */
  readonly drawn: number;
  /** The range of x in view, and the whole one. */
  range(): { from: number; to: number; first: number; last: number };
  /** Page coordinates of the middle of drawn allocation `id`, or null. */
  locate(id: number): { x: number; y: number } | null;
  /** The drawn allocation of the most bytes × time, or null when none is drawn. */
  biggest(): number | null;
}

/** Adds a listener that the next drawing of the page removes. */
export type Listen = <K extends keyof WindowEventMap>(
  target: Window | Document,
  type: K,
  listener: (event: WindowEventMap[K]) => void,
) => void;

function canvasOf(width: number, height: number, label?: string): HTMLCanvasElement {
  const dpr = window.devicePixelRatio || 1;
  const canvas = h('canvas', { style: `width:${width}px;height:${height}px` });
  canvas.width = width * dpr;
  canvas.height = height * dpr;
  if (label) canvas.setAttribute('aria-label', label);
  canvas.getContext('2d')!.scale(dpr, dpr);
  return canvas;
}

/** A line through `points`, in `color`. */
function stroke(c: CanvasRenderingContext2D, color: string, ...points: [number, number][]): void {
  c.strokeStyle = color;
  c.beginPath();
  for (const [i, [x, y]] of points.entries()) {
    if (i === 0) c.moveTo(x, y);
    else c.lineTo(x, y);
  }
  c.stroke();
}

function at(seconds: number | undefined, event: number): string {
  return seconds !== undefined
    ? `${formatTickSeconds(seconds)} (event ${formatCount(event)})`
    : `event ${formatCount(event)}`;
}

/** An allocation in the tooltip's lines; its frames are indices into `frameTexts`. */
function describe(a: TimelineAllocation, frameTexts: readonly string[]): (Node | string)[] {
  return [
    h('span', {}, h('b', {}, formatBytes(a.size)), ` (${formatCount(a.size)} B), block ${a.id}`),
    `allocated at ${at(a.allocSeconds, a.allocEvent)}`,
    a.freeEvent >= 0 ? `freed at ${at(a.freeSeconds, a.freeEvent)}` : 'still live at the end',
    `stream ${a.stream}`,
    a.frames?.length
      ? h('span', { class: 'frames' }, ...lines(a.frames.map((k) => frameTexts[k]!)))
      : h('i', {}, 'no stack frames recorded'),
  ];
}

/** Draws `workload`'s timeline into `holder` (see the module comment). */
export function drawTimeline(
  holder: HTMLElement,
  workload: WorkloadData,
  axis: Axis,
  tooltip: Tooltip,
  listen: Listen,
): TimelineHandle {
  const explain = workload.explain!;
  const tl = explain.timeline;
  const time = usesTime(workload, axis);
  const width = chartWidth(holder);
  const canvas = canvasOf(
    width,
    HEIGHT,
    `active memory timeline of ${workload.id}: ${TIMELINE_KEYS}`,
  );
  canvas.setAttribute('role', 'application');
  canvas.setAttribute('aria-roledescription', 'memory timeline');
  canvas.setAttribute('aria-describedby', tooltip.element.id);
  const strip = canvasOf(
    width,
    STRIP_HEIGHT,
    'overview of the timeline: drag to zoom, double-click for all',
  );
  strip.className = 'timeline-overview';
  const stack = canvasOf(width, HEIGHT);
  holder.replaceChildren(canvas, strip);
  const ctx = canvas.getContext('2d')!;
  const sctx = strip.getContext('2d')!;
  const kctx = stack.getContext('2d')!;
  const plotW = width - LEFT - RIGHT;
  const plotH = HEIGHT - TOP - BOTTOM;
  const xs = gridX(workload, axis);
  const n = xs.length;
  // Stack: the rest at the bottom, then each drawn allocation in allocation order.
  const base = tl.rest.slice();
  const bottoms = tl.allocations.map((a) => {
    const b: number[] = [];
    for (let j = a.from; j < a.to; j++) {
      b.push(base[j]!);
      base[j]! += a.size;
    }
    return b;
  });
  let ymax = Math.max(0, ...base);
  if (ymax <= 0) ymax = 1;
  ymax *= 1.05;
  const first = xs[0]!;
  const last = xs[n - 1]! > first ? xs[n - 1]! : first + 1;
  let x0 = first;
  let x1 = last;
  const px = (x: number) => LEFT + ((x - x0) / (x1 - x0)) * plotW;
  const xOf = (p: number) => x0 + ((p - LEFT) / plotW) * (x1 - x0);
  const py = (y: number) => TOP + plotH - (y / ymax) * plotH;
  const xAt = (j: number) => px(xs[Math.min(j, n - 1)]!);
  const stripX = (x: number) => LEFT + ((x - first) / (last - first)) * plotW;
  const stripXOf = (p: number) => first + ((p - LEFT) / plotW) * (last - first);
  let hovered = -1;
  let pinned = false;
  let byteTicks: number[] = [];
  let selecting: { from: number; to: number } | null = null;

  /** The last grid point at or left of pixel `x`. */
  function gridIndex(x: number): number {
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (xAt(mid) <= x) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** The band of `bottom` (from grid point `from` to `to`) raised by `heightOf`, as a path. */
  function polygon(
    c: CanvasRenderingContext2D,
    bottom: readonly number[],
    from: number,
    to: number,
    heightOf: (j: number) => number,
  ): boolean {
    // Only the grid points in view (and one each side) are drawn.
    const lo = Math.max(from, gridIndex(LEFT) - 1);
    const hi = Math.min(to, gridIndex(LEFT + plotW) + 2);
    if (lo >= hi) return false;
    c.beginPath();
    for (let j = lo; j < hi; j++) {
      const yTop = py(bottom[j - from]! + heightOf(j));
      if (j === lo) c.moveTo(xAt(j), yTop);
      else c.lineTo(xAt(j), yTop);
      c.lineTo(Math.max(xAt(j + 1), xAt(j) + 1), yTop);
    }
    for (let k = hi - 1; k >= lo; k--) {
      const yBottom = py(bottom[k - from]!);
      c.lineTo(Math.max(xAt(k + 1), xAt(k) + 1), yBottom);
      c.lineTo(xAt(k), yBottom);
    }
    c.closePath();
    return true;
  }

  function clipToPlot(c: CanvasRenderingContext2D): void {
    c.beginPath();
    c.rect(LEFT, TOP - 1, plotW, plotH + 1);
    c.clip();
  }

  function drawStack(): void {
    const c = kctx;
    c.clearRect(0, 0, width, HEIGHT);
    c.fillStyle = '#fff';
    c.fillRect(0, 0, width, HEIGHT);
    c.save();
    clipToPlot(c);
    c.fillStyle = REST;
    if (polygon(c, new Array<number>(n).fill(0), 0, n, (j) => tl.rest[j]!)) c.fill();
    tl.allocations.forEach((a, i) => {
      c.fillStyle = BANDS[i % BANDS.length]!;
      if (polygon(c, bottoms[i]!, a.from, a.to, () => a.size)) c.fill();
    });
    // The peak of live bytes (also marked on the line charts).
    const peakAt = explain.gridEvents.indexOf(explain.peakEvent);
    if (peakAt >= 0) {
      const xp = xAt(peakAt);
      c.setLineDash([4, 3]);
      stroke(c, '#b42318', [xp, TOP], [xp, TOP + plotH]);
      c.fillStyle = '#b42318';
      c.textAlign = xp > LEFT + plotW - 120 ? 'right' : 'left';
      c.textBaseline = 'top';
      c.font = '12px system-ui, sans-serif';
      c.fillText(` peak ${formatBytes(explain.liveBytes[peakAt]!)} `, xp, TOP + 2);
    }
    c.restore();
    // Axes with round ticks and units.
    c.lineWidth = 1;
    stroke(c, '#888', [LEFT, TOP], [LEFT, TOP + plotH], [LEFT + plotW, TOP + plotH]);
    c.fillStyle = '#333';
    c.font = '12px system-ui, sans-serif';
    c.textAlign = 'right';
    c.textBaseline = 'middle';
    byteTicks = binaryTicks(ymax, plotH, 30);
    for (const v of byteTicks) {
      c.fillText(formatTickBytes(v), LEFT - 6, py(v));
      stroke(c, '#eee', [LEFT + 1, py(v)], [LEFT + plotW, py(v)]);
    }
    c.textAlign = 'center';
    c.textBaseline = 'top';
    const format = xFormat(time);
    const increments = time ? DECIMAL : DECIMAL.filter((v) => v >= 1);
    for (const v of ticks(x0, x1, plotW, 90, increments))
      c.fillText(format(v), px(v), TOP + plotH + 6);
    c.fillText(xLabel(time), LEFT + plotW / 2, TOP + plotH + 24);
    c.save();
    c.translate(14, TOP + plotH / 2);
    c.rotate(-Math.PI / 2);
    c.fillText('live memory (bytes, binary units)', 0, 0);
    c.restore();
  }

  function draw(): void {
    ctx.clearRect(0, 0, width, HEIGHT);
    ctx.drawImage(stack, 0, 0, width, HEIGHT);
    const a = tl.allocations[hovered];
    if (a) {
      ctx.save();
      clipToPlot(ctx);
      if (polygon(ctx, bottoms[hovered]!, a.from, a.to, () => a.size)) {
        ctx.strokeStyle = '#000';
        ctx.lineWidth = 2;
        ctx.stroke();
      }
      ctx.restore();
    }
    if (selecting) {
      ctx.fillStyle = 'rgba(31, 78, 121, 0.15)';
      const s0 = Math.min(selecting.from, selecting.to);
      ctx.fillRect(s0, TOP, Math.abs(selecting.to - selecting.from), plotH);
    }
    drawStrip();
  }

  function drawStrip(): void {
    const c = sctx;
    c.clearRect(0, 0, width, STRIP_HEIGHT);
    c.fillStyle = '#fff';
    c.fillRect(0, 0, width, STRIP_HEIGHT);
    c.fillStyle = '#9fb4c8';
    c.beginPath();
    c.moveTo(stripX(xs[0]!), STRIP_HEIGHT - 2);
    for (let j = 0; j < n; j++)
      c.lineTo(stripX(xs[j]!), STRIP_HEIGHT - 2 - (base[j]! / ymax) * (STRIP_HEIGHT - 6));
    c.lineTo(stripX(xs[n - 1]!), STRIP_HEIGHT - 2);
    c.closePath();
    c.fill();
    const b0 = stripX(x0);
    const b1 = stripX(x1);
    c.fillStyle = 'rgba(0, 0, 0, 0.08)';
    c.fillRect(LEFT, 0, b0 - LEFT, STRIP_HEIGHT);
    c.fillRect(b1, 0, LEFT + plotW - b1, STRIP_HEIGHT);
    c.strokeStyle = '#1f4e79';
    c.lineWidth = 1.5;
    c.strokeRect(b0, 1, Math.max(2, b1 - b0), STRIP_HEIGHT - 2);
  }

  /** Shows x from a to b (clamped to the whole range, at least two grid points wide). */
  function zoom(a: number, b: number): void {
    let lo = Math.min(a, b);
    let hi = Math.max(a, b);
    const least = ((last - first) / Math.max(1, n - 1)) * 2;
    if (hi - lo < least) {
      const mid = (lo + hi) / 2;
      lo = mid - least / 2;
      hi = mid + least / 2;
    }
    const span = Math.min(hi - lo, last - first);
    lo = Math.max(first, Math.min(lo, last - span));
    x0 = lo;
    x1 = lo + span;
    drawStack();
    draw();
  }
  const reset = () => zoom(first, last);

  /** What lies under pixel (mx, my): a drawn allocation, the band of the rest, or nothing. */
  function hit(mx: number, my: number): { index: number } | { rest: number } | null {
    if (mx < LEFT || mx > LEFT + plotW || my < TOP || my > TOP + plotH) return null;
    const j = gridIndex(mx);
    const y = ((TOP + plotH - my) / plotH) * ymax;
    if (y < tl.rest[j]!) return { rest: j };
    const index = tl.allocations.findIndex((a, i) => {
      if (j < a.from || j >= a.to) return false;
      const b = bottoms[i]![j - a.from]!;
      return y >= b && y < b + a.size;
    });
    return index < 0 ? null : { index };
  }
  function local(target: HTMLElement, event: MouseEvent): { x: number; y: number } {
    const rect = target.getBoundingClientRect();
    return { x: event.clientX - rect.left, y: event.clientY - rect.top };
  }
  function hover(event: MouseEvent): void {
    const p = local(canvas, event);
    const found = hit(p.x, p.y);
    const next = found && 'index' in found ? found.index : -1;
    if (next !== hovered) {
      hovered = next;
      draw();
    }
    if (!found) tooltip.hide();
    else if ('rest' in found) {
      tooltip.show(
        [
          h(
            'span',
            {},
            h('b', {}, formatBytes(tl.rest[found.rest]!)),
            ` live in allocations not drawn one by one (${formatCount(tl.total - tl.allocations.length)} of ${formatCount(tl.total)} allocations)`,
          ),
        ],
        event,
      );
    } else tooltip.show(describe(tl.allocations[found.index]!, tl.frameTexts), event);
  }
  function unpin(): void {
    if (!pinned) return;
    pinned = false;
    tooltip.pin(false);
    hovered = -1;
    draw();
    tooltip.hide();
  }

  // Mouse, pen and finger alike (pointer events): a finger's sideways drag zooms, as the mouse's
  // does; the page still scrolls under a vertical one (touch-action in the style sheet).
  let down: { x: number; y: number; id: number } | null = null;
  canvas.addEventListener('pointerdown', (event) => {
    if (event.button !== 0 || !event.isPrimary) return;
    down = { ...local(canvas, event), id: event.pointerId };
    canvas.setPointerCapture(event.pointerId);
    if (event.pointerType === 'mouse') event.preventDefault();
  });
  const clamp = (x: number) => Math.max(LEFT, Math.min(LEFT + plotW, x));
  canvas.addEventListener('pointermove', (event) => {
    const p = local(canvas, event);
    if (down && event.pointerId === down.id && Math.abs(p.x - down.x) > 4) {
      selecting = { from: clamp(down.x), to: clamp(p.x) };
      draw();
      return;
    }
    if (!pinned && event.pointerType === 'mouse') hover(event);
  });
  canvas.addEventListener('pointercancel', () => {
    down = null;
    selecting = null;
    draw();
  });
  canvas.addEventListener('pointerup', (event) => {
    if (!down || event.pointerId !== down.id) return;
    const start = down;
    down = null;
    if (selecting) {
      const s = selecting;
      selecting = null;
      if (Math.abs(s.to - s.from) > 4) zoom(xOf(s.from), xOf(s.to));
      else draw();
      return;
    }
    // A click or a tap: pins the tooltip of what is under it, or unpins it.
    if (pinned) {
      unpin();
      return;
    }
    hover(event);
    if (hovered >= 0 || hit(start.x, start.y)) {
      pinned = true;
      tooltip.pin(true);
    }
  });
  canvas.addEventListener('pointerleave', (event) => {
    if (pinned || selecting || event.pointerType !== 'mouse') return;
    hovered = -1;
    draw();
    tooltip.hide();
  });
  canvas.addEventListener('dblclick', () => {
    unpin();
    reset();
  });
  canvas.addEventListener(
    'wheel',
    (event) => {
      if (x0 === first && x1 === last) return;
      event.preventDefault();
      const delta = Math.abs(event.deltaX) > Math.abs(event.deltaY) ? event.deltaX : event.deltaY;
      const shift = (delta / plotW) * (x1 - x0);
      zoom(x0 + shift, x1 + shift);
    },
    { passive: false },
  );
  listen(document, 'keydown', (event) => {
    if (event.key === 'Escape') unpin();
  });
  // A tap elsewhere lets a pinned tooltip go (a phone has no Escape key).
  listen(document, 'pointerdown', (event) => {
    const target = event.target as Node;
    if (pinned && target !== canvas && !tooltip.element.contains(target)) unpin();
  });

  // The strip: drag inside the window to pan, elsewhere to choose a new range.
  let stripDown: { p: number; pan: boolean; x0: number; x1: number; id: number } | null = null;
  strip.addEventListener('pointerdown', (event) => {
    if (event.button !== 0 || !event.isPrimary) return;
    if (event.pointerType === 'mouse') event.preventDefault();
    strip.setPointerCapture(event.pointerId);
    const p = local(strip, event).x;
    const zoomed = x0 !== first || x1 !== last;
    const pan = zoomed && p >= stripX(x0) && p <= stripX(x1);
    stripDown = { p, pan, x0, x1, id: event.pointerId };
  });
  strip.addEventListener('pointermove', (event) => {
    if (!stripDown || event.pointerId !== stripDown.id) return;
    const p = local(strip, event).x;
    if (stripDown.pan) {
      const shift = stripXOf(p) - stripXOf(stripDown.p);
      zoom(stripDown.x0 + shift, stripDown.x1 + shift);
    } else if (Math.abs(p - stripDown.p) > 3) {
      zoom(stripXOf(Math.max(LEFT, stripDown.p)), stripXOf(clamp(p)));
    }
  });
  const stripUp = () => {
    stripDown = null;
  };
  strip.addEventListener('pointerup', stripUp);
  strip.addEventListener('pointercancel', stripUp);
  strip.addEventListener('dblclick', reset);

  /** Page coordinates of the middle of drawn allocation `i` over grid points [lo, hi). */
  function pointOf(i: number, lo: number, hi: number): { pageX: number; pageY: number } {
    const a = tl.allocations[i]!;
    const j = lo + Math.floor((hi - lo - 1) / 2);
    const rect = canvas.getBoundingClientRect();
    const x = (xAt(j) + Math.max(xAt(j + 1), xAt(j) + 1)) / 2;
    const y = py(bottoms[i]![j - a.from]! + a.size / 2);
    return { pageX: rect.left + window.scrollX + x, pageY: rect.top + window.scrollY + y };
  }

  timelineKeys(canvas, {
    zoomBy(factor) {
      const middle = (x0 + x1) / 2;
      const half = ((x1 - x0) * factor) / 2;
      zoom(middle - half, middle + half);
    },
    panBy(fraction) {
      const shift = fraction * (x1 - x0);
      zoom(x0 + shift, x1 + shift);
    },
    reset,
    select(step) {
      // The allocations in view, in allocation order, from the one picked last.
      const lo = gridIndex(LEFT);
      const hi = gridIndex(LEFT + plotW) + 1;
      const inView = (i: number) => tl.allocations[i]!.to > lo && tl.allocations[i]!.from < hi;
      let i = hovered;
      do i += step;
      while (i >= 0 && i < tl.allocations.length && !inView(i));
      if (i < 0 || i >= tl.allocations.length) return;
      unpin();
      hovered = i;
      draw();
      const a = tl.allocations[i]!;
      tooltip.show(
        describe(a, tl.frameTexts),
        pointOf(i, Math.max(a.from, lo), Math.min(a.to, hi)),
      );
    },
    release() {
      unpin();
      hovered = -1;
      draw();
      tooltip.hide();
    },
  });

  drawStack();
  draw();
  return {
    canvas,
    strip,
    byteTicks,
    drawn: tl.allocations.length,
    range: () => ({ from: x0, to: x1, first, last }),
    locate(id) {
      const i = tl.allocations.findIndex((a) => a.id === id);
      const a = tl.allocations[i];
      if (a === undefined) return null;
      const { pageX, pageY } = pointOf(i, a.from, a.to);
      return { x: pageX, y: pageY };
    },
    biggest() {
      let best: TimelineAllocation | undefined;
      const area = (a: TimelineAllocation) => a.size * (a.to - a.from);
      for (const a of tl.allocations) if (best === undefined || area(a) > area(best)) best = a;
      return best?.id ?? null;
    },
  };
}
