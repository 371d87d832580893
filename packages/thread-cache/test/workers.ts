/** Runs stress workers (`stress-worker.mjs`) and checks the shared heap before and after. */
import { Worker } from 'node:worker_threads';
import type { SharedHeap, WorkerCacheStats } from '../src/index';
import type { SharedHeapImpl } from '../src/shared-heap';
import {
  CLASS_WORDS,
  FIGURE_ACTIVE_SPANS,
  FIGURE_HELD_BYTES,
  FIGURE_HELD_COUNT,
  FIGURE_SPAN_TAIL_BYTES,
} from '../src/shared-layout';

export const WORKER_URL = new URL('./stress-worker.mjs', import.meta.url);

export interface WorkerResult {
  readonly id: number;
  readonly checked: number;
  readonly stats: WorkerCacheStats;
  /** The `waiter` role's error code. */
  readonly error?: string | null;
}

export interface WorkerSpec {
  readonly role: 'own' | 'producer' | 'consumer' | 'victim' | 'waiter';
  readonly seed: number;
  readonly operations: number;
  readonly maxLive?: number;
  readonly ring?: SharedArrayBuffer;
  readonly control?: SharedArrayBuffer;
  readonly producerId?: number;
}

/** Starts one worker; the promise settles with its result, or rejects with its error. */
export function startWorker(
  heap: SharedHeap,
  id: number,
  spec: WorkerSpec,
): { worker: Worker; done: Promise<WorkerResult> } {
  const worker = new Worker(WORKER_URL, {
    workerData: { descriptor: heap.share(), id, maxLive: 200, ...spec },
  });
  const done = new Promise<WorkerResult>((resolve, reject) => {
    let result: WorkerResult | undefined;
    worker.on('message', (message: WorkerResult) => {
      result = message;
    });
    worker.on('error', reject);
    worker.on('exit', (code) => {
      if (result) resolve(result);
      else
        reject(
          new Error(`worker ${id} (${spec.role}, seed ${spec.seed}) exited with code ${code}`),
        );
    });
  });
  return { worker, done };
}

/** Everything about the heap that must come back when every block is freed and every cache flushed. */
export function heapState(heap: SharedHeap): unknown {
  const impl = heap as SharedHeapImpl;
  const { config } = impl;
  const bytes = (from: number, to: number) =>
    Buffer.from(new Uint8Array(impl.state, from, to - from));
  const figures = impl.figures;
  return {
    usage: heap.usage(),
    buddy: impl.buddy.stats(),
    buddyLayout: JSON.stringify(impl.buddy.layout()),
    classes: bytes(
      config.classesOffset,
      config.classesOffset + config.sizeClasses.length * CLASS_WORDS * 4,
    ).toString('hex'),
    // Span tables, bitmap and object states: compared byte for byte.
    central: bytes(config.spanClassOffset, config.stateBytes).equals(
      Buffer.alloc(config.stateBytes - config.spanClassOffset),
    ),
    held: [
      figures[FIGURE_HELD_BYTES],
      figures[FIGURE_HELD_COUNT],
      figures[FIGURE_ACTIVE_SPANS],
      figures[FIGURE_SPAN_TAIL_BYTES],
    ],
  };
}

/** A seed per test from FC_SEED when set (fuzzing), else the fixed one given. */
export function baseSeed(fixed: number): number {
  const raw = process.env.FC_SEED;
  return raw ? Number(raw) : fixed;
}

export const fuzzing = process.env.ALLOT_FUZZ === '1';
