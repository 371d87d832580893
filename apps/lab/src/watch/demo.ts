/**
 * A running job to watch, for a demo or a benchmark (built as dist/watch-demo.js): writes a 4-rank
 * job's ring-buffer dumps (ring-dumps.ts) into a folder one after another, a few seconds apart, as
 * the job would. Rank 0 and 2 replay the H100 training recording, rank 1 the serving one, rank 3
 * the training one until it runs out of memory in step 10 (with `--fraction`, under a per-process
 * memory fraction, with the recorder's sidecars beside its dumps).
 *
 * ```
 *  node apps/lab/dist/watch-demo.js OUT [--delay S] [--traces DIR] [--naming allot-lab|torchtitan]
 *                                       [--max-entries N] [--stack-depth N] [--fraction]
 *  then, in another terminal:  allot-lab watch OUT      or   allot-lab serve --watch OUT
 * ```
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { findTracesDir } from '@allot/workloads/node';
import { ringJob } from './ring-dumps';

const USAGE =
  'usage: watch-demo.js OUT [--delay SECONDS] [--traces DIR] [--naming allot-lab|torchtitan] ' +
  '[--max-entries N] [--stack-depth N] [--fraction]';

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    options: {
      delay: { type: 'string', default: '2' },
      traces: { type: 'string' },
      naming: { type: 'string', default: 'allot-lab' },
      'max-entries': { type: 'string', default: '20000' },
      'stack-depth': { type: 'string', default: '4' },
      fraction: { type: 'boolean', default: false },
    },
    allowPositionals: true,
  });
  const [out] = positionals;
  const delay = Number(values.delay);
  const naming = values.naming;
  if (out === undefined || !(delay >= 0) || (naming !== 'allot-lab' && naming !== 'torchtitan')) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const traces = values.traces ?? findTracesDir();
  if (traces === null) {
    process.stderr.write('watch-demo: no ../shared/traces folder here; name one with --traces\n');
    return 2;
  }
  const train = join(traces, 'pytorch-h100', 'train-default.pickle.gz');
  const infer = join(traces, 'pytorch-h100', 'infer-default.pickle.gz');
  const maxEntries = Number(values['max-entries']);
  const job = await ringJob({
    ranks: [
      { recording: train },
      // The serving recording's steps are long: a ring buffer that reaches back to the dump before.
      { recording: infer, maxEntries: Math.max(maxEntries, 150_000) },
      { recording: train },
      { recording: train, oom: true, fraction: values.fraction },
    ],
    naming,
    maxEntries,
    stackDepth: Number(values['stack-depth']),
  });
  for (const dump of job.dumps) {
    const path = await job.write(dump, out);
    process.stdout.write(`${path}\n`);
    await new Promise((resolve) => setTimeout(resolve, delay * 1000));
  }
  return 0;
}

process.exitCode = await main();
