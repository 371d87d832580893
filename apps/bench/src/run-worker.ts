/** Parent side of the worker protocol: fork one worker per allocator and collect its messages. */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { CellResult } from './measure';
import type { RunRequest, WorkerMessage } from './protocol';

/** What one worker reported. */
export interface WorkerReport {
  readonly results: CellResult[];
  readonly skipped: { workload: string; reason: string }[];
  readonly errors: { workload: string | null; message: string }[];
}

/** Path of the built worker, beside the built CLI. */
export function workerPath(): string {
  return fileURLToPath(new URL('./worker.js', import.meta.url));
}

/** Runs `request` in a fresh Node process; `onMessage` sees every message as it arrives. */
export function runWorker(
  request: RunRequest,
  onMessage: (message: WorkerMessage) => void = () => {},
): Promise<WorkerReport> {
  return new Promise((resolve) => {
    const report: WorkerReport = { results: [], skipped: [], errors: [] };
    const child = fork(workerPath(), [], {
      // --no-liftoff: the wasm peer runs optimised code from its first call, not baseline code
      // until a background tier-up completes (see the README's Design section).
      execArgv: ['--expose-gc', '--no-liftoff'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let done = false;
    child.on('message', (message: WorkerMessage) => {
      onMessage(message);
      if (message.type === 'result') report.results.push(message.result);
      else if (message.type === 'skipped') report.skipped.push(message);
      else if (message.type === 'error') report.errors.push(message);
      else if (message.type === 'done') done = true;
    });
    child.on('exit', (code, signal) => {
      if (!done) {
        report.errors.push({
          workload: null,
          message: `worker exited early (${signal ?? `code ${code}`})`,
        });
      }
      resolve(report);
    });
    child.send(request);
  });
}
