/**
 * `allot-lab tune`: the caching pool's knobs that minimise peak reserved memory on a trace, on the
 * user's GPU.
 *
 * ```
 *  start ─► for each knob in turn, try every value with the others fixed, keep the best ─► repeat
 *           until a round changes nothing (coordinate descent, at most 3 rounds)
 *  starts: PyTorch's defaults, and expandable segments on (the two regimes differ most)
 *  pick:   among the settings within 1 % of the lowest peak, the one with the fewest keys;
 *          never one predicted worse than the defaults
 * ```
 *
 * The device is part of the question. PyTorch caps reserved memory at `memory × fraction` and runs
 * `garbage_collection_threshold` against that cap only when a per-process fraction is set
 * (`set_fraction` in `CUDACachingAllocator.cpp`); without one, only the device's memory limits
 * `cudaMalloc`, and garbage collection never runs. So the search runs on a device (`device.ts`'s
 * `searchDevice`): the memory and fraction the user states, else the trace's, else an assumed
 * 80 GiB device without a fraction, which the output states. The garbage-collection knob is searched only under a fraction (elsewhere PyTorch
 * ignores it). Every figure includes the trace's starting state, in `memory_stats()` units. On a
 * card smaller than the trace's peak live bytes every setting fails, so only the defaults are
 * replayed (`advice.ts` advises nothing then). On a state dump, which has no history, every run is
 * an estimate (`dump-estimate.ts`): its live blocks allocated into an empty pool.
 */
import {
  type AllocatorSettings,
  countAllocConfKeys,
  DEFAULT_SETTINGS,
  formatAllocConf,
} from '@allot/caching';
import { peakLiveBytes, type Replayer, type Trace } from '@allot/workloads';
import { type DeviceModel, type SearchDevice, searchDevice, UNLIMITED_DEVICE } from './device';
import { type DumpEstimateBasis, estimateBasis } from './dump-estimate';
import { oomProbes } from './oom-probes';
import { EXPANDABLE_SETTINGS, poolInstance, sameRegime } from './pool-instance';
import { beginReplay, type SegmentDecisions } from './row-instance';
import { startOf } from './start-estimate';

const MIB = 2 ** 20;

/** Among settings whose peak is within this fraction of the lowest, the fewest keys win. */
export const TIE_TOLERANCE = 0.01;

/** One replay of a trace through a caching pool. */
export interface PoolRun {
  /** Canonical PYTORCH_CUDA_ALLOC_CONF string ('' for the defaults). */
  readonly config: string;
  readonly settings: AllocatorSettings;
  /** Peak reserved bytes, starting state included (`reserved_bytes.all.peak`). */
  readonly peakReservedBytes: number;
  readonly peakLiveBytes: number;
  readonly failures: number;
  readonly segments: SegmentDecisions;
}

/** One replayer per trace, restarted for each run: its loop stays compiled and warm. */
const replayers = new WeakMap<Trace, Replayer>();

/**
 * Replays `trace` through a caching pool with `settings` on `device`. The requests a recording's
 * out-of-memory errors name ({@link oomProbes}) are asked for at their place: one the pool cannot
 * serve counts as a failure; one it serves is freed at once, and the recording goes on as it did.
 */
export function runPool(
  trace: Trace,
  settings: AllocatorSettings,
  device: DeviceModel = UNLIMITED_DEVICE,
  cold = false,
): PoolRun {
  const instance = poolInstance(settings, trace, null, device, undefined, { cold });
  const state = beginReplay(instance, trace, replayers.get(trace));
  replayers.set(trace, state);
  let failed = 0;
  for (const probe of oomProbes(trace)) {
    if (probe.event < state.position) continue;
    state.run(probe.event);
    const address = instance.pool.allocateOn(probe.stream, probe.sizeBytes);
    if (address === null) failed++;
    else instance.pool.free(address);
  }
  state.run();
  return {
    config: formatAllocConf(instance.pool.settings),
    settings: instance.pool.settings,
    peakReservedBytes: instance.peakReserved(state),
    peakLiveBytes: state.peakLiveBytes,
    failures: state.failures + failed,
    segments: instance.segments!(),
  };
}

/** Values of `max_split_size_mb` the searches try (PyTorch's minimum is 20). */
export const MAX_SPLIT_VALUES_MB = [20, 32, 64, 128, 256, 512, 1024, 4096] as const;

/** Values of `roundup_power2_divisions` the searches try (0: PyTorch's default, no rounding). */
export const ROUNDUP_DIVISIONS = [0, 2, 4, 8, 16] as const;

/** Values of `garbage_collection_threshold` the searches try under a fraction (0: off). */
export const GARBAGE_COLLECTION_THRESHOLDS = [0, 0.5, 0.7, 0.9] as const;

