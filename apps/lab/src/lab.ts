/**
 * The lab's commands, callable in-process (the tests drive them directly): each returns its exit
 * status and writes to the given streams, never calling `process.exit`.
 *
 * ```
 *  argv ─► parseArguments ─► run | replay ─► runWorkloads ─► tables / --json ─► DIR/index.html, results.json
 *                            tune          ─► tune()       ─► PYTORCH_CUDA_ALLOC_CONF and the saving
 *                            capacity      ─► capacities() ─► smallest capacity per allocator
 *                            record        ─► record/command.ts: the job, with the Python recorder
 * ```
 */
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { type Trace, trainingLoop } from '@allot/workloads';
import { adviceOf } from './analysis/advice';
import { describeDevice } from './analysis/device';
import { estimateBasis, isStateDump } from './analysis/dump-estimate';
import { ALL_ROWS, findRow, type LabRow, ROWS, TUNED_ROW, tuningOf } from './analysis/registry';
import { segmentCalls, type TuneResult, tune } from './analysis/tune';
import { capacities } from './capacity';
import { writeExports } from './exports';
import { inFiles, reportFailure } from './failure';
import { helpText, listJson } from './help';
import { checkMemoryHoldsTrace, checkOutFolder, readTraceFiles } from './input';
import { jobCommand, mergeCommand } from './job/command';
import { isJob as isJobInput } from './job/layout';
import { oomCommand } from './oom-command';
import {
  EXIT_FAILED_ALLOCATIONS,
  EXIT_OK,
  type LabOptions,
  parseArguments,
  UsageError,
} from './options';
import { progressReporter } from './progress';
import { recordCommand } from './record/command';
import { describeTrace, replayRows } from './replay-rows';
import { writeParts, writeReportFile } from './report/report-file';
import { formatColumns, formatResults } from './report/tables';
import {
  checkTargets,
  type LabResults,
  labResults,
  runWorkloads,
  summaryOf,
  type WorkloadInput,
} from './run';
import { serveCommand } from './serve';
import { formatBytes, formatCount, formatRatio } from './units';
import { watchCommand } from './watch/watch-command';
import { builtInWorkloads, trainingModel } from './workloads';

/** Where a command writes. */
export interface LabIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WriteStream | NodeJS.WritableStream;
  /** Folder `--out` is relative to. @defaultValue process.cwd() */
  readonly cwd?: string;
  /** Stops a command that runs until interrupted (`watch`, `serve`) as Ctrl-C does. */
  readonly signal?: AbortSignal;
}

function rowsOf(options: LabOptions): LabRow[] {
  return options.allocators.map((name) => findRow(name)!);
}

/**
 * The traces of `files`, with the reading's progress on stderr: bytes read of the file's length
 * and trace entries a second, redrawn a few times a second on a terminal, every few seconds in a
 * log, so a long read is never silent.
 */
async function loadFiles(
  files: readonly string[],
  options: LabOptions,
  io: LabIo,
): Promise<Trace[]> {
  const cwd = io.cwd ?? process.cwd();
  const stream = io.stderr as NodeJS.WriteStream;
  const progress = progressReporter({ quiet: options.quiet, stream });
  const every = stream.isTTY === true ? 200 : 2000;
  const started = performance.now();
  let last = started;
  try {
    return await readTraceFiles(files, options, cwd, (file, read) => {
      const now = performance.now();
      if (!read.done && now - last < every) return;
      last = now;
      const seconds = Math.max(1e-3, (now - started) / 1000);
      const total = read.totalBytes;
      const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
      const rate =
        read.events > 0 ? `, ${formatCount(Math.round(read.events / seconds))} entries/s` : '';
      progress.update(
        Math.round(read.bytesRead / 2 ** 20),
        Math.round((total ?? read.bytesRead) / 2 ** 20),
        `reading ${file}: ${mib(read.bytesRead)} of ${total === null ? '?' : mib(total)} MiB, ` +
          `${formatCount(read.events)} entries${rate}`,
      );
    });
  } finally {
    progress.done();
  }
}

