/**
 * `allot-lab tune`: the caching pool's knobs that minimise peak reserved memory on a trace.
 *
 * ```
 *  start ─► for each knob in turn, try every value with the others fixed, keep the best ─► repeat
 *           until a round changes nothing (coordinate descent, at most 3 rounds)
 *  starts: PyTorch's defaults, and expandable segments on (the two regimes differ most)
 * ```
 *
 * Knobs and the values tried: `max_split_size_mb` (unset, 20 … 4096), `roundup_power2_divisions`
 * (unset, 2, 4, 8, 16), `expandable_segments` (False, True) and `garbage_collection_threshold`
 * (unset, 0.5, 0.7, 0.9). Garbage collection only acts under a memory cap, so the search runs under
 * one: `--memory` (the GPU's memory) when given, else the peak reserved of PyTorch's defaults, so that
 * every setting is judged within the memory the defaults needed. A setting with a failed allocation
 * never wins. Runs are cached by configuration string.
 */
import type { Trace } from '@allot/workloads';
import { cachingPoolInstance, type SegmentDecisions } from './registry';
import { compileReplayLoop, newLoopState, type ReplayLoop } from './replay-loop';

/** One replay of a trace through a caching pool. */
export interface PoolRun {
  /** PYTORCH_CUDA_ALLOC_CONF string ('' for the defaults). */
  readonly config: string;
  readonly peakReservedBytes: number;
  readonly peakLiveBytes: number;
  readonly failures: number;
  readonly segments: SegmentDecisions;
}

let poolLoop: ReplayLoop | null = null;

/** Replays `trace` through a caching pool with `config`, over a source of `capacity` bytes (or none). */
export function runPool(trace: Trace, config: string, capacity: number | null): PoolRun {
  poolLoop ??= compileReplayLoop();
  const instance = cachingPoolInstance(config, capacity);
  const state = newLoopState(trace);
  poolLoop(trace, instance.target, state, trace.length);
  return {
    config,
    peakReservedBytes: instance.peakReserved(state),
    peakLiveBytes: state.peakLiveBytes,
    failures: state.failures,
    segments: instance.segments!(),
  };
}

/** Values of `max_split_size_mb` the searches try (PyTorch's minimum is 20). */
export const MAX_SPLIT_VALUES_MB = [20, 32, 64, 128, 256, 512, 1024, 4096] as const;

const tunedCache = new WeakMap<Trace, Map<string, number | null>>();

/**
 * The `max_split_size_mb` with the lowest peak reserved on `trace` (no failures), or `null` when no
 * value beats PyTorch's default (no limit). Cached per trace and capacity.
 */
export function tunedMaxSplit(trace: Trace, capacity: number | null): number | null {
  let byCapacity = tunedCache.get(trace);
  if (!byCapacity) tunedCache.set(trace, (byCapacity = new Map()));
  const key = String(capacity);
  if (byCapacity.has(key)) return byCapacity.get(key)!;
  let best = runPool(trace, '', capacity);
  let bestValue: number | null = null;
  for (const value of MAX_SPLIT_VALUES_MB) {
    const run = runPool(trace, `max_split_size_mb:${value}`, capacity);
    if (better(run, best)) {
      best = run;
      bestValue = value;
    }
  }
  byCapacity.set(key, bestValue);
  return bestValue;
}

/** Fewer failures first, then lower peak reserved. */
function better(a: PoolRun, b: PoolRun): boolean {
  if (a.failures !== b.failures) return a.failures < b.failures;
  return a.peakReservedBytes < b.peakReservedBytes;
}

/** A point of the search space. */
export interface PoolSettings {
  /** `max_split_size_mb`, or null for unset (no limit). */
  readonly maxSplitSizeMb: number | null;
  /** `roundup_power2_divisions`, 0 for unset. */
  readonly roundupPower2Divisions: number;
  readonly expandableSegments: boolean;
  /** `garbage_collection_threshold`, 0 for unset. */
  readonly garbageCollectionThreshold: number;
}

