/**
 * `pnpm bench:raw`: the raw workloads (`raw-plan.ts`), every row calling `allocate` and `free`
 * directly, one process per row and workload, in interleaved rounds: round one runs every row on
 * every workload, then round two, and so on. Prints the tables and targets, and writes
 * `bench-results/raw-latest.json` and the raw block of `BENCHMARKS.md`.
 */
import { Progress, runInfo, runMain, writeResults } from './cli-support';
import { integerOption, list, parseOptions, UsageError } from './options';
import type { RawMessage, RawRequest } from './protocol';
import { rawWorkloads } from './raw-plan';
import {
  RAW_BLOCK,
  type RawRoundMeasurement,
  type RawRun,
  renderRawBlock,
  renderRawTerminal,
} from './raw-report';
import { ALLOCATORS, RowUnavailableError } from './registry';
import { mergeBenchmarksFile } from './report';
import { forkWorker, workerPath } from './run-worker';

export const RAW_USAGE = `Usage: pnpm bench:raw [options]   (from the repository root; builds, then runs node dist/raw-cli.js)

Times every row on the raw workloads (pairs-64, random-5k, random-100k): allocate and free
called directly in a loop, one process per row and workload, CPU time, the median of interleaved
rounds. Writes bench-results/raw-latest.json and the raw block of BENCHMARKS.md.

Options:
  --rounds <n>          rounds (default 5, quick 3)
  --quick               a tenth of the operations, 3 rounds
  --allocators <list>   comma-separated rows (default: every row but thi.ng-malloc)
  --workloads <list>    comma-separated workload ids (default: all)
  --seed <n>            seed of the random workloads (default 1)
  --no-write            print only
  --json                print the results as JSON instead of the tables
  -h, --help            show this help
`;

/** Left out unless asked for: about 30 µs per call on random-5k, minutes per round. */
const SLOW_ROWS = ['thi.ng-malloc'];

async function main(argv: string[]): Promise<number> {
  const values = parseOptions(argv, {
    rounds: { type: 'string' },
    quick: { type: 'boolean' },
    allocators: { type: 'string' },
    workloads: { type: 'string' },
    seed: { type: 'string' },
    'no-write': { type: 'boolean' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    process.stdout.write(RAW_USAGE);
    return 0;
  }
  const quick = values.quick ?? false;
  const rounds = integerOption(values.rounds, 'rounds', quick ? 3 : 5, 25);
  const seed = integerOption(values.seed, 'seed', 1, 2 ** 31);
  const wantedRows = list(values.allocators);
  const unknown = (wantedRows ?? []).filter((n) => !ALLOCATORS.some((a) => a.name === n));
  if (unknown.length > 0) throw new UsageError(`unknown row(s) ${unknown.join(', ')}`);
  const wantedWorkloads = list(values.workloads);
  const workloads = rawWorkloads(quick).filter(
    (w) => wantedWorkloads === null || wantedWorkloads.includes(w.id),
  );
  if (workloads.length === 0) throw new UsageError(`no workload matches ${values.workloads}`);

  const startedAt = performance.now();
  const progress = new Progress();
  const rows: RawRun['rows'][number][] = [];
  const errors: RawRun['errors'][number][] = [];
  for (const entry of ALLOCATORS) {
    if (wantedRows ? !wantedRows.includes(entry.name) : SLOW_ROWS.includes(entry.name)) continue;
    try {
      await entry.load();
      rows.push({ name: entry.name, recipe: entry.recipe });
    } catch (error) {
      const reason = error instanceof RowUnavailableError ? error.message : String(error);
      progress.log(`skipping ${entry.name}: ${reason}`);
    }
  }
  const measurements: RawRoundMeasurement[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const workload of workloads) {
      for (const row of rows) {
        progress.update(`round ${round + 1}/${rounds}: ${workload.id}, ${row.name}`);
        const request: RawRequest = { type: 'raw', allocator: row.name, workload, seed };
        const early = await forkWorker<RawMessage>(
          workerPath('raw-worker.js'),
          request,
          (message) => {
            if (message.type === 'result') measurements.push({ ...message.result, round });
            if (message.type === 'error') {
              errors.push({ allocator: row.name, workload: workload.id, message: message.message });
            }
          },
        );
        if (early !== null)
          errors.push({ allocator: row.name, workload: workload.id, message: early });
      }
    }
  }
  progress.clear();
  const run: RawRun = {
    ...runInfo(['pnpm bench:raw', ...argv].join(' ')),
    rounds,
    seed,
    durationSeconds: (performance.now() - startedAt) / 1000,
    workloads,
    rows,
    measurements,
    errors,
  };
  if (values.json) process.stdout.write(`${JSON.stringify(run, null, 2)}\n`);
  else process.stdout.write(`${renderRawTerminal(run)}\n`);
  if (!values['no-write']) {
    const written = writeResults('raw-latest.json', run, (existing) =>
      mergeBenchmarksFile(existing, renderRawBlock(run), RAW_BLOCK),
    );
    progress.log(`wrote ${written.join(' and ')} (${run.durationSeconds.toFixed(0)} s)`);
  }
  return errors.length > 0 ? 1 : 0;
}

runMain(main, RAW_USAGE);
