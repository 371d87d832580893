/**
 * The page's controls as caching-pool settings and a device, and back: run in the worker, where
 * the lab's parser of `PYTORCH_CUDA_ALLOC_CONF` is. A what-if is the recording's own settings with
 * the controls' values in their place, so a setting the controls do not show (such as
 * `max_non_split_rounding_mb`) stays as recorded.
 */
import {
  type AllocatorSettings,
  DEFAULT_SETTINGS,
  formatAllocConf,
  parseAllocConf,
  type WhatIf,
} from '@allot/lab/engine';
import type { Knobs } from './protocol';

const MIB = 2 ** 20;
const GIB = 2 ** 30;

/** The settings a recording states (`torchAllocConf`), or PyTorch's defaults. */
export function recordedSettings(config: string | null): AllocatorSettings {
  if (config === null) return DEFAULT_SETTINGS;
  try {
    return parseAllocConf(config);
  } catch {
    return DEFAULT_SETTINGS;
  }
}

/** The controls showing `settings`, on no stated device. */
export function knobsOf(settings: AllocatorSettings): Knobs {
  const divisions = settings.roundupPower2Divisions;
  const uniform = divisions.every((d) => d === divisions[0]);
  return {
    expandableSegments: settings.expandableSegments,
    maxSplitSizeMb: Number.isFinite(settings.maxSplitSize) ? settings.maxSplitSize / MIB : null,
    roundupPower2Divisions: uniform ? (divisions[0] ?? 0) : null,
    garbageCollectionThreshold: settings.garbageCollectionThreshold,
    memoryGiB: null,
    fraction: null,
  };
}

/** The what-if of `knobs` over the recorded settings `base`. */
export function whatIfOf(knobs: Knobs, base: AllocatorSettings): WhatIf {
  const settings: AllocatorSettings = {
    ...base,
    expandableSegments: knobs.expandableSegments,
    maxSplitSize:
      knobs.maxSplitSizeMb === null ? Number.POSITIVE_INFINITY : knobs.maxSplitSizeMb * MIB,
    roundupPower2Divisions:
      knobs.roundupPower2Divisions === null
        ? base.roundupPower2Divisions
        : base.roundupPower2Divisions.map(() => knobs.roundupPower2Divisions!),
    garbageCollectionThreshold: knobs.garbageCollectionThreshold,
  };
  const memory = knobs.memoryGiB === null ? null : Math.round(knobs.memoryGiB * GIB);
  return {
    config: formatAllocConf(settings),
    memory,
    fraction: memory === null ? null : knobs.fraction,
  };
}
