/**
 * The HTML report's page, without Node.js: one self-contained file with no network access. The
 * figures travel in a JSON block, and `client-script.ts` draws the charts when the page opens
 * (`html.ts` gives it uPlot's files read from the installed package; the web app its own).
 *
 * ```
 *  <style> uPlot's CSS + ours </style>
 *  per workload: the diagnosis (explain.ts), the table, the table of allocations live at the peak
 *  (static HTML, readable without JavaScript), and places for the charts
 *  <script type="application/json" id="lab-data"> results, series downsampled </script>
 *  <script> uPlot's script </script> <script> client script </script>
 * ```
 */

import { type Explanation, isPyTorchTrace } from '../analysis/explain';
import type { OomFigures } from '../analysis/post-mortem';
import { searchedKnobs, TUNED_ROW } from '../analysis/registry';
import type { LabResults, WorkloadResult } from '../run';
import { formatBytes, formatCount, formatPercent } from '../units';
import { budgetLines } from '../workloads';
import { CLIENT_SCRIPT } from './client-script';
import { oomLines, TABLE_HEADER, tableRows } from './tables';

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

/**
 * For each row, the earlier row whose results are the same (peak reserved, failures, fragmentation
 * and the whole reserved series), or null: the report marks such rows instead of drawing one line
 * hidden under another.
 */
export function identicalRows(workload: WorkloadResult): (string | null)[] {
  const seen = new Map<string, string>();
  return workload.rows.map((row) => {
    const key = JSON.stringify([
      row.peakReservedBytes,
      row.failures,
      row.externalFragmentationAtPeak,
      row.series.reservedBytes,
      row.series.externalFragmentation,
    ]);
    const first = seen.get(key);
    if (first !== undefined) return first;
    seen.set(key, row.allocator);
    return null;
  });
}

function explainData(explain: Explanation | undefined): unknown {
  if (!explain) return undefined;
  const { timeline } = explain;
  const texts = textTable();
  return {
    peakEvent: explain.peak.event,
    gridEvents: explain.gridEvents,
    ...(explain.gridSeconds ? { gridSeconds: round(explain.gridSeconds, 6) } : {}),
    liveBytes: round(explain.liveBytes, 0),
    ...(explain.recordedReserved ? { recordedReserved: round(explain.recordedReserved, 0) } : {}),
    ...(explain.rowSeconds
      ? { rowSeconds: explain.rowSeconds.map((values) => round(values, 6)) }
      : {}),
    timeline: {
      total: timeline.total,
      rest: round(timeline.rest, 0),
      // Each frame's text once: the allocations' stacks share most of their frames.
      frameTexts: texts.list,
      allocations: timeline.allocations.map((a) => ({
        ...a,
        ...(a.allocSeconds !== undefined ? { allocSeconds: round([a.allocSeconds], 6)[0] } : {}),
        ...(a.freeSeconds !== undefined ? { freeSeconds: round([a.freeSeconds], 6)[0] } : {}),
        ...(a.frames !== undefined ? { frames: a.frames.map(texts.index) } : {}),
      })),
    },
  };
}

/** Strings numbered as first seen: `index(text)`, and `list` in that order. */
function textTable(): { readonly list: string[]; readonly index: (text: string) => number } {
  const list: string[] = [];
  const indices = new Map<string, number>();
  return {
    list,
    index: (text) => {
      let k = indices.get(text);
      if (k === undefined) {
        k = list.length;
        list.push(text);
        indices.set(text, k);
      }
      return k;
    },
  };
}

/** What the page's script needs: series and layouts, numbers rounded to keep the file small. */
export function pageData(results: LabResults): unknown {
  return {
    workloads: results.workloads.map((workload) => workloadData(workload, identicalRows(workload))),
  };
}

