/**
 * The HTML report: one self-contained file with no network access. uPlot's IIFE build and its CSS
 * are read from the installed `uplot` package when the report is written and inlined, the figures
 * travel in a JSON block, and `client-script.ts` draws the charts when the page opens.
 *
 * ```
 *  <style> uPlot.min.css + ours </style>
 *  tables (static HTML, readable without JavaScript)
 *  <script type="application/json" id="lab-data"> results, series downsampled </script>
 *  <script> uPlot.iife.min.js </script> <script> client script </script>
 * ```
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { LabResults, WorkloadResult } from '../run';
import { TABLE_HEADER, tableRows } from '../tables';
import { formatBytes, formatCount } from '../units';
import { budgetLines } from '../workloads';
import { CLIENT_SCRIPT } from './client-script';

let assets: { script: string; style: string } | null = null;

/** uPlot's script and style, from the installed package. */
export function uplotAssets(): { script: string; style: string } {
  if (!assets) {
    const require = createRequire(import.meta.url);
    assets = {
      script: readFileSync(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8'),
      style: readFileSync(require.resolve('uplot/dist/uPlot.min.css'), 'utf8'),
    };
  }
  return assets;
}

function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;');
}

/** JSON safe inside a `<script>` element. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value).replaceAll('<', '\\u003c').replaceAll('\u2028', '\\u2028');
}

function round(values: readonly number[], digits: number): number[] {
  const scale = 10 ** digits;
  return values.map((v) => Math.round(v * scale) / scale);
}

/** What the page's script needs: series and layouts, numbers rounded to keep the file small. */
function pageData(results: LabResults): unknown {
  return {
    workloads: results.workloads.map((workload) => ({
      id: workload.id,
      rows: workload.rows.map((row) => ({
        allocator: row.allocator,
        failures: row.failures,
        externalFragmentationAtPeak: row.externalFragmentationAtPeak,
        series: {
          event: row.series.event,
          liveBytes: round(row.series.liveBytes, 0),
          reservedBytes: round(row.series.reservedBytes, 0),
          externalFragmentation: round(row.series.externalFragmentation, 4),
        },
        layoutAtPeak: row.layoutAtPeak,
      })),
    })),
  };
}

function table(workload: WorkloadResult): string {
  const head = TABLE_HEADER;
  const rows = tableRows(workload);
  const best = Math.min(...workload.rows.filter((r) => r.failures === 0).map((r) => r.ratio));
  const body = rows
    .map((cells, r) => {
      const row = workload.rows[r];
      const cls =
        row && row.failures > 0 ? ' class="failed"' : row?.ratio === best ? ' class="best"' : '';
      return `<tr${cls}>${cells.map((c, i) => (i === 0 ? `<th>${escapeHtml(c)}</th>` : `<td>${escapeHtml(c)}</td>`)).join('')}</tr>`;
    })
    .join('\n');
  return `<table><thead><tr>${head.map((h) => `<th>${h}</th>`).join('')}</tr></thead><tbody>${body}</tbody></table>`;
}

const STYLE = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1240px; padding: 16px 24px; color: #1b1b1b; }
h1 { font-size: 22px; margin: 8px 0 4px; } h2 { font-size: 18px; margin: 32px 0 4px; border-top: 1px solid #ddd; padding-top: 16px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
.muted { color: #555; } .small { font-size: 12px; }
table { border-collapse: collapse; margin: 8px 0; font-variant-numeric: tabular-nums; }
th, td { padding: 3px 10px; border-bottom: 1px solid #e5e5e5; text-align: right; white-space: nowrap; }
th:first-child, tbody th { text-align: left; font-weight: 500; }
thead th { font-weight: 600; border-bottom: 2px solid #bbb; }
tr.best th, tr.best td { background: #eef7ee; } tr.failed th, tr.failed td { background: #fdecea; }
.chart { margin: 10px 0 18px; }
.layouts { display: flex; flex-direction: column; gap: 10px; }
figure.layout { margin: 0; } figure.layout figcaption { font-size: 12px; color: #333; margin-bottom: 2px; }
canvas { display: block; border: 1px solid #ccc; }
.legend-swatch { display: inline-block; width: 12px; height: 12px; vertical-align: -2px; margin: 0 4px 0 12px; border: 1px solid #999; }
.targets td.met { color: #1a7f37; } .targets td.missed { color: #b42318; font-weight: 600; }
code { background: #f3f3f3; padding: 1px 4px; border-radius: 3px; }
`;

/** The report page. */
export function renderReport(results: LabResults): string {
  const { script, style } = uplotAssets();
  const sections = results.workloads
    .map((workload, w) => {
      const budget = workload.budget
        ? `<p class="small">Budget: ${escapeHtml(budgetLines(workload.budget, workload.peakLiveBytes))}</p>`
        : '';
      return `<section id="workload-${w}">
<h2>${escapeHtml(workload.title)}</h2>
<p class="muted">${escapeHtml(workload.description)}. ${formatCount(workload.events)} events, peak ${formatCount(workload.peakLiveBlocks)} live blocks, ${escapeHtml(formatBytes(workload.peakLiveBytes))} peak live.</p>
${budget}
${table(workload)}
<h3>Memory over time</h3>
<div class="chart chart-memory"></div>
<h3>Fragmentation over time</h3>
<div class="chart chart-fragmentation"></div>
<h3>Layout at peak live bytes</h3>
<p class="small muted">Each allocator's segments laid end to end, left to right and row after row; a dark bar marks the start of a segment.
<span class="legend-swatch" style="background:#1f4e79"></span>live
<span class="legend-swatch" style="background:#e4e7eb"></span>free
<span class="legend-swatch" style="background:#8fb0d0"></span>live and free blocks too small to draw apart.
Ranges are shown up to their high-water mark at that moment.</p>
<div class="layouts"></div>
</section>`;
    })
    .join('\n');
  const targets =
    results.targets.length === 0
      ? ''
      : `<h2>Targets</h2><table class="targets"><tbody>${results.targets
          .map(
            (t) =>
              `<tr><th>${escapeHtml(t.name)}</th><td>${escapeHtml(t.display)}</td><td>${escapeHtml(t.goal)}</td><td class="${t.met ? 'met' : 'missed'}">${t.met ? 'met' : 'missed'}</td></tr>`,
          )
          .join('')}</tbody></table>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>allot lab report</title>
<style>${style}</style>
<style>${STYLE}</style>
</head>
<body>
<h1>allot lab report</h1>
<p class="muted small"><code>${escapeHtml(results.command)}</code> · ${escapeHtml(results.createdAt)} · Node ${escapeHtml(results.node)} on ${escapeHtml(results.platform)}${results.capacity !== null ? ` · capacity ${escapeHtml(formatBytes(results.capacity))}` : ''}</p>
<p class="small">Peak reserved is the high-water mark for ranges (first, best and good fit, buddy, slab + best fit: the capacity a range must offer) and the bytes held from the memory source for the caching pools. Ratio = peak reserved / peak live. External fragmentation = 1 − largest free block / total free bytes, at the event of peak live bytes. Highlighted: the lowest ratio without failures; red: rows with failed allocations.</p>
${sections}
${targets}
<script type="application/json" id="lab-data">${scriptJson(pageData(results))}</script>
<script>${script}</script>
<script>${CLIENT_SCRIPT}</script>
</body>
</html>
`;
}
