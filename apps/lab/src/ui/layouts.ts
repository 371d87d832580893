/**
 * The pool at a moment: each allocator's segments laid end to end, left to right and row after
 * row, on a canvas per allocator, every one to one scale (bytes per pixel, the largest filling ten
 * rows), so a row that reserves more takes more room. Live blocks dark, free light, runs of blocks
 * too small to draw apart mixed; a dark bar at the start of each segment. Hover on a block for its
 * segment, pool and size.
 */
import type { LayoutView } from '../analysis/measure';
import { formatBytes, formatCount } from '../units';
import { chartWidth } from './axes';
import { h } from './dom';
import type { RowData } from './report-data';
import type { Tooltip } from './tooltip';

const LIVE = '#1f4e79';
const FREE = '#e4e7eb';
const MIXED = '#8fb0d0';
const EDGE = '#222';
const ROW_HEIGHT = 14;
const GAP = 4;
const MAX_ROWS = 10;

/** A layout to draw, and how its caption names it. */
export interface LayoutItem {
  readonly name: string;
  /** For the canvas's label and the tooltip. */
  readonly label: string;
  readonly view: LayoutView;
  /** A pool's segment decisions, which the table's column counts. */
  readonly segments?: RowData['segments'];
  /** More for the caption. */
  readonly extra: string;
}

/**
 * Segments of a layout at the peak, and for a pool how they relate to the table's column: that
 * counts the segments allocated in the window (cudaMalloc calls, and expandable growths), not
 * those restored from the recording's starting state.
 */
function segmentsText(n: number, decisions: RowData['segments'] | undefined): string {
  const text = `${formatCount(n)} ${n === 1 ? 'segment' : 'segments'} at the peak`;
  if (!decisions) return text;
  const notes: string[] = [];
  if (decisions.restored > 0)
    notes.push(`${formatCount(decisions.restored)} from the starting state`);
  const grown = `${formatCount(decisions.grown)} ${decisions.grown === 1 ? 'growth' : 'growths'}`;
  notes.push(
    decisions.acquired === 0 && decisions.grown > 0
      ? `the table counts the ${grown} in the window`
      : `the table counts the ${formatCount(decisions.acquired)} allocated in the window${decisions.grown > 0 ? ` and ${grown}` : ''}`,
  );
  return `${text} (${notes.join('; ')})`;
}

/** Draws `view` on `canvas`, `rows` rows of `perPixel` bytes a pixel. */
function drawLayout(canvas: HTMLCanvasElement, view: LayoutView, rows: number, perPixel: number) {
  const width = canvas.width;
  const ctx = canvas.getContext('2d')!;
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  if (!view.totalBytes) {
    ctx.fillStyle = '#666';
    ctx.font = '12px sans-serif';
    ctx.fillText('nothing reserved', 8, 12);
    return;
  }
  const span = (start: number, size: number, color: string) => {
    let from = start / perPixel;
    let to = (start + size) / perPixel;
    if (to - from < 1) to = from + 1;
    ctx.fillStyle = color;
    while (from < to) {
      const row = Math.floor(from / width);
      if (row >= rows) break;
      const x = from - row * width;
      const w = Math.min(to - from, width - x);
      ctx.fillRect(x, row * (ROW_HEIGHT + GAP), w, ROW_HEIGHT);
      from += w;
    }
  };
  let position = 0;
  for (const segment of view.segments) {
    span(position, segment.size, FREE);
    for (let i = 0; i < segment.runs.length; i += 3) {
      const state = segment.runs[i + 2];
      if (state !== 0)
        span(position + segment.runs[i]!, segment.runs[i + 1]!, state === 1 ? LIVE : MIXED);
    }
    const edge = position / perPixel;
    const row = Math.floor(edge / width);
    if (row < rows) {
      ctx.fillStyle = EDGE;
      ctx.fillRect(edge - row * width, row * (ROW_HEIGHT + GAP) - 1, 2, ROW_HEIGHT + 2);
    }
    position += segment.size;
  }
}

/** What lies under byte `at` of `item`'s segments laid end to end, for the tooltip; null past them. */
function describeAt(item: LayoutItem, at: number): (Node | string)[] | null {
  const { segments } = item.view;
  let position = 0;
  for (let s = 0; s < segments.length; s++) {
    const segment = segments[s]!;
    if (at < position + segment.size) {
      const offset = at - position;
      let text = 'free';
      for (let i = 0; i < segment.runs.length; i += 3) {
        const [start, size, state] = segment.runs.slice(i, i + 3) as [number, number, number];
        if (offset >= start && offset < start + size) {
          const what =
            state === 0
              ? 'free'
              : state === 1
                ? 'live'
                : 'live and free blocks too small to draw apart';
          text = `${what}: ${formatBytes(size)} at offset ${formatBytes(start)}`;
          break;
        }
      }
      const where = `${formatBytes(segment.size)}${segment.pool ? `, ${segment.pool} pool` : ''}, address 0x${segment.address.toString(16)}`;
      return [
        h(
          'span',
          {},
          h('b', {}, item.label),
          `, segment ${s + 1} of ${segments.length} (${where})`,
        ),
        text,
      ];
    }
    position += segment.size;
  }
  return null;
}

/**
 * Draws `items` into `container`, all to one scale, which `scale` states after `scaleText`.
 * Hovering shows each block in `tooltip`.
 */
export function drawLayouts(
  container: HTMLElement,
  scale: HTMLElement | null,
  items: readonly LayoutItem[],
  scaleText: string,
  tooltip: Tooltip,
): void {
  container.replaceChildren();
  const width = chartWidth(container) - 2;
  const largest = Math.max(0, ...items.map((item) => item.view.totalBytes));
  // One scale for every layout: the largest fills MAX_ROWS rows of the width.
  const perPixel = largest > 0 ? largest / (width * MAX_ROWS) : 1;
  if (scale) {
    scale.textContent = `${scaleText}1 pixel = ${formatBytes(perPixel)}, one row = ${formatBytes(perPixel * width)}.`;
  }
  for (const item of items) {
    const { view } = item;
    const rows = Math.max(1, Math.ceil(view.totalBytes / (perPixel * width)));
    const canvas = h('canvas', { 'aria-label': `layout of ${item.label}` });
    canvas.width = width;
    canvas.height = rows * (ROW_HEIGHT + GAP);
    const caption =
      `${segmentsText(view.segments.length, item.segments)}, ${formatBytes(view.totalBytes)} shown: ` +
      `${formatBytes(view.liveBytes)} live in ${formatCount(view.blocks)} blocks, ${formatBytes(view.freeBytes)} free${item.extra}`;
    container.append(
      h(
        'figure',
        { class: 'layout' },
        h('figcaption', {}, h('b', {}, item.name), ' ', h('span', {}, caption)),
        canvas,
      ),
    );
    drawLayout(canvas, view, rows, perPixel);
    canvas.addEventListener('mousemove', (event) => {
      const rect = canvas.getBoundingClientRect();
      const row = Math.floor((event.clientY - rect.top) / (ROW_HEIGHT + GAP));
      const parts = describeAt(item, (row * width + event.clientX - rect.left) * perPixel);
      if (parts === null) tooltip.hide();
      else tooltip.show(parts, event);
    });
    canvas.addEventListener('mouseleave', () => tooltip.hide());
  }
}
