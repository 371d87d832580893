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

/** Path of a built entry point beside the built CLI (`worker.js`, `raw-worker.js`). */
export function workerPath(name = 'worker.js'): string {
  return fileURLToPath(new URL(`./${name}`, import.meta.url));
}

/**
 * Runs `script` in a fresh Node process with the bench's flags, sends it `request`, and calls
 * `onMessage` with every message it sends. Resolves with null when the worker said `done` before it
 * exited, else with how it ended.
 */
export function forkWorker<Message extends { readonly type: string }>(
  script: string,
  request: object,
  onMessage: (message: Message) => void,
): Promise<string | null> {
  return new Promise((resolve) => {
    const child = fork(script, [], {
      // --no-liftoff: the wasm peer runs optimised code from its first call, not baseline code
      // until a background tier-up completes (see the README's Design section).
      execArgv: ['--expose-gc', '--no-liftoff'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let done = false;
    child.on('message', (message: Message) => {
      onMessage(message);
      if (message.type === 'done') done = true;
    });
    child.on('exit', (code, signal) => {
      resolve(done ? null : `worker exited early (${signal ?? `code ${code}`})`);
    });
    child.send(request);
  });
}

/** Runs `request` in a fresh Node process; `onMessage` sees every message as it arrives. */
export async function runWorker(
  request: RunRequest,
  onMessage: (message: WorkerMessage) => void = () => {},
): Promise<WorkerReport> {
  const report: WorkerReport = { results: [], skipped: [], errors: [] };
  const early = await forkWorker<WorkerMessage>(workerPath(), request, (message) => {
    onMessage(message);
    if (message.type === 'result') report.results.push(message.result);
    else if (message.type === 'skipped') report.skipped.push(message);
    else if (message.type === 'error') report.errors.push(message);
  });
  if (early !== null) report.errors.push({ workload: null, message: early });
  return report;
}
