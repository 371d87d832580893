/**
 * The x axis every chart shares (seconds since the first event when the trace has times, else
 * events; a toggle switches them all) and round ticks: bytes at 0 and powers of two (1, 2, 4,
 * 8 GiB), time and counts at 1, 2, 5 times a power of ten.
 */
import { formatCount, formatTickSeconds } from '../units';
import type { WorkloadData } from './report-data';

/** What the x axis counts. */
export type Axis = 'time' | 'event';

/** 1, 2 and 5 times each power of ten from 10^-6 to 10^15. */
export const DECIMAL: readonly number[] = Array.from({ length: 22 * 3 }, (_, k) =>
  Number(([1, 2, 5][k % 3]! * 10 ** (Math.floor(k / 3) - 6)).toPrecision(1)),
);

/** The width a chart takes in `element`, in CSS pixels. */
export function chartWidth(element: HTMLElement): number {
  return Math.max(200, Math.min(1200, element.clientWidth || 900));
}

/** Whether `workload`'s x axis is seconds on `axis` (a trace without times uses events). */
export function usesTime(workload: WorkloadData, axis: Axis): boolean {
  return axis === 'time' && workload.explain?.gridSeconds !== undefined;
}

/** The x of each point of the explanation's grid. */
export function gridX(workload: WorkloadData, axis: Axis): readonly number[] {
  const explain = workload.explain!;
  return usesTime(workload, axis) ? explain.gridSeconds! : explain.gridEvents;
}

/** The x of each sample of row `r`'s series. */
export function rowX(workload: WorkloadData, r: number, axis: Axis): readonly number[] {
  return usesTime(workload, axis)
    ? workload.explain!.rowSeconds![r]!
    : workload.rows[r]!.series.event;
}

/** The x axis's label. */
export function xLabel(time: boolean): string {
  return time ? 'time (s since the first event)' : 'event (allocations and frees, in trace order)';
}

/** The x axis's values in words. */
export function xFormat(time: boolean): (x: number) => string {
  return time ? formatTickSeconds : formatCount;
}

/**
 * Byte ticks: 0 and powers of two (1, 2, 4, 8 GiB), from the largest at most `max` down, each at
 * least `minGap` pixels above the next (0 keeps its place: a power too close to it is dropped).
 */
export function binaryTicks(max: number, pixels: number, minGap: number): number[] {
  if (!(max > 0)) return [0];
  const out: number[] = [];
  let v = 2 ** Math.floor(Math.log2(max));
  if (v * 2 <= max) v *= 2;
  let last: number | null = null;
  for (; v >= 1; v /= 2) {
    const gap = last === null ? minGap : ((last - v) / max) * pixels;
    if (gap < minGap || (v / max) * pixels < minGap) break;
    out.push(v);
    last = v;
  }
  out.push(0);
  return out.reverse();
}

/** Ticks of [min, max] from `increments`: the smallest increment leaving at least `minGap` px. */
export function ticks(
  min: number,
  max: number,
  pixels: number,
  minGap: number,
  increments: readonly number[],
): number[] {
  const span = max - min;
  const increment =
    increments.find((candidate) => (span / candidate) * minGap <= pixels) ?? increments.at(-1)!;
  const out: number[] = [];
  for (let v = Math.ceil(min / increment) * increment; v <= max + increment * 1e-9; v += increment)
    out.push(+v.toPrecision(12));
  return out;
}
