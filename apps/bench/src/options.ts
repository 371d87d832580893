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
  let runs = base.runs;
  if (values.runs !== undefined) {
    runs = Number(values.runs);
    if (!Number.isInteger(runs) || runs < 1 || runs > 101) {
      throw new UsageError(`--runs expects an integer from 1 to 101, got ${values.runs}`);
    }
  }
  let processes = base.processes;
  if (values.processes !== undefined) {
    processes = Number(values.processes);
    if (!Number.isInteger(processes) || processes < 1 || processes > 9) {
      throw new UsageError(`--processes expects an integer from 1 to 9, got ${values.processes}`);
    }
  }
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
