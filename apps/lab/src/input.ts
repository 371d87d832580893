/**
 * Reading the trace files named on the command line, within the input limits (`--max-input`), and
 * checking before a run that the report folder (`--out`) can be written.
 */
import { existsSync, statSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import {
  DEFAULT_MAX_EVENTS,
  DEFAULT_MAX_INPUT_BYTES,
  peakLiveBytes,
  type ReadProgress,
  type Trace,
  type TraceFormat,
} from '@allot/workloads';
import { readTraces } from '@allot/workloads/node';
import { cardTooSmall } from './analysis/advice';
import { MAX_SIDECAR_BYTES, sidecarPath, withSidecar } from './analysis/sidecar';
import { fileErrorMeaning } from './failure';
import { UsageError } from './options';
import { formatBytes } from './units';

/** What {@link readTraceFiles} needs of the options. */
export interface InputOptions {
  readonly format: TraceFormat | null;
  /** `--max-input` in bytes, or null for the default limits. */
  readonly maxInput: number | null;
  /** `--device`: the devices to replay (`cuda`, `cpu`, `all`, or names such as `cuda:1`). */
  readonly devices?: readonly string[] | null;
}

/** The device a trace was recorded on, as `--device` names it (`cuda:0`, `cpu:-1`), or null. */
function deviceName(trace: Trace): string | null {
  const device = trace.meta.device;
  if (typeof device === 'number') return `cuda:${device}`;
  return typeof device === 'string' ? device : null;
}

/** Whether `trace` is on one of the `wanted` devices (`all`, a kind such as `cuda`, or a name). */
function onDevice(trace: Trace, wanted: readonly string[]): boolean {
  const name = deviceName(trace);
  return wanted.some(
    (device) =>
      device === 'all' || (name !== null && (name === device || name.startsWith(`${device}:`))),
  );
}

/**
 * The input limits of one file: `--max-input` bytes, and events in proportion. Without it, the
 * readers' own defaults: a pickled snapshot streams (up to 16 GiB and 8 M events per device,
 * memory bounded by what it keeps), other formats are read whole (up to 128 MiB and 2 M events).
 */
export function inputLimits(maxInput: number | null): { maxBytes?: number; maxEvents?: number } {
  if (maxInput === null) return {};
  return {
    maxBytes: maxInput,
    maxEvents: Math.max(1, Math.round((DEFAULT_MAX_EVENTS * maxInput) / DEFAULT_MAX_INPUT_BYTES)),
  };
}

/**
 * The text of the sidecar `allot-lab record` wrote beside the snapshot at `path` (the card and the
 * per-process memory fraction: `analysis/sidecar.ts`), or null when there is none.
 */
export async function sidecarOf(path: string): Promise<string | null> {
  const beside = sidecarPath(path);
  if (beside === null) return null;
  try {
    if ((await stat(beside)).size > MAX_SIDECAR_BYTES) return null;
    return await readFile(beside, 'utf8');
  } catch {
    return null;
  }
}

/** Hears how far the reading of `file` is. */
export type ReadListener = (file: string, progress: ReadProgress) => void;

/**
 * Every trace in `files` (paths relative to `cwd`), a pickled snapshot read as a stream. A file
 * that cannot be read, is no trace, or is past a limit throws: a `TraceFormatError` naming the
 * file and where, or a file-system error with its path (both exit 2 through the lab's error
 * boundary).
 */
export async function readTraceFiles(
  files: readonly string[],
  options: InputOptions,
  cwd: string,
  onProgress?: ReadListener,
): Promise<Trace[]> {
  const traces: Trace[] = [];
  const devices = options.devices ?? null;
  for (const file of files) {
    const path = resolve(cwd, file);
    try {
      const read = await readTraces(path, {
        ...(options.format ? { format: options.format } : {}),
        ...inputLimits(options.maxInput),
        ...(devices !== null ? { allDevices: true } : {}),
        ...(onProgress
          ? { onProgress: (progress: ReadProgress) => onProgress(file, progress) }
          : {}),
      });
      const chosen = devices === null ? read : read.filter((trace) => onDevice(trace, devices));
      if (chosen.length === 0) {
        const found = read.map((trace) => deviceName(trace) ?? trace.name).join(', ');
        throw new UsageError(
          `${file} has no trace on --device ${devices!.join(',')}: it has ${found || 'none'}`,
        );
      }
      const sidecar = await sidecarOf(path);
      traces.push(...(sidecar === null ? chosen : chosen.map((t) => withSidecar(t, sidecar))));
    } catch (error) {
      const meaning = fileErrorMeaning(error);
      if (meaning !== null) throw new UsageError(`cannot read ${file}: ${meaning}`);
      throw error;
    }
  }
  return traces;
}

/**
 * Throws a UsageError when `out` (relative to `cwd`) cannot become the report folder: it is a file,
 * or a part of its path is. Checked before a run, so a long run does not end in that error.
 */
export function checkOutFolder(out: string, cwd: string): void {
  const folder = resolve(cwd, out);
  let path = folder;
  for (;;) {
    if (existsSync(path)) {
      if (!statSync(path).isDirectory()) {
        throw new UsageError(
          path === folder
            ? `--out ${out}: a file of that name is in the way (the report needs a folder)`
            : `--out ${out}: ${path} is a file, not a folder`,
        );
      }
      return;
    }
    const parent = dirname(path);
    if (parent === path) return;
    path = parent;
  }
}

/**
 * Throws a UsageError when `memory` (`--memory`, times `--fraction` when given) cannot hold the
 * trace's peak live bytes, in the words the report and the web app advise nothing with.
 */
export function checkMemoryHoldsTrace(
  trace: Trace,
  memory: number | null,
  fraction: number | null = null,
): void {
  if (memory === null) return;
  const cap = memory * (fraction ?? 1);
  const subject =
    fraction === null
      ? `--memory ${formatBytes(memory)}`
      : `--memory ${formatBytes(memory)} × --fraction ${fraction} (${formatBytes(cap)})`;
  const message = cardTooSmall(
    peakLiveBytes(trace),
    { memory: cap, fraction: null },
    subject,
    `${trace.name}'s`,
  );
  if (message !== null) throw new UsageError(message);
}
