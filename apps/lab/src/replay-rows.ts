/**
 * What `replay` adds to a trace's table, and how it names the trace: the same for the command line
 * and for the web app (through `@allot/lab/engine`), so both replay a recording the same way.
 * No Node.js module is imported here or below.
 */
import { type AllocatorSettings, formatAllocConf, parseAllocConf } from '@allot/caching';
import type { Trace } from '@allot/workloads';
import { cachingRow, type LabRow } from './analysis/registry';

/** A setting given for a row of its own (`--config`): the string as given and its settings. */
export interface ConfigRow {
  readonly text: string;
  readonly settings: AllocatorSettings;
}

/** One line describing where a trace came from: format, file, device, streams, duration. */
export function describeTrace(trace: Trace): string {
  const meta = trace.meta;
  const parts = [`${meta.format ?? 'trace'} file ${meta.source ?? trace.name}`];
  if (meta.device !== undefined) parts.push(`device ${meta.device}`);
  if (typeof meta.streams === 'number' && meta.streams > 1) parts.push(`${meta.streams} streams`);
  if (typeof meta.durationUs === 'number')
    parts.push(`${(meta.durationUs / 1e6).toFixed(3)} s recorded`);
  if (typeof meta.zeroSizeAllocs === 'number' && meta.zeroSizeAllocs > 0)
    parts.push(`${meta.zeroSizeAllocs} malloc(0) read as 1 byte`);
  return parts.join(', ');
}

/**
 * The caching rows a replay adds for one trace beside the `base` rows: one per `--config`, and one
 * with the recording's own settings unless a row already has them (then that row is the recorded
 * one).
 */
export function replayRows(
  trace: Trace,
  base: readonly LabRow[],
  configs: readonly ConfigRow[],
): { extraRows: LabRow[]; recordedRow?: string } {
  const extraRows = configs.map((config) =>
    cachingRow(`caching (${config.text})`, config.settings, undefined, config.text),
  );
  const recordedConf = trace.meta.torchAllocConf;
  if (typeof recordedConf !== 'string') {
    // A profiler trace, or a snapshot of PyTorch before about 2.1, records PyTorch's figures but
    // not its settings: the defaults stand in, and the fidelity line says they were assumed.
    const defaults = base.find((row) => row.config === '');
    const recorded =
      trace.meta.format === 'torch-profiler' || trace.meta.format === 'torch-snapshot';
    return recorded && defaults ? { extraRows, recordedRow: defaults.name } : { extraRows };
  }
  let settings: AllocatorSettings;
  try {
    settings = parseAllocConf(recordedConf);
  } catch {
    return { extraRows }; // settings this pool cannot model: no recorded row
  }
  const canonical = formatAllocConf(settings);
  const same = [...base, ...extraRows].find(
    (row) => row.config !== undefined && canonicalOf(row.config) === canonical,
  );
  if (same) return { extraRows, recordedRow: same.name };
  const row = cachingRow('caching-recorded', settings, undefined, recordedConf);
  return { extraRows: [...extraRows, row], recordedRow: row.name };
}

/** The canonical form of a `PYTORCH_CUDA_ALLOC_CONF` string, or the string when it does not parse. */
export function canonicalOf(config: string): string {
  try {
    return formatAllocConf(parseAllocConf(config));
  } catch {
    return config;
  }
}
