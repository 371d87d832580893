/**
 * Command-line arguments of `allot-lab`: the command, its files and options, checked before anything
 * runs. Every mistake is a {@link UsageError} (exit status 2) that says what was expected.
 */
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { type AllocatorSettings, parseAllocConf } from '@allot/caching';
import { TRACE_FORMATS, type TraceFormat } from '@allot/workloads';
import { ALL_ROW_NAMES, ROW_NAMES } from './analysis/registry';
import { RECORD_OPTIONS, type RecordOptions, recordOptionsOf } from './record/settings';
import { parseSize } from './units';
import { WORKLOAD_IDS } from './workloads';

/** The commands. `run` is the default (no command given). */
export type Command =
  | 'run'
  | 'replay'
  | 'tune'
  | 'capacity'
  | 'merge'
  | 'oom'
  | 'serve'
  | 'record'
  | 'watch'
  | 'help'
  | 'list'
  | 'version';

/** Parsed arguments. */
export interface LabOptions {
  readonly command: Command;
  readonly files: readonly string[];
  readonly json: boolean;
  /** Row names, in table order. */
  readonly allocators: readonly string[];
  /** Built-in workload ids (`run`). */
  readonly workloads: readonly string[];
  /** `--capacity` in bytes, or null. */
  readonly capacity: number | null;
  /** `--memory` in bytes (the GPU's total memory), or null. */
  readonly memory: number | null;
  /** `--fraction`: the per-process memory fraction, or null when none is set. */
  readonly fraction: number | null;
  /** `--config` values (replay): one caching row each, settings parsed at this edge. */
  readonly configs: readonly ConfigOption[];
  readonly out: string;
  readonly report: boolean;
  readonly seed: number;
  readonly quick: boolean;
  readonly format: TraceFormat | null;
  readonly quiet: boolean;
  /** `--max-input` in bytes: the input limit of each trace file, or null for the default. */
  readonly maxInput: number | null;
  /** `--debug`: print the stack of a failure. */
  readonly debug: boolean;
  /** `help`: the command whose help to print (`replay --help`, `help replay`), or none: all of it. */
  readonly helpFor?: Command;
  /** `--device`: devices to replay (`all`, `cuda`, `cpu`, `cuda:1`, ...), or null for CUDA only. */
  readonly devices: readonly string[] | null;
  /** `--export` formats (run, replay): files per allocator row under DIR/exports. */
  readonly exports: readonly ExportFormat[];
  /** `--jobs N`: worker threads of a job (one rank each). @defaultValue the machine's cores */
  readonly jobs: number;
  /** `--step N`: the step of a job's snapshots to read, or null for the newest. */
  readonly step: number | null;
  /** `--shard I/N`: this machine's share of a job's ranks, or null for all of them. */
  readonly shard: Shard | null;
  /** `--force`: tune a job's ranks as one although they were recorded with different settings. */
  readonly force: boolean;
  /** `serve`: the address to listen on (`--host`, default 127.0.0.1) and the port (0: a free one). */
  readonly host: string;
  readonly port: number;
  /** `record`: what to run and how to record it (set for record only). */
  readonly record?: RecordOptions;
  /** `watch --once`: read what the folder holds, then exit. */
  readonly once: boolean;
  /** `watch`, `serve --watch`: seconds between two looks at the folder. @defaultValue 2 */
  readonly interval: number;
  /** `serve --watch DIR`: the folder a running job writes its snapshots to, or null. */
  readonly watch: string | null;
}

/** `--shard I/N`: the I-th of N equal runs of a job's ranks (I from 0). */
export interface Shard {
  readonly index: number;
  readonly count: number;
}

/** `--export` formats: a PyTorch snapshot pickle (memory_viz) and a VMA JSON dump, per row. */
export const EXPORT_FORMATS = ['memory-viz', 'vma'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** A `--config` value: the string as given and its settings. */
export interface ConfigOption {
  readonly text: string;
  readonly settings: AllocatorSettings;
}

/** Bad arguments: exit status 2. */
export class UsageError extends Error {}

/** Exit statuses. */
export const EXIT_OK = 0;
export const EXIT_FAILED_ALLOCATIONS = 1;
export const EXIT_BAD_INPUT = 2;

const COMMANDS: readonly Command[] = [
  'run',
  'replay',
  'tune',
  'capacity',
  'merge',
  'oom',
  'serve',
  'record',
  'watch',
  'help',
  'list',
];

/** The options, in `node:util` `parseArgs` terms. */
const OPTIONS = {
  allocators: { type: 'string' },
  workloads: { type: 'string' },
  capacity: { type: 'string' },
  memory: { type: 'string' },
  fraction: { type: 'string' },
  config: { type: 'string', multiple: true },
  export: { type: 'string', multiple: true },
  out: { type: 'string' },
  seed: { type: 'string' },
  format: { type: 'string' },
  'max-input': { type: 'string' },
  device: { type: 'string' },
  jobs: { type: 'string' },
  step: { type: 'string' },
  shard: { type: 'string' },
  force: { type: 'boolean' },
  host: { type: 'string' },
  port: { type: 'string' },
  'max-entries': { type: 'string' },
  'every-steps': { type: 'string' },
  'every-seconds': { type: 'string' },
  stacks: { type: 'string' },
  watch: { type: 'string' },
  interval: { type: 'string' },
  once: { type: 'boolean' },
  json: { type: 'boolean' },
  quick: { type: 'boolean' },
  'no-report': { type: 'boolean' },
  quiet: { type: 'boolean' },
  debug: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'V' },
} as const;