/** A progress line on the lab's standard error, silent under `--quiet`. */
function stderrProgress(options: LabOptions, io: LabIo) {
  return progressReporter({ quiet: options.quiet, stream: io.stderr as NodeJS.WriteStream });
}

/** The lab's version, from its package.json (one folder above both src/ and dist/). */
function labVersion(): string {
  const manifest = createRequire(import.meta.url)('../package.json') as { version: string };
  return manifest.version;
}

function writeReport(results: LabResults, options: LabOptions, cwd: string): string {
  const folder = resolve(cwd, options.out);
  mkdirSync(folder, { recursive: true });
  writeParts(join(folder, 'results.json'), [JSON.stringify(results), '\n']);
  const path = join(folder, 'index.html');
  writeReportFile(path, results);
  return path;
}

function runAndReport(
  inputs: readonly WorkloadInput[],
  argv: readonly string[],
  options: LabOptions,
  io: LabIo,
): number {
  const cwd = io.cwd ?? process.cwd();
  if (options.report || options.exports.length > 0) checkOutFolder(options.out, cwd);
  const progress = stderrProgress(options, io);
  const workloads = runWorkloads(inputs, rowsOf(options), options.capacity, progress.update, {
    memory: options.memory,
    fraction: options.fraction,
  });
  progress.done();
  const results = labResults(
    {
      command: ['allot-lab', ...argv].join(' '),
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
      seed: options.command === 'run' ? options.seed : null,
      capacity: options.capacity,
    },
    workloads,
    options.command === 'run' ? checkTargets(workloads) : [],
  );
  const failures = results.failures;
  const reportPath = options.report ? writeReport(results, options, cwd) : null;
  const exported = writeExports(
    inputs.map((input) => ({
      id: input.id,
      trace: input.trace,
      rows: [...rowsOf(options), ...(input.extraRows ?? [])],
    })),
    options.exports,
    resolve(cwd, options.out),
    options.capacity,
    { memory: options.memory, fraction: options.fraction },
  );
  if (options.json) io.stdout.write(`${JSON.stringify(summaryOf(results), null, 2)}\n`);
  else io.stdout.write(formatResults(results, reportPath));
  if (exported.length > 0 && !options.json) {
    io.stdout.write(
      `Exports (${options.exports.join(', ')}): ${formatCount(exported.length)} files in ${join(resolve(cwd, options.out), 'exports')}\n`,
    );
  }
  if (failures > 0) {
    io.stderr.write(
      `allot-lab: ${formatCount(failures)} allocations failed (exit status ${EXIT_FAILED_ALLOCATIONS})\n`,
    );
    return EXIT_FAILED_ALLOCATIONS;
  }
  return EXIT_OK;
}

function listText(): string {
  const rows = formatColumns(
    ALL_ROWS.map((row) => [
      ROWS.includes(row) ? row.name : `${row.name} (on request)`,
      row.kind,
      row.recipe,
    ]),
    [0, 1, 2],
  );
  const workloads = builtInWorkloads(1, false).map((w) => [w.id, w.description]);
  return `Allocators\n${rows.map((line) => `  ${line}`).join('\n')}\n\nWorkloads\n${formatColumns(
    workloads,
    [0, 1],
  )
    .map((line) => `  ${line}`)
    .join('\n')}\n`;
}

