/**
 * The report's text as elements: the heading, the axis toggle, per workload the diagnosis, the
 * recorded out-of-memory errors, the table, the tables at the peak, and the places where
 * `render-sections.ts` draws the charts, the timeline and the layouts; then the targets.
 */
import type { Diagnosis } from '../analysis/explain';
import { formatBytes, formatCount, formatPercent, formatSeconds } from '../units';
import { h, lines } from './dom';
import type { ExplainData, ReportData, WorkloadData } from './report-data';
import { stackTreeView } from './stack-tree-view';

/** Wide content (tables) scrolls inside the page instead of widening it. */
function scrolling(table: HTMLTableElement): HTMLDivElement {
  return h('div', { class: 'table-scroll' }, table);
}

function table(
  attributes: Record<string, string>,
  header: readonly string[],
  rows: readonly HTMLTableRowElement[],
): HTMLDivElement {
  return scrolling(
    h(
      'table',
      attributes,
      h('thead', {}, h('tr', {}, ...header.map((title) => h('th', {}, title)))),
      h('tbody', {}, ...rows),
    ),
  );
}

/** The heading: the title and the command line of the run. */
export function headerSection(run: ReportData['run']): HTMLElement[] {
  const capacity =
    run.capacityBytes !== null ? ` · capacity ${formatBytes(run.capacityBytes)}` : '';
  return [
    h('h1', {}, 'allot lab report'),
    h(
      'p',
      { class: 'muted small' },
      h('code', {}, run.command),
      ` · ${run.createdAt} · Node ${run.node} on ${run.platform}${capacity}`,
    ),
  ];
}

/** The x axis's toggle: seconds or events, for every chart. */
export function axisToggle(): HTMLElement {
  const radio = (value: string, label: string) =>
    h(
      'label',
      {},
      h('input', {
        type: 'radio',
        name: 'x-axis',
        value,
        ...(value === 'time' ? { checked: '' } : {}),
      }),
      ` ${label}`,
    );
  return h(
    'div',
    { class: 'axis-toggle' },
    'x axis: ',
    radio('time', 'time (seconds)'),
    radio('event', 'events'),
    ' ',
    h('span', { class: 'muted small' }, '(traces without times use events)'),
  );
}

/**
 * What the figures mean, for the rows the page shows (a page of caching pools only, as the web
 * app's, says nothing of ranges), and what the caching-tuned row is.
 */
export function introduction(
  tuned: ReportData['tuned'],
  workloads: readonly WorkloadData[] = [],
): HTMLElement[] {
  const rows = workloads.flatMap((workload) => workload.rows);
  const ranges = [
    ...new Set(rows.filter((row) => row.kind === 'range').map((row) => row.allocator)),
  ];
  const pools = rows.length === 0 || rows.some((row) => row.kind === 'pool');
  const reserved = [
    ...(ranges.length > 0
      ? [
          `the high-water mark for the ranges (${ranges.join(', ')}: the capacity a range must offer)`,
        ]
      : []),
    ...(pools
      ? ["the bytes held from the memory source for the caching pools, PyTorch's reserved bytes"]
      : []),
  ];
  return [
    h(
      'p',
      { class: 'small' },
      `Peak reserved is ${reserved.join(' and ')}. Ratio = peak reserved / peak live. External fragmentation = 1 − largest free block / total free bytes, at the event of peak live bytes.` +
        (pools
          ? " Segments (caching pools): the segments allocated in the recording's window, PyTorch's cudaMalloc calls (+n grown: an expandable segment mapped further), as PyTorch's own row counts them; the segments of a recording's starting state, which the caching rows restore before the first event, are not counted there; the layouts at the peak show them too."
          : ''),
    ),
    ...(tuned
      ? [
          h(
            'p',
            { class: 'small' },
            `${tuned.row}: the setting `,
            h('code', {}, 'allot-lab tune'),
            ` recommends for the trace, named in brackets, the one the action names; the tuner searches ${tuned.searched}, and garbage_collection_threshold under a per-process memory fraction.`,
          ),
        ]
      : []),
  ];
}

/** The diagnosis: the action first, then the split of reserved (a bar), the peak, the advice. */
function diagnosisSection(d: Diagnosis): HTMLElement {
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
    parts.length === 0
      ? []
      : [
          h(
            'div',
            { class: 'split-bar', 'aria-label': 'reserved memory at the peak' },
            ...parts.map(([bytes, name]) =>
              h('span', {
                class: name,
                style: `width:${((bytes / d.reservedBytes) * 100).toFixed(2)}%`,
                title: label(bytes, name),
              }),
            ),
          ),
          h(
            'div',
            { class: 'split-legend' },
            ...parts.map(([bytes, name]) =>
              h('span', {}, h('i', { class: name }), label(bytes, name)),
            ),
          ),
        ];
  return h(
    'div',
    { class: 'diagnosis' },
    h('p', { class: 'action' }, h('b', {}, 'Action:'), ` ${d.action}`),
    ...bar,
    h(
      'ul',
      {},
      h('li', {}, d.split),
      h('li', {}, d.peak),
      ...(d.advice !== undefined ? [h('li', { class: 'advice' }, d.advice)] : []),
    ),
  );
}

