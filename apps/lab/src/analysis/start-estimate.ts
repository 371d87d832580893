/**
 * A profiler trace's estimated starting state, refined where the recording says more. The reader
 * estimates the cache PyTorch held before the window as one free segment (it records totals, not
 * segments). When `Total Reserved` never rises in the window, PyTorch allocated no segment in it:
 * its cache served every request. Then the free segments are those a pool with PyTorch's defaults
 * creates for the window's requests from an empty cache, the rest of the reserved bytes one more
 * free segment: the least cache that serves the window, as the recording shows one did.
 */
import { cachingPool, DEFAULT_SETTINGS } from '@allot/caching';
import {
  addressSource,
  Replayer,
  type StartSegment,
  type StartState,
  type Trace,
} from '@allot/workloads';

const SMALL_SEGMENT = 2 ** 21;
const GAP = 2 ** 21;

const refined = new WeakMap<Trace, StartState | undefined>();

/** The starting state a replay of `trace` restores (see the module comment). */
export function startOf(trace: Trace): StartState | undefined {
  if (refined.has(trace)) return refined.get(trace);
  const start = refine(trace) ?? trace.start;
  refined.set(trace, start);
  return start;
}

function refine(trace: Trace): StartState | undefined {
  const start = trace.start;
  const meta = trace.meta;
  if (start === undefined || start.fidelity !== 'estimated' || meta.format !== 'torch-profiler') {
    return undefined;
  }
  const atStart = meta.torchReservedAtStartBytes;
  const peak = meta.torchPeakReservedBytes;
  if (typeof atStart !== 'number' || typeof peak !== 'number' || peak > atStart) return undefined;
  const held = start.segments.filter((segment) => segment.blocks.length > 0);
  const free = start.segments.filter((segment) => segment.blocks.length === 0);
  let spare = 0;
  for (const segment of free) spare += segment.size;
  let top = 0;
  for (const segment of start.segments) top = Math.max(top, segment.address + segment.size);
  const withFree = (sizes: readonly number[], filler: number): StartState => {
    const segments: StartSegment[] = [...held];
    let at = top;
    const add = (size: number, pool: 'small' | 'large') => {
      segments.push({ address: at + GAP, size, pool, stream: 0, expandable: false, blocks: [] });
      at += GAP + size;
    };
    for (const size of sizes) add(size, size === SMALL_SEGMENT ? 'small' : 'large');
    if (filler > 0) add(filler, 'large');
    return { ...start, segments };
  };
  const cold = windowSegments(withFree([], 0), trace);
  if (cold === null) return undefined;
  const needed = leastCache(cold, spare, (sizes) => {
    const more = windowSegments(withFree(sizes, 0), trace);
    return more !== null && more.length === 0;
  });
  if (needed === null) return undefined;
  let sum = 0;
  for (const size of needed) sum += size;
  return withFree(needed, Math.floor((spare - sum) / SMALL_SEGMENT) * SMALL_SEGMENT);
}

/** Replays of the window the search below may make (each one a whole replay). */
const SEARCH_EVENTS = 5e7;

/**
 * The segments of `cold` (what a defaults pool allocates for the window from an empty cache) less
 * those the window can do without, largest first, until they fit in `spare` bytes; null when they
 * cannot, or when the search would take too long. `serves` replays the window from a cache of the
 * given free segments and says whether it needed no other.
 */
function leastCache(
  cold: readonly number[],
  spare: number,
  serves: (sizes: readonly number[]) => boolean,
): number[] | null {
  const sum = (sizes: readonly number[]) => sizes.reduce((a, b) => a + b, 0);
  let kept = [...cold].sort((a, b) => b - a);
  if (sum(kept) <= spare) return kept;
  if (!serves(kept)) return null;
  let budget = Math.floor(SEARCH_EVENTS / Math.max(1, kept.length));
  for (let i = 0; i < kept.length && sum(kept) > spare; ) {
    if (budget-- <= 0) return null;
    const without = [...kept.slice(0, i), ...kept.slice(i + 1)];
    if (serves(without)) kept = without;
    else i++;
  }
  return sum(kept) <= spare ? kept : null;
}

/** Sizes of the segments a defaults pool holding `start` allocates for the window, or null. */
function windowSegments(start: StartState, trace: Trace): number[] | null {
  const source = addressSource();
  const pool = cachingPool({ source, settings: DEFAULT_SETTINGS });
  const state = new Replayer({ ...trace, start }, pool);
  const addresses = pool.restore(
    start.segments.map((segment) => ({
      size: segment.size,
      pool: segment.pool,
      stream: segment.stream,
      expandable: false,
      blocks: segment.blocks,
    })),
  );
  if (addresses === null) return null;
  start.segments.forEach((segment, s) => {
    segment.blocks.forEach((block, i) => {
      state.addresses[block.id] = addresses[s]![i]!;
    });
  });
  const before = source.decisions().length;
  state.position = start.events;
  state.run();
  return state.failures > 0 ? null : source.decisions().slice(before);
}
