/**
 * `node apps/bench/dist/snapshot-read.js`: how the lab reads big PyTorch snapshots. For each size
 * (and stack depth) it generates a snapshot into a temporary folder, then times, alternately in the
 * same run, the lab replaying it and CPython's `pickle.load` of it, and prints a markdown table of
 * the medians. A failed lab run (refused input, crash, timeout) is a row with its exit status and
 * the last line of its stderr. Files are deleted after their row unless `--keep`.
 *
 * ```
 *  for each size × depth: generate ─► lab, python, lab, python, … (--runs each) ─► row ─► delete
 * ```
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { UnpickledValue } from '@allot/pickle';
import type { TorchSnapshotOptions } from '@allot/workloads';
import { type ChildUsage, GNU_TIME, measureChild, usageReporter } from './child-usage';
import { runScript } from './cli-support';
import { parseOptions } from './options';
import {
  formatMegabytes,
  parseByteSize,
  readBaseSnapshot,
  writeSnapshotFile,
} from './snapshot-file';
import { markdownTable, type ReaderRuns, type SnapshotRow } from './snapshot-report';

const USAGE = `Usage: node apps/bench/dist/snapshot-read.js [options]

Generates PyTorch snapshots of several sizes into a temporary folder and measures, alternately,
the lab reading each (node apps/lab/dist/cli.js replay FILE --allocators caching) and CPython's
pickle.load of it: wall time and peak RSS, medians of --runs. Prints a markdown table.

Options:
  --sizes LIST          sizes of uncompressed pickle (default 40MB,250MB,1GB)
  --depths LIST         stack depths; synthetic: one file per size and depth (default 16);
                        with --base: one file per depth instead of per size
  --shared-frames F     share of frames that are cached frame dicts, in [0, 1] (default 1)
  --base                add stacks to the real H100 snapshot (../shared/traces/pytorch-h100/
                        infer-default.pickle.gz) instead of a synthetic stream; the depth sets the size
  --base-file FILE      the same with another snapshot
  --seed N              seed of the generated events and stacks (default 1)
  --runs N              runs of each reader per file; the figures are medians (default 3)
  --lab "ARGS"          the lab command to run, {file} standing for the file
                        (default "replay {file} --allocators caching")
  --no-python           do not run python3
  --timeout SECONDS     a run past this is killed and reported as failed (default 1800)
  --dir DIR             where the files go (default: a new folder in the system's temp folder;
                        never inside the repository)
  --keep                keep the files (and the folder) afterwards
  --json                print the rows as JSON after the table
  -h, --help            this text
`;

const DEFAULT_LAB = 'replay {file} --allocators caching';
const PYTHON_LOAD = [
  'import pickle, resource, sys, time',
  'started = time.perf_counter()',
  'with open(sys.argv[1], "rb") as f: pickle.load(f)',
  'print(time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)',
].join('\n');

/** The repository root: the nearest folder above this module that holds pnpm-workspace.yaml. */
function repositoryRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'pnpm-workspace.yaml'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find the repository root (pnpm-workspace.yaml)');
    dir = parent;
  }
  return dir;
}

function list(text: string, parse: (item: string) => number | null, what: string): number[] {
  return text.split(',').map((item) => {
    const value = parse(item.trim());
    if (value === null) throw new Error(`${what}: cannot read ${JSON.stringify(item)}`);
    return value;
  });
}

function wholeNumber(text: string): number | null {
  const value = Number(text);
  return text !== '' && Number.isSafeInteger(value) && value >= 0 ? value : null;
}

