/**
 * `allot-lab record`'s settings, and the environment that hands them to the Python recorder in
 * every process of the job: `python/bootstrap/allot_lab_record_files.py` reads the same names.
 *
 * ```
 *  record [options] -- CMD ─► RecordOptions ─► the child's environment:
 *    PYTHONPATH=<bootstrap folder>:<the user's PYTHONPATH>   (its sitecustomize.py runs first)
 *    ALLOT_LAB_RECORD_DIR, _STATUS, _MAX_ENTRIES, _EVERY_STEPS, _EVERY_SECONDS, _STACKS
 * ```
 */
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Stacks kept with each allocator event: Python frames, Python and C++ frames, or none. */
export const STACKS = ['python', 'all', 'none'] as const;
export type Stacks = (typeof STACKS)[number];

/** What `record` runs, and how it records it. */
export interface RecordOptions {
  /** The folder the snapshots go to (relative to the current folder). */
  readonly out: string;
  /** Allocator events kept per device: PyTorch's ring buffer (`max_entries`). */
  readonly maxEntries: number;
  /** A snapshot every this many optimizer steps, or null. */
  readonly everySteps: number | null;
  /** A snapshot at the first step boundary at least this many seconds after the last, or null. */
  readonly everySeconds: number | null;
  readonly stacks: Stacks;
  /** The command and its arguments, as given after `--`. */
  readonly command: readonly string[];
}

/** `--out` of record. */
export const RECORD_OUT = 'memory-snapshots';
/** `--max-entries`: PyTorch keeps this many allocator events per device, the newest. */
export const RECORD_MAX_ENTRIES = 100_000;
/**
 * `--every-seconds` when neither it nor `--every-steps` is given: a dump takes seconds on a big
 * ring buffer, so one every five minutes stays well under 1 % of the job's time.
 */
export const RECORD_EVERY_SECONDS = 300;

/** The options only record takes. */
export const RECORD_OPTIONS = ['--max-entries', '--every-steps', '--every-seconds', '--stacks'];

/** `text` as a whole number of at least `least`, or null. */
function whole(text: string, least: number): number | null {
  const value = Number(text);
  return /^\d+$/.test(text) && Number.isSafeInteger(value) && value >= least ? value : null;
}

/**
 * Record's options from the values given (`--out` and the options above, by name), and the
 * command after `--`; a message saying what is wrong with a value otherwise.
 */
export function recordOptionsOf(
  values: ReadonlyMap<string, string>,
  command: readonly string[],
): RecordOptions | string {
  const stacks = values.get('--stacks') ?? 'python';
  if (!(STACKS as readonly string[]).includes(stacks)) {
    return `--stacks expects ${STACKS.join(', ')}, got '${stacks}'`;
  }
  const seconds = values.get('--every-seconds');
  const everySeconds = seconds === undefined ? null : Number(seconds);
  if (seconds !== undefined && !/^(\d+\.?\d*|\.\d+)$/.test(seconds)) {
    return `--every-seconds expects a number of seconds, got '${seconds}'`;
  }
  const steps = values.get('--every-steps');
  const everySteps = steps === undefined ? null : whole(steps, 0);
  if (steps !== undefined && everySteps === null) {
    return `--every-steps expects a whole number of steps, got '${steps}'`;
  }
  const entries = values.get('--max-entries');
  const maxEntries = entries === undefined ? RECORD_MAX_ENTRIES : whole(entries, 1);
  if (maxEntries === null) {
    return `--max-entries expects a whole number of at least 1, got '${entries}'`;
  }
  const neither = steps === undefined && seconds === undefined;
  return {
    out: values.get('--out') ?? RECORD_OUT,
    maxEntries,
    everySteps: everySteps || null,
    everySeconds: neither ? RECORD_EVERY_SECONDS : everySeconds || null,
    stacks: stacks as Stacks,
    command,
  };
}

/** The environment variables the recorder reads. */
export const RECORD_ENV = {
  dir: 'ALLOT_LAB_RECORD_DIR',
  status: 'ALLOT_LAB_RECORD_STATUS',
  maxEntries: 'ALLOT_LAB_RECORD_MAX_ENTRIES',
  everySteps: 'ALLOT_LAB_RECORD_EVERY_STEPS',
  everySeconds: 'ALLOT_LAB_RECORD_EVERY_SECONDS',
  stacks: 'ALLOT_LAB_RECORD_STACKS',
} as const;

/**
 * The folder of the recorder's `sitecustomize.py`: `python/bootstrap` of the package, found from the
 * built CLI (`dist/`) or from the sources (`src/record/`); null when it is missing.
 */
export function bootstrapFolder(): string | null {
  for (const url of [
    new URL('../python/bootstrap/', import.meta.url),
    new URL('../../python/bootstrap/', import.meta.url),
  ]) {
    const folder = fileURLToPath(url);
    if (existsSync(join(folder, 'sitecustomize.py'))) return folder;
  }
  return null;
}

/** Where the recorder writes: the snapshots, the status records, and its own folder. */
export interface RecordPaths {
  /** The snapshots' folder (absolute). */
  readonly out: string;
  /** The status records' folder (absolute), read and removed by record at the end. */
  readonly status: string;
  readonly bootstrap: string;
}

/** The child's environment: `base` with the recorder first on PYTHONPATH and its settings. */
export function recordEnvironment(
  options: RecordOptions,
  paths: RecordPaths,
  base: NodeJS.ProcessEnv,
): NodeJS.ProcessEnv {
  const pythonPath = base.PYTHONPATH;
  return {
    ...base,
    PYTHONPATH:
      pythonPath === undefined || pythonPath === ''
        ? paths.bootstrap
        : `${paths.bootstrap}${delimiter}${pythonPath}`,
    [RECORD_ENV.dir]: paths.out,
    [RECORD_ENV.status]: paths.status,
    [RECORD_ENV.maxEntries]: String(options.maxEntries),
    [RECORD_ENV.everySteps]: String(options.everySteps ?? 0),
    [RECORD_ENV.everySeconds]: String(options.everySeconds ?? 0),
    [RECORD_ENV.stacks]: options.stacks,
  };
}
