/**
 * Workers that die: a worker terminated mid-run (not holding the lock) leaves the heap usable and
 * its cache is recovered by `heap.reclaim`; a worker that dies holding the lock is detected by the
 * owner-aware lock, and the heap is closed instead of deadlocking its waiters.
 */
import { describe, expect, it } from 'vitest';
import { holderTag } from '../src/heap-lock';
import { sharedHeap, ThreadCacheError, ThreadCacheErrorCode, threadCache } from '../src/index';
import type { SharedHeapImpl } from '../src/shared-heap';
import { baseSeed, heapState, startWorker } from './workers';

describe('a worker killed mid-run', () => {
  it('does not deadlock the heap, and reclaim recovers its cached objects', async () => {
    const heap = sharedHeap({ capacity: 16 * 1024 * 1024, maxWorkers: 8 });
    const initial = heapState(heap);
    const seed = baseSeed(7000);
    const control = new SharedArrayBuffer(16 + 400 * 16);
    const words = new Int32Array(control, 0, 3);
    const victim = startWorker(heap, 9, { role: 'victim', seed, operations: 300, control });
    victim.done.catch(() => {}); // it never finishes: it is terminated
    const others = [1, 2, 3].map((id) =>
      startWorker(heap, id, { role: 'own', seed: seed + id, operations: 6000 }),
    );
    const ready = Atomics.waitAsync(words, 0, 0, 60_000);
    if (ready.async) await ready.value;
    expect(Atomics.load(words, 0)).toBe(1);
    const exited = new Promise((resolve) => victim.worker.once('exit', resolve));
    await victim.worker.terminate();
    await exited;

    // The other workers keep going, and the dead worker's cache comes back.
    const victimId = Atomics.load(words, 2);
    const before = heap.stats();
    expect(before.workers.map((w) => w.workerId)).toContain(victimId);
    const recovered = heap.reclaim(victimId);
    expect(recovered.objects).toBeGreaterThan(0);
    expect(recovered.bytes).toBeGreaterThan(0);
    expect(heap.reclaim(victimId)).toEqual({ workerId: victimId, objects: 0, bytes: 0 });
    const after = heap.stats();
    expect(after.workers.map((w) => w.workerId)).not.toContain(victimId);
    expect(after.reclaimedObjects).toBe(recovered.objects);

    // Its live blocks are still intact; free them from this thread (a cross-worker free).
    const held = new Float64Array(control, 16);
    for (let i = 0; i < Atomics.load(words, 1); i++) {
      const address = held[i * 2]!;
      const size = held[i * 2 + 1]!;
      const bytes = heap.view(address, size);
      expect(bytes[0]).toBe(9);
      heap.free(address);
    }
    await Promise.all(others.map((o) => o.done));
    expect(heapState(heap)).toEqual(initial);
  });
});

describe('a worker that dies holding the lock (owner-aware lock)', () => {
  it('is detected by reclaim: the heap is closed and waiters wake up with an error', async () => {
    const heap = sharedHeap({ capacity: 1 << 20, maxWorkers: 4 });
    const dead = threadCache(heap);
    // Make the lock word say that this cache holds the lock, as if its worker died inside a refill.
    const impl = heap as SharedHeapImpl;
    const lock = new Int32Array(impl.state, impl.config.lockOffset, 1);
    Atomics.store(lock, 0, holderTag(dead.workerId % 256));
    const waiter = startWorker(heap, 1, { role: 'waiter', seed: 1, operations: 0 });
    // Wait until the worker is asleep on the lock: it sets the waiters bit before Atomics.wait.
    while ((Atomics.load(lock, 0) & 1) === 0) await new Promise((r) => setTimeout(r, 1));

    let thrown: unknown;
    try {
      heap.reclaim(dead.workerId);
    } catch (error) {
      thrown = error;
    }
    expect(ThreadCacheError.isInstance(thrown)).toBe(true);
    expect((thrown as ThreadCacheError).code).toBe(ThreadCacheErrorCode.Poisoned);
    expect((thrown as Error).message).toMatch(/died holding the shared heap's lock/);
    expect((await waiter.done).error).toBe(ThreadCacheErrorCode.Poisoned);
    expect(() => heap.allocate(64)).toThrow(/closed/);
    expect(() => dead.allocate(64)).toThrow(/closed/);
  });
});
