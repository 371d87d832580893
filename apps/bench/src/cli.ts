/**
 * `pnpm bench`: runs every allocator row on every workload, one worker process per row, prints a
 * table per workload, and writes `bench-results/latest.json` and the generated block of
 * `BENCHMARKS.md` at the repository root.
 *
 * Rows run one after another (never in parallel: they would share cores and disturb each other's
 * timings), in rounds of one process per row, so that machine noise falls on all rows alike. The
 * parent only builds traces for their summaries and loads each row once to learn whether it is
 * available; all measuring happens in the workers.
 */
import { Progress, runInfo, runMain, writeResults } from './cli-support';
import type { CellResult } from './measure';
import { commandLine, parseCli, USAGE, UsageError } from './options';
import { mergeProcesses } from './processes';
import { ALLOCATORS, type AllocatorEntry, RowUnavailableError } from './registry';
import { mergeBenchmarksFile, renderMarkdownBlock, renderTerminal } from './report';
import type { AllocatorRecord, BenchRun, WorkloadRecord } from './results';
import { runWorker } from './run-worker';
import { buildTrace, planWorkloads, profileOf, timedFrom } from './workload-plan';

async function main(argv: string[]): Promise<number> {
  const options = parseCli(argv);
  if (options.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const startedAt = performance.now();
  const progress = new Progress();
  const plan = planWorkloads(options.settings.quick);
  const wantedWorkloads = options.workloads;
  const specs = wantedWorkloads
    ? plan.workloads.filter((w) => wantedWorkloads.some((p) => w.id === p || w.id.startsWith(p)))
    : plan.workloads;
  const unknownRows = (options.allocators ?? []).filter(
    (n) => !ALLOCATORS.some((a) => a.name === n),
  );
  if (unknownRows.length > 0) {
    throw new UsageError(
      `unknown row(s) ${unknownRows.join(', ')}; rows: ${ALLOCATORS.map((a) => a.name).join(', ')}`,
    );
  }
  if (specs.length === 0) throw new UsageError(`no workload matches ${wantedWorkloads?.join(',')}`);
  const entries = options.allocators
    ? ALLOCATORS.filter((a) => options.allocators!.includes(a.name))
    : ALLOCATORS;
  if (options.list) {
    process.stdout.write(
      `rows:\n${ALLOCATORS.map((a) => `  ${a.name.padEnd(14)} ${a.recipe}`).join('\n')}\n` +
        `workloads:\n${plan.workloads.map((w) => `  ${w.id.padEnd(24)} ${w.title}`).join('\n')}\n`,
    );
    return 0;
  }

  const workloads: WorkloadRecord[] = [];
  for (const spec of specs) {
    progress.update(`building workload ${spec.id}`);
    const trace = await buildTrace(spec);
    workloads.push({
      id: spec.id,
      title: spec.title,
      kind: spec.kind,
      summary: profileOf(trace).summary,
      timedFrom: timedFrom(trace),
    });
  }

  const allocators: AllocatorRecord[] = [];
  const run: BenchRun = {
    ...runInfo(commandLine(argv)),
    settings: options.settings,
    durationSeconds: 0,
    workloads,
    allocators,
    cells: [],
    skipped: [],
    errors: [],
    notes: [...plan.notes],
  };

  // Load every row once first: a row that cannot load is reported and left out of the rounds.
  const measured: AllocatorEntry[] = [];
  for (const entry of entries) {
    const record = { name: entry.name, recipe: entry.recipe, peer: entry.peer ?? false };
    try {
      await entry.load();
    } catch (error) {
      const reason = error instanceof RowUnavailableError ? error.message : String(error);
      allocators.push({ ...record, status: 'unavailable', reason });
      progress.log(`skipping ${entry.name}: ${reason}`);
      continue;
    }
    allocators.push({ ...record, status: 'measured' });
    measured.push(entry);
  }
  // Rounds: each round runs every row in one process of its own, so a slow spell of the machine
  // falls on the rows of one round alike instead of on every process of one row.
  const { processes } = options.settings;
  const results: CellResult[][][] = measured.map(() => []);
  for (let p = 0; p < processes; p++) {
    for (const [index, entry] of measured.entries()) {
      const round = processes > 1 ? ` (round ${p + 1}/${processes})` : '';
      const label = `[${index + 1}/${measured.length}] ${entry.name}${round}`;
      progress.update(`${label}: starting`);
      const report = await runWorker(
        {
          type: 'run',
          allocator: entry.name,
          workloads: specs,
          settings: options.settings,
          // The capacity search does not depend on the compiled code: the first round does it.
          measureMemory: p === 0,
        },
        (message) => {
          if (message.type === 'phase')
            progress.update(`${label}: ${message.workload} (${message.phase})`);
        },
      );
      results[index]!.push(report.results);
      // Skips are the same in every process; errors are reported once each.
      if (p === 0)
        for (const s of report.skipped) run.skipped.push({ allocator: entry.name, ...s });
      for (const e of report.errors) {
        run.errors.push({ allocator: entry.name, ...e });
        progress.log(
          `error in ${entry.name}${e.workload ? ` on ${e.workload}` : ''}: ${e.message}`,
        );
      }
    }
  }
  for (const perProcess of results) run.cells.push(...mergeProcesses(perProcess));
  progress.clear();
  const finished: BenchRun = { ...run, durationSeconds: (performance.now() - startedAt) / 1000 };

  if (options.json) process.stdout.write(`${JSON.stringify(finished, null, 2)}\n`);
  else process.stdout.write(`${renderTerminal(finished)}\n`);

  if (options.write) {
    const written = writeResults('latest.json', finished, (existing) =>
      mergeBenchmarksFile(existing, renderMarkdownBlock(finished)),
    );
    progress.log(`wrote ${written.join(' and ')} (${finished.durationSeconds.toFixed(0)} s)`);
  }
  return finished.errors.length > 0 ? 1 : 0;
}

runMain(main, USAGE);