function tuneCommand(trace: Trace, options: LabOptions, io: LabIo): number {
  checkMemoryHoldsTrace(trace, options.memory, options.fraction);
  const basis = estimateBasis(trace);
  if (basis !== undefined && basis.blocks === 0) {
    throw new UsageError(
      `${trace.name} is a state dump with no live block (${formatBytes(dumpReserved(trace))} reserved, all of it free): ` +
        'nothing to estimate under any setting',
    );
  }
  const progress = stderrProgress(options, io);
  const result = tune(trace, {
    memory: options.memory,
    fraction: options.fraction,
    onProgress: (n, config) =>
      progress.update(n, null, `settings tried: ${config === '' ? 'defaults' : config}`),
  });
  progress.done();
  const advice = adviceOf(result);
  const assumption = deviceLine(result);
  const status = result.best.failures > 0 ? EXIT_FAILED_ALLOCATIONS : EXIT_OK;
  if (options.json) {
    const json = { trace: trace.name, ...result, allocConf: advice.config, advice, assumption };
    io.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
    return status;
  }
  const lines = [
    basis !== undefined
      ? `${trace.name}: a state dump, ${formatCount(basis.blocks)} live blocks (${formatBytes(basis.bytes)} requested) ` +
        `in ${formatBytes(dumpReserved(trace))} reserved; every figure below is an estimate`
      : `${trace.name}: ${formatCount(trace.length)} events, peak live ${formatBytes(result.peakLiveBytes)}` +
        (trace.start ? ' (starting state included)' : ''),
    assumption,
    `searched ${result.tried.length} settings; figures in torch.cuda.memory_stats() units (reserved_bytes.all.peak)`,
    ...(basis !== undefined ? [basis.assumes] : []),
    '',
  ];
  const table = [['setting', 'peak reserved', 'ratio', 'segments', 'failed']];
  const shown = [...result.tried].sort(
    (a, b) => a.failures - b.failures || a.peakReservedBytes - b.peakReservedBytes,
  );
  for (const run of shown.slice(0, 8)) {
    table.push([
      run.config === '' ? '(defaults)' : run.config,
      formatBytes(run.peakReservedBytes),
      formatRatio(run.peakReservedBytes / Math.max(1, run.peakLiveBytes)),
      formatCount(segmentCalls(run)),
      formatCount(run.failures),
    ]);
  }
  lines.push(...formatColumns(table).map((line) => `  ${line}`));
  lines.push('', advice.headline, `  ${advice.summary}`, `  ${advice.because}`);
  if (advice.config !== null && advice.config !== '') {
    lines.push(
      `  ${formatCount(segmentCalls(result.best))} segment allocations (cudaMalloc or map calls), ` +
        `against ${formatCount(segmentCalls(result.defaults))} with the defaults`,
    );
  }
  if (advice.deviceDependent !== undefined) {
    lines.push(
      `  note: ${advice.deviceDependent}; ` +
        (result.origin === 'assumed'
          ? 'the device was assumed: state yours with --memory and --fraction before relying on it'
          : 'it holds only on a device like that one'),
    );
  }
  io.stdout.write(`${lines.join('\n')}\n`);
  return status;
}

/**
 * The tuner's search for the recommendation (the report's, the terminal's, --json's, and the
 * caching-tuned row's), with its progress: PyTorch traces with a caching-tuned row only (it replays
 * the trace some forty times), on the device `--memory` and `--fraction` state, else the one `tune`
 * assumes.
 */
function reportTuning(trace: Trace, options: LabOptions, io: LabIo): { tuning?: TuneResult } {
  const format = trace.meta.format;
  if (format !== 'torch-snapshot' && format !== 'torch-profiler') return {};
  if (isStateDump(trace) && trace.length === 0) return {};
  if (!options.allocators.includes(TUNED_ROW)) return {};
  const progress = stderrProgress(options, io);
  const tuning = tuningOf(trace, {
    memory: options.memory,
    fraction: options.fraction,
    onProgress: (n) => progress.update(n, null, `settings tried: ${trace.name}`),
  });
  progress.done();
  return { tuning };
}

/** A state dump's reserved bytes: its segments'. */
function dumpReserved(trace: Trace): number {
  let bytes = 0;
  for (const segment of trace.dump?.segments ?? []) bytes += segment.size;
  return bytes;
}

/** The device line of `tune`: what the search assumed, and where it came from. */
function deviceLine(result: TuneResult): string {
  const { fraction, origin } = describeDevice(result);
  const gc =
    result.device.fraction === null
      ? ' (garbage_collection_threshold then never acts, as in PyTorch)'
      : '';
  return `device: ${formatBytes(result.device.memory)} of memory, ${fraction}${gc}; ${origin}`;
}

