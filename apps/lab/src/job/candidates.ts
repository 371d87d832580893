/**
 * The settings every rank of a job is replayed under. `tune FILE` walks a coordinate descent whose
 * path depends on the trace; a job cannot, since its ranks are read by different workers (or
 * machines) and none holds another's trace. So every rank is replayed under one fixed list, each
 * file is read once, and the main thread (or `merge`) picks from the peaks per setting.
 *
 * ```
 *  roundup_power2_divisions 0, 2, 4, 8, 16  ×  expandable_segments off, on      (the plane where
 *  max_split_size_mb 20 … 4096              ×  expandable_segments off, on       tune's searches
 *  under a fraction: garbage_collection_threshold 0.5, 0.7, 0.9 × the plane,     end on real traces)
 *                    and × max_split_size_mb 64 … 512 (PyTorch's advice for fragmentation)
 * ```
 *
 * 26 settings, 68 under a fraction: about what one descent tries (26 to 42 on the H100 traces), and
 * on every H100 trace its best is the descent's.
 */
import {
  type AllocatorSettings,
  DEFAULT_SETTINGS,
  formatAllocConf,
  parseAllocConf,
} from '@allot/caching';
import {
  GARBAGE_COLLECTION_THRESHOLDS,
  MAX_SPLIT_VALUES_MB,
  ROUNDUP_DIVISIONS,
} from '../analysis/tune';

const MIB = 2 ** 20;

function divisions(d: number): AllocatorSettings['roundupPower2Divisions'] {
  return DEFAULT_SETTINGS.roundupPower2Divisions.map(() => d);
}

/** The job's settings, canonical `PYTORCH_CUDA_ALLOC_CONF` strings, the defaults ('') first. */
export function jobCandidates(underFraction: boolean): string[] {
  const settings: AllocatorSettings[] = [];
  const plane: AllocatorSettings[] = [];
  for (const expandableSegments of [false, true]) {
    for (const d of ROUNDUP_DIVISIONS) {
      plane.push({ ...DEFAULT_SETTINGS, roundupPower2Divisions: divisions(d), expandableSegments });
    }
  }
  settings.push(...plane);
  for (const expandableSegments of [false, true]) {
    for (const mb of MAX_SPLIT_VALUES_MB) {
      settings.push({ ...DEFAULT_SETTINGS, maxSplitSize: mb * MIB, expandableSegments });
    }
  }
  if (underFraction) {
    for (const threshold of GARBAGE_COLLECTION_THRESHOLDS.filter((t) => t > 0)) {
      for (const base of plane) settings.push({ ...base, garbageCollectionThreshold: threshold });
      for (const mb of [64, 128, 256, 512]) {
        settings.push({
          ...DEFAULT_SETTINGS,
          maxSplitSize: mb * MIB,
          garbageCollectionThreshold: threshold,
        });
      }
    }
  }
  return [...new Set(settings.map(formatAllocConf))];
}

/** The canonical form of `conf`, or null when the pool cannot model it. */
export function canonicalConf(conf: string): string | null {
  try {
    return formatAllocConf(parseAllocConf(conf));
  } catch {
    return null;
  }
}
