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

/** The text of `allot-lab --help`. */
export const HELP = `allot-lab: replay allocation workloads and real traces through allot's allocators, side by side.

Usage
  allot-lab [options]                  built-in workloads: training loop, inference serving, larson churn
  allot-lab replay FILE... [options]   replay trace files (format detected from the content)
  allot-lab tune [FILE] [options]      search the caching pool's PYTORCH_CUDA_ALLOC_CONF for the lowest
                                       peak reserved memory (no FILE: the built-in training workload)
  allot-lab replay|tune DIR [options]  a job: one snapshot per rank in DIR (or a glob, or several
                                       files named by rank), one row per rank, one setting for all
  allot-lab merge RESULTS.json...      one job's answer from the --json outputs of its shards
  allot-lab oom FILE... [options]      the post-mortem of a recorded out-of-memory error: reproduced
                                       at the wall PyTorch hit, explained, and the settings that avoid it
  allot-lab capacity [FILE] [options]  per allocator, the smallest capacity without a failed allocation
  allot-lab serve [FILE...] [options]  the lab in a browser on this machine: drop a snapshot, change the
                                       settings, see the replay; FILEs open in the page; nothing is uploaded
  allot-lab record [options] -- CMD   run a PyTorch job's command unchanged (python train.py,
                                       torchrun ...) and dump each rank's snapshots into --out, at
                                       steps, at exit and at an out-of-memory error; then replay or
                                       tune that folder
  allot-lab watch DIR [options]        follow the folder a running job writes its snapshots to: a row per
                                       rank as its files land (what it holds, its peaks, the job's advice
                                       so far), and the post-mortem the moment a rank runs out of memory
  allot-lab list                       allocators and workloads
  allot-lab help                       this text

Options
  --allocators LIST  these rows, comma-separated (default: ${ROW_NAMES.join(', ')};
                     also ${ALL_ROW_NAMES.filter((name) => !ROW_NAMES.includes(name)).join(', ')})
  --workloads LIST   only these built-in workloads (default: all): ${WORKLOAD_IDS.join(', ')}
  --capacity SIZE    give every allocator SIZE bytes (80GiB, 512MiB, 1048576): ranges get a range of
                     SIZE, pools a source that refuses past SIZE. Without it,
                     ranges get 4 x peak live bytes and pools an unlimited source, so nothing fails
  --config CONF      replay: one more caching row with this PYTORCH_CUDA_ALLOC_CONF (repeatable);
                     a PyTorch snapshot always gets a row with its own recorded settings too
  --memory SIZE      the GPU's total memory (replay, tune, watch). PyTorch's cudaMalloc fails beyond it.
                     tune without it: the trace's figure if it records one, else 80GiB, stated
  --fraction F       the per-process memory fraction (torch.cuda.set_per_process_memory_fraction),
                     in (0, 1]: pools may reserve at most F x memory, and garbage_collection_threshold
                     acts only under a fraction, as in PyTorch (default: none)
  --format NAME      skip format detection: ${TRACE_FORMATS.join(', ')}
  --out DIR          where the report goes (default: lab-report, relative to the current folder);
                     record: where the snapshots go (default: memory-snapshots), a folder that
                     holds no snapshots yet
  --export LIST      run, replay: also write each allocator row's state at the peak of live bytes
                     under DIR/exports, comma-separated or repeated: memory-viz (a PyTorch snapshot
                     pickle that https://pytorch.org/memory_viz opens: segments at the peak and the
                     trace up to it), vma (a VMA JSON dump, for GpuMemDumpVis)
  --no-report        do not write DIR/index.html and DIR/results.json
  --json             print the results as JSON on stdout (progress stays on stderr)
  --seed N           seed of the built-in workloads (default 1)
  --quick            smaller built-in workloads (fewer steps, requests and operations)
  --quiet            no progress output
  --max-input SIZE   the input limit of each trace file: the most bytes read, and the most after
                     gunzip (default 16GiB for a pickled snapshot, which is read as a stream and
                     keeps only what the replay uses; 128MiB for other formats); the event limit
                     (8 M events per device of a pickled snapshot, 2 M otherwise) and the limits
                     on JSON values and on what a pickle holds scale with it. A file past a limit
                     exits 2
  --device LIST      profiler traces: the devices to replay, comma-separated: all, cuda, hip, cpu,
                     or names such as cuda:1 (default: the GPUs PyTorch's caching allocator
                     manages: CUDA, and HIP on ROCm)
  --jobs N           a job: ranks read and replayed at once, one worker thread each (default: the
                     machine's cores)
  --step N           a job: the snapshots of step N (default: the newest step the folder holds)
  --shard I/N        a job: only the I-th of N equal shares of the ranks (I from 0), for one machine
                     of many; allot-lab merge joins their --json outputs
  --force            tune a job whose ranks were recorded with different settings as one
  --port N           serve: the port to listen on (default: a free one)
  --host ADDRESS     serve: the address to listen on (default: 127.0.0.1, this machine only)
  --every-steps N    record: a snapshot every N optimizer steps (0: none)
  --every-seconds S  record: a snapshot at the first optimizer step S seconds after the last (0:
                     none; default 300 when neither this nor --every-steps is given)
  --max-entries N    record: allocator events kept per device, the newest (default 100000)
  --stacks WHICH     record: the stacks kept with each event: python (default), all (with C++
                     frames) or none
  --watch DIR        serve: follow DIR as watch does, for the page and for Prometheus:
                     /watch/updates (Server-Sent Events), /watch/state (JSON), /metrics
  --once             watch: read the snapshots the folder holds, then exit (for scripts)
  --interval S       watch, serve --watch: seconds between two looks at the folder (default 2); it is
                     polled, as fs.watch is not told of files other machines write to a network file
                     system
  --debug            on a failure, print its stack trace too
  -V, --version      print the version
  -h, --help         this text

Trace formats (replay, tune, capacity; gzip-compressed files are read too)
  PyTorch memory snapshot  torch.cuda.memory._dump_snapshot() pickle, or its JSON form: device_traces
                           replayed per device (alloc, free_completed, streams); PyTorch's own segment
                           decisions are shown beside ours
  PyTorch profiler trace   Chrome trace JSON with [memory] events (profile_memory=True), per device,
                           in timestamp order; PyTorch's Total Reserved is shown beside ours
  RMM log                  logging_resource_adaptor CSV: Thread,Time,Action,Pointer,Size,Stream
  malloc trace             Alloc(n), / Free(k), lines (../shared/traces/malloc-real-programs)
  CSV                      op,id,size[,alignment] with op alloc or free

Figures
  peak reserved  ranges: the high-water mark (the capacity a range must offer); pools: bytes held
                 from the source. ratio = peak reserved / peak live bytes
  ext. frag      1 - largest free block / total free bytes, at the event of peak live bytes
  ns/event       median time per event over repeated replays (after a warm-up)

Exit status
  0  every allocation succeeded
  1  the run completed but allocations failed (an allocator ran out at this capacity)
  2  bad input, reported on one line naming the file and the line, event or byte offset: an unknown
     option or value; a file that is missing, unreadable, not a trace, malformed, truncated or
     damaged (gzip, pickle, JSON); a file past the input limits (--max-input); an --out that
     cannot be a folder; sizes no allocator can be given
  3  a bug in allot-lab (run again with --debug for the stack)
  record exits as its command did: the command's status, 128 + n when signal n ended it, 127
  when the command is not found, 126 when it cannot be run (2 and 3 as above, before it runs)

Limits (per trace file; --max-input lowers or raises them together)
  A pickled snapshot streams: 16 GiB read and after gunzip, 8 M events per device; memory follows
  what is kept (37 bytes an entry, each distinct frame and stack once), bounded by the pickle
  limits: 24 M values and 400 M memo entries held, strings of 64 MiB, nesting 1,000 deep in the
  segments and settings, integers of 1 KiB. Other files: 128 MiB read, and 128 MiB after gunzip;
  2 M events per trace; 2 M JSON objects and arrays. Within them reading a hostile file stays under
  about 1.5 GB of memory
`;