/** `parseArgs`'s own error, as one of ours that names the argument at fault. */
function usageErrorOf(error: unknown, argv: readonly string[]): UsageError {
  const code = (error as { code?: string }).code;
  const message = (error as Error).message;
  const name = /'(-[^' ]+)/.exec(message)?.[1] ?? '';
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    return new UsageError(`unknown option '${name}' (allot-lab --help lists them)`);
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && /does not take an argument/.test(message)) {
    const given = argv.find((arg) => arg.startsWith(`${name}=`)) ?? name;
    return new UsageError(`unknown option '${given}' (allot-lab --help lists them)`);
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE')
    return new UsageError(`${name} needs a value`);
  return new UsageError(message);
}

function list(value: string, known: readonly string[], what: string): string[] {
  const items = value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  if (items.length === 0) throw new UsageError(`--${what} needs a comma-separated list`);
  for (const item of items) {
    if (!known.includes(item)) {
      throw new UsageError(
        `unknown ${what.replace(/s$/, '')} '${item}': expected one of ${known.join(', ')}`,
      );
    }
  }
  // Keep table order, drop repeats.
  return known.filter((name) => items.includes(name));
}

function size(option: string, value: string): number {
  const bytes = parseSize(value);
  if (bytes === null) {
    throw new UsageError(
      `${option} expects a size such as 80GiB, 512MiB or 1048576 (bytes), got '${value}'`,
    );
  }
  return bytes;
}

/** `--device LIST`: `all`, `cuda`, `hip`, `cpu`, or device names (`cuda:1`, `cpu:-1`). */
function devicesOf(text: string | undefined): string[] | null {
  if (text === undefined) return null;
  const devices = text
    .split(',')
    .map((device) => device.trim())
    .filter((device) => device !== '');
  for (const device of devices) {
    if (!/^(all|[a-z][a-z0-9-]*(:-?\d+)?)$/.test(device)) {
      throw new UsageError(
        `--device expects all, cuda, hip, cpu or names such as cuda:1, got '${device}'`,
      );
    }
  }
  if (devices.length === 0) throw new UsageError('--device needs a comma-separated list');
  return devices;
}

/** The command `COMMAND --help` or `help COMMAND` asks about, if any. */
function helpTopic(positionals: readonly string[]): Pick<LabOptions, 'helpFor'> {
  const [first, second] = positionals;
  const topic = first === 'help' ? second : first;
  return topic !== undefined && topic !== 'help' && (COMMANDS as readonly string[]).includes(topic)
    ? { helpFor: topic as Command }
    : {};
}

/**
 * `record [options] -- CMD ARGS...`: the lab's arguments before the first `--` and the command
 * after it, untouched; null for other commands (whose `--` ends the options as usual).
 * @throws UsageError for record without a command after `--`
 */
function recordSplit(argv: readonly string[]): { head: string[]; command: string[] } | null {
  const split = argv.indexOf('--');
  const head = split < 0 ? [...argv] : argv.slice(0, split);
  const loose = parseArgs({ args: head, options: OPTIONS, allowPositionals: true, strict: false });
  if (loose.positionals[0] !== 'record') return null;
  const command = split < 0 ? [] : argv.slice(split + 1);
  if (command.length === 0 && loose.values.help !== true) {
    throw new UsageError(
      'record needs the command to run after --: allot-lab record [options] -- python train.py',
    );
  }
  return { head, command };
}

