/**
 * The live page of `allot-lab serve --watch DIR`: a running job, drawn from its data
 * (live-data.ts) each time the server sends it, in place: rows and charts are kept and changed,
 * never made again, so the page stays where the reader is.
 *
 * ```
 *  LiveState ─► the status line: the folder, the ranks and dumps read, the connection
 *            ─► the advice so far, in the words of `allot-lab watch`
 *            ─► a row per rank, changed in place (the worst rank under the advice marked, and
 *               the ranks that died)
 *            ─► a chart per rank over its dumps (live-charts.ts), for up to 8 ranks: those that
 *               died, then the highest peaks
 *            ─► the gaps in the ranks' timelines, the files skipped
 *            ─► a post-mortem per rank that died (live-post-mortem.ts), drawn once, as it lands
 * ```
 *
 * What follows the server (the web app's live-view.ts) hands each state to `show`, once checked
 * (live-check.ts), or why it could not be read to `refuse`, and says how its connection stands
 * with `connection`. Rows, charts and post-mortems carry data attributes
 * (`data-rank`, `data-file`, `data-points`) that say what they show.
 */
import { formatBytes, formatCount } from '../units';
import { h } from './dom';
import { RankChart } from './live-charts';
import type { LiveRank, LiveState } from './live-data';
import { type PostMortemView, postMortemView } from './live-post-mortem';
import { Tooltip } from './tooltip';

/** Ranks drawn as charts at most; the table has every rank. */
const MAX_CHARTS = 8;

/** How the page's connection to the server stands. */
export type LiveConnection = 'connecting' | 'open' | 'lost';

/** The table's columns: a title, and what it means (the header's tooltip). */
const COLUMNS: readonly (readonly [string, string])[] = [
  ['rank', 'RANK, as the job numbered it'],
  ['step', "the step of the rank's latest dump"],
  ['reserved', "memory_stats()'s reserved_bytes.all.current at the latest dump"],
  ['allocated', 'allocated_bytes.all.current at the latest dump'],
  ['unallocated', 'reserved but unallocated: the cache'],
  [
    'inactive split',
    'inactive_split_bytes.all.current: free blocks in segments that also hold others, which empty_cache() cannot give back',
  ],
  ['recorded peak', "PyTorch's own peak reserved bytes over the rank's timeline"],
  ['replayed peak', 'the replay of the recorded settings over the timeline'],
  ['advised peak', "the timeline under the job's advice so far"],
  ['dumps', "dumps merged into the rank's timeline"],
  ['file', 'the latest dump'],
];

/** A rank's cells, in the order of {@link COLUMNS}. */
function cells(rank: LiveRank): string[] {
  const reserved = rank.stats.reserved_bytes.all;
  const allocated = rank.stats.allocated_bytes.all;
  const gaps = rank.gaps.length;
  const notes = [
    ...(gaps > 0 ? [`${formatCount(gaps)} gap${gaps === 1 ? '' : 's'}`] : []),
    ...(rank.diedAt !== null ? ['out of memory'] : []),
  ];
  return [
    String(rank.rank),
    rank.step === null ? '–' : String(rank.step),
    formatBytes(reserved),
    formatBytes(allocated),
    formatBytes(reserved - allocated),
    formatBytes(rank.stats.inactive_split_bytes.all),
    formatBytes(rank.recordedPeakReservedBytes),
    formatBytes(rank.peakReservedBytes),
    rank.advisedPeakReservedBytes === null ? '–' : formatBytes(rank.advisedPeakReservedBytes),
    formatCount(rank.dumps),
    `${rank.file}${notes.length > 0 ? ` (${notes.join(', ')})` : ''}`,
  ];
}

/** The ranks drawn as charts: every one, or those that died and then the highest peaks. */
function chartedRanks(ranks: readonly LiveRank[]): Set<number> {
  const order = [...ranks].sort(
    (a, b) =>
      Number(b.diedAt !== null) - Number(a.diedAt !== null) ||
      b.peakReservedBytes - a.peakReservedBytes ||
      a.rank - b.rank,
  );
  return new Set(order.slice(0, MAX_CHARTS).map((rank) => rank.rank));
}

/** Puts `element` among `parent`'s children ordered by `data-rank`, where `rank` belongs. */
function placeByRank(parent: HTMLElement, element: HTMLElement, rank: number): void {
  const next = [...parent.children].find(
    (child) => Number((child as HTMLElement).dataset.rank) > rank,
  );
  parent.insertBefore(element, next ?? null);
}

/** A rank's chart, with its caption. */
interface DrawnChart {
  readonly figure: HTMLElement;
  readonly caption: HTMLElement;
  readonly chart: RankChart;
}