/** Fewer failures first, then lower peak reserved. */
function better(a: PoolRun, b: PoolRun): boolean {
  if (a.failures !== b.failures) return a.failures < b.failures;
  return a.peakReservedBytes < b.peakReservedBytes;
}

/** A knob of the search and the values it tries. */
interface Knob {
  readonly name: string;
  readonly values: readonly Partial<AllocatorSettings>[];
}

const KNOBS: readonly Knob[] = [
  {
    name: 'max_split_size_mb',
    values: [
      { maxSplitSize: Number.POSITIVE_INFINITY },
      ...MAX_SPLIT_VALUES_MB.map((mb) => ({ maxSplitSize: mb * MIB })),
    ],
  },
  {
    name: 'roundup_power2_divisions',
    values: ROUNDUP_DIVISIONS.map((d) => ({
      roundupPower2Divisions: DEFAULT_SETTINGS.roundupPower2Divisions.map(() => d),
    })),
  },
  {
    name: 'expandable_segments',
    values: [{ expandableSegments: false }, { expandableSegments: true }],
  },
];

const GARBAGE_COLLECTION_KNOB: Knob = {
  name: 'garbage_collection_threshold',
  values: GARBAGE_COLLECTION_THRESHOLDS.map((t) => ({ garbageCollectionThreshold: t })),
};

/** Options of {@link tune}. */
export interface TuneOptions {
  /** The GPU's memory in bytes. @defaultValue the trace's, else `device.ts`'s `ASSUMED_MEMORY` */
  readonly memory?: number | null;
  /** The per-process memory fraction. @defaultValue none (PyTorch's default) */
  readonly fraction?: number | null;
  /** Called after each evaluated setting, with its run. */
  readonly onProgress?: (evaluated: number, config: string, run: PoolRun) => void;
}

/** What the search found, and the device it ran on (see `device.ts`). */
export interface TuneResult extends SearchDevice {
  /** The trace's peak live bytes, its starting state included: what any card must hold. */
  readonly peakLiveBytes: number;
  readonly defaults: PoolRun;
  /** The recommendation (the defaults when nothing beats them). */
  readonly best: PoolRun;
  /** Every setting evaluated, in order. */
  readonly tried: readonly PoolRun[];
  /**
   * `defaults.peakReservedBytes − best.peakReservedBytes`; from the same start
   * (`likeForLike.defaultsPeakReservedBytes − best.peakReservedBytes`) when there is a `likeForLike`.
   */
  readonly savingBytes: number;
  /** The saving as a fraction of the defaults' peak reserved. */
  readonly savingFraction: number;
  /**
   * The saving of the same recommendation with no device limit at all: when it is much smaller,
   * the benefit comes from the device figures, which matters most when they were assumed.
   */
  readonly unlimitedSavingBytes: number;
  /**
   * When the recommendation is of the other segment regime than the recording's starting state: a
   * pool of that regime cannot restore the cache PyTorch held before the window, so it starts with
   * the live blocks only. Both rows from that same start, and what the saving is made of.
   */
  readonly likeForLike?: LikeForLike;
  /**
   * Set on a state dump (`Trace.dump`): every run is an estimate, the dump's live blocks allocated
   * into an empty pool, and this says what it assumed (`dump-estimate.ts`).
   */
  readonly estimate?: DumpEstimateBasis;
}

/** See {@link TuneResult.likeForLike}. */
export interface LikeForLike {
  /** The setting compared: the search's best, of the other segment regime. */
  readonly config: string;
  /** The defaults, started with the live blocks only. */
  readonly defaultsPeakReservedBytes: number;
  /** The recommendation from that start (its own peak: it never restores the cache). */
  readonly bestPeakReservedBytes: number;
  /** The saving from the same start. */
  readonly savingBytes: number;
  /** Reserved but not live when the window began: cache the defaults row restores. */
  readonly startCacheBytes: number;
}

