/**
 * `@allot/lab/report`: the report's page data from a run's results, without Node.js, for the
 * report file (`report-file.ts`) and the web app's engine worker, which posts it to the page.
 * `renderSections` (`ui/`) draws it.
 *
 * ```
 *  LabResults ─► per workload: the table's cells (tables.ts, as the terminal prints them), the
 *  out-of-memory lines, the rows' figures, series and layouts, the explanation (each frame's text
 *  once, numbers rounded) ─► ReportData
 * ```
 */
import type { Explanation } from '../analysis/explain';
import { isPyTorchTrace } from '../analysis/explain';
import type { OomFigures } from '../analysis/post-mortem';
import { searchedKnobs, TUNED_ROW } from '../analysis/registry';
import { textTable } from '../analysis/text-table';
import { canonicalOf } from '../replay-rows';
import type { LabResults, WorkloadResult } from '../run';
import type { DumpData, ExplainData, ReportData, WorkloadData } from '../ui/report-data';
import { formatCount, settingName } from '../units';
import { budgetLines } from '../workloads';
import {
  dumpSummary,
  estimateTable,
  NO_LIVE_BLOCK,
  NO_STACKS,
  ownEstimateLine,
  segmentTable,
} from './dump-text';
import { stackTreeData } from './stack-data';
import { oomLines, TABLE_HEADER, tableRows } from './tables';

export type * from '../ui/report-data';
export { stackTreeData, stackTreePageData } from './stack-data';

function roundTo(value: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

function round(values: readonly number[], digits: number): number[] {
  return values.map((value) => roundTo(value, digits));
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

/** Why a row's ns/event has no figure, when one's has none though the run timed its rows. */
function untimedOf(workload: WorkloadResult): { untimed?: string } {
  const untimed = workload.rows.find((row) => row.untimed !== undefined)?.untimed;
  return untimed === undefined ? {} : { untimed };
}

function explainData(explain: Explanation): ExplainData {
  const { timeline, peak } = explain;
  const texts = textTable();
  return {
    peakEvent: peak.event,
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
      frameTexts: texts.list,
      allocations: timeline.allocations.map(({ frames, allocSeconds, freeSeconds, ...a }) => ({
        ...a,
        ...(allocSeconds !== undefined ? { allocSeconds: roundTo(allocSeconds, 6) } : {}),
        ...(freeSeconds !== undefined ? { freeSeconds: roundTo(freeSeconds, 6) } : {}),
        ...(frames !== undefined ? { frames: frames.map(texts.index) } : {}),
      })),
    },
    peak: {
      event: peak.event,
      ...(peak.seconds !== undefined ? { seconds: peak.seconds } : {}),
      liveBytes: peak.liveBytes,
      largest: peak.largest.map(({ frames: _frames, source, ...a }) => ({
        ...a,
        ...(source !== undefined ? { frame: source } : {}),
      })),
      bySource: peak.bySource,
      ...(peak.stacks ? { stacks: stackTreeData(peak.stacks, texts.index) } : {}),
    },
    diagnosis: explain.diagnosis,
  };
}

/** The two layouts the report draws for a recorded out-of-memory error. */
function oomLayouts(oom: OomFigures | undefined): WorkloadData['oomLayouts'] {
  if (oom?.layoutAtFailure === undefined) return [];
  const failing = oom.reproduced ?? oom.failedEarlier;
  const advice = oom.adviceLayout;
  return [
    {
      name: `at the failing request (entry ${failing ? formatCount(failing.event) : '?'}), recorded settings`,
      view: oom.layoutAtFailure,
    },
    ...(advice
      ? [
          {
            name: `the same moment under ${settingName(advice.allocConf)}, the request served`,
            view: advice.layout,
          },
        ]
      : []),
  ];
}

function workloadData(workload: WorkloadResult): WorkloadData {
  const same = identicalRows(workload);
  const conf = workload.meta.torchAllocConf;
  return {
    id: workload.id,
    title: workload.title,
    description: workload.description,
    events: workload.events,
    peakLiveBlocks: workload.peakLiveBlocks,
    peakLiveBytes: workload.peakLiveBytes,
    budget: workload.budget ? budgetLines(workload.budget, workload.peakLiveBytes) : null,
    pytorch: isPyTorchTrace(workload.meta),
    table: { header: TABLE_HEADER, rows: tableRows(workload), ...untimedOf(workload) },
    rows: workload.rows.map((row, r) => ({
      allocator: row.allocator,
      note: row.note ?? null,
      kind: row.kind,
      config: row.config === undefined ? null : canonicalOf(row.config),
      peakReservedBytes: row.peakReservedBytes,
      ratio: row.ratio,
      failures: row.failures,
      segments: row.segments
        ? {
            acquired: row.segments.acquired,
            grown: row.segments.grown,
            restored: row.segments.restored ?? 0,
          }
        : null,
      externalFragmentationAtPeak: row.externalFragmentationAtPeak,
      sameAs: same[r] ?? null,
      series: {
        event: row.series.event,
        liveBytes: round(row.series.liveBytes, 0),
        reservedBytes: round(row.series.reservedBytes, 0),
        externalFragmentation: round(row.series.externalFragmentation, 4),
      },
      layoutAtPeak: row.layoutAtPeak,
    })),
    recorded: {
      row: workload.explain?.recordedRow ?? null,
      config: typeof conf === 'string' ? canonicalOf(conf) : null,
      peakReservedBytes: workload.torch?.peakReservedBytes ?? null,
    },
    ooms: (workload.torch?.recordedOoms ?? []).map((oom) =>
      oomLines(oom).map((line) => line.trim()),
    ),
    oomLayouts: oomLayouts(workload.torch?.oom),
    explain: workload.explain ? explainData(workload.explain) : null,
    dump: workload.dump ? dumpData(workload) : null,
  };
}

/** A state dump's page data: its lines and tables as the terminal prints them, and its layout. */
function dumpData(workload: WorkloadResult): DumpData {
  const dump = workload.dump!;
  const stacked = (workload.explain?.peak.bySource.length ?? 0) > 0;
  return {
    lines: [...dumpSummary(workload), ...(dump.estimate.blocks === 0 ? [NO_LIVE_BLOCK] : [])],
    reservedBytes: dump.reservedBytes,
    allocatedBytes: dump.allocatedBytes,
    freeBytes: dump.freeBytes,
    segmentTable: segmentTable(dump),
    noStacks: stacked ? null : NO_STACKS.replace(/^who holds the memory: /, ''),
    estimate:
      dump.estimate.rows.length > 0
        ? { assumes: dump.estimate.assumes, table: estimateTable(dump), own: ownEstimateLine(dump) }
        : null,
    layout: dump.layout,
  };
}

/** The page data of `results` (see the module comment). */
export function reportData(results: LabResults): ReportData {
  const tuned = results.workloads.some((w) => w.rows.some((row) => row.allocator === TUNED_ROW));
  return {
    run: {
      command: results.command,
      createdAt: results.createdAt,
      node: results.node,
      platform: results.platform,
      capacityBytes: results.capacity,
    },
    tuned: tuned ? { row: TUNED_ROW, searched: searchedKnobs(false) } : null,
    workloads: results.workloads.map(workloadData),
    targets: results.targets,
  };
}
