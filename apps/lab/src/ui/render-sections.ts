/**
 * `renderSections(root, data)`: the report's sections under `root`, from the page data, for the
 * report file (`standalone.ts`) and the web app alike. It may be called again on new data (the web
 * app does, on each replay): it first removes the charts and the listeners of the last drawing.
 *
 * ```
 *  data ─► sections.ts: the text and tables, with places for ─► charts.ts: memory, fragmentation
 *                                                              timeline.ts: the active memory
 *                                                              layouts.ts: the pool at the peak
 *       ─► dump-view.ts: a state dump's section ───────────────► segment-map.ts: its segments to scale
 * ```
 *
 * Charts are drawn to the page's width, again when the window's width changes, and again on the
 * events axis when the toggle says so. `window.labReport` gives the tests each memory chart's byte
 * ticks and each timeline (`range()`, `drawn`, `locate(id)`).
 */
import type uPlot from 'uplot';
import { formatPercent } from '../units';
import type { Axis } from './axes';
import { type ChartRecord, fragmentationChart, memoryChart, rowName } from './charts';
import { h } from './dom';
import { dumpSection } from './dump-view';
import { drawLayouts } from './layouts';
import type { ReportData, WorkloadData } from './report-data';
import {
  axisToggle,
  headerSection,
  introduction,
  targetsSection,
  workloadSection,
} from './sections';
import { drawSegmentMap, type SegmentMapHandle } from './segment-map';
import { keepSettingNamesWhole } from './setting-names';
import { drawTimeline, type Listen, type TimelineHandle } from './timeline';
import { Tooltip } from './tooltip';

/** Options of {@link renderSections}. */
export interface RenderOptions {
  /** The title and the command line; a page that states them itself leaves them out. @defaultValue true */
  readonly header?: boolean;
}

/** What the tests read of the page's drawings. */
export interface LabReportHandles {
  charts: { memory: ChartRecord }[];
  timelines: TimelineHandle[];
  /** A state dump's segment map, by workload index. */
  segmentMaps: SegmentMapHandle[];
}

declare global {
  interface Window {
    labReport?: LabReportHandles;
  }
}

/** The last drawing's undoing, per root. */
const drawings = new WeakMap<Element, () => void>();

function drawLayoutsOf(section: Element, workload: WorkloadData, tooltip: Tooltip): void {
  drawLayouts(
    section.querySelector<HTMLElement>('.layouts')!,
    section.querySelector<HTMLElement>('.layout-scale'),
    workload.rows.map((row) => ({
      name: rowName(row),
      label: row.allocator,
      view: row.layoutAtPeak,
      segments: row.segments,
      extra: `; external fragmentation ${formatPercent(row.externalFragmentationAtPeak, 0)}`,
    })),
    'Every allocator to one scale: ',
    tooltip,
  );
  const oom = section.querySelector<HTMLElement>('.oom-layouts');
  if (oom) {
    drawLayouts(
      oom,
      section.querySelector<HTMLElement>('.oom-scale'),
      workload.oomLayouts.map((item) => ({ ...item, label: item.name, extra: '' })),
      'both to one scale: ',
      tooltip,
    );
  }
}

/**
 * Removes what {@link renderSections} drew under `root` (its sections, charts and listeners), for
 * a page that shows something else there again; `root` is left empty.
 */
export function clearSections(root: HTMLElement): void {
  drawings.get(root)?.();
  root.replaceChildren();
}