/** Parses `argv` (without node and the script). @throws UsageError */
export function parseArguments(argv: readonly string[]): LabOptions {
  const record = recordSplit(argv);
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    const args = record?.head ?? [...argv];
    parsed = parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw usageErrorOf(error, argv);
  }
  const given = parsed.values;
  const values = new Map<string, string>();
  for (const [name, value] of Object.entries(given)) {
    if (typeof value === 'string') values.set(`--${name}`, value);
  }
  const flags = new Set(
    Object.entries(given)
      .filter(([, value]) => value === true)
      .map(([name]) => `--${name}`),
  );
  const positional = [...parsed.positionals];
  const repeated = given.config ?? [];
  let command: Command = 'run';
  if (positional.length > 0 && (COMMANDS as readonly string[]).includes(positional[0]!)) {
    command = positional.shift() as Command;
  }
  if (flags.has('--version')) command = 'version';
  if (flags.has('--help')) command = 'help';
  if (command === 'run' && positional.length > 0) {
    throw new UsageError(
      `unknown command '${positional[0]}': expected replay, tune, oom, capacity, merge, serve, record, watch, list or help (or no command for the built-in workloads)`,
    );
  }
  if (command === 'replay' && positional.length === 0) {
    throw new UsageError('replay needs at least one trace file: allot-lab replay FILE...');
  }
  if (command === 'oom' && positional.length === 0) {
    throw new UsageError(
      'oom needs a snapshot that recorded an out-of-memory error: allot-lab oom FILE...',
    );
  }
  if (command === 'record' && positional.length > 0) {
    throw new UsageError(
      `record runs the command after --, not '${positional[0]}': allot-lab record [options] -- ${positional.join(' ')}`,
    );
  }
  if (command === 'capacity' && positional.length > 1) {
    throw new UsageError('capacity takes one trace file (or none for the training workload)');
  }
  if (command === 'watch' && positional.length !== 1) {
    throw new UsageError(
      'watch takes one folder, the one a job writes its snapshots to: allot-lab watch DIR',
    );
  }
  if (command === 'merge' && positional.length === 0) {
    throw new UsageError(
      "merge needs the --json outputs of a job's shards: allot-lab merge RESULTS.json...",
    );
  }
  const job = jobOptions(command, values, flags);
  const seedText = values.get('--seed');
  let seed = 1;
  if (seedText !== undefined) {
    seed = Number(seedText);
    if (!/^\d+$/.test(seedText) || !Number.isSafeInteger(seed)) {
      throw new UsageError(`--seed expects a non-negative integer, got '${seedText}'`);
    }
  }
  const format = values.get('--format');
  if (format !== undefined && !(TRACE_FORMATS as readonly string[]).includes(format)) {
    throw new UsageError(`--format expects one of ${TRACE_FORMATS.join(', ')}, got '${format}'`);
  }
  const fractionText = values.get('--fraction');
  let fraction: number | null = null;
  if (fractionText !== undefined) {
    fraction = Number(fractionText);
    if (!/^(\d+\.?\d*|\.\d+)$/.test(fractionText) || !(fraction > 0 && fraction <= 1)) {
      throw new UsageError(`--fraction expects a number in (0, 1], got '${fractionText}'`);
    }
    if ((command === 'replay' || command === 'oom') && !values.has('--memory')) {
      throw new UsageError(
        "--fraction needs --memory, the GPU's total memory it is a fraction of (say --memory 80GiB)",
      );
    }
  }
  if (repeated.length > 0 && command !== 'replay') {
    throw new UsageError('--config is an option of replay (tune searches the settings itself)');
  }
  const configs = repeated.map((text) => {
    try {
      return { text, settings: parseAllocConf(text) };
    } catch (error) {
      throw new UsageError(`--config '${text}': ${(error as Error).message}`);
    }
  });
  const exportTexts = given.export ?? [];
  if (exportTexts.length > 0 && command !== 'run' && command !== 'replay') {
    throw new UsageError('--export is an option of replay and of the built-in workloads');
  }
  const exports = exportTexts.flatMap((text) =>
    list(text, EXPORT_FORMATS, 'export'),
  ) as ExportFormat[];
  const out = values.get('--out') ?? 'lab-report';
  if (out.trim() === '') throw new UsageError('--out needs a folder');
  return {
    command,
    files: positional,
    json: flags.has('--json'),
    allocators: values.has('--allocators')
      ? list(values.get('--allocators')!, ALL_ROW_NAMES, 'allocators')
      : ROW_NAMES,
    workloads: values.has('--workloads')
      ? list(values.get('--workloads')!, WORKLOAD_IDS, 'workloads')
      : [...WORKLOAD_IDS],
    capacity: values.has('--capacity') ? size('--capacity', values.get('--capacity')!) : null,
    memory: values.has('--memory') ? size('--memory', values.get('--memory')!) : null,
    fraction,
    configs,
    out,
    report: !flags.has('--no-report'),
    seed,
    quick: flags.has('--quick'),
    format: (format as TraceFormat | undefined) ?? null,
    quiet: flags.has('--quiet'),
    maxInput: values.has('--max-input') ? size('--max-input', values.get('--max-input')!) : null,
    debug: flags.has('--debug'),
    ...(command === 'help' ? helpTopic(parsed.positionals) : {}),
    devices: devicesOf(values.get('--device')),
    exports: EXPORT_FORMATS.filter((format) => exports.includes(format)),
    ...job,
    ...serveOptions(command, values),
    ...recordOptions(command, values, record?.command ?? []),
    ...watchOptions(command, values, flags),
  };
}

