/**
 * Memory over time (live bytes, PyTorch's recorded reserved line, each row's reserved bytes) and
 * fragmentation over time (each row's external fragmentation), drawn with uPlot as steps: a value
 * holds until the next sample. The rows' lines take no red or pink: PyTorch's recorded line is the
 * one red line. A row whose results equal an earlier row's is drawn dashed, named `(= other)`. A
 * dashed red line marks the peak of live bytes.
 */
import uPlot from 'uplot';
import { formatBytes, formatPercent, formatTickBytes } from '../units';
import {
  type Axis,
  binaryTicks,
  chartWidth,
  DECIMAL,
  gridX,
  rowX,
  usesTime,
  xFormat,
  xLabel,
} from './axes';
import type { RowData, WorkloadData } from './report-data';

/** The recorded line's colour, and the rows' colours in turn. */
const PYTORCH = '#d62728';
const COLORS =
  '#4e79a7 #f28e2b #59a14f #b07aa1 #76b7b2 #edc948 #9c755f #17becf #bcbd22 #6b6ecf #7f7f7f #1f3a93'.split(
    ' ',
  );
const PERCENT_INCREMENTS = [0.05, 0.1, 0.2, 0.25, 0.5, 1];

/** Columns of a chart's table: x, then each line's y at those x. */
function aligned(...columns: (readonly number[])[]): uPlot.AlignedData {
  return columns as unknown as uPlot.AlignedData;
}

/** What the tests read of a memory chart: the byte ticks of its y axis. */
export interface ChartRecord {
  byteTicks: number[];
}

interface Line {
  readonly label: string;
  readonly color: string;
  readonly width?: number;
  readonly dash?: number[];
}

/** A row as the table names it (with its note: the tuned row's setting), and whose lines it shares. */
export function rowName(row: RowData): string {
  return `${row.allocator}${row.note ? ` (${row.note})` : ''}${row.sameAs ? ` (= ${row.sameAs})` : ''}`;
}

function percent(value: number | null): string {
  return value == null ? '' : formatPercent(value, 0);
}

function rowLine(row: RowData, r: number, label: string): Line {
  return {
    label,
    color: COLORS[r % COLORS.length]!,
    width: row.sameAs ? 2.5 : 1.5,
    ...(row.sameAs ? { dash: [3, 5] } : {}),
  };
}

/** A uPlot hook that draws a dashed vertical line at the peak of live bytes. */
function peakMarker(workload: WorkloadData, axis: Axis): (u: uPlot) => void {
  const explain = workload.explain;
  const j = explain ? explain.gridEvents.indexOf(explain.peakEvent) : -1;
  const x = j < 0 ? null : gridX(workload, axis)[j]!;
  return (u) => {
    if (x === null) return;
    const px = u.valToPos(x, 'x', true);
    const { ctx } = u;
    ctx.save();
    ctx.setLineDash([4, 3]);
    ctx.strokeStyle = '#b42318';
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(px, u.bbox.top);
    ctx.lineTo(px, u.bbox.top + u.bbox.height);
    ctx.stroke();
    ctx.restore();
  };
}

interface YAxis {
  readonly label: string;
  readonly value: (v: number | null) => string;
  readonly tick: (v: number) => string;
  readonly axis: Partial<uPlot.Axis>;
  readonly range?: uPlot.Range.MinMax;
}

function lineChart(
  element: HTMLElement,
  title: string,
  workload: WorkloadData,
  axis: Axis,
  tables: uPlot.AlignedData[],
  lines: readonly Line[],
  y: YAxis,
): uPlot {
  const time = usesTime(workload, axis);
  const joined = tables.length === 1 ? tables[0]! : uPlot.join(tables);
  const format = xFormat(time);
  const options: uPlot.Options = {
    title,
    width: chartWidth(element),
    height: 300,
    scales: {
      // One x (a trace of one event): a unit around it, not uPlot's 0 to 100.
      x: { time: false, range: (_u, min, max) => (min === max ? [min, min + 1] : [min, max]) },
      y: { range: y.range ?? ((_u, _min, max) => [0, max > 0 ? max * 1.05 : 1]) },
    },
    axes: [
      {
        label: xLabel(time),
        ...(time ? { incrs: [...DECIMAL] } : {}),
        values: (_u, values) => values.map(format),
      },
      { label: y.label, size: 80, ...y.axis, values: (_u, values) => values.map(y.tick) },
    ],
    series: [
      { label: time ? 'time' : 'event', value: (_u, v) => (v == null ? '' : format(v)) },
      ...lines.map((line) => ({
        label: line.label,
        stroke: line.color,
        width: line.width ?? 1.5,
        ...(line.dash ? { dash: line.dash } : {}),
        spanGaps: true,
        paths: uPlot.paths.stepped!({ align: 1 }),
        value: (_u: uPlot, v: number | null) => y.value(v),
      })),
    ],
    legend: { show: true },
    cursor: { drag: { x: true, y: false } },
    hooks: { draw: [peakMarker(workload, axis)] },
  };
  element.replaceChildren();
  return new uPlot(options, joined, element);
}

/** Memory over time in `element`; `record` gets the y axis's byte ticks as they are drawn. */
export function memoryChart(
  element: HTMLElement,
  workload: WorkloadData,
  axis: Axis,
  record: ChartRecord,
): uPlot {
  const tables: uPlot.AlignedData[] = [];
  const lines: Line[] = [];
  const explain = workload.explain;
  if (explain) {
    const table = [gridX(workload, axis), explain.liveBytes];
    lines.push({ label: 'live (requested bytes, peak per interval)', color: '#000', width: 2.5 });
    if (explain.recordedReserved) {
      table.push(explain.recordedReserved);
      lines.push({
        label: 'PyTorch reserved (recorded)',
        color: PYTORCH,
        width: 2.5,
        dash: [8, 4],
      });
    }
    tables.push(aligned(...table));
  }
  workload.rows.forEach((row, r) => {
    tables.push(aligned(rowX(workload, r, axis), row.series.reservedBytes));
    lines.push(rowLine(row, r, `${rowName(row)} reserved`));
  });
  return lineChart(element, 'Memory over time: live vs reserved', workload, axis, tables, lines, {
    label: 'memory (bytes, binary units)',
    value: (v) => (v == null ? '' : formatBytes(v)),
    tick: formatTickBytes,
    axis: {
      splits: (u, _axis, _min, max) => {
        record.byteTicks = binaryTicks(max, u.bbox.height / (window.devicePixelRatio || 1), 30);
        return record.byteTicks;
      },
    },
  });
}

/** Fragmentation over time in `element`. */
export function fragmentationChart(
  element: HTMLElement,
  workload: WorkloadData,
  axis: Axis,
): uPlot {
  return lineChart(
    element,
    'External fragmentation over time (1 − largest free / total free)',
    workload,
    axis,
    workload.rows.map((row, r) =>
      aligned(rowX(workload, r, axis), row.series.externalFragmentation),
    ),
    workload.rows.map((row, r) => rowLine(row, r, rowName(row))),
    {
      label: 'external fragmentation (%)',
      value: percent,
      tick: percent,
      axis: { incrs: PERCENT_INCREMENTS },
      range: [0, 1],
    },
  );
}
