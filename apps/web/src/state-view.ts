/**
 * The pool at any event, not only at the peak: a slider over a trace's events, stepped with the
 * arrow keys while the slider has the focus (one event; with Shift, 1 % of the trace; Home and End),
 * and the pool's segments and blocks just after the event, drawn one segment a line (live blocks,
 * free blocks, the event's own block marked), with what the event was. The shown event is
 * `[data-testid="state-event"]` (`data-event`), the drawn segments' bytes
 * `[data-testid="state-reserved"]` (`data-bytes`).
 */
import { BLOCK_FIELDS, type PoolState } from '@allot/lab/engine';
import { byId, formatBytes, formatCount, h } from '@allot/lab/ui';
import type { OpenedTrace } from './protocol';

const COLORS = { live: '#3b6fb6', free: '#d9dde3', event: '#e4572e', edge: '#8a929c' };

function describe(state: PoolState): string {
  const what =
    state.kind === 'start'
      ? `allocation before the recording began, ${formatBytes(state.bytes)}`
      : `${state.kind} of ${formatBytes(state.bytes)} (${formatCount(state.bytes)} bytes)`;
  const when = state.seconds === null ? '' : ` at ${state.seconds.toFixed(3)} s`;
  return `${what}${when}`;
}

function draw(canvas: HTMLCanvasElement, state: PoolState): void {
  const width = Math.max(200, canvas.parentElement?.clientWidth ?? 340);
  const count = state.segments.length;
  const row = count === 0 ? 0 : Math.max(3, Math.min(12, Math.floor(480 / count)));
  const ratio = globalThis.devicePixelRatio || 1;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.max(1, Math.round(count * row * ratio));
  canvas.style.width = `${width}px`;
  canvas.style.height = `${count * row}px`;
  const context = canvas.getContext('2d');
  if (context === null) return;
  context.scale(ratio, ratio);
  const largest = Math.max(1, ...state.segments.map((segment) => segment.size));
  const scale = width / largest;
  const gap = row > 4 ? 1 : 0;
  state.segments.forEach((segment, s) => {
    context.fillStyle = COLORS.edge;
    context.fillRect(0, s * row, segment.size * scale, row - gap);
  });
  let marked: [number, number, number] | null = null;
  const blocks = state.blocks;
  for (let b = 0; b < blocks.length; b += BLOCK_FIELDS) {
    const segment = state.segments[blocks[b]!]!;
    const x = (blocks[b + 1]! - segment.address) * scale;
    const full = blocks[b + 2]! * scale;
    // A live block is at least a pixel wide, and a pixel short of the next when it is wide.
    const w = blocks[b + 3] ? full : Math.max(1, full > 3 ? full - 1 : full);
    const y = blocks[b]! * row;
    context.fillStyle = blocks[b + 3] ? COLORS.free : COLORS.live;
    context.fillRect(x, y, w, row - gap);
    if (blocks[b + 1] === state.address) marked = [x, y, Math.max(2, w)];
  }
  if (marked !== null) {
    const [x, y, w] = marked;
    context.fillStyle = COLORS.event;
    context.fillRect(x, y, w, row - gap);
    context.strokeStyle = COLORS.event;
    context.strokeRect(x - 1.5, y - 1.5, w + 3, row - gap + 3);
  }
}

export class StateView {
  private readonly section = byId('state');
  private readonly panel = byId('state-panel');
  private readonly slider = byId<HTMLInputElement>('state-slider');
  private readonly pick = byId<HTMLSelectElement>('state-trace');
  private readonly event = byId('state-event');
  private readonly what = byId('state-what');
  private readonly figures = byId('state-figures');
  private readonly canvas = byId<HTMLCanvasElement>('state-canvas');
  private readonly traces: OpenedTrace[] = [];

  /** `ask(trace, event)`: the pool of a trace after one of its events is wanted. */
  constructor(private readonly ask: (trace: number, event: number) => void) {
    this.slider.addEventListener('input', () => this.go(Number(this.slider.value)));
    this.pick.addEventListener('change', () => this.select(Number(this.pick.value)));
    this.panel.addEventListener('keydown', (event) => {
      const last = Number(this.slider.max);
      const step = event.shiftKey ? Math.max(1, Math.round((last + 1) / 100)) : 1;
      const at = Number(this.slider.value);
      const to =
        event.key === 'ArrowRight'
          ? at + step
          : event.key === 'ArrowLeft'
            ? at - step
            : event.key === 'Home'
              ? 0
              : event.key === 'End'
                ? last
                : null;
      if (to === null) return;
      event.preventDefault();
      this.go(Math.max(0, Math.min(last, to)));
    });
  }

  /** The traces of a file, to step through. */
  add(traces: readonly OpenedTrace[]): void {
    const first = this.traces.length === 0;
    for (const trace of traces) {
      this.pick.append(h('option', { value: String(this.traces.length) }, trace.name));
      this.traces.push(trace);
    }
    this.pick.hidden = this.traces.length < 2;
    this.section.hidden = false;
    if (first) this.select(0);
  }

  /** The traces left once a file was taken away: the first of them shown from its start. */
  reset(traces: readonly OpenedTrace[]): void {
    this.traces.length = 0;
    this.pick.replaceChildren();
    this.section.hidden = true;
    if (traces.length > 0) this.add(traces);
  }

  /** The trace and event shown, to ask again when the settings change. */
  current(): { trace: number; event: number } | null {
    if (this.traces.length === 0) return null;
    return { trace: Number(this.pick.value), event: Number(this.slider.value) };
  }

  private select(index: number): void {
    const trace = this.traces[index]!;
    this.pick.value = String(index);
    this.slider.max = String(Math.max(0, trace.events - 1));
    this.go(0);
  }

  private go(event: number): void {
    this.slider.value = String(event);
    this.event.dataset.state = 'loading';
    this.ask(Number(this.pick.value), event);
  }

  /** The worker's answer; an answer for another event than the one now asked is left. */
  show(trace: number, state: PoolState): void {
    if (trace !== Number(this.pick.value) || state.event !== Number(this.slider.value)) return;
    const reserved = state.segments.reduce((sum, segment) => sum + segment.size, 0);
    // Events are numbered from 0, as the report numbers them: the last is events − 1.
    const last = state.events - 1;
    this.event.textContent =
      state.event === last
        ? `event ${formatCount(state.event)}, the last (events 0 to ${formatCount(last)})`
        : `event ${formatCount(state.event)} of 0 to ${formatCount(last)}`;
    this.event.dataset.event = String(state.event);
    this.event.dataset.state = 'ready';
    this.what.replaceChildren(
      describe(state),
      ...(state.frame === null ? [] : [h('br'), h('code', {}, state.frame)]),
    );
    this.figures.replaceChildren(
      h(
        'span',
        { 'data-testid': 'state-reserved', 'data-bytes': String(reserved) },
        `${formatBytes(reserved)} reserved`,
      ),
      `, ${formatBytes(state.liveBytes)} requested live, ${formatCount(state.segments.length)} segments, ${formatCount(state.blocks.length / BLOCK_FIELDS)} blocks`,
    );
    draw(this.canvas, state);
  }

  failed(message: string): void {
    this.event.dataset.state = 'failed';
    this.what.textContent = `The pool could not be shown: ${message}`;
  }
}