/** Searches the caching pool's knobs for the lowest peak reserved on `trace` (see the module comment). */
export function tune(trace: Trace, options: TuneOptions = {}): TuneResult {
  const { device, origin } = searchDevice(trace, options);
  const knobs = device.fraction === null ? KNOBS : [...KNOBS, GARBAGE_COLLECTION_KNOB];
  const cache = new Map<string, PoolRun>();
  const tried: PoolRun[] = [];
  const evaluate = (settings: AllocatorSettings): PoolRun => {
    const config = formatAllocConf(settings);
    let run = cache.get(config);
    if (!run) {
      run = runPool(trace, settings, device);
      cache.set(config, run);
      tried.push(run);
      options.onProgress?.(tried.length, config, run);
    }
    return run;
  };
  const defaults = evaluate(DEFAULT_SETTINGS);
  const peakLive = peakLiveBytes(trace);
  // A card that cannot hold the peak live bytes fails under every setting: nothing to search.
  const starts =
    peakLive > device.memory * (device.fraction ?? 1)
      ? []
      : [DEFAULT_SETTINGS, EXPANDABLE_SETTINGS];
  // Expandable segments change how every other knob acts, so the descent starts from both regimes.
  for (const start of starts) {
    let current = start;
    let currentRun = evaluate(start);
    for (let round = 0; round < 3; round++) {
      let changed = false;
      for (const knob of knobs) {
        for (const value of knob.values) {
          const candidate: AllocatorSettings = { ...current, ...value };
          const run = evaluate(candidate);
          if (better(run, currentRun)) {
            currentRun = run;
            current = candidate;
            changed = true;
          }
        }
      }
      if (!changed) break;
    }
  }
  let best = recommend(defaults, tried);
  const likeForLike = compareFromSameStart(trace, device, defaults, best);
  // A saving made only of the cache held before the window is no saving: keep the defaults.
  if (
    likeForLike !== undefined &&
    likeForLike.savingBytes <= 0 &&
    best.failures >= defaults.failures
  )
    best = defaults;
  // Like with like: from the same start when the recommendation cannot restore the recorded one.
  const base =
    likeForLike !== undefined && best !== defaults
      ? likeForLike.defaultsPeakReservedBytes
      : defaults.peakReservedBytes;
  const savingBytes = base - best.peakReservedBytes;
  const unlimitedSavingBytes =
    best === defaults
      ? 0
      : runPool(trace, DEFAULT_SETTINGS).peakReservedBytes -
        runPool(trace, best.settings).peakReservedBytes;
  const estimate = estimateBasis(trace);
  return {
    device,
    origin,
    peakLiveBytes: peakLive,
    defaults,
    best,
    tried,
    savingBytes,
    savingFraction: base > 0 ? savingBytes / base : 0,
    unlimitedSavingBytes,
    ...(likeForLike !== undefined ? { likeForLike } : {}),
    ...(estimate !== undefined ? { estimate } : {}),
  };
}

/**
 * The defaults and `best` from the same start when `best` cannot restore the recording's starting
 * state (the other segment regime): see {@link TuneResult.likeForLike}.
 */
function compareFromSameStart(
  trace: Trace,
  device: DeviceModel,
  defaults: PoolRun,
  best: PoolRun,
): LikeForLike | undefined {
  const start = startOf(trace);
  if (start === undefined || best === defaults || sameRegime(start, best.settings))
    return undefined;
  if (!sameRegime(start, defaults.settings)) return undefined;
  let reserved = 0;
  let live = 0;
  for (const segment of start.segments) {
    reserved += segment.size;
    for (const block of segment.blocks) live += block.requested;
  }
  const cold = runPool(trace, DEFAULT_SETTINGS, device, true);
  return {
    config: best.config,
    defaultsPeakReservedBytes: cold.peakReservedBytes,
    bestPeakReservedBytes: best.peakReservedBytes,
    savingBytes: cold.peakReservedBytes - best.peakReservedBytes,
    startCacheBytes: Math.max(0, reserved - live),
  };
}

/**
 * The recommendation among `tried`: the fewest failures; among the settings within
 * {@link TIE_TOLERANCE} of the lowest peak, the fewest keys, then the lowest peak, then the fewest
 * segments. The defaults when that is not predicted better than they are.
 */
export function recommend(defaults: PoolRun, tried: readonly PoolRun[]): PoolRun {
  let leastFailures = defaults.failures;
  for (const run of tried) leastFailures = Math.min(leastFailures, run.failures);
  const eligible = tried.filter((run) => run.failures === leastFailures);
  let lowest = Number.POSITIVE_INFINITY;
  for (const run of eligible) lowest = Math.min(lowest, run.peakReservedBytes);
  const close = eligible.filter((run) => run.peakReservedBytes <= lowest * (1 + TIE_TOLERANCE));
  close.sort(
    (a, b) =>
      countAllocConfKeys(a.config) - countAllocConfKeys(b.config) ||
      a.peakReservedBytes - b.peakReservedBytes ||
      segmentCalls(a) - segmentCalls(b),
  );
  const pick = close[0] ?? defaults;
  if (pick.failures > defaults.failures) return defaults;
  if (pick.failures === defaults.failures && pick.peakReservedBytes >= defaults.peakReservedBytes) {
    return defaults;
  }
  return pick;
}

/** `cudaMalloc` calls, and maps of expandable segments: PyTorch's `num_device_alloc` in the window. */
export function segmentCalls(run: PoolRun): number {
  return run.segments.acquired + run.segments.grown;
}
