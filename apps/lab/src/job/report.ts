/**
 * A job's page (`OUT/index.html`, with `OUT/results.json`): the setting for every rank, a chart of
 * each rank's peak reserved, and the table of ranks, each linking to its own page
 * (`ranks/rank-R/index.html`, written by the worker that read it). One self-contained file: an SVG
 * chart, no script.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatBytes, formatCount, formatPercent } from '../units';
import { adviceLines, formatJobReplay, formatJobTune, summaryLines } from './format';
import type { JobRank, JobResults } from './results';

function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!,
  );
}

/** The bars drawn per rank: tune, the defaults and the job's setting; replay, predicted and recorded. */
function seriesOf(
  job: JobResults,
): { label: string; color: string; bytes: (r: JobRank) => number | null }[] {
  if (job.job === 'tune') {
    return [
      { label: 'defaults', color: '#95a5a6', bytes: (r) => r.defaultsPeakReservedBytes ?? null },
      {
        label: job.allocConf ? `with ${job.allocConf}` : 'with the setting',
        color: '#1f77b4',
        bytes: (r) => r.peakReservedBytes ?? null,
      },
    ];
  }
  return [
    {
      label: 'predicted (recorded settings)',
      color: '#1f77b4',
      bytes: (r) => r.replayed?.peakReservedBytes ?? null,
    },
    { label: 'recorded by PyTorch', color: '#e67e22', bytes: (r) => r.recordedPeakReservedBytes },
  ];
}

const WIDTH = 1180;
const HEIGHT = 280;
const LEFT = 70;
const BOTTOM = 24;

/** Peak reserved per rank as grouped bars, peak live as a dark tick on each group. */
export function rankChart(job: JobResults): string {
  const series = seriesOf(job);
  const ranks = job.ranks;
  if (ranks.length === 0) return '<p class="muted">No rank was read.</p>';
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
  const parts: string[] = [];
  for (let t = 0; t <= 4; t++) {
    const bytes = (max * t) / 4;
    parts.push(
      `<line x1="${LEFT}" x2="${WIDTH - 10}" y1="${y(bytes).toFixed(1)}" y2="${y(bytes).toFixed(1)}" stroke="#e5e5e5"/>`,
      `<text x="${LEFT - 6}" y="${(y(bytes) + 4).toFixed(1)}" text-anchor="end" font-size="11">${escapeHtml(formatBytes(bytes))}</text>`,
    );
  }
  const labelEvery = Math.max(1, Math.ceil(ranks.length / 32));
  ranks.forEach((rank, i) => {
    const x0 = LEFT + i * group + group * 0.1;
    series.forEach((s, k) => {
      const bytes = s.bytes(rank);
      if (bytes === null) return;
      parts.push(
        `<rect x="${(x0 + k * bar).toFixed(2)}" y="${y(bytes).toFixed(1)}" width="${bar.toFixed(2)}" height="${(10 + plotH - y(bytes)).toFixed(1)}" fill="${s.color}"><title>${escapeHtml(`rank ${rank.rank}, ${s.label}: ${formatBytes(bytes)}`)}</title></rect>`,
      );
    });
    parts.push(
      `<line x1="${x0.toFixed(2)}" x2="${(x0 + bar * series.length).toFixed(2)}" y1="${y(rank.peakLiveBytes).toFixed(1)}" y2="${y(rank.peakLiveBytes).toFixed(1)}" stroke="#1b1b1b" stroke-width="2"><title>${escapeHtml(`rank ${rank.rank}, peak live: ${formatBytes(rank.peakLiveBytes)}`)}</title></line>`,
    );
    if (i % labelEvery === 0) {
      parts.push(
        `<text x="${(x0 + (bar * series.length) / 2).toFixed(1)}" y="${HEIGHT - 8}" text-anchor="middle" font-size="11">${rank.rank}</text>`,
      );
    }
  });
  const legend = [...series.map((s) => [s.label, s.color]), ['peak live', '#1b1b1b']]
    .map(
      ([label, color]) =>
        `<span class="swatch" style="background:${color}"></span>${escapeHtml(label!)}`,
    )
    .join(' ');
  return `<svg class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="100%" role="img" aria-label="peak reserved per rank">${parts.join('')}</svg>
<p class="small">${legend}</p>`;
}