/** The recording's out-of-memory errors, as the terminal says them, and a place for their layouts. */
function oomSection(workload: WorkloadData): HTMLElement[] {
  if (workload.ooms.length === 0) return [];
  const drawn =
    workload.oomLayouts.length === 0
      ? []
      : [
          h(
            'p',
            { class: 'small muted' },
            "The model's segments at the failing request, and at the same moment under the setting with the most headroom (the wall as the recording shows it; ",
            h('span', { class: 'oom-scale' }),
            '). Hover on a block for its segment and size.',
          ),
          h('div', { class: 'oom-layouts' }),
        ];
  return [
    h(
      'div',
      { class: 'oom' },
      h('h3', {}, 'Out of memory, as recorded'),
      h('ul', {}, ...workload.ooms.map((oom) => h('li', {}, ...lines(oom)))),
      ...drawn,
    ),
  ];
}

/** The table, the lowest ratio without failures highlighted (a PyTorch trace: of its caching rows). */
function tableSection(workload: WorkloadData): HTMLElement[] {
  const usable = (r: number) => !workload.pytorch || workload.rows[r]!.kind === 'pool';
  const best = Math.min(
    ...workload.rows.flatMap((row, r) => (row.failures === 0 && usable(r) ? [row.ratio] : [])),
  );
  const rows = workload.table.rows.map((cells, r) => {
    const row = workload.rows[r];
    const kind =
      row && row.failures > 0 ? 'failed' : row?.ratio === best && usable(r) ? 'best' : null;
    const same = row?.sameAs
      ? [
          ' ',
          h(
            'span',
            {
              class: 'same',
              title: `identical results: its lines lie under ${row.sameAs}'s, drawn dashed`,
            },
            `= ${row.sameAs}`,
          ),
        ]
      : [];
    return h(
      'tr',
      kind ? { class: kind } : {},
      ...cells.map((cell, i) => (i === 0 ? h('th', {}, cell, ...same) : h('td', {}, cell))),
    );
  });
  const highlighted = workload.pytorch
    ? 'the lowest ratio without failed allocations among only the caching rows, the allocators PyTorch can use (the range allocators above them are for comparison)'
    : 'the lowest ratio without failed allocations';
  return [
    table({}, workload.table.header, rows),
    h(
      'p',
      { class: 'small muted table-note' },
      `Highlighted: ${highlighted}; red: rows with failed allocations.` +
        (workload.table.untimed !== undefined ? ` ns/event –: ${workload.table.untimed}.` : ''),
    ),
  ];
}

/** What the table of holders sums by, and what its rows without a line of your code say. */
const HOLDERS_CAPTION =
  "Each live block's stack reduced to its innermost frame in your own Python code (not PyTorch, installed packages, the standard library or the interpreter), the bytes summed per line. A block whose stack holds no frame of your code says what made it instead: a library's frame, C++ on the autograd engine's thread during backward, or C++ alone.";

function seconds(value: number | undefined): string {
  return value === undefined ? '' : formatSeconds(value);
}

