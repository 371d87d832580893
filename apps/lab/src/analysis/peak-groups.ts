/**
 * Two traces' live allocations at their peaks, side by side: each trace's blocks live at its peak
 * of live bytes grouped by the top user frame of their stacks (as the report's holders are), or by
 * size class when either trace has no stacks, and the groups whose bytes grew most from the first
 * trace to the second. It answers "what grew" between two snapshots, as users compare them by hand
 * in memory_viz.
 */
import { EventKind, type Trace } from '@allot/workloads';
import { formatBytes } from '../units';
import { holdersOf } from './holders';
import { peakEventIndex } from './measure';

/** How allocations are grouped. */
export type GroupBy = 'frame' | 'size';

/** One group's figures in both traces. */
export interface GrownGroup {
  /** `name (file:line)`, or a size class such as `1 MiB to 2 MiB`. */
  readonly group: string;
  readonly before: number;
  readonly after: number;
  /** `after − before`, more than 0. */
  readonly grown: number;
}

/** The ids and bytes of the blocks live at `trace`'s peak of live bytes. */
function liveAtPeak(trace: Trace): Map<number, number> {
  const live = new Map<number, number>();
  const peak = peakEventIndex(trace);
  for (let i = 0; i <= peak; i++) {
    if (trace.kind[i] === EventKind.Alloc) live.set(trace.id[i]!, trace.size[i]!);
    else live.delete(trace.id[i]!);
  }
  return live;
}

/** `[2^k, 2^(k+1))` in words. */
function sizeClass(bytes: number): string {
  const low = 2 ** Math.floor(Math.log2(Math.max(1, bytes)));
  return `${formatBytes(low)} to ${formatBytes(low * 2)}`;
}

/** Bytes live at `trace`'s peak per group. */
export function peakGroupsOf(trace: Trace, by: GroupBy): Map<string, number> {
  const live = liveAtPeak(trace);
  const groups = new Map<string, number>();
  if (by === 'frame') {
    const holders = holdersOf(trace, [...live.keys()], (id) => live.get(id)!, live.size);
    for (const holder of holders) groups.set(holder.frame, holder.bytes);
    return groups;
  }
  for (const bytes of live.values()) {
    const key = sizeClass(bytes);
    groups.set(key, (groups.get(key) ?? 0) + bytes);
  }
  return groups;
}

/** Whether a trace has stacks to group by. */
function hasFrames(trace: Trace): boolean {
  return trace.frames !== undefined && trace.frames.size > 0;
}

/**
 * The groups of live allocations at the peaks whose bytes grew most from `before` to `after`,
 * most first (at most `rows`), and how they were grouped.
 */
export function grownGroups(
  before: Trace,
  after: Trace,
  rows = 20,
): { by: GroupBy; groups: GrownGroup[] } {
  const by: GroupBy = hasFrames(before) && hasFrames(after) ? 'frame' : 'size';
  const first = peakGroupsOf(before, by);
  const second = peakGroupsOf(after, by);
  const groups: GrownGroup[] = [];
  for (const [group, bytes] of second) {
    const was = first.get(group) ?? 0;
    if (bytes > was) groups.push({ group, before: was, after: bytes, grown: bytes - was });
  }
  groups.sort((a, b) => b.grown - a.grown || (a.group < b.group ? -1 : 1));
  return { by, groups: groups.slice(0, rows) };
}
