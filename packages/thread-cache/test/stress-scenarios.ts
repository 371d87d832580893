/**
 * The multi-worker scenarios, shared by the quick stress test and the long one of `pnpm fuzz`.
 * Each returns the workers' results once the heap has been checked: every block verified before
 * its free, every cache flushed, and the heap back in its initial state.
 */
import { expect } from 'vitest';
import { type SharedHeap, sharedHeap } from '../src/index';
import { heapState, startWorker, type WorkerResult } from './workers';

/** 32 MiB: room for every worker's live blocks and caches (the state costs about 2.5 MiB). */
const CAPACITY = 32 * 1024 * 1024;
const RING_ENTRIES = 64;

function freshHeap(): { heap: SharedHeap; initial: unknown } {
  const heap = sharedHeap({ capacity: CAPACITY, maxWorkers: 16 });
  return { heap, initial: heapState(heap) };
}

function checkTotals(heap: SharedHeap, initial: unknown, results: readonly WorkerResult[]): void {
  expect(heapState(heap)).toEqual(initial);
  const stats = heap.stats();
  expect(stats.workers).toEqual([]); // every cache disposed
  expect(stats.cachedBytes).toBe(0);
  const hits = results.reduce((sum, r) => sum + r.stats.hits, 0);
  expect(stats.hits).toBe(hits);
}

/** `workers` workers, each allocating, filling, verifying and freeing its own blocks. */
export async function ownBlocks(workers: number, seed: number, operations: number, maxLive = 200) {
  const { heap, initial } = freshHeap();
  const runs = Array.from({ length: workers }, (_, i) =>
    startWorker(heap, i + 1, { role: 'own', seed: seed + i, operations, maxLive }),
  );
  const results = await Promise.all(runs.map((r) => r.done));
  checkTotals(heap, initial, results);
  return results;
}

/** `workers / 2` producer/consumer pairs: every handed-off block is freed in another worker. */
export async function producerConsumer(
  workers: number,
  seed: number,
  operations: number,
  maxLive = 200,
) {
  const { heap, initial } = freshHeap();
  const runs = [];
  for (let pair = 0; pair < workers / 2; pair++) {
    const ring = new SharedArrayBuffer(8 + RING_ENTRIES * 24);
    const producerId = 2 * pair + 1;
    runs.push(
      startWorker(heap, producerId, {
        role: 'producer',
        seed: seed + 2 * pair,
        operations,
        ring,
        maxLive,
      }),
      startWorker(heap, producerId + 1, {
        role: 'consumer',
        seed: seed + 2 * pair + 1,
        operations,
        ring,
        producerId,
        maxLive,
      }),
    );
  }
  const results = await Promise.all(runs.map((r) => r.done));
  checkTotals(heap, initial, results);
  for (const result of results) {
    if (result.id % 2 === 0) expect(result.checked).toBeGreaterThanOrEqual(operations);
  }
  return results;
}
