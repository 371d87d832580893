/**
 * A state dump's section of the report (the report file and the web app alike): what the file is,
 * the diagnosis (reserved against allocated, fragmented and cached), the segments drawn to scale
 * (`segment-map.ts` draws them where this leaves a place), the segments with the most free bytes,
 * who holds the memory by source line and by call stack, and the estimate per setting, marked as
 * one, with its assumption and the advice.
 */
import { formatCount } from '../units';
import { h } from './dom';
import type { WorkloadData } from './report-data';
import { diagnosisSection, holdersSection, stacksSection, swatch, table } from './sections';
import { MAP_COLORS } from './segment-map';

/** A table of text cells, its first row the header. */
function textTable(cells: readonly (readonly string[])[], attributes: Record<string, string>) {
  const [header = [], ...rows] = cells;
  return table(
    attributes,
    header,
    rows.map((row) => h('tr', {}, ...row.map((cell, i) => h(i === 0 ? 'th' : 'td', {}, cell)))),
  );
}

/** The map's legend. */
function legend(): HTMLElement {
  const item = (color: string, text: string) => h('span', {}, swatch(color), text, ' ');
  return h(
    'p',
    { class: 'small muted segment-legend' },
    item(MAP_COLORS.allocated, 'allocated (requested)'),
    item(MAP_COLORS.rounding, 'rounding above the request'),
    item(MAP_COLORS.pending, 'freed, waiting for another stream'),
    item(MAP_COLORS.free, 'free'),
    item(MAP_COLORS.mixed, 'blocks too small to draw apart'),
  );
}

/** Workload `w`'s section, a state dump (see the module comment). */
export function dumpSection(workload: WorkloadData, w: number): HTMLElement {
  const dump = workload.dump!;
  const { explain } = workload;
  const segments = dump.layout.segments.length;
  const estimate = dump.estimate;
  return h(
    'section',
    {
      id: `workload-${w}`,
      class: 'state-dump',
      'data-state-dump': 'true',
      'data-reserved-bytes': String(dump.reservedBytes),
      'data-allocated-bytes': String(dump.allocatedBytes),
      'data-free-bytes': String(dump.freeBytes),
    },
    h('h2', {}, workload.title),
    h('p', { class: 'muted' }, `${workload.description}.`),
    h('ul', { class: 'dump-lines' }, ...dump.lines.map((line) => h('li', {}, line))),
    ...(explain ? [diagnosisSection(explain.diagnosis)] : []),
    h('h3', {}, 'The segments, to scale'),
    h(
      'p',
      { class: 'small muted' },
      `Each of the ${formatCount(segments)} segments a bar, the largest first, as memory_viz's segment view draws them. `,
      h('span', { class: 'segment-scale' }),
      ' Hover on a block, or tap it, for its segment, its size and what made it.',
    ),
    legend(),
    h('div', { class: 'segment-map' }),
    h('h3', {}, 'The segments with the most free bytes'),
    textTable(dump.segmentTable, { class: 'dump-segments' }),
    ...(explain ? holdersSection(explain.peak, 'At the dump') : []),
    ...(explain?.peak.stacks
      ? stacksSection(explain.peak.stacks, explain.timeline.frameTexts, 'At the dump')
      : []),
    ...(dump.noStacks !== null
      ? [h('h3', {}, 'Who holds the memory'), h('p', { class: 'small' }, dump.noStacks)]
      : []),
    ...(estimate !== null
      ? [
          h('h3', {}, 'What the same blocks would need under each setting: an estimate'),
          h('p', { class: 'small estimate-basis' }, estimate.assumes),
          textTable(estimate.table, { class: 'dump-estimate' }),
          ...(estimate.own !== null ? [h('p', { class: 'small' }, estimate.own)] : []),
        ]
      : []),
  );
}