/** The live page (see the module comment), drawn under `root`. */
export class LivePage {
  private readonly heading = h('h2', {}, 'A running job');
  private readonly status = h('p', {
    class: 'watch-status',
    'data-testid': 'watch-status',
    'data-state': 'connecting',
  });
  private readonly empty = h(
    'div',
    { class: 'empty', 'data-testid': 'watch-empty' },
    h('p', {}, 'No snapshot has landed in the folder yet: each rank appears here with its first.'),
    h(
      'p',
      { class: 'small' },
      'allot-lab record -- CMD writes every rank’s snapshots as the job runs; torchtitan’s memory_snapshot folders and the OOM dumps of verl, NeMo, Megatron and lmms-engine are read too.',
    ),
  );
  private readonly problem = h('p', {
    class: 'watch-problem',
    role: 'alert',
    'data-testid': 'watch-problem',
    hidden: '',
  });
  private readonly advice = h('p', { class: 'watch-advice', 'data-testid': 'watch-advice' });
  private readonly body = h('tbody', {});
  private readonly table = h(
    'div',
    { class: 'table-scroll' },
    h(
      'table',
      { class: 'watch-ranks', 'data-testid': 'watch-ranks' },
      h(
        'thead',
        {},
        h('tr', {}, ...COLUMNS.map(([title, meaning]) => h('th', { title: meaning }, title))),
      ),
      this.body,
    ),
  );
  private readonly chartNote = h('p', { class: 'small muted' });
  private readonly charts = h('div', { class: 'watch-charts', 'data-testid': 'watch-charts' });
  private readonly notes = h('div', { class: 'watch-notes', 'data-testid': 'watch-notes' });
  private readonly deaths = h('div', { class: 'watch-ooms' });
  private readonly tooltip: Tooltip;
  private readonly rows = new Map<number, HTMLTableRowElement>();
  private readonly drawn = new Map<number, DrawnChart>();
  private readonly postMortems = new Map<string, PostMortemView>();
  private state: LiveState | null = null;
  private connected: LiveConnection = 'connecting';
  private retrySeconds = 0;

  constructor(private readonly root: HTMLElement) {
    const tip = h('div', { class: 'watch-tooltip', role: 'tooltip' });
    this.tooltip = new Tooltip(tip);
    root.replaceChildren(
      this.heading,
      this.status,
      this.problem,
      this.empty,
      this.advice,
      this.table,
      this.chartNote,
      this.charts,
      this.notes,
      this.deaths,
      tip,
    );
    this.describe();
    // Charts and layouts are drawn to the page's width: a window made narrower or wider redraws them.
    let width = document.documentElement.clientWidth;
    let resizing: ReturnType<typeof setTimeout> | undefined;
    window.addEventListener('resize', () => {
      clearTimeout(resizing);
      resizing = setTimeout(() => {
        if (document.documentElement.clientWidth === width) return;
        width = document.documentElement.clientWidth;
        for (const { chart } of this.drawn.values()) chart.resize();
        for (const view of this.postMortems.values()) view.draw();
      }, 150);
    });
  }

  /** Says how the connection stands: `lost`, with the seconds before the next try. */
  connection(state: LiveConnection, retrySeconds = 0): void {
    this.connected = state;
    this.retrySeconds = retrySeconds;
    this.describe();
  }

  /**
   * Says that an update could not be read (live-check.ts says why); the page keeps what it showed
   * until the next state it can draw.
   */
  refuse(why: string): void {
    this.problem.textContent = `An update from allot-lab serve could not be read: ${why}. The page keeps what it showed.`;
    this.problem.hidden = false;
  }

  /** Draws `state` (checked by live-check.ts), in place. */
  show(state: LiveState): void {
    this.state = state;
    this.problem.hidden = true;
    this.heading.textContent = `The job in ${state.folder}`;
    this.empty.hidden = state.ranks.length > 0 || state.skipped.length > 0;
    this.advice.hidden = state.advice === null;
    this.advice.textContent = state.adviceText;
    this.table.hidden = state.ranks.length === 0;
    this.showRows(state);
    this.showCharts(state);
    this.showNotes(state);
    this.showPostMortems(state);
    const dumps = state.ranks.reduce((sum, rank) => sum + rank.dumps, 0);
    this.root.dataset.ranks = String(state.ranks.length);
    this.root.dataset.files = String(dumps + state.skipped.length);
    this.describe();
  }

