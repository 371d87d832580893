/**
 * `renderJob(root, data)`: a job's page (`OUT/index.html` of `replay DIR` and `tune DIR`) under
 * `root`, from its data (job-data.ts): the setting for every rank, the summary, a chart of each
 * rank's peak, the worst rank's own page in place, the table of ranks, each linking to its own
 * page (`ranks/rank-R/index.html`), and what the lab printed.
 *
 * The chart is SVG built with the DOM, to the page's width by its view box: per rank a group of
 * bars (tune: the defaults and the job's setting; replay: predicted and recorded peak reserved),
 * and peak live as a dark tick across the group.
 */
import { formatBytes, formatCount, formatPercent, formatSignedPercent } from '../units';
import { h, svg } from './dom';
import type { JobPageData, JobPageRank } from './job-data';
import { type RankCell, rankRows } from './rank-table';
import { swatch } from './sections';

/** A series of bars: its legend and colour, and each rank's bytes (null: no bar). */
interface BarSeries {
  readonly label: string;
  readonly color: string;
  readonly bytes: (rank: JobPageRank) => number | null;
}

function seriesOf(data: JobPageData): BarSeries[] {
  if (data.job === 'tune') {
    return [
      { label: 'defaults', color: '#95a5a6', bytes: (r) => r.defaultsBytes },
      {
        label: data.allocConf ? `with ${data.allocConf}` : 'with the setting',
        color: '#1f77b4',
        bytes: (r) => r.tunedBytes,
      },
    ];
  }
  return [
    { label: 'predicted (recorded settings)', color: '#1f77b4', bytes: (r) => r.predictedBytes },
    { label: 'recorded by PyTorch', color: '#e67e22', bytes: (r) => r.recordedBytes },
  ];
}

/** The chart's view box and its margins, in SVG units. */
const WIDTH = 1180;
const HEIGHT = 280;
const LEFT = 70;
const BOTTOM = 24;
/** Rank labels at most under the bars; every n-th rank is labelled beyond that. */
const MAX_LABELS = 32;
const PEAK_LIVE = '#1b1b1b';

/** Peak reserved per rank as grouped bars, peak live as a tick on each group, and the legend. */
function rankChart(data: JobPageData): HTMLElement[] {
  const { ranks } = data;
  if (ranks.length === 0) return [h('p', { class: 'muted' }, 'No rank was read.')];
  const series = seriesOf(data);
  let max = 1;
  for (const rank of ranks) {
    max = Math.max(max, rank.peakLiveBytes);
    for (const s of series) max = Math.max(max, s.bytes(rank) ?? 0);
  }
  const plotW = WIDTH - LEFT - 10;
  const plotH = HEIGHT - BOTTOM - 10;
  const group = plotW / ranks.length;
  const bar = Math.max(0.5, (group * 0.8) / series.length);
  const y = (bytes: number) => 10 + plotH - (bytes / max) * plotH;
  const chart = svg('svg', {
    class: 'chart',
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    width: '100%',
    role: 'img',
    'aria-label': 'peak reserved per rank',
  });
  for (let t = 0; t <= 4; t++) {
    const at = y((max * t) / 4);
    chart.append(
      svg('line', { x1: LEFT, x2: WIDTH - 10, y1: at, y2: at, stroke: '#e5e5e5' }),
      svg(
        'text',
        { x: LEFT - 6, y: at + 4, 'text-anchor': 'end', 'font-size': 11 },
        formatBytes((max * t) / 4),
      ),
    );
  }
  const labelEvery = Math.max(1, Math.ceil(ranks.length / MAX_LABELS));
  ranks.forEach((rank, i) => {
    const x0 = LEFT + i * group + group * 0.1;
    series.forEach((s, k) => {
      const bytes = s.bytes(rank);
      if (bytes === null) return;
      const top = y(bytes);
      chart.append(
        svg(
          'rect',
          { x: x0 + k * bar, y: top, width: bar, height: 10 + plotH - top, fill: s.color },
          svg('title', {}, `rank ${rank.rank}, ${s.label}: ${formatBytes(bytes)}`),
        ),
      );
    });
    const live = y(rank.peakLiveBytes);
    chart.append(
      svg(
        'line',
        { x1: x0, x2: x0 + bar * series.length, y1: live, y2: live, stroke: PEAK_LIVE },
        svg('title', {}, `rank ${rank.rank}, peak live: ${formatBytes(rank.peakLiveBytes)}`),
      ),
    );
    if (i % labelEvery === 0) {
      const x = x0 + (bar * series.length) / 2;
      const label = { x, y: HEIGHT - 8, 'text-anchor': 'middle', 'font-size': 11 };
      chart.append(svg('text', label, String(rank.rank)));
    }
  });
  const legend = [...series, { label: 'peak live', color: PEAK_LIVE }].flatMap(
    ({ label, color }) => [swatch(color), label],
  );
  return [h('div', { class: 'rank-chart' }, chart), h('p', { class: 'small' }, ...legend)];
}