function workloadData(workload: WorkloadResult, same: readonly (string | null)[]): unknown {
  return {
    id: workload.id,
    explain: explainData(workload.explain),
    rows: workload.rows.map((row, r) => ({
      sameAs: same[r],
      allocator: row.allocator,
      ...(row.note ? { note: row.note } : {}),
      ...(row.segments
        ? {
            segments: {
              acquired: row.segments.acquired,
              grown: row.segments.grown,
              restored: row.segments.restored ?? 0,
            },
          }
        : {}),
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
    ...(workload.torch?.oom?.layoutAtFailure ? { oom: oomData(workload.torch.oom) } : {}),
  };
}

/** The two layouts the report draws for a recorded out-of-memory error. */
function oomData(oom: OomFigures): unknown {
  const failing = oom.reproduced ?? oom.failedEarlier;
  const advice = oom.adviceLayout;
  return {
    layouts: [
      {
        name: `at the failing request (entry ${failing ? formatCount(failing.event) : '?'}), recorded settings`,
        view: oom.layoutAtFailure,
      },
      ...(advice
        ? [
            {
              name: `the same moment under ${advice.allocConf === '' ? "PyTorch's defaults" : advice.allocConf}, the request served`,
              view: advice.layout,
            },
          ]
        : []),
    ],
  };
}

/** Wide content (tables) scrolls inside the page instead of widening it. */
function scrolling(html: string): string {
  return `<div class="table-scroll">${html}</div>`;
}

function table(workload: WorkloadResult): string {
  const head = TABLE_HEADER;
  const rows = tableRows(workload);
  const same = identicalRows(workload);
  const pytorch = isPyTorchTrace(workload.meta);
  const usable = (row: WorkloadResult['rows'][number]) => !pytorch || row.kind === 'pool';
  const best = Math.min(
    ...workload.rows.filter((r) => r.failures === 0 && usable(r)).map((r) => r.ratio),
  );
  const body = rows
    .map((cells, r) => {
      const row = workload.rows[r];
      const cls =
        row && row.failures > 0
          ? ' class="failed"'
          : row?.ratio === best && usable(row)
            ? ' class="best"'
            : '';
      const mark =
        same[r] != null
          ? ` <span class="same" title="identical results: its lines lie under ${escapeHtml(same[r]!)}'s, drawn dashed">= ${escapeHtml(same[r]!)}</span>`
          : '';
      return `<tr${cls}>${cells.map((c, i) => (i === 0 ? `<th>${escapeHtml(c)}${mark}</th>` : `<td>${escapeHtml(c)}</td>`)).join('')}</tr>`;
    })
    .join('\n');
  const highlighted = pytorch
    ? 'the lowest ratio without failed allocations among only the caching rows, the allocators PyTorch can use (the range allocators above them are for comparison)'
    : 'the lowest ratio without failed allocations';
  return `${scrolling(`<table><thead><tr>${head.map((h) => `<th>${h}</th>`).join('')}</tr></thead><tbody>${body}</tbody></table>`)}
<p class="small muted table-note">Highlighted: ${highlighted}; red: rows with failed allocations.</p>`;
}

function seconds(value: number | undefined): string {
  return value === undefined ? '' : `${value.toFixed(value < 10 ? 3 : 2)} s`;
}

/** The recording's out-of-memory errors, as the terminal says them (see `oomLines`). */
function oomHtml(workload: WorkloadResult): string {
  const ooms = workload.torch?.recordedOoms ?? [];
  if (ooms.length === 0) return '';
  const items = ooms
    .map(
      (oom) =>
        `<li>${oomLines(oom)
          .map((line) => escapeHtml(line.trim()))
          .join('<br>')}</li>`,
    )
    .join('\n');
  const drawn = workload.torch?.oom?.layoutAtFailure
    ? `<p class="small muted">The model's segments at the failing request, and at the same moment under the setting with the most headroom (the wall as the recording shows it; <span class="oom-scale"></span>). Hover on a block for its segment and size.</p><div class="oom-layouts"></div>`
    : '';
  return `<div class="oom"><h3>Out of memory, as recorded</h3><ul>${items}</ul>${drawn}</div>`;
}

/** The diagnosis: the action first, then the split of reserved (a bar), the peak, the advice. */
function diagnosisHtml(explain: Explanation): string {
  const d = explain.diagnosis;
  // The bar has no text of its own (a narrow part would cut it): its legend says each part in full.
  const parts = (
    [
      [d.liveBytes, 'live'],
      [d.fragmentedBytes, 'fragmented'],
      [d.cachedBytes, 'cached'],
    ] as const
  ).filter(([bytes]) => d.reservedBytes > 0 && bytes > 0);
  const label = (bytes: number, name: string) =>
    `${name} ${formatBytes(bytes)} (${formatPercent(bytes / d.reservedBytes, 0)})`;
  const bar =
    parts.length > 0
      ? `<div class="split-bar" aria-label="reserved memory at the peak">${parts
          .map(
            ([bytes, name]) =>
              `<span class="${name}" style="width:${((bytes / d.reservedBytes) * 100).toFixed(2)}%" title="${escapeHtml(label(bytes, name))}"></span>`,
          )
          .join('')}</div>
<div class="split-legend">${parts
          .map(
            ([bytes, name]) =>
              `<span><i class="${name}"></i>${escapeHtml(label(bytes, name))}</span>`,
          )
          .join('')}</div>`
      : '';
  return `<div class="diagnosis">
<p class="action"><b>Action:</b> ${escapeHtml(d.action)}</p>
${bar}
<ul>
<li>${escapeHtml(d.split)}</li>
<li>${escapeHtml(d.peak)}</li>
${d.advice !== undefined ? `<li class="advice">${escapeHtml(d.advice)}</li>` : ''}
</ul>
</div>`;
}

/** Who holds the memory at the peak, by source line (snapshots recorded with stacks). */
function holdersTable(explain: Explanation): string {
  const { peak } = explain;
  if (peak.bySource.length === 0) return '';
  const rows = peak.bySource
    .map(
      (holder) =>
        `<tr><td>${escapeHtml(formatBytes(holder.bytes))}</td><td>${escapeHtml(formatPercent(peak.liveBytes > 0 ? holder.bytes / peak.liveBytes : 0))}</td><td>${formatCount(holder.blocks)}</td><td class="frame">${escapeHtml(holder.frame)}</td></tr>`,
    )
    .join('\n');
  return `<h3>At the peak: who holds the memory, by source line</h3>
<p class="small muted">Each live block's stack reduced to its innermost frame in your own code (not PyTorch, installed packages or C++), the bytes summed per line.</p>
${scrolling(`<table class="peak-table"><thead><tr><th>live bytes</th><th>share</th><th>blocks</th><th>source line</th></tr></thead><tbody>${rows}</tbody></table>`)}`;
}

/** The largest allocations live at the peak. */
function peakTable(explain: Explanation): string {
  const { peak } = explain;
  if (peak.largest.length === 0) return '';
  const timed = peak.seconds !== undefined;
  const rows = peak.largest
    .map((a, i) => {
      const lifetime =
        a.allocSeconds !== undefined && a.freeSeconds !== undefined
          ? seconds(a.freeSeconds - a.allocSeconds)
          : a.freeEvent < 0
            ? 'to the end'
            : `${formatCount(a.freeEvent - a.allocEvent)} events`;
      const allocated = timed ? seconds(a.allocSeconds) : `event ${formatCount(a.allocEvent)}`;
      const freed =
        a.freeEvent < 0
          ? 'still live'
          : timed
            ? seconds(a.freeSeconds)
            : `event ${formatCount(a.freeEvent)}`;
      const frame = a.frames?.[0] ?? '–';
      return `<tr><td>${i + 1}</td><td>${escapeHtml(formatBytes(a.size))}</td><td>${escapeHtml(allocated)}</td><td>${escapeHtml(freed)}</td><td>${escapeHtml(lifetime)}</td><td>${a.stream}</td><td class="frame">${escapeHtml(frame)}</td></tr>`;
    })
    .join('\n');
  return scrolling(
    `<table class="peak-table"><thead><tr><th>#</th><th>size</th><th>allocated</th><th>freed</th><th>lifetime</th><th>stream</th><th>innermost frame</th></tr></thead><tbody>${rows}</tbody></table>`,
  );
}

export const REPORT_STYLE = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1240px; padding: 16px 24px; color: #1b1b1b; overflow-wrap: anywhere; }
@media (max-width: 600px) { body { padding: 10px 12px; } }
.table-scroll { overflow-x: auto; max-width: 100%; }
h1 { font-size: 22px; margin: 8px 0 4px; } h2 { font-size: 18px; margin: 32px 0 4px; border-top: 1px solid #ddd; padding-top: 16px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
.muted { color: #555; } .small { font-size: 12px; }
table { border-collapse: collapse; margin: 8px 0; font-variant-numeric: tabular-nums; }
th, td { padding: 3px 10px; border-bottom: 1px solid #e5e5e5; text-align: right; white-space: nowrap; }
th:first-child, tbody th { text-align: left; font-weight: 500; }
tbody th { white-space: normal; min-width: 9em; max-width: 22em; }
thead th { font-weight: 600; border-bottom: 2px solid #bbb; }
tr.best th, tr.best td { background: #eef7ee; } tr.failed th, tr.failed td { background: #fdecea; }
.chart { margin: 10px 0 18px; }
.chart .uplot { width: auto; max-width: 100%; } .u-inline tr { max-width: 100%; } .u-legend th > .u-label { white-space: normal; text-align: left; }
.layouts { display: flex; flex-direction: column; gap: 10px; }
figure.layout { margin: 0; } figure.layout figcaption { font-size: 12px; color: #333; margin-bottom: 2px; }
canvas { display: block; border: 1px solid #ccc; }
.legend-swatch { display: inline-block; width: 12px; height: 12px; vertical-align: -2px; margin: 0 4px 0 12px; border: 1px solid #999; }
.targets td.met { color: #1a7f37; } .targets td.missed { color: #b42318; font-weight: 600; }
code { background: #f3f3f3; padding: 1px 4px; border-radius: 3px; }
.oom { background: #fff5f5; border: 1px solid #f1aeb5; border-radius: 6px; padding: 2px 14px; margin: 10px 0; }
.diagnosis { background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 14px; margin: 10px 0; }
.diagnosis ul { margin: 6px 0; padding-left: 20px; } .diagnosis li { margin: 3px 0; }
.diagnosis .action { font-size: 15px; margin: 4px 0 8px; } .diagnosis .advice { font-weight: 500; }
.split-bar { display: flex; height: 18px; border: 1px solid #999; }
.split-legend { display: flex; flex-wrap: wrap; gap: 2px 16px; font-size: 12px; margin: 4px 0 2px; }
.split-legend i { display: inline-block; width: 12px; height: 12px; vertical-align: -2px; margin-right: 5px; border: 1px solid #999; }
.live { background: #1f4e79; } .fragmented { background: #c0392b; } .cached { background: #95a5a6; }
span.same { font-size: 11px; color: #8a4b00; background: #fff3d6; border: 1px solid #e8c77a; border-radius: 3px; padding: 0 4px; margin-left: 6px; }
table.peak-table td { text-align: right; } table.peak-table td.frame { text-align: left; font-family: ui-monospace, monospace; font-size: 12px; }
.axis-toggle { margin: 8px 0; font-size: 13px; } .axis-toggle label { margin-right: 12px; }
#lab-tooltip { position: absolute; display: none; z-index: 10; max-width: 640px; background: #fff; border: 1px solid #888; border-radius: 4px; box-shadow: 0 2px 8px rgba(0,0,0,.2); padding: 6px 9px; font-size: 12px; pointer-events: none; }
#lab-tooltip .frames { font-family: ui-monospace, monospace; font-size: 11px; color: #333; }
.timeline canvas { border: 1px solid #ccc; cursor: crosshair; } .timeline canvas.timeline-overview { margin-top: 4px; cursor: ew-resize; }
#lab-tooltip.pinned { pointer-events: auto; border-color: #1f4e79; box-shadow: 0 2px 10px rgba(31,78,121,.35); }
`;

/** The title and the command line of the run. */
function headerHtml(results: LabResults): string {
  return `<h1>allot lab report</h1>
<p class="muted small"><code>${escapeHtml(results.command)}</code> · ${escapeHtml(results.createdAt)} · Node ${escapeHtml(results.node)} on ${escapeHtml(results.platform)}${results.capacity !== null ? ` · capacity ${escapeHtml(formatBytes(results.capacity))}` : ''}</p>`;
}

/** What the caching-tuned row is, when a workload has one. */
function tunedNote(results: LabResults): string {
  const tuned = results.workloads.some((w) => w.rows.some((row) => row.allocator === TUNED_ROW));
  return tuned
    ? `<p class="small">${TUNED_ROW}: the setting <code>allot-lab tune</code> recommends for the trace, named in brackets, the one the action names; the tuner searches ${escapeHtml(searchedKnobs(false))}, and garbage_collection_threshold under a per-process memory fraction.</p>`
    : '';
}

/**
 * The report page, with uPlot's script and style as given (`html.ts` reads them from the installed
 * package; a page that has uPlot already passes empty strings). `header: false` leaves out the title
 * and the command line, for a page that states them itself.
 */
export function renderReportWith(
  results: LabResults,
  assets: { readonly script: string; readonly style: string },
  options: { readonly header?: boolean } = {},
): string {
  return reportParts(results, assets, options).join('');
}

/**
 * {@link renderReportWith}'s page in parts, in order: a writer writes them one after the other
 * without joining a page of megabytes into one string (and that string into one buffer).
 */
export function reportParts(
  results: LabResults,
  { script, style }: { readonly script: string; readonly style: string },
  { header = true }: { readonly header?: boolean } = {},
): string[] {
  const sections = results.workloads
    .map((workload, w) => {
      const budget = workload.budget
        ? `<p class="small">Budget: ${escapeHtml(budgetLines(workload.budget, workload.peakLiveBytes))}</p>`
        : '';
      const explain = workload.explain;
      const timeline = explain
        ? `<h3>Active memory timeline</h3>
<p class="small muted">Live allocations stacked in allocation order, as in PyTorch's memory_viz: ${formatCount(explain.timeline.allocations.length)} of ${formatCount(explain.timeline.total)} allocations drawn one by one (the largest, and those that held the most bytes for the longest), the others summed in the grey band at the bottom. Hover on an allocation for its size, times, stream and stack frames; click to pin them (click again or Escape to let go). Drag on the chart or on the strip under it to zoom, drag the strip's window or scroll to pan, double-click for the whole run.</p>
<div class="timeline"></div>
<h3>At the peak: the largest live allocations</h3>
<p class="small muted">Live bytes peaked at ${escapeHtml(formatBytes(explain.peak.liveBytes))} at ${explain.peak.seconds !== undefined ? escapeHtml(seconds(explain.peak.seconds)) : `event ${formatCount(explain.peak.event)}`}. Times are seconds since the first event.</p>
${peakTable(explain)}
${holdersTable(explain)}`
        : '';
      return `<section id="workload-${w}">
<h2>${escapeHtml(workload.title)}</h2>
<p class="muted">${escapeHtml(workload.description)}. ${formatCount(workload.events)} events, peak ${formatCount(workload.peakLiveBlocks)} live blocks, ${escapeHtml(formatBytes(workload.peakLiveBytes))} peak live.</p>
${explain ? diagnosisHtml(explain) : ''}
${oomHtml(workload)}
${budget}
${table(workload)}
<h3>Memory over time</h3>
<div class="chart chart-memory"></div>
<h3>Fragmentation over time</h3>
<div class="chart chart-fragmentation"></div>
${timeline}
<h3>Layout at peak live bytes</h3>
<p class="small muted">Each allocator's segments laid end to end, left to right and row after row; a dark bar marks the start of a segment. <span class="layout-scale"></span> Hover on a block for its segment and size.
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
      : `<h2>Targets</h2><div class="table-scroll"><table class="targets"><tbody>${results.targets
          .map(
            (t) =>
              `<tr><th>${escapeHtml(t.name)}</th><td>${escapeHtml(t.display)}</td><td>${escapeHtml(t.goal)}</td><td class="${t.met ? 'met' : 'missed'}">${t.met ? 'met' : 'missed'}</td></tr>`,
          )
          .join('')}</tbody></table></div>`;
  const timed = results.workloads.some((workload) => workload.explain?.gridSeconds !== undefined);
  const axisToggle = timed
    ? '<div class="axis-toggle">x axis: <label><input type="radio" name="x-axis" value="time" checked> time (seconds)</label><label><input type="radio" name="x-axis" value="event"> events</label> <span class="muted small">(traces without times use events)</span></div>'
    : '';
  const head = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>allot lab report</title>
<style>${style}</style>
<style>${REPORT_STYLE}</style>
</head>
<body>
${header ? headerHtml(results) : ''}
${axisToggle}
<p class="small">Peak reserved is the high-water mark for ranges (first, best and good fit, buddy, slab + best fit: the capacity a range must offer) and the bytes held from the memory source for the caching pools. Ratio = peak reserved / peak live. External fragmentation = 1 − largest free block / total free bytes, at the event of peak live bytes. Segments (caching pools): the segments allocated in the recording's window, PyTorch's cudaMalloc calls (+n grown: an expandable segment mapped further), as PyTorch's own row counts them; the segments of a recording's starting state, which the caching rows restore before the first event, are not counted there; the layouts at the peak show them too.</p>
${tunedNote(results)}
`;
  return [
    head,
    sections,
    `\n${targets}\n<div id="lab-tooltip" role="tooltip"></div>\n<script type="application/json" id="lab-data">`,
    scriptJson(pageData(results)),
    `</script>\n<script>${script}</script>\n<script>${CLIENT_SCRIPT}</script>\n</body>\n</html>\n`,
  ];
}
