/**
 * The workloads of the benchmark, as plain serialisable specs: the parent process lists them and
 * each worker process rebuilds the same trace from its spec (generators are seeded, so both see
 * identical events). Quick mode keeps every synthetic workload, with fewer events, and a subset of
 * the real-program traces.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  randomMix,
  sameSizePairs,
  summarizeTrace,
  type Trace,
  type TraceSummary,
  trainingLoop,
} from '@allot/workloads';
import { findTracesDir, readTraces } from '@allot/workloads/node';
import type { WorkloadProfile } from './registry';

/** A workload, serialisable (it crosses the process boundary). */
export type WorkloadSpec =
  | {
      readonly id: string;
      readonly title: string;
      readonly kind: 'pairs';
      readonly size: number;
      readonly pairs: number;
    }
  | {
      readonly id: string;
      readonly title: string;
      readonly kind: 'mix';
      readonly liveBlocks: number;
      readonly operations: number;
    }
  | {
      readonly id: string;
      readonly title: string;
      readonly kind: 'training';
      readonly steps: number;
    }
  | { readonly id: string; readonly title: string; readonly kind: 'trace'; readonly path: string };

/** Real-program traces replayed in quick mode (small, and one large-block program). */
export const QUICK_TRACES = [
  'cpp-demangle.trace',
  'grep-recursive.trace',
  'ffmpeg.trace',
  'gcc-hello.trace',
];

/** Training-loop model of the benchmark: 4 layers, hidden 256, 4 heads, batch 4, 32–256 tokens, bf16. */
export const TRAINING_MODEL = {
  layers: 4,
  hidden: 256,
  heads: 4,
  vocab: 4096,
  batchSize: 4,
  minSeqLen: 32,
  maxSeqLen: 256,
  bytesPerElement: 2,
  seed: 1,
} as const;

/** What the plan found, and what it had to leave out. */
export interface WorkloadPlan {
  readonly workloads: WorkloadSpec[];
  readonly notes: string[];
}

/** The workloads of a run, in table order. */
export function planWorkloads(quick: boolean, tracesDir = findTracesDir()): WorkloadPlan {
  const pairs = quick ? 50_000 : 500_000;
  const workloads: WorkloadSpec[] = [
    { id: 'pairs-64', title: 'Same-size pairs, 64 B', kind: 'pairs', size: 64, pairs },
    { id: 'pairs-4k', title: 'Same-size pairs, 4 KiB', kind: 'pairs', size: 4096, pairs },
    {
      id: 'mix-5k',
      title: 'Random mix, 5,000 live blocks (16 B–64 KiB, log-uniform)',
      kind: 'mix',
      liveBlocks: 5000,
      operations: quick ? 50_000 : 300_000,
    },
    {
      id: 'mix-100k',
      title: 'Random mix, 100,000 live blocks (16 B–64 KiB, log-uniform)',
      kind: 'mix',
      liveBlocks: 100_000,
      operations: quick ? 20_000 : 300_000,
    },
    {
      id: 'training',
      title: 'Training loop, variable sequence lengths (4 layers, hidden 256, 32–256 tokens)',
      kind: 'training',
      steps: quick ? 50 : 300,
    },
  ];
  const notes: string[] = [];
  const folder = tracesDir ? join(tracesDir, 'malloc-real-programs') : null;
  let files: string[] = [];
  try {
    files = folder
      ? readdirSync(folder)
          .filter((file) => file.endsWith('.trace'))
          .sort()
      : [];
  } catch {
    files = [];
  }
  if (files.length === 0) {
    notes.push(
      'Real-program traces skipped: ../shared/traces/malloc-real-programs/ was not found ' +
        '(set ALLOT_TRACES_DIR to the traces folder to include them).',
    );
  }
  for (const file of files) {
    if (quick && !QUICK_TRACES.includes(file)) continue;
    workloads.push({
      id: `trace:${file.replace(/\.trace$/, '')}`,
      title: `Real program: ${file}`,
      kind: 'trace',
      path: join(folder!, file),
    });
  }
  if (quick && files.length > 0) {
    notes.push(
      `Quick mode replays ${QUICK_TRACES.length} of the ${files.length} real-program traces.`,
    );
  }
  return { workloads, notes };
}

/** Builds the trace of a spec (deterministic: every process gets the same events). */
export async function buildTrace(spec: WorkloadSpec): Promise<Trace> {
  switch (spec.kind) {
    case 'pairs':
      return sameSizePairs({ size: spec.size, pairs: spec.pairs });
    case 'mix':
      return randomMix({ liveBlocks: spec.liveBlocks, operations: spec.operations, seed: 1 });
    case 'training':
      return trainingLoop({ ...TRAINING_MODEL, steps: spec.steps });
    case 'trace': {
      // A malloc trace: one trace in the file.
      const [trace] = await readTraces(spec.path);
      return trace!;
    }
  }
}

/** Summary and allocator-facing profile of a trace. */
export function profileOf(trace: Trace): { summary: TraceSummary; profile: WorkloadProfile } {
  const summary = summarizeTrace(trace);
  return {
    summary,
    profile: {
      peakLiveBytes: summary.peakLiveBytes,
      totalAllocatedBytes: summary.totalAllocatedBytes,
      allocs: summary.allocs,
      maxSize: summary.maxSize,
    },
  };
}

/** Index of the first timed event: the steady state when the generator marks one, else 0. */
export function timedFrom(trace: Trace): number {
  const steadyFrom = trace.meta.steadyFrom;
  return typeof steadyFrom === 'number' ? steadyFrom : 0;
}