/** The table of ranks: their figures, the ranks flagged, then those that failed. */
function ranksTable(data: JobPageData): HTMLElement {
  const tune = data.job === 'tune';
  const head = ['rank', 'file', 'events', 'peak live', 'predicted', 'recorded', 'error'];
  if (tune) head.push('defaults', 'with the setting', 'saving');
  head.push('');
  const bytes = (value: number | null) => (value === null ? '–' : formatBytes(value));
  const { header, rows } = rankRows(head, [
    ...data.ranks.map((rank) => {
      const cells: RankCell[] = [
        formatCount(rank.events),
        formatBytes(rank.peakLiveBytes),
        bytes(rank.predictedBytes),
        bytes(rank.recordedBytes),
        rank.error === null ? '–' : formatSignedPercent(rank.error),
      ];
      if (tune) {
        // As tune DIR says: no saving against defaults that fail allocations.
        const { defaultsBytes: defaults, defaultsFailures: failed, tunedBytes: tuned } = rank;
        cells.push(
          failed ? `${bytes(defaults)}, ${formatCount(failed)} failed` : bytes(defaults),
          bytes(tuned),
          tuned === null || !defaults || failed
            ? '–'
            : formatPercent((defaults - tuned) / defaults),
        );
      }
      const flag = rank.flagged;
      cells.push(
        flag === null ? '' : { text: `! ${flag}`, attributes: { class: 'flag', title: flag } },
      );
      return {
        name: `rank ${rank.rank}`,
        href: rank.page,
        file: rank.file,
        cells,
        ...(flag === null ? {} : { attributes: { class: 'failed' } }),
      };
    }),
    ...data.failed.map(({ rank, message }) => ({
      name: `rank ${rank}`,
      file: null,
      cells: { note: message, class: 'file' },
      attributes: { class: 'failed' },
    })),
  ]);
  return h(
    'div',
    { class: 'table-scroll' },
    h('table', { class: 'job-ranks' }, h('thead', {}, header), h('tbody', {}, ...rows)),
  );
}

/** The worst rank's own page, shown in place: its timeline, the pool at its peak, the diagnosis. */
function worstRank(data: JobPageData): HTMLElement[] {
  const page = data.ranks.find((rank) => rank.rank === data.worst)?.page;
  if (page == null) return [];
  return [
    h('h2', {}, `The worst rank: rank ${data.worst}`),
    h(
      'p',
      { class: 'small muted' },
      'Its own page, below and ',
      h('a', { href: page }, 'on its own'),
      '.',
    ),
    h('iframe', { class: 'worst', src: page, title: `rank ${data.worst}'s own page` }),
  ];
}

/** Draws a job's page (see the module comment) under `root`, in place of what it held. */
export function renderJob(root: HTMLElement, data: JobPageData): void {
  const title = `allot-lab ${data.job}: a job of ${formatCount(data.jobRanks)} ranks`;
  document.title = title;
  root.classList.add('job-page');
  root.replaceChildren(
    h('h1', {}, title),
    h('p', { class: 'muted small' }, `${data.command} · ${data.createdAt} · Node ${data.node}`),
    ...(data.advice === null
      ? []
      : [
          h('h2', {}, 'The setting for every rank'),
          h('pre', { class: 'advice' }, data.advice.join('\n')),
        ]),
    h('pre', {}, data.summary.join('\n')),
    h('h2', {}, 'Peak reserved per rank'),
    ...rankChart(data),
    ...worstRank(data),
    h('h2', {}, 'Ranks'),
    h(
      'p',
      { class: 'small muted' },
      'Each rank links to its own page (the pool under its recorded settings: timeline, the pool at the peak, the diagnosis).',
    ),
    ranksTable(data),
    h('h2', {}, 'What the lab printed'),
    h('pre', {}, data.printed),
  );
  document.body.dataset.rendered = 'true';
}