function capacityCommand(trace: Trace, options: LabOptions, io: LabIo): number {
  const rows = rowsOf(options);
  const progress = stderrProgress(options, io);
  const results = capacities(trace, rows, (row, i) => progress.update(i, rows.length, row.name));
  progress.done();
  if (options.json) {
    io.stdout.write(
      `${JSON.stringify({ trace: trace.name, events: trace.length, results }, null, 2)}\n`,
    );
    return EXIT_OK;
  }
  const table = [['allocator', 'peak live', 'smallest capacity', 'ratio', 'probes', 'status']];
  for (const r of results) {
    table.push([
      r.allocator,
      formatBytes(r.peakLiveBytes),
      r.search.capacity === null ? '–' : formatBytes(r.search.capacity),
      formatRatio(r.ratio),
      String(r.search.probes),
      r.search.status === 'exact' ? 'within 0.5 %' : r.search.status,
    ]);
  }
  io.stdout.write(
    `${trace.name}: ${formatCount(trace.length)} events; the smallest capacity on which each allocator ` +
      'replays it without a failed allocation\n\n' +
      `${formatColumns(table)
        .map((line) => `  ${line}`)
        .join('\n')}\n`,
  );
  return EXIT_OK;
}

/** Whether the command's files are a job of many ranks (job/layout.ts says when). */
function isJob(options: LabOptions, io: LabIo): boolean {
  const forced = options.shard !== null || options.step !== null;
  return isJobInput(options.command, options.files, io.cwd ?? process.cwd(), forced);
}

/** Runs `allot-lab` with `argv` (arguments after the script); returns the exit status. */
export async function lab(argv: readonly string[], io: LabIo): Promise<number> {
  let files: readonly string[] = [];
  try {
    const options = parseArguments(argv);
    files = options.files;
    switch (options.command) {
      case 'help':
        io.stdout.write(helpText(options.helpFor));
        return EXIT_OK;
      case 'version':
        io.stdout.write(`allot-lab ${labVersion()}\n`);
        return EXIT_OK;
      case 'list':
        io.stdout.write(options.json ? listJson() : listText());
        return EXIT_OK;
      case 'run': {
        const specs = builtInWorkloads(options.seed, options.quick).filter((spec) =>
          options.workloads.includes(spec.id),
        );
        const inputs = specs.map((spec) => ({
          id: spec.id,
          title: spec.title,
          description: spec.description,
          trace: spec.build(),
          ...(spec.budget ? { budget: spec.budget } : {}),
        }));
        return runAndReport(inputs, argv, options, io);
      }
      case 'replay': {
        if (isJob(options, io)) return await jobCommand(options, argv, io);
        const traces = await loadFiles(options.files, options, io);
        const inputs = traces.map((trace) => ({
          id: trace.name,
          title: trace.name,
          description: describeTrace(trace),
          trace,
          ...replayRows(trace, rowsOf(options), options.configs),
          ...reportTuning(trace, options, io),
        }));
        return runAndReport(inputs, argv, options, io);
      }
      case 'merge':
        return mergeCommand(options, argv, io);
      case 'serve':
        return await serveCommand(options, io);
      case 'record':
        return await recordCommand(options.record!, io);
      case 'watch':
        return await watchCommand(options, io);
      case 'oom':
        return oomCommand(await loadFiles(options.files, options, io), options, io);
      case 'tune':
      case 'capacity': {
        if (isJob(options, io)) return await jobCommand(options, argv, io);
        const trace =
          options.files.length > 0
            ? (await loadFiles(options.files, options, io)).reduce((a, b) =>
                b.length > a.length ? b : a,
              )
            : trainingLoop(trainingModel(options.seed, options.quick));
        if (options.command === 'capacity') return capacityCommand(trace, options, io);
        const status = tuneCommand(trace, options, io);
        if (status === EXIT_FAILED_ALLOCATIONS) {
          io.stderr.write(
            `allot-lab: every setting tried failed allocations on ${trace.name}: the memory searched under is too small (exit status ${EXIT_FAILED_ALLOCATIONS})\n`,
          );
        }
        return status;
      }
    }
  } catch (error) {
    return reportFailure(inFiles(error, files), io.stderr, argv.includes('--debug'));
  }
}