/** The timeline's place, and the tables of the allocations and source lines live at the peak. */
function peakSections(explain: ExplainData): HTMLElement[] {
  const { peak } = explain;
  const timed = peak.seconds !== undefined;
  const largest = peak.largest.map((a, i) => {
    const lifetime =
      a.allocSeconds !== undefined && a.freeSeconds !== undefined
        ? seconds(a.freeSeconds - a.allocSeconds)
        : a.freeEvent < 0
          ? 'to the end'
          : `${formatCount(a.freeEvent - a.allocEvent)} events`;
    const freed =
      a.freeEvent < 0
        ? 'still live'
        : timed
          ? seconds(a.freeSeconds)
          : `event ${formatCount(a.freeEvent)}`;
    const cells = [
      String(i + 1),
      formatBytes(a.size),
      timed ? seconds(a.allocSeconds) : `event ${formatCount(a.allocEvent)}`,
      freed,
      lifetime,
      String(a.stream),
    ];
    return h(
      'tr',
      {},
      ...cells.map((cell) => h('td', {}, cell)),
      h('td', { class: 'frame' }, a.frame ?? '–'),
    );
  });
  const holders = peak.bySource.map((holder) =>
    h(
      'tr',
      {},
      h('td', {}, formatBytes(holder.bytes)),
      h('td', {}, formatPercent(peak.liveBytes > 0 ? holder.bytes / peak.liveBytes : 0)),
      h('td', {}, formatCount(holder.blocks)),
      h('td', { class: 'frame' }, holder.frame),
    ),
  );
  const at =
    peak.seconds !== undefined ? seconds(peak.seconds) : `event ${formatCount(peak.event)}`;
  return [
    h('h3', {}, 'Active memory timeline'),
    h(
      'p',
      { class: 'small muted' },
      `Live allocations stacked in allocation order, as in PyTorch's memory_viz: ${formatCount(explain.timeline.allocations.length)} of ${formatCount(explain.timeline.total)} allocations drawn one by one (the largest, and those that held the most bytes for the longest), the others summed in the grey band at the bottom. Hover on an allocation for its size, times, stream and stack frames; click to pin them (click again or Escape to let go). Drag on the chart or on the strip under it to zoom, drag the strip's window or scroll to pan, double-click for the whole run.`,
    ),
    h('div', { class: 'timeline' }),
    h('h3', {}, 'At the peak: the largest live allocations'),
    h(
      'p',
      { class: 'small muted' },
      `Live bytes peaked at ${formatBytes(peak.liveBytes)} at ${at}. Times are seconds since the first event.`,
    ),
    ...(largest.length > 0
      ? [
          table(
            { class: 'peak-table' },
            ['#', 'size', 'allocated', 'freed', 'lifetime', 'stream', 'made by'],
            largest,
          ),
        ]
      : []),
    ...(holders.length > 0
      ? [
          h('h3', {}, 'At the peak: who holds the memory, by source line'),
          h('p', { class: 'small muted' }, HOLDERS_CAPTION),
          table({ class: 'peak-table' }, ['live bytes', 'share', 'blocks', 'source line'], holders),
        ]
      : []),
    ...(peak.stacks ? stacksSection(peak.stacks, explain.timeline.frameTexts) : []),
  ];
}

/** The live blocks at the peak as a call tree, beside the flat list. */
function stacksSection(
  stacks: NonNullable<ExplainData['peak']['stacks']>,
  frameTexts: readonly string[],
): HTMLElement[] {
  return [
    h('h3', {}, 'At the peak: who holds the memory, by call stack'),
    h(
      'p',
      { class: 'small muted' },
      `Every live block's stack, merged from the outermost frame in: each frame with the live bytes whose stacks pass through it, their share and their blocks. Click a frame or use the arrow keys to open and close it; search for a function or a file. Call paths under ${formatBytes(stacks.minBytes)} are summed.`,
    ),
    stackTreeView(stacks, frameTexts, { label: 'live memory at the peak by call stack' }),
  ];
}

/** A legend's square of `color`. */
export function swatch(color: string): HTMLElement {
  return h('span', { class: 'legend-swatch', style: `background:${color}` });
}

/** Workload `w`'s section (see the module comment). */
export function workloadSection(workload: WorkloadData, w: number): HTMLElement {
  const { explain } = workload;
  return h(
    'section',
    { id: `workload-${w}` },
    h('h2', {}, workload.title),
    h(
      'p',
      { class: 'muted' },
      `${workload.description}. ${formatCount(workload.events)} events, peak ${formatCount(workload.peakLiveBlocks)} live blocks, ${formatBytes(workload.peakLiveBytes)} peak live.`,
    ),
    ...(explain ? [diagnosisSection(explain.diagnosis)] : []),
    ...oomSection(workload),
    ...(workload.budget !== null ? [h('p', { class: 'small' }, `Budget: ${workload.budget}`)] : []),
    ...tableSection(workload),
    h('h3', {}, 'Memory over time'),
    h('div', { class: 'chart chart-memory' }),
    h('h3', {}, 'Fragmentation over time'),
    h('div', { class: 'chart chart-fragmentation' }),
    ...(explain ? peakSections(explain) : []),
    h('h3', {}, 'Layout at peak live bytes'),
    h(
      'p',
      { class: 'small muted' },
      "Each allocator's segments laid end to end, left to right and row after row; a dark bar marks the start of a segment. ",
      h('span', { class: 'layout-scale' }),
      ' Hover on a block for its segment and size. ',
      swatch('#1f4e79'),
      'live ',
      swatch('#e4e7eb'),
      'free ',
      swatch('#8fb0d0'),
      'live and free blocks too small to draw apart. Ranges are shown up to their high-water mark at that moment.',
    ),
    h('div', { class: 'layouts' }),
  );
}

/** The targets the project holds itself to, when the run checked any. */
export function targetsSection(targets: ReportData['targets']): HTMLElement[] {
  if (targets.length === 0) return [];
  return [
    h('h2', {}, 'Targets'),
    scrolling(
      h(
        'table',
        { class: 'targets' },
        h(
          'tbody',
          {},
          ...targets.map((t) =>
            h(
              'tr',
              {},
              h('th', {}, t.name),
              h('td', {}, t.display),
              h('td', {}, t.goal),
              h('td', { class: t.met ? 'met' : 'missed' }, t.met ? 'met' : 'missed'),
            ),
          ),
        ),
      ),
    ),
  ];
}
