/** Command-line options of the bench. */
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { type BenchSettings, FULL_SETTINGS, QUICK_SETTINGS } from './settings';

export const USAGE = `Usage: pnpm bench [options]   (from the repository root; builds, then runs node dist/cli.js)

Measures every allocator row on every workload, each row in its own process, and writes
bench-results/latest.json and the generated block of BENCHMARKS.md.

Options:
  --quick               fewer events, fewer runs, 4 of the real-program traces; under a minute
  --runs <n>            timed runs per (allocator, workload) and process; a process's figure is
                        their median (default 7, quick 3)
  --processes <n>       worker processes per allocator; the figure is the median of theirs
                        (default 3, quick 1)
  --allocators <list>   comma-separated rows to run (default: all), for example best-fit,bump
  --workloads <list>    comma-separated workload ids or prefixes (default: all), for example
                        mix-5k,trace:  (ids: pairs-64 pairs-4k mix-5k mix-100k training trace:<name>)
  --no-write            print only; do not write bench-results/latest.json or BENCHMARKS.md
  --json                print the results as JSON on stdout instead of the tables
  --list                list the rows and workloads, then exit
  -h, --help            show this help
`;

export interface CliOptions {
  readonly settings: BenchSettings;
  readonly allocators: string[] | null;
  readonly workloads: string[] | null;
  readonly write: boolean;
  readonly json: boolean;
  readonly list: boolean;
  readonly help: boolean;
}

/** A bad command line; the message says what is wrong. */
export class UsageError extends Error {}

/** The items of a comma-separated option, or null when it names none. */
export function list(value: string | undefined): string[] | null {
  if (value === undefined) return null;
  const items = value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  return items.length > 0 ? items : null;
}

/** The values of `argv`'s options, as `options` declares them (no positionals). @throws UsageError */
export function parseOptions<const T extends NonNullable<ParseArgsConfig['options']>>(
  argv: readonly string[],
  options: T,
): ReturnType<typeof parseArgs<{ options: T; strict: true; allowPositionals: false }>>['values'] {
  try {
    return parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/**
 * The integer an option's `text` gives, from 1 to `max`; `fallback` when the option is absent.
 * @throws UsageError
 */
export function integerOption(
  text: string | undefined,
  name: string,
  fallback: number,
  max: number,
): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > max) {
    throw new UsageError(`--${name} expects an integer from 1 to ${max}, got ${text}`);
  }
  return n;
}

/** Parses `argv` (without node and the script). */
export function parseCli(argv: readonly string[]): CliOptions {
  const values = parseOptions(argv, {
    quick: { type: 'boolean' },
    runs: { type: 'string' },
    processes: { type: 'string' },
    allocators: { type: 'string' },
    workloads: { type: 'string' },
    'no-write': { type: 'boolean' },
    json: { type: 'boolean' },
    list: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  const base = values.quick ? QUICK_SETTINGS : FULL_SETTINGS;
  const runs = integerOption(values.runs, 'runs', base.runs, 101);
  const processes = integerOption(values.processes, 'processes', base.processes, 9);
  return {
    settings: { ...base, runs, processes },
    allocators: list(values.allocators),
    workloads: list(values.workloads),
    write: !values['no-write'],
    json: values.json ?? false,
    list: values.list ?? false,
    help: values.help ?? false,
  };
}

/** The command line as a user would type it, for BENCHMARKS.md. */
export function commandLine(argv: readonly string[]): string {
  return ['pnpm bench', ...argv].join(' ');
}
