/**
 * A rank's chart on the live page, over its dumps as they land: the memory at each dump
 * (reserved, allocated, reserved but unallocated), PyTorch's peak within the entries each dump
 * added (the recorded peak's trend), the replayed peak so far, and the peak predicted under the
 * job's advice then. The x axis counts the rank's dumps (one step may have two: a step's and the
 * exit's), labelled with their steps. A dump that lands goes in with `setData`: the chart stays.
 */
import uPlot from 'uplot';
import { formatBytes, formatCount, formatTickBytes } from '../units';
import { binaryTicks, chartWidth } from './axes';
import type { LiveTrendPoint } from './live-data';

/** Height of a rank's chart, in CSS pixels. */
const HEIGHT = 240;

/** The lines, in the order of {@link columns}; PyTorch's recorded line is the red one, as in the report. */
const LINES: readonly uPlot.Series[] = [
  { label: 'reserved', stroke: '#1f4e79', width: 2.5 },
  { label: 'allocated', stroke: '#000', width: 1.5 },
  { label: 'reserved but unallocated', stroke: '#7f8c8d', width: 1.5 },
  { label: 'PyTorch peak in the dump (recorded)', stroke: '#d62728', width: 1.5, dash: [8, 4] },
  { label: 'replayed peak so far', stroke: '#4e79a7', width: 1.5, dash: [3, 4] },
  { label: 'peak under the advice', stroke: '#f28e2b', width: 2 },
];

/** The chart's table: the dump's number, then each line's bytes at it. */
function columns(points: readonly LiveTrendPoint[]): uPlot.AlignedData {
  return [
    points.map((_, i) => i + 1),
    points.map((p) => p.reservedBytes),
    points.map((p) => p.allocatedBytes),
    points.map((p) => p.reservedBytes - p.allocatedBytes),
    points.map((p) => p.recordedPeakBytes),
    points.map((p) => p.peakReservedBytes),
    points.map((p) => p.advisedPeakReservedBytes),
  ];
}

/** A rank's chart (see the module comment), drawn into `element`. */
export class RankChart {
  private points: readonly LiveTrendPoint[] = [];
  private readonly plot: uPlot;

  constructor(readonly element: HTMLElement) {
    /** The dump at x, in words: its step, else its number. */
    const dumpAt = (x: number): LiveTrendPoint | undefined =>
      Number.isInteger(x) ? this.points[x - 1] : undefined;
    const options: uPlot.Options = {
      width: chartWidth(element),
      height: HEIGHT,
      scales: {
        x: { time: false, range: (_u, min, max) => [min - 0.5, max + 0.5] },
        y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.05 : 1] },
      },
      axes: [
        {
          label: 'dump (labelled with its step)',
          incrs: [1, 2, 5, 10, 20, 50],
          values: (_u, ticks) =>
            ticks.map((x) => {
              const point = dumpAt(x);
              return point === undefined ? '' : point.step === null ? `#${x}` : String(point.step);
            }),
        },
        {
          label: 'memory',
          size: 70,
          splits: (u, _axis, _min, max) =>
            binaryTicks(max, u.bbox.height / (window.devicePixelRatio || 1), 30),
          values: (_u, ticks) => ticks.map(formatTickBytes),
        },
      ],
      series: [
        {
          label: 'dump',
          value: (_u, x) => {
            const point = x == null ? undefined : dumpAt(x);
            if (point === undefined) return '';
            const step = point.step === null ? '' : `step ${formatCount(point.step)}, `;
            return `${step}${point.file}`;
          },
        },
        ...LINES.map((line) => ({
          ...line,
          spanGaps: true,
          points: { show: true, size: 5 },
          value: (_u: uPlot, v: number | null) => (v == null ? '–' : formatBytes(v)),
        })),
      ],
      legend: { show: true },
      cursor: { drag: { x: false, y: false } },
    };
    this.plot = new uPlot(options, columns([]), element);
  }

  /** Draws the rank's dumps, oldest first. */
  update(points: readonly LiveTrendPoint[]): void {
    this.points = points;
    this.plot.setData(columns(points));
    this.element.dataset.points = String(this.plot.data[0].length);
  }

  /** Draws it again to its element's width. */
  resize(): void {
    this.plot.setSize({ width: chartWidth(this.element), height: HEIGHT });
  }

  destroy(): void {
    this.plot.destroy();
  }
}
