import type { Allocator } from '@allot/core';
import { describe, expect, it } from 'vitest';
import { randomMix } from './generators/random-mix';
import { Replayer, replay } from './replay';
import { summarizeTrace, TraceBuilder } from './trace';

/** A bump allocator with a limit and a log of calls: enough to check the replay loop. */
function recordingBump(capacity: number, base = 0) {
  const calls: string[] = [];
  let top = base;
  const live = new Set<number>();
  return {
    calls,
    live,
    allocate(size: number, alignment = 8): number | null {
      const address = Math.ceil(top / alignment) * alignment;
      if (address + size > base + capacity) return null;
      top = address + size;
      calls.push(`a${size}@${alignment}`);
      live.add(address);
      return address;
    },
    free(address: number): void {
      if (!live.delete(address)) throw new Error(`not live: ${address}`);
      calls.push(`f${address}`);
    },
  } satisfies Pick<Allocator, 'allocate' | 'free'> & Record<string, unknown>;
}

describe('replay', () => {
  it('drives allocate and free, passing alignment only when the trace asks', () => {
    const builder = new TraceBuilder();
    const a = builder.alloc(10);
    builder.alloc(16, 64);
    builder.free(a);
    const target = recordingBump(1 << 20, 1000);
    const result = replay(builder.build('t'), target, { base: 1000 });
    expect(target.calls).toEqual(['a10@8', 'a16@64', 'f1000']);
    expect(result).toMatchObject({ events: 3, allocations: 2, frees: 1, failures: 0 });
    expect(result.peakLiveBytes).toBe(26);
    // The second block starts at 1024 (aligned to 64): high water is 1024 + 16 − 1000.
    expect(result.highWater).toBe(40);
    expect(result.liveBlocks).toBe(1);
  });

  it('counts failures and skips the frees of failed blocks', () => {
    const builder = new TraceBuilder();
    const a = builder.alloc(600);
    const b = builder.alloc(600);
    builder.free(b);
    builder.free(a);
    const result = replay(builder.build('t'), recordingBump(1000));
    expect(result).toMatchObject({ allocations: 1, failures: 1, firstFailure: 1, frees: 1 });
  });

  it('stops at the first failure when asked', () => {
    const trace = randomMix({ liveBlocks: 100, operations: 1000 });
    const result = replay(trace, recordingBump(10_000), { stopOnFailure: true });
    expect(result.failures).toBe(1);
    expect(result.events).toBe(result.firstFailure + 1);
  });

  it('runs in slices and restarts', () => {
    const trace = randomMix({ liveBlocks: 200, operations: 2000 });
    const whole = replay(trace, recordingBump(2 ** 40));
    const replayer = new Replayer(trace, recordingBump(2 ** 40));
    while (!replayer.done) replayer.run(replayer.position + 97);
    expect(replayer.result()).toEqual(whole);
    replayer.restart(recordingBump(2 ** 40));
    replayer.run();
    expect(replayer.result()).toEqual(whole);
    expect(whole.peakLiveBytes).toBe(summarizeTrace(trace).peakLiveBytes);
  });

  it('frees what is left', () => {
    const trace = randomMix({ liveBlocks: 50, operations: 100 });
    const target = recordingBump(2 ** 40);
    const replayer = new Replayer(trace, target);
    replayer.run();
    replayer.freeRemaining();
    expect(target.live.size).toBe(0);
  });

  it('sends allocations on other streams to allocateOn, when the target has it', () => {
    const builder = new TraceBuilder();
    builder.alloc(10);
    const b = builder.alloc(20, 0, 1);
    builder.free(b);
    const trace = builder.build('t');
    const plain = recordingBump(1 << 20);
    replay(trace, plain);
    expect(plain.calls).toEqual(['a10@8', 'a20@8', 'f16']);
    const streams: number[] = [];
    const pooled = {
      ...recordingBump(1 << 20),
      allocateOn(stream: number, size: number) {
        streams.push(stream);
        return this.allocate(size);
      },
    };
    replay(trace, pooled);
    expect(streams).toEqual([1]);
    expect(pooled.calls).toEqual(['a10@8', 'a20@8', 'f16']);
  });

  it('keeps the peak of each sampling window, and a compiled loop per replayer', () => {
    const trace = randomMix({ liveBlocks: 100, operations: 3000 });
    const replayer = new Replayer(trace, recordingBump(2 ** 40));
    let largest = 0;
    while (!replayer.done) {
      replayer.run(replayer.position + 500);
      expect(replayer.windowPeakLiveBytes).toBeGreaterThanOrEqual(replayer.liveBytes);
      largest = Math.max(largest, replayer.windowPeakLiveBytes);
      replayer.windowPeakLiveBytes = replayer.liveBytes;
    }
    expect(largest).toBe(replayer.peakLiveBytes);
    const other = new Replayer(trace, recordingBump(2 ** 40));
    const loopOf = (r: Replayer) => (r as unknown as { loop: unknown }).loop;
    expect(loopOf(other)).not.toBe(loopOf(replayer));
  });

  it('gives back what the recording gave back, before the events it did', () => {
    const builder = new TraceBuilder();
    const a = builder.alloc(100);
    builder.free(a);
    builder.alloc(200);
    const built = builder.build('r');
    const trace = {
      ...built,
      releases: {
        event: Int32Array.of(2, 2, 9),
        bytes: Float64Array.of(64, 32, 1),
        reservedBefore: Float64Array.of(96, 32, 1),
      },
    };
    const target = { ...recordingBump(1000), released: [] as number[] };
    const withRelease = Object.assign(target, {
      release(bytes: number) {
        target.calls.push(`r${bytes}`);
        return bytes;
      },
    });
    const state = new Replayer(trace, withRelease);
    state.run(1);
    state.run();
    // Both releases before event 2, none past the end (event 9 is not reached).
    expect(target.calls).toEqual(['a100@8', 'f0', 'r64', 'r32', 'a200@8']);
    state.restart();
    target.calls.length = 0;
    // The hook hears each release just before it, at its event.
    state.beforeRelease = (index) => target.calls.push(`before ${index} at ${state.position}`);
    state.run();
    expect(target.calls.filter((c) => !c.startsWith('a') && !c.startsWith('f'))).toEqual([
      'before 0 at 2',
      'r64',
      'before 1 at 2',
      'r32',
    ]);
  });
});
