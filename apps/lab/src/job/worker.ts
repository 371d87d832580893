/**
 * The worker thread of a job (built by tsup as dist/job-worker.js, beside dist/cli.js): it takes
 * one rank at a time from the main thread, reads and replays it, and posts back its
 * {@link RankResult} or why it failed, with the bytes read now and then. Its memory is one rank's
 * trace, let go before the next.
 */
import { parentPort } from 'node:worker_threads';
import { analyseRank, failureOf, type RankTask } from './rank';

/** How often a worker says how far its reading is, in ms. */
const PROGRESS_EVERY_MS = 100;

const port = parentPort;
if (port === null) throw new Error('job-worker.js runs as a worker thread of allot-lab');

port.on('message', async (task: RankTask) => {
  let last = 0;
  try {
    const result = await analyseRank(task, (bytesRead) => {
      const now = performance.now();
      if (now - last < PROGRESS_EVERY_MS) return;
      last = now;
      port.postMessage({ type: 'progress', bytesRead });
    });
    port.postMessage({ type: 'done', result });
  } catch (error) {
    port.postMessage({ type: 'failed', ...failureOf(error, task.file) });
  }
});