/** Draws the sections of `data` under `root` (see the module comment). */
export function renderSections(
  root: HTMLElement,
  data: ReportData,
  { header = true }: RenderOptions = {},
): void {
  drawings.get(root)?.();
  const cleanups: (() => void)[] = [];
  const listen: Listen = (target, type, listener) => {
    target.addEventListener(type, listener as EventListener);
    cleanups.push(() => target.removeEventListener(type, listener as EventListener));
  };
  const timed = data.workloads.some((workload) => workload.explain?.gridSeconds !== undefined);
  const recordings = data.workloads.filter((workload) => workload.dump === null);
  const tip = h('div', { id: 'lab-tooltip', role: 'tooltip' });
  const tooltip = new Tooltip(tip);
  // Keep the page where it is while the sections are replaced.
  root.style.minHeight = `${root.offsetHeight}px`;
  root.replaceChildren(
    ...(header ? headerSection(data.run) : []),
    ...(timed ? [axisToggle()] : []),
    // What the table's figures mean: for the recordings (a state dump's section says its own).
    ...(recordings.length > 0 || data.workloads.length === 0
      ? introduction(data.tuned, recordings)
      : []),
    ...data.workloads.map((workload, w) =>
      workload.dump !== null ? dumpSection(workload, w) : workloadSection(workload, w),
    ),
    ...targetsSection(data.targets),
    tip,
  );
  // A state dump has no charts: its segments are drawn instead.
  const drawn = data.workloads.flatMap((workload, w) =>
    workload.rows.length > 0 && workload.dump === null
      ? [{ workload, w, section: root.querySelector(`#workload-${w}`)! }]
      : [],
  );
  const dumps = data.workloads.flatMap((workload, w) =>
    workload.dump !== null
      ? [{ layout: workload.dump.layout, w, section: root.querySelector(`#workload-${w}`)! }]
      : [],
  );
  let segmentMaps: SegmentMapHandle[] = [];
  let axis: Axis = 'time';
  let plots: uPlot[] = [];

  /** The charts and the timelines, on the current axis. */
  function drawCharts(): void {
    for (const plot of plots) plot.destroy();
    plots = [];
    tooltip.pin(false);
    tooltip.hide();
    const handles: LabReportHandles = { charts: [], timelines: [], segmentMaps };
    for (const { workload, w, section } of drawn) {
      const memory: ChartRecord = { byteTicks: [] };
      plots.push(
        memoryChart(section.querySelector('.chart-memory')!, workload, axis, memory),
        fragmentationChart(section.querySelector('.chart-fragmentation')!, workload, axis),
      );
      handles.charts[w] = { memory };
      const holder = section.querySelector<HTMLElement>('.timeline');
      if (holder && workload.explain)
        handles.timelines[w] = drawTimeline(holder, workload, axis, tooltip, listen);
    }
    window.labReport = handles;
  }

  function drawEverything(): void {
    for (const { workload, section } of drawn) drawLayoutsOf(section, workload, tooltip);
    segmentMaps = [];
    for (const { layout, w, section } of dumps) {
      segmentMaps[w] = drawSegmentMap(
        section.querySelector<HTMLElement>('.segment-map')!,
        section.querySelector<HTMLElement>('.segment-scale'),
        layout,
        tooltip,
      );
    }
    drawCharts();
  }

  drawEverything();
  keepSettingNamesWhole(root);
  root.style.minHeight = '';
  // Charts are drawn to the page's width: a window made narrower or wider draws them again.
  let drawnWidth = document.documentElement.clientWidth;
  let resizing: ReturnType<typeof setTimeout> | undefined;
  listen(window, 'resize', () => {
    clearTimeout(resizing);
    resizing = setTimeout(() => {
      if (document.documentElement.clientWidth === drawnWidth) return;
      drawnWidth = document.documentElement.clientWidth;
      drawEverything();
    }, 150);
  });
  for (const input of root.querySelectorAll<HTMLInputElement>('input[name="x-axis"]')) {
    input.addEventListener('change', () => {
      if (!input.checked) return;
      axis = input.value as Axis;
      drawCharts();
    });
  }
  drawings.set(root, () => {
    clearTimeout(resizing);
    for (const cleanup of cleanups) cleanup();
    for (const plot of plots) plot.destroy();
    drawings.delete(root);
  });
  document.body.dataset.rendered = 'true';
}