/** PyTorch's defaults. */
export const DEFAULT_POOL_SETTINGS: PoolSettings = {
  maxSplitSizeMb: null,
  roundupPower2Divisions: 0,
  expandableSegments: false,
  garbageCollectionThreshold: 0,
};

/** The settings as a PYTORCH_CUDA_ALLOC_CONF string; '' for the defaults. */
export function allocConfOf(settings: PoolSettings): string {
  const parts: string[] = [];
  if (settings.maxSplitSizeMb !== null) parts.push(`max_split_size_mb:${settings.maxSplitSizeMb}`);
  if (settings.roundupPower2Divisions > 0)
    parts.push(`roundup_power2_divisions:${settings.roundupPower2Divisions}`);
  if (settings.expandableSegments) parts.push('expandable_segments:True');
  if (settings.garbageCollectionThreshold > 0)
    parts.push(`garbage_collection_threshold:${settings.garbageCollectionThreshold}`);
  return parts.join(',');
}

const KNOBS: readonly { readonly key: keyof PoolSettings; readonly values: readonly unknown[] }[] =
  [
    { key: 'maxSplitSizeMb', values: [null, ...MAX_SPLIT_VALUES_MB] },
    { key: 'roundupPower2Divisions', values: [0, 2, 4, 8, 16] },
    { key: 'expandableSegments', values: [false, true] },
    { key: 'garbageCollectionThreshold', values: [0, 0.5, 0.7, 0.9] },
  ];

/** Options of {@link tune}. */
export interface TuneOptions {
  /** Memory cap (the GPU's memory). @defaultValue the peak reserved of PyTorch's defaults */
  readonly memory?: number;
  /** Called after each evaluated setting. */
  readonly onProgress?: (evaluated: number, config: string) => void;
}

/** What the search found. */
export interface TuneResult {
  /** The cap the search ran under, in bytes. */
  readonly memory: number;
  readonly defaults: PoolRun;
  readonly best: PoolRun;
  readonly settings: PoolSettings;
  /** Every setting evaluated, in order. */
  readonly tried: readonly PoolRun[];
  /** `defaults.peakReservedBytes − best.peakReservedBytes`. */
  readonly savingBytes: number;
  /** The saving as a fraction of the defaults' peak reserved. */
  readonly savingFraction: number;
}

/** Searches the caching pool's knobs for the lowest peak reserved on `trace` (see the module comment). */
export function tune(trace: Trace, options: TuneOptions = {}): TuneResult {
  const uncapped = options.memory === undefined ? runPool(trace, '', null) : null;
  const memory = options.memory ?? Math.max(uncapped!.peakReservedBytes, 1);
  const cache = new Map<string, PoolRun>();
  const tried: PoolRun[] = [];
  const evaluate = (settings: PoolSettings): PoolRun => {
    const config = allocConfOf(settings);
    let run = cache.get(config);
    if (!run) {
      run = runPool(trace, config, memory);
      cache.set(config, run);
      tried.push(run);
      options.onProgress?.(tried.length, config);
    }
    return run;
  };
  const defaults = evaluate(DEFAULT_POOL_SETTINGS);
  let settings = DEFAULT_POOL_SETTINGS;
  let best = defaults;
  // Expandable segments change how every other knob acts, so the descent starts from both regimes.
  for (const start of [
    DEFAULT_POOL_SETTINGS,
    { ...DEFAULT_POOL_SETTINGS, expandableSegments: true },
  ]) {
    let current = start;
    let currentRun = evaluate(start);
    for (let round = 0; round < 3; round++) {
      let changed = false;
      for (const knob of KNOBS) {
        for (const value of knob.values) {
          if (current[knob.key] === value) continue;
          const candidate = { ...current, [knob.key]: value } as PoolSettings;
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
    if (better(currentRun, best)) {
      best = currentRun;
      settings = current;
    }
  }
  const savingBytes = defaults.peakReservedBytes - best.peakReservedBytes;
  return {
    memory,
    defaults,
    best,
    settings,
    tried,
    savingBytes,
    savingFraction: defaults.peakReservedBytes > 0 ? savingBytes / defaults.peakReservedBytes : 0,
  };
}
