/**
 * A state dump's segments to scale, as memory_viz's segment view draws them: each segment a bar of
 * its own, its length to one scale (the largest segment fills the width), the largest first, left
 * to right and row after row. In each bar, its blocks at their offsets: allocated (the bytes
 * requested dark, the rounding above them lighter), freed and waiting for another stream (red),
 * free (white), and runs of blocks too small to draw apart (mixed). Hover, or tap, on a block for
 * its segment, its state, its size and what made it.
 *
 * ```
 *  layout ─► segments by size, largest first ─► rows of the width (a few pixels between bars)
 *         ─► a canvas: a bar per segment, its blocks in it ─► the tooltip finds the bar, then the block
 * ```
 */
import { type DumpLayout, MAP_BLOCK_FIELDS, MAP_STATE } from '../analysis/dump-layout';
import { formatBytes, formatCount } from '../units';
import { chartWidth } from './axes';
import { h } from './dom';
import type { Tooltip } from './tooltip';

/** Colours of the map, its legend's too. */
export const MAP_COLORS = {
  allocated: '#1f4e79',
  rounding: '#7fa7d1',
  pending: '#c0504d',
  free: '#ffffff',
  mixed: '#a9bccf',
  edge: '#4b5563',
} as const;

const ROW_HEIGHT = 16;
const ROW_GAP = 5;
/** Pixels between two bars of a row, and the least a bar is drawn wide. */
const SPACE = 3;
const MIN_WIDTH = 2;
/** Rows drawn at most: a dump of thousands of tiny segments says how many it left out. */
const MAX_ROWS = 300;

/** Where one segment's bar is. */
interface Bar {
  readonly segment: number;
  readonly x: number;
  readonly row: number;
  readonly width: number;
}

/** What the tests read of a drawn map. */
export interface SegmentMapHandle {
  readonly segments: number;
  readonly drawn: number;
  readonly rows: number;
  /** Bytes one pixel stands for. */
  readonly bytesPerPixel: number;
  /** The page point over the block at `offset` in the segment at `address`, or null when not drawn. */
  at(address: number, offset: number): { x: number; y: number } | null;
}

/** The bars of `layout` in a width of `width` pixels (see the module comment). */
function place(layout: DumpLayout, width: number): { bars: Bar[]; perPixel: number } {
  const order = layout.segments
    .map((_, i) => i)
    .sort(
      (a, b) =>
        layout.segments[b]!.size - layout.segments[a]!.size ||
        layout.segments[a]!.address - layout.segments[b]!.address,
    );
  const largest = order.length > 0 ? layout.segments[order[0]!]!.size : 0;
  const perPixel = largest > 0 ? largest / width : 1;
  const bars: Bar[] = [];
  let x = 0;
  let row = 0;
  for (const segment of order) {
    const barWidth = Math.max(MIN_WIDTH, layout.segments[segment]!.size / perPixel);
    if (x > 0 && x + barWidth > width) {
      x = 0;
      row++;
    }
    if (row >= MAX_ROWS) break;
    bars.push({ segment, x, row, width: barWidth });
    x += barWidth + SPACE;
  }
  return { bars, perPixel };
}

/** Draws `bars` of `layout` on `canvas`. */
function draw(
  canvas: HTMLCanvasElement,
  layout: DumpLayout,
  bars: readonly Bar[],
  perPixel: number,
) {
  const ctx = canvas.getContext('2d')!;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  for (const bar of bars) {
    const { blocks } = layout.segments[bar.segment]!;
    const y = bar.row * (ROW_HEIGHT + ROW_GAP);
    ctx.fillStyle = MAP_COLORS.free;
    ctx.fillRect(bar.x, y, bar.width, ROW_HEIGHT);
    const span = (from: number, bytes: number, color: string) => {
      const left = bar.x + from / perPixel;
      const w = Math.min(bar.x + bar.width - left, Math.max(bytes / perPixel, 0.5));
      if (w <= 0) return;
      ctx.fillStyle = color;
      ctx.fillRect(left, y, w, ROW_HEIGHT);
    };
    for (let i = 0; i < blocks.length; i += MAP_BLOCK_FIELDS) {
      const [offset, size, requested, state] = blocks.slice(i, i + 4) as [
        number,
        number,
        number,
        number,
      ];
      if (state === MAP_STATE.allocated) {
        span(offset, size, MAP_COLORS.rounding);
        span(offset, Math.min(size, requested), MAP_COLORS.allocated);
      } else if (state === MAP_STATE['pending-free']) {
        span(offset, size, MAP_COLORS.pending);
      } else if (state === MAP_STATE.mixed) {
        span(offset, size, MAP_COLORS.mixed);
      }
      // Where a block begins, a thin line, when blocks are wide enough to tell apart.
      if (offset > 0 && size / perPixel >= 4) span(offset, perPixel, MAP_COLORS.free);
    }
    ctx.strokeStyle = MAP_COLORS.edge;
    ctx.lineWidth = 1;
    ctx.strokeRect(bar.x + 0.5, y + 0.5, Math.max(1, bar.width - 1), ROW_HEIGHT - 1);
  }
}

