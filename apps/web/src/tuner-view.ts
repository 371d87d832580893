/**
 * The tuner's search as it runs, per trace: every setting tried so far, the best first, and at the
 * end the advice as a `PYTORCH_CUDA_ALLOC_CONF=` line to copy, or to try in the what-if.
 */
import type { Advice } from '@allot/lab/engine';
import {
  byId,
  formatBytes,
  formatChange,
  formatCount,
  h,
  type RowBrief,
  settingName,
} from '@allot/lab/ui';
import type { Knobs } from './protocol';

/** Settings listed per trace while searching and after. */
const SHOWN = 8;

interface Search {
  readonly trace: string;
  readonly tried: RowBrief[];
  advice?: Advice;
  device?: string;
  bestKnobs?: Knobs;
}

export function line(config: string): string {
  return `PYTORCH_CUDA_ALLOC_CONF=${config}`;
}

export async function copy(
  text: string,
  button: HTMLButtonElement,
  code: HTMLElement,
): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch {
    // No clipboard here (a page from file:// in some browsers): select the line to copy by hand.
    getSelection()?.selectAllChildren(code);
    button.textContent = 'Selected: copy it';
  }
  setTimeout(() => {
    button.textContent = 'Copy';
  }, 2000);
}

export class TunerView {
  private readonly section = byId('tuner');
  private readonly body = byId('tuner-body');
  private searches: Search[] = [];
  private seq = -1;
  private drawing = false;

  constructor(private readonly onTry: (knobs: Knobs) => void) {}

  /** A new search (new device figures): what was shown goes. */
  start(seq: number): void {
    this.seq = seq;
    this.searches = [];
    this.section.hidden = false;
    this.draw();
  }

  tried(seq: number, index: number, trace: string, run: RowBrief): void {
    if (seq !== this.seq) return;
    (this.searches[index] ??= { trace, tried: [] }).tried.push(run);
    this.schedule();
  }

  tuned(
    seq: number,
    index: number,
    trace: string,
    advice: Advice,
    device: string,
    best: Knobs,
  ): void {
    if (seq !== this.seq) return;
    const search = (this.searches[index] ??= { trace, tried: [] });
    search.advice = advice;
    search.device = device;
    search.bestKnobs = best;
    this.schedule();
  }

  failed(message: string): void {
    this.body.replaceChildren(h('p', { class: 'failed' }, `The search failed: ${message}`));
  }

  private schedule(): void {
    if (this.drawing) return;
    this.drawing = true;
    requestAnimationFrame(() => {
      this.drawing = false;
      this.draw();
    });
  }

  private draw(): void {
    if (this.searches.length === 0) {
      this.body.replaceChildren(h('p', { class: 'muted small' }, 'Searching the settings…'));
      return;
    }
    this.body.replaceChildren(
      ...this.searches.filter(Boolean).map((search) => this.searchView(search)),
    );
  }

  private searchView(search: Search): HTMLElement {
    const sorted = [...search.tried].sort(
      (a, b) => a.failures - b.failures || a.peakReservedBytes - b.peakReservedBytes,
    );
    const defaults = search.tried.find((run) => run.config === '');
    // Once advised, the row marked is the advice's (shown even when others are lower), not the lowest.
    const advised = search.advice?.config;
    const shown = sorted.slice(0, SHOWN);
    const advisedRun = sorted.find((run) => run.config === advised);
    if (advisedRun !== undefined && !shown.includes(advisedRun)) shown[SHOWN - 1] = advisedRun;
    const marked = (run: RowBrief, i: number) =>
      advised === undefined ? i === 0 : run.config === advised;
    const worst = Math.max(...shown.map((run) => run.peakReservedBytes), 1);
    const rows = shown.map((run, i) =>
      h(
        'tr',
        {
          class: marked(run, i) ? 'best' : run.failures > 0 ? 'failed' : '',
          'data-config': run.config,
        },
        h('th', { class: 'setting' }, settingName(run.config)),
        h(
          'td',
          { class: 'peak' },
          h('span', {
            class: 'mini-bar',
            style: `width:${((run.peakReservedBytes / worst) * 100).toFixed(1)}%`,
          }),
          formatBytes(run.peakReservedBytes),
        ),
        h(
          'td',
          {},
          defaults && defaults.peakReservedBytes > 0
            ? formatChange(
                (run.peakReservedBytes - defaults.peakReservedBytes) / defaults.peakReservedBytes,
              )
            : '',
        ),
        h('td', {}, run.failures > 0 ? `${formatCount(run.failures)} failed` : ''),
      ),
    );
    const status = search.advice
      ? `${formatCount(search.tried.length)} settings tried${advised === null ? '' : `, ${advised === '' ? "PyTorch's defaults" : 'the advice'} marked`}`
      : `searching: ${formatCount(search.tried.length)} settings tried…`;
    return h(
      'div',
      { class: 'search', 'data-testid': 'tuner-search' },
      h('h3', {}, search.trace, h('span', { class: 'muted small' }, ` ${status}`)),
      // A state dump's figures are estimates: said above the table, what they assume below it.
      ...(search.advice?.estimate
        ? [
            h(
              'p',
              { class: 'small estimated', 'data-testid': 'tuner-estimated' },
              'Every figure is an estimate: the dump’s live blocks placed into an empty pool (the advice says how).',
            ),
          ]
        : []),
      h(
        'table',
        { class: 'tried' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', {}, 'setting'),
            h('th', {}, 'peak reserved'),
            h('th', {}, 'vs defaults'),
            h('th', {}, ''),
          ),
        ),
        h('tbody', {}, ...rows),
      ),
      ...(search.advice ? [this.adviceView(search)] : []),
    );
  }

  /** The advice in the words `tune` and the report use (`adviceOf`), and its setting to copy or try. */
  private adviceView(search: Search): HTMLElement {
    const advice = search.advice!;
    const attributes = {
      class: `advice${advice.config === null ? ' refused' : ''}`,
      'data-testid': 'tuner-advice',
      'data-trace': search.trace,
      'data-reason': advice.reason,
      'data-config': advice.config ?? '',
      'data-advised': String(advice.config !== null),
      'data-saving-bytes': String(advice.savingBytes),
    };
    let first: HTMLElement;
    if (advice.config !== null && advice.config !== '') {
      const text = line(advice.config);
      const code = h('code', { 'data-testid': 'advice' }, text);
      const copyButton = h('button', { type: 'button' }, 'Copy');
      copyButton.addEventListener('click', () => void copy(text, copyButton, code));
      const tryButton = h('button', { type: 'button' }, 'Try it');
      tryButton.addEventListener('click', () => this.onTry(search.bestKnobs!));
      first = h('div', { class: 'advice-line' }, code, copyButton, tryButton);
    } else {
      first = h('p', { class: 'advice-headline' }, h('b', {}, advice.headline));
    }
    return h(
      'div',
      attributes,
      first,
      h('p', { class: 'advice-summary' }, advice.summary),
      h('p', { class: 'advice-because small' }, advice.because),
      ...(advice.deviceDependent
        ? [h('p', { class: 'warning' }, `Note: ${advice.deviceDependent}.`)]
        : []),
      h('p', { class: 'small muted' }, `Searched on ${search.device ?? advice.device}.`),
    );
  }
}
