/**
 * The way back from typed settings to text: {@link formatAllocConf} writes the canonical
 * `PYTORCH_CUDA_ALLOC_CONF` string of an {@link AllocatorSettings} value, which `parseAllocConf`
 * reads back to the same settings (a property test holds the round trip). Only knobs that differ
 * from PyTorch's defaults are written, in a fixed order, so two strings that mean the same settings
 * format the same; the defaults format as `''`.
 */
import type { AllocatorSettings } from './alloc-conf';
import { LARGE_BUFFER, MIB, ROUNDUP_INTERVALS } from './constants';

/** The canonical configuration string of `settings` (`''` for PyTorch's defaults). */
export function formatAllocConf(settings: AllocatorSettings): string {
  const parts: string[] = [];
  // Older settings objects (built in code before `backend` existed) may lack it.
  if (settings.backend !== undefined && settings.backend !== 'native') {
    parts.push(`backend:${settings.backend}`);
  }
  if (Number.isFinite(settings.maxSplitSize)) {
    parts.push(`max_split_size_mb:${settings.maxSplitSize / MIB}`);
  }
  if (settings.maxNonSplitRounding !== LARGE_BUFFER) {
    parts.push(`max_non_split_rounding_mb:${settings.maxNonSplitRounding / MIB}`);
  }
  const divisions = formatDivisions(settings.roundupPower2Divisions);
  if (divisions !== '') parts.push(`roundup_power2_divisions:${divisions}`);
  if (settings.garbageCollectionThreshold > 0) {
    parts.push(`garbage_collection_threshold:${settings.garbageCollectionThreshold}`);
  }
  if (settings.expandableSegments) parts.push('expandable_segments:True');
  if (settings.memoryFraction !== undefined) {
    parts.push(`per_process_memory_fraction:${settings.memoryFraction}`);
  }
  return parts.join(',');
}

/**
 * `roundup_power2_divisions` as one number when every interval has the same divisions, else as a
 * list: the first entry also fills the intervals below it, `>` the ones after the last entry.
 * `''` when rounding is off everywhere.
 */
function formatDivisions(divisions: readonly number[]): string {
  const first = divisions[0]!;
  if (divisions.every((d) => d === first)) return first === 0 ? '' : String(first);
  const lastValue = divisions[ROUNDUP_INTERVALS - 1]!;
  let runEnd = 0;
  while (divisions[runEnd + 1] === first) runEnd++;
  let lastDifferent = ROUNDUP_INTERVALS - 1;
  while (lastDifferent > runEnd && divisions[lastDifferent] === lastValue) lastDifferent--;
  const entries: string[] = [];
  for (let i = runEnd; i <= lastDifferent; i++) entries.push(`${2 ** i}:${divisions[i]}`);
  if (lastDifferent < ROUNDUP_INTERVALS - 1) entries.push(`>:${lastValue}`);
  return `[${entries.join(',')}]`;
}

/** Number of keys in a configuration string (`''` has none). */
export function countAllocConfKeys(text: string): number {
  let depth = 0;
  let keys = text.trim() === '' ? 0 : 1;
  for (const ch of text) {
    if (ch === '[') depth++;
    else if (ch === ']') depth--;
    else if (ch === ',' && depth === 0) keys++;
  }
  return keys;
}
