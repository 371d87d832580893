/**
 * Runs a job's ranks: one worker thread per rank at a time, up to `--jobs`, each posting back a
 * compact {@link RankResult}; so memory is bounded by the number of workers (each holds one rank's
 * trace), not by the number of ranks.
 *
 * ```
 *  queue of ranks ─► lane 1: worker ─► rank 0, rank 2, ... ─┐
 *                 ─► lane 2: worker ─► rank 1, rank 3, ... ─┴─► outcomes, in rank order
 *  a rank that fails: its one-line error, and the lane goes on (a new worker if the old one died)
 * ```
 *
 * The worker is the built dist/job-worker.js, found beside the built CLI. Where it is absent (the
 * tests run the source), or with one job, the ranks run one after another in this thread, through
 * the same {@link analyseRank}.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { analyseRank, failureOf, type RankResult, type RankTask } from './rank';

/** A rank's outcome: its result, or why it failed. */
export type RankOutcome =
  | { readonly ok: true; readonly result: RankResult }
  | {
      readonly ok: false;
      readonly rank: number;
      readonly file: string;
      readonly message: string;
      /** A bug in the lab (exit 3) rather than a damaged or unreadable file (exit 2). */
      readonly bug: boolean;
    };

/** Hears ranks finished and bytes read so far, over every rank. */
export type PoolListener = (done: number, bytesRead: number) => void;

/** Options of {@link runRanks}. */
export interface RunRanksOptions {
  /** Ranks at once. */
  readonly jobs: number;
  /** The worker script, or null to run in this thread. @defaultValue {@link builtWorker}() */
  readonly worker?: URL | null;
  readonly onProgress?: PoolListener;
}

/** Where the bundled CLI finds the worker: beside itself (dist/cli.js, dist/job-worker.js). */
const WORKER_URL = new URL('./job-worker.js', import.meta.url);

/** The built worker script, or null when there is none beside this module (the source). */
export function builtWorker(): URL | null {
  return existsSync(fileURLToPath(WORKER_URL)) ? WORKER_URL : null;
}

/** Runs every task (see the module comment); the outcomes come back in the tasks' order. */
export async function runRanks(
  tasks: readonly RankTask[],
  options: RunRanksOptions,
): Promise<RankOutcome[]> {
  const worker = options.worker === undefined ? builtWorker() : options.worker;
  const lanes = worker === null ? 1 : Math.max(1, Math.min(options.jobs, tasks.length));
  const outcomes: RankOutcome[] = new Array(tasks.length);
  const read = new Float64Array(tasks.length);
  let done = 0;
  let bytesRead = 0;
  const onBytes = (i: number, bytes: number) => {
    bytesRead += bytes - read[i]!;
    read[i] = bytes;
    options.onProgress?.(done, bytesRead);
  };
  let next = 0;
  const lane = async () => {
    let thread: Worker | null = null;
    try {
      while (next < tasks.length) {
        const i = next++;
        const task = tasks[i]!;
        if (worker === null || lanes === 1) {
          // One lane in this thread: one trace in memory at a time, as a worker holds.
          outcomes[i] = await inThisThread(task, (bytes) => onBytes(i, bytes));
        } else {
          thread ??= new Worker(worker);
          const { outcome, stopped } = await inWorker(thread, task, (bytes) => onBytes(i, bytes));
          if (stopped) thread = null;
          outcomes[i] = outcome;
        }
        done++;
        options.onProgress?.(done, bytesRead);
      }
    } finally {
      await thread?.terminate();
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
  return outcomes;
}

async function inThisThread(
  task: RankTask,
  onBytes: (bytes: number) => void,
): Promise<RankOutcome> {
  try {
    return { ok: true, result: await analyseRank(task, onBytes) };
  } catch (error) {
    return { ok: false, rank: task.rank, file: task.file, ...failureOf(error, task.file) };
  }
}

type WorkerMessage =
  | { type: 'progress'; bytesRead: number }
  | { type: 'done'; result: RankResult }
  | { type: 'failed'; message: string; bug: boolean };

/** One rank on `thread`; `stopped` when the thread died with it (out of memory, say). */
function inWorker(
  thread: Worker,
  task: RankTask,
  onBytes: (bytes: number) => void,
): Promise<{ outcome: RankOutcome; stopped: boolean }> {
  return new Promise((resolve) => {
    const finish = (outcome: RankOutcome, stopped: boolean) => {
      thread.off('message', onMessage);
      thread.off('error', onError);
      thread.off('exit', onExit);
      resolve({ outcome, stopped });
    };
    const failed = (message: string, bug: boolean): RankOutcome => ({
      ok: false,
      rank: task.rank,
      file: task.file,
      message,
      bug,
    });
    const onMessage = (message: WorkerMessage) => {
      if (message.type === 'progress') onBytes(message.bytesRead);
      else if (message.type === 'done') finish({ ok: true, result: message.result }, false);
      else finish(failed(message.message, message.bug), false);
    };
    const onError = (error: Error) => {
      const code = (error as { code?: string }).code;
      if (code === 'ERR_WORKER_OUT_OF_MEMORY') {
        finish(
          failed(
            `${task.file}: its worker ran out of memory (${code}): give it more, or fewer --jobs`,
            false,
          ),
          true,
        );
      } else {
        finish(failed(failureOf(error, task.file).message, true), true);
      }
    };
    const onExit = (code: number) =>
      finish(failed(`${task.file}: its worker stopped (exit code ${code})`, true), true);
    thread.on('message', onMessage);
    thread.on('error', onError);
    thread.on('exit', onExit);
    thread.postMessage(task);
  });
}