/** A block's state in words. */
const STATE_WORDS: Readonly<Record<number, string>> = {
  [MAP_STATE.free]: 'free',
  [MAP_STATE.allocated]: 'allocated',
  [MAP_STATE['pending-free']]: 'freed, waiting for another stream',
  [MAP_STATE.mixed]: 'blocks too small to draw apart',
};

/** What lies under `offset` of segment `index`, for the tooltip. */
function describe(layout: DumpLayout, index: number, offset: number): (Node | string)[] {
  const segment = layout.segments[index]!;
  let free = 0;
  let allocated = 0;
  let under: (Node | string) | null = null;
  for (let i = 0; i < segment.blocks.length; i += MAP_BLOCK_FIELDS) {
    const [start, size, requested, state, source] = segment.blocks.slice(i, i + 5) as [
      number,
      number,
      number,
      number,
      number,
    ];
    if (state === MAP_STATE.free) free += size;
    if (state === MAP_STATE.allocated) allocated += size;
    if (offset >= start && offset < start + size) {
      const request = state === MAP_STATE.allocated ? ` (${formatBytes(requested)} requested)` : '';
      const made = source >= 0 ? `, made by ${layout.sources[source]}` : '';
      under = `${STATE_WORDS[state]}: ${formatBytes(size)}${request} at offset ${formatBytes(start)}${made}`;
    }
  }
  const kind = `${segment.pool} pool, stream ${segment.stream}${segment.expandable ? ', expandable' : ''}`;
  return [
    h(
      'span',
      {},
      h('b', {}, `segment 0x${segment.address.toString(16)}`),
      `, ${formatBytes(segment.size)} (${kind}): ${formatBytes(allocated)} allocated, ${formatBytes(free)} free`,
    ),
    ...(under !== null ? [under] : []),
  ];
}

/**
 * Draws `layout` into `container` to scale (see the module comment), the scale said in `scale`;
 * hovering or tapping shows each block in `tooltip`.
 */
export function drawSegmentMap(
  container: HTMLElement,
  scale: HTMLElement | null,
  layout: DumpLayout,
  tooltip: Tooltip,
): SegmentMapHandle {
  container.replaceChildren();
  const width = chartWidth(container) - 2;
  const { bars, perPixel } = place(layout, width);
  const rows = bars.length > 0 ? bars[bars.length - 1]!.row + 1 : 0;
  const left = layout.segments.length - bars.length;
  if (scale) {
    scale.textContent =
      `1 pixel = ${formatBytes(perPixel)}: the largest segment fills the width.` +
      (layout.merged > 0
        ? ` ${formatCount(layout.merged)} blocks too small to draw apart are merged into runs.`
        : '') +
      (left > 0 ? ` ${formatCount(left)} of the smallest segments are not drawn.` : '');
  }
  const canvas = h('canvas', {
    role: 'img',
    tabindex: '0',
    'aria-label': `${formatCount(layout.segments.length)} segments to scale, the largest first`,
    'data-segments': String(layout.segments.length),
    'data-drawn': String(bars.length),
  });
  canvas.width = width;
  canvas.height = Math.max(1, rows * (ROW_HEIGHT + ROW_GAP) - ROW_GAP);
  container.append(canvas);
  draw(canvas, layout, bars, perPixel);
  const show = (event: PointerEvent) => {
    const rect = canvas.getBoundingClientRect();
    const x = event.clientX - rect.left;
    const y = event.clientY - rect.top;
    const row = Math.floor(y / (ROW_HEIGHT + ROW_GAP));
    const inRow = y - row * (ROW_HEIGHT + ROW_GAP) < ROW_HEIGHT;
    const bar = inRow
      ? bars.find((b) => b.row === row && x >= b.x && x < b.x + b.width)
      : undefined;
    if (bar === undefined) tooltip.hide();
    else tooltip.show(describe(layout, bar.segment, (x - bar.x) * perPixel), event);
  };
  canvas.addEventListener('pointermove', show);
  canvas.addEventListener('pointerdown', show);
  canvas.addEventListener('pointerleave', () => tooltip.hide());
  return {
    segments: layout.segments.length,
    drawn: bars.length,
    rows,
    bytesPerPixel: perPixel,
    at(address, offset) {
      const bar = bars.find((b) => layout.segments[b.segment]!.address === address);
      if (bar === undefined) return null;
      const rect = canvas.getBoundingClientRect();
      return {
        x: rect.left + window.scrollX + bar.x + Math.min(bar.width - 1, offset / perPixel + 1),
        y: rect.top + window.scrollY + bar.row * (ROW_HEIGHT + ROW_GAP) + ROW_HEIGHT / 2,
      };
    },
  };
}