function rankRows(job: JobResults): string {
  const tune = job.job === 'tune';
  const head = ['rank', 'file', 'events', 'peak live', 'predicted', 'recorded', 'error'];
  if (tune) head.push('defaults', 'with the setting', 'saving');
  head.push('');
  const cell = (text: string) => `<td>${escapeHtml(text)}</td>`;
  const rows = job.ranks.map((rank) => {
    const name = rank.report
      ? `<a href="${escapeHtml(rank.report)}">rank ${rank.rank}</a>`
      : `rank ${rank.rank}`;
    const error = rank.fidelity?.error;
    const cells = [
      `<td class="file">${escapeHtml(rank.file)}</td>`,
      cell(formatCount(rank.events)),
      cell(formatBytes(rank.peakLiveBytes)),
      cell(rank.replayed ? formatBytes(rank.replayed.peakReservedBytes) : '–'),
      cell(
        rank.recordedPeakReservedBytes === null ? '–' : formatBytes(rank.recordedPeakReservedBytes),
      ),
      cell(error == null ? '–' : `${error >= 0 ? '+' : '−'}${formatPercent(Math.abs(error))}`),
    ];
    if (tune) {
      const defaults = rank.defaultsPeakReservedBytes ?? 0;
      const peak = rank.peakReservedBytes ?? null;
      cells.push(
        cell(formatBytes(defaults)),
        cell(peak === null ? '–' : formatBytes(peak)),
        cell(peak === null || defaults === 0 ? '–' : formatPercent((defaults - peak) / defaults)),
      );
    }
    const flag = rank.flagged
      ? `<td class="flag" title="${escapeHtml(rank.flagged)}">! ${escapeHtml(rank.flagged)}</td>`
      : '<td></td>';
    return `<tr${rank.flagged ? ' class="failed"' : ''}><th>${name}</th>${cells.join('')}${flag}</tr>`;
  });
  const failed = job.failed.map(
    (f) =>
      `<tr class="failed"><th>rank ${f.rank}</th><td class="file" colspan="${head.length - 1}">${escapeHtml(f.message)}</td></tr>`,
  );
  return `<table><thead><tr>${head.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr></thead><tbody>${[...rows, ...failed].join('')}</tbody></table>`;
}

const STYLE = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1240px; padding: 16px 24px; color: #1b1b1b; }
h1 { font-size: 22px; margin: 8px 0 4px; } h2 { font-size: 18px; margin: 28px 0 4px; border-top: 1px solid #ddd; padding-top: 14px; }
.muted { color: #555; } .small { font-size: 12px; }
table { border-collapse: collapse; margin: 8px 0; font-variant-numeric: tabular-nums; }
th, td { padding: 3px 10px; border-bottom: 1px solid #e5e5e5; text-align: right; white-space: nowrap; }
th { text-align: left; font-weight: 500; } thead th { font-weight: 600; border-bottom: 2px solid #bbb; }
td.file, td.flag { text-align: left; } tr.failed th, tr.failed td { background: #fdecea; }
pre.advice { font-size: 14px; background: #eef7ee; border-color: #9ccc9c; }
pre { background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 14px; overflow-x: auto; font-size: 12px; }
iframe.worst { width: 100%; height: 900px; border: 1px solid #d0d7de; border-radius: 6px; }
.swatch { display: inline-block; width: 12px; height: 12px; vertical-align: -2px; margin: 0 4px 0 12px; }
`;

/** The worst rank's own page, shown in place: its timeline, the pool at its peak, the diagnosis. */
function worstRankFrame(job: JobResults): string {
  const worst = job.worst;
  const page = worst ? job.ranks.find((rank) => rank.rank === worst.rank)?.report : undefined;
  if (!worst || page === undefined) return '';
  return `<h2>The worst rank: rank ${worst.rank}</h2>
<p class="small muted">Its own page, below and <a href="${escapeHtml(page)}">on its own</a>.</p>
<iframe class="worst" src="${escapeHtml(page)}" title="rank ${worst.rank}'s own page"></iframe>`;
}

/** The job's page. */
export function renderJobReport(job: JobResults): string {
  const text = job.job === 'tune' ? formatJobTune(job) : formatJobReplay(job);
  const [title] = text.split('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>allot-lab: ${escapeHtml(title ?? 'a job')}</title>
<style>${STYLE}</style></head>
<body>
<h1>allot-lab ${job.job}: a job of ${formatCount(job.jobRanks.length)} ranks</h1>
<p class="muted small">${escapeHtml(job.command)} · ${escapeHtml(job.createdAt)} · Node ${escapeHtml(job.node)}</p>
${job.job === 'tune' ? `<h2>The setting for every rank</h2>\n<pre class="advice">${escapeHtml(adviceLines(job).join('\n'))}</pre>` : ''}
<pre>${escapeHtml(summaryLines(job).join('\n'))}</pre>
<h2>Peak reserved per rank</h2>
${rankChart(job)}
${worstRankFrame(job)}
<h2>Ranks</h2>
<p class="small muted">Each rank links to its own page (the pool under its recorded settings: timeline, the pool at the peak, the diagnosis).</p>
${rankRows(job)}
<h2>What the lab printed</h2>
<pre>${escapeHtml(text)}</pre>
</body></html>
`;
}

/** Writes `OUT/index.html` and `OUT/results.json` for `job`; returns the page's path. */
export function writeJobReport(job: JobResults, folder: string): string {
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, 'results.json'), `${JSON.stringify(job)}\n`);
  const path = join(folder, 'index.html');
  writeFileSync(path, renderJobReport(job));
  return path;
}