  /** The status line: the connection, and what has been read. */
  private describe(): void {
    const state = this.state;
    const read =
      state === null
        ? ''
        : ` ${formatCount(state.ranks.length)} rank${state.ranks.length === 1 ? '' : 's'}, ` +
          `${formatCount(state.ranks.reduce((sum, rank) => sum + rank.dumps, 0))} dumps read` +
          (state.skipped.length > 0 ? `, ${formatCount(state.skipped.length)} skipped` : '') +
          '.';
    const words = {
      connecting: 'Connecting to allot-lab serve…',
      open: `Following the folder as snapshots land, updated at ${new Date().toLocaleTimeString()}.`,
      lost: `allot-lab serve does not answer: trying again in ${this.retrySeconds} s; the page keeps what it showed.`,
    }[this.connected];
    this.status.dataset.state = this.connected;
    this.status.textContent = `${words}${read}`;
  }

  private showRows(state: LiveState): void {
    const worst = state.advice?.worst.rank ?? null;
    const present = new Set<number>();
    for (const rank of state.ranks) {
      present.add(rank.rank);
      let row = this.rows.get(rank.rank);
      if (row === undefined) {
        row = h('tr', { 'data-rank': String(rank.rank) }, ...COLUMNS.map(() => h('td', {})));
        this.rows.set(rank.rank, row);
        placeByRank(this.body, row, rank.rank);
      }
      cells(rank).forEach((text, i) => {
        row.cells[i]!.textContent = text;
      });
      row.dataset.file = rank.file;
      row.dataset.dumps = String(rank.dumps);
      row.classList.toggle('worst', rank.rank === worst);
      row.classList.toggle('died', rank.diedAt !== null);
    }
    for (const [rank, row] of this.rows) {
      if (present.has(rank)) continue;
      row.remove();
      this.rows.delete(rank);
    }
  }

  private showCharts(state: LiveState): void {
    const charted = chartedRanks(state.ranks);
    const worst = state.advice?.worst.rank ?? null;
    for (const rank of state.ranks) {
      if (!charted.has(rank.rank)) continue;
      let drawn = this.drawn.get(rank.rank);
      if (drawn === undefined) {
        const caption = h('figcaption', {});
        const holder = h('div', { class: 'chart', 'data-rank': String(rank.rank) });
        const figure = h('figure', { class: 'watch-chart', 'data-rank': String(rank.rank) });
        figure.append(caption, holder);
        placeByRank(this.charts, figure, rank.rank);
        drawn = { figure, caption, chart: new RankChart(holder) };
        this.drawn.set(rank.rank, drawn);
      }
      const notes = [
        ...(rank.rank === worst ? ['the worst rank under the advice'] : []),
        ...(rank.diedAt !== null
          ? [`ran out of memory${rank.diedAt.step === null ? '' : ` in step ${rank.diedAt.step}`}`]
          : []),
      ];
      drawn.caption.replaceChildren(
        h('b', {}, `Rank ${rank.rank}`),
        notes.length > 0 ? `: ${notes.join('; ')}` : '',
        h(
          'span',
          { class: 'muted' },
          ` · ${formatCount(rank.dumps)} dumps, the latest ${rank.file}`,
        ),
      );
      drawn.chart.update(rank.trend);
    }
    for (const [rank, drawn] of this.drawn) {
      if (charted.has(rank) && state.ranks.some((r) => r.rank === rank)) continue;
      drawn.chart.destroy();
      drawn.figure.remove();
      this.drawn.delete(rank);
    }
    this.chartNote.textContent =
      state.ranks.length > MAX_CHARTS
        ? `Charts of ${MAX_CHARTS} of the ${formatCount(state.ranks.length)} ranks: those that died, then the highest replayed peaks; the table has every rank.`
        : '';
  }

  /** The gaps in the ranks' timelines and the files skipped, as `watch` names them. */
  private showNotes(state: LiveState): void {
    const gaps = state.ranks.flatMap((rank) =>
      rank.gaps.map((gap) => `rank ${rank.rank}: a gap in the timeline: ${gap}`),
    );
    const skipped = state.skipped.map(({ file, message }) =>
      message.startsWith(`${file}:`) ? message : `${file}: ${message}`,
    );
    const list = (title: string, items: readonly string[], id: string) =>
      items.length === 0
        ? []
        : [
            h('h3', {}, title),
            h('ul', { 'data-testid': id }, ...items.map((item) => h('li', {}, item))),
          ];
    this.notes.replaceChildren(
      ...list('Gaps', gaps, 'watch-gaps'),
      ...list('Files skipped', skipped, 'watch-skipped'),
    );
  }

  private showPostMortems(state: LiveState): void {
    const present = new Set<string>();
    for (const dead of state.ooms) {
      const key = `${dead.rank}:${dead.file}`;
      present.add(key);
      if (this.postMortems.has(key)) continue;
      const view = postMortemView(dead, this.tooltip);
      this.postMortems.set(key, view);
      placeByRank(this.deaths, view.element, dead.rank);
      view.draw();
    }
    for (const [key, view] of this.postMortems) {
      if (present.has(key)) continue;
      view.element.remove();
      this.postMortems.delete(key);
    }
  }
}