function options(argv: string[]) {
  return parseOptions(argv, {
    sizes: { type: 'string', default: '40MB,250MB,1GB' },
    depths: { type: 'string' },
    'shared-frames': { type: 'string', default: '1' },
    base: { type: 'boolean' },
    'base-file': { type: 'string' },
    seed: { type: 'string', default: '1' },
    runs: { type: 'string', default: '3' },
    lab: { type: 'string', default: DEFAULT_LAB },
    'no-python': { type: 'boolean' },
    timeout: { type: 'string', default: '1800' },
    dir: { type: 'string' },
    keep: { type: 'boolean' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
}

/** What to generate: one file per entry. */
interface Plan {
  readonly name: string;
  readonly options: TorchSnapshotOptions;
}

function plans(
  values: ReturnType<typeof options>,
  base: UnpickledValue | undefined,
  depths: number[] | null,
): Plan[] {
  const sharedFrames = Number(values['shared-frames']);
  const seed = wholeNumber(values.seed) ?? 1;
  const sizes = list(values.sizes, parseByteSize, '--sizes');
  const common = { sharedFrames, seed, base };
  const kind = base === undefined ? 'synthetic' : 'base';
  const shared = `s${sharedFrames}`;
  if (base !== undefined && depths !== null) {
    return depths.map((depth) => ({
      name: `${kind}-d${depth}-${shared}`,
      options: { ...common, depth },
    }));
  }
  // Synthetic files are made to size at each depth; a base is made to size by its depth.
  return sizes.flatMap((targetBytes) => {
    const size = formatMegabytes(targetBytes).replace(' ', '');
    if (base !== undefined)
      return [{ name: `${kind}-${size}-${shared}`, options: { ...common, targetBytes } }];
    return (depths ?? [16]).map((depth) => ({
      name: `${kind}-${size}-d${depth}-${shared}`,
      options: { ...common, targetBytes, depth },
    }));
  });
}

/** A reader's runs on one file: stops at its first failure. */
class Runs {
  readonly runs: ChildUsage[] = [];
  readonly workSeconds: number[] = [];
  failure: ChildUsage | null = null;

  add(usage: ChildUsage, work?: number): void {
    if (usage.exitCode !== 0) this.failure ??= usage;
    else {
      this.runs.push(usage);
      if (work !== undefined) this.workSeconds.push(work);
    }
  }

  result(): ReaderRuns {
    const { runs, failure, workSeconds } = this;
    return workSeconds.length > 0 ? { runs, failure, workSeconds } : { runs, failure };
  }
}

async function main(argv: string[]): Promise<number> {
  const values = options(argv);
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const root = repositoryRoot();
  const lab = join(root, 'apps', 'lab', 'dist', 'cli.js');
  const runs = wholeNumber(values.runs);
  const timeoutSeconds = wholeNumber(values.timeout);
  if (runs === null || runs < 1)
    throw new Error(`--runs expects an integer ≥ 1, got ${values.runs}`);
  if (timeoutSeconds === null || timeoutSeconds < 1) throw new Error('--timeout expects seconds');
  if (!values.lab.includes('{file}')) throw new Error('--lab must say where the file goes: {file}');
  const python = !values['no-python'] && spawnSync('python3', ['--version']).status === 0;

  const basePath = values['base-file'] ?? (values.base ? realSnapshot(root) : undefined);
  let base: UnpickledValue | undefined;
  if (basePath !== undefined) {
    process.stderr.write(`reading ${basePath}\n`);
    base = readBaseSnapshot(basePath);
  }
  const depths = values.depths === undefined ? null : list(values.depths, wholeNumber, '--depths');
  const planned = plans(values, base, depths);

  const folder = workFolder(root, values.dir);
  const reporter = usageReporter(folder);
  const gnuTime = existsSync(GNU_TIME);
  process.stderr.write(
    `files in ${folder}; ${cpus().length} cores, Node ${process.version}` +
      `${python ? `, ${spawnSync('python3', ['--version']).stdout.toString().trim()}` : ', no python3'}` +
      `; memory by ${gnuTime ? GNU_TIME : 'the processes themselves'}\n`,
  );
  const rows: SnapshotRow[] = [];
  try {
    for (const plan of planned) {
      const path = join(folder, `${plan.name}.pickle`);
      process.stderr.write(`${plan.name}: generating… `);
      const file = await writeSnapshotFile(path, plan.options);
      process.stderr.write(
        `${formatMegabytes(file.bytes)}, ${file.events.toLocaleString('en-US')} events, depth ` +
          `${file.depth}, ${file.seconds.toFixed(1)} s (${(file.bytes / 1e6 / file.seconds).toFixed(0)} MB/s)\n`,
      );
      const measure = {
        cwd: folder,
        timeoutMs: timeoutSeconds * 1000,
        usageFile: join(folder, 'usage.json'),
      };
      const labRuns = new Runs();
      const pythonRuns = new Runs();
      const labArgs = ['--require', reporter, lab, ...values.lab.split(/\s+/).filter(Boolean)];
      for (let run = 1; run <= runs; run++) {
        if (labRuns.failure === null) {
          const args = labArgs.map((arg) => arg.replaceAll('{file}', path));
          const usage = await measureChild(process.execPath, args, measure);
          labRuns.add(usage);
          process.stderr.write(`  lab run ${run}: ${summarize(usage)}\n`);
        }
        if (python && pythonRuns.failure === null) {
          const usage = await measureChild('python3', ['-c', PYTHON_LOAD, path], measure);
          const [seconds, rssKib] = usage.stdout.trim().split(/\s+/).map(Number);
          const own = { ...usage, peakRssBytes: usage.peakRssBytes ?? (rssKib ?? 0) * 1024 };
          pythonRuns.add(own, seconds);
          const load = usage.exitCode === 0 ? `pickle.load ${seconds?.toFixed(2)} s of ` : '';
          process.stderr.write(`  python run ${run}: ${load}${summarize(own)}\n`);
        }
      }
      rows.push({
        file: plan.name,
        bytes: file.bytes,
        events: file.events,
        depth: file.depth,
        sharedFrames: file.sharedFrames,
        lab: labRuns.result(),
        python: python ? pythonRuns.result() : null,
      });
      if (!values.keep) {
        rmSync(path, { force: true });
        rmSync(join(folder, 'lab-report'), { recursive: true, force: true });
      }
    }
  } finally {
    if (!values.keep && values.dir === undefined) rmSync(folder, { recursive: true, force: true });
  }
  process.stdout.write(`\nlab: node apps/lab/dist/cli.js ${values.lab}; python: pickle.load\n\n`);
  process.stdout.write(markdownTable(rows));
  if (values.json) process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
  return 0;
}

function summarize(usage: ChildUsage): string {
  const memory = usage.peakRssBytes === null ? '' : `, ${formatMegabytes(usage.peakRssBytes)} peak`;
  if (usage.exitCode === 0) return `${usage.seconds.toFixed(2)} s${memory}`;
  return `failed (exit ${usage.exitCode}) after ${usage.seconds.toFixed(1)} s: ${usage.lastStderrLine}`;
}

/** The real H100 inference snapshot beside the repository. */
function realSnapshot(root: string): string {
  const path = resolve(root, '..', 'shared', 'traces', 'pytorch-h100', 'infer-default.pickle.gz');
  if (!existsSync(path)) throw new Error(`--base: ${path} does not exist (use --base-file FILE)`);
  return path;
}

/** A new temporary folder, or `dir` when given and outside the repository. */
function workFolder(root: string, dir: string | undefined): string {
  if (dir === undefined) return mkdtempSync(join(tmpdir(), 'allot-snapshot-read-'));
  mkdirSync(dir, { recursive: true });
  const path = relative(realpathSync(root), realpathSync(dir));
  if (path === '' || (!path.startsWith('..') && !isAbsolute(path))) {
    throw new Error(`--dir ${dir} is inside the repository; generated files stay outside it`);
  }
  return realpathSync(dir);
}

runScript('snapshot-read', main);