/** `--once`, `--interval` (watch, and serve with `--watch`) and serve's `--watch DIR`. */
function watchOptions(
  command: Command,
  values: ReadonlyMap<string, string>,
  flags: ReadonlySet<string>,
): Pick<LabOptions, 'once' | 'interval' | 'watch'> {
  const watch = values.get('--watch') ?? null;
  if (watch !== null && command !== 'serve') {
    throw new UsageError('--watch is an option of serve (watch takes its folder as an argument)');
  }
  if (watch !== null && watch.trim() === '') throw new UsageError('--watch needs a folder');
  if (flags.has('--once') && command !== 'watch')
    throw new UsageError('--once is an option of watch');
  const text = values.get('--interval');
  if (text !== undefined && command !== 'watch' && watch === null) {
    throw new UsageError('--interval is an option of watch and serve --watch');
  }
  let interval = 2;
  if (text !== undefined) {
    interval = Number(text);
    if (!/^(\d+\.?\d*|\.\d+)$/.test(text) || !(interval >= 0.01 && interval <= 3600)) {
      throw new UsageError(`--interval expects seconds from 0.01 to 3600, got '${text}'`);
    }
  }
  return { once: flags.has('--once'), interval, watch };
}

/** A whole number from `text`, at least `least`, else a UsageError naming `option`. */
function wholeNumber(option: string, text: string, least: number): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < least) {
    throw new UsageError(`${option} expects a whole number of at least ${least}, got '${text}'`);
  }
  return value;
}

/** The options of a job (`--jobs`, `--step`, `--shard`, `--force`): replay and tune only. */
function jobOptions(
  command: Command,
  values: ReadonlyMap<string, string>,
  flags: ReadonlySet<string>,
): Pick<LabOptions, 'jobs' | 'step' | 'shard' | 'force'> {
  const given = ['--jobs', '--step', '--shard'].filter((name) => values.has(name));
  if (flags.has('--force')) given.push('--force');
  const jobCommand = command === 'replay' || command === 'tune';
  if (
    given.length > 0 &&
    !jobCommand &&
    !(command === 'merge' && given.every((g) => g === '--force'))
  ) {
    throw new UsageError(`${given[0]} is an option of replay and tune (a job of many ranks)`);
  }
  const shardText = values.get('--shard');
  let shard: Shard | null = null;
  if (shardText !== undefined) {
    const match = /^(\d+)\/(\d+)$/.exec(shardText);
    const index = Number(match?.[1]);
    const count = Number(match?.[2]);
    if (!match || !(count >= 1) || !(index < count)) {
      throw new UsageError(
        `--shard expects I/N with 0 <= I < N (this run's share of the ranks, I from 0), got '${shardText}'`,
      );
    }
    shard = { index, count };
  }
  const jobsText = values.get('--jobs');
  const stepText = values.get('--step');
  return {
    jobs: jobsText === undefined ? availableParallelism() : wholeNumber('--jobs', jobsText, 1),
    step: stepText === undefined ? null : wholeNumber('--step', stepText, 0),
    shard,
    force: flags.has('--force'),
  };
}

/** `--host` and `--port`, options of serve only. */
function serveOptions(
  command: Command,
  values: ReadonlyMap<string, string>,
): Pick<LabOptions, 'host' | 'port'> {
  const host = values.get('--host');
  const port = values.get('--port');
  if ((host !== undefined || port !== undefined) && command !== 'serve') {
    throw new UsageError(`${host !== undefined ? '--host' : '--port'} is an option of serve`);
  }
  if (host !== undefined && !/^[\w.:-]+$/.test(host)) {
    throw new UsageError(`--host expects an address or a host name, got '${host}'`);
  }
  const number = port === undefined ? 0 : wholeNumber('--port', port, 0);
  if (number > 65535) throw new UsageError(`--port expects 0 to 65535, got '${port}'`);
  return { host: host ?? '127.0.0.1', port: number };
}

/** `record`'s options and its command; an error for its options given to another command. */
function recordOptions(
  command: Command,
  values: ReadonlyMap<string, string>,
  run: readonly string[],
): Pick<LabOptions, 'record'> {
  const given = RECORD_OPTIONS.filter((name) => values.has(name));
  if (command !== 'record') {
    if (given.length > 0) throw new UsageError(`${given[0]} is an option of record`);
    return {};
  }
  const record = recordOptionsOf(values, run);
  if (typeof record === 'string') throw new UsageError(record);
  return { record };
}
