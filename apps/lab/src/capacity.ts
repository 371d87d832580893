/**
 * `allot-lab capacity`: per allocator, the smallest capacity on which a trace runs without a failed
 * allocation, as RMM's `replay_benchmark` reports it. Each probe replays the trace on a fresh
 * instance built with that capacity and stops at the first failure; `searchCapacity` from
 * @allot/workloads grows from peak live bytes, then bisects to 0.5 %.
 */
import {
  type CapacitySearchResult,
  type Replayer,
  searchCapacity,
  type Trace,
} from '@allot/workloads';
import { type LabRow, profileOf } from './analysis/registry';
import { beginReplay } from './analysis/row-instance';

/** The answer for one row. */
export interface CapacityResult {
  readonly allocator: string;
  readonly peakLiveBytes: number;
  readonly search: CapacitySearchResult;
  /** `capacity / peakLiveBytes`. */
  readonly ratio: number;
}

/** Precision of the search, relative to the answer. */
export const CAPACITY_PRECISION = 0.005;
/** Largest capacity tried. */
const MAX_CAPACITY = 2 ** 46;

/** Searches the smallest capacity of every row on `trace`. */
export function capacities(
  trace: Trace,
  rows: readonly LabRow[],
  onRow?: (row: LabRow, index: number) => void,
): CapacityResult[] {
  const profile = profileOf(trace);
  return rows.map((row, index) => {
    onRow?.(row, index);
    let replayer: Replayer | undefined;
    const probe = (capacity: number) => {
      const instance = row.create(trace, profile, capacity);
      replayer = beginReplay(instance, trace, replayer, { stopOnFailure: true });
      replayer.run();
      return replayer.failures === 0 ? ('fits' as const) : ('fails' as const);
    };
    const search = searchCapacity({
      peakLiveBytes: profile.peakLiveBytes,
      maxCapacity: MAX_CAPACITY,
      probe,
      relativePrecision: CAPACITY_PRECISION,
      granularity: row.kind === 'pool' ? 2 ** 21 : 8,
    });
    return {
      allocator: row.name,
      peakLiveBytes: profile.peakLiveBytes,
      search,
      ratio: search.capacity === null ? Number.NaN : search.capacity / profile.peakLiveBytes,
    };
  });
}
