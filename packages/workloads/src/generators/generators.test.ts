import { describe, expect, it } from 'vitest';
import { EventKind, summarizeTrace, type Trace } from '../trace';
import { inferenceServing } from './inference-serving';
import { larson } from './larson';
import { randomMix } from './random-mix';
import { sameSizePairs } from './same-size';
import { trainingBudget, trainingLoop } from './training-loop';

function sameTrace(a: Trace, b: Trace): boolean {
  return (
    a.length === b.length &&
    a.kind.every((v, i) => v === b.kind[i]) &&
    a.id.every((v, i) => v === b.id[i]) &&
    a.size.every((v, i) => v === b.size[i]) &&
    a.alignment.every((v, i) => v === b.alignment[i])
  );
}

const generators: Record<string, (seed: number) => Trace> = {
  randomMix: (seed) => randomMix({ liveBlocks: 300, operations: 3000, seed }),
  trainingLoop: (seed) => trainingLoop({ layers: 2, hidden: 64, vocab: 256, steps: 5, seed }),
  inferenceServing: (seed) => inferenceServing({ requests: 30, seed }),
  larson: (seed) => larson({ threads: 2, blocksPerThread: 50, operations: 1000, seed }),
};

describe.each(Object.entries(generators))('%s', (_, generate) => {
  it('is deterministic: same seed, same trace; another seed, another trace', () => {
    expect(sameTrace(generate(5), generate(5))).toBe(true);
    expect(sameTrace(generate(5), generate(6))).toBe(false);
  });

  it('produces a well-formed trace', () => {
    const trace = generate(1);
    const summary = summarizeTrace(trace);
    expect(summary.allocs).toBe(trace.allocCount);
    expect(summary.minSize).toBeGreaterThanOrEqual(1);
    // Ids of Alloc events count up from 0.
    let next = 0;
    for (let i = 0; i < trace.length; i++) {
      if (trace.kind[i] === EventKind.Alloc) expect(trace.id[i]).toBe(next++);
    }
  });
});

describe('sameSizePairs', () => {
  it('alternates allocation and free of one size', () => {
    const trace = sameSizePairs({ size: 64, pairs: 10 });
    expect(trace.length).toBe(20);
    expect(summarizeTrace(trace)).toMatchObject({ peakLiveBytes: 64, liveAtEnd: 0, maxSize: 64 });
  });

  it('rejects a size below 1', () => {
    expect(() => sameSizePairs({ size: 0 })).toThrow(/size must be an integer ≥ 1/);
  });
});

describe('randomMix', () => {
  it('keeps the live count near the target after the fill, with sizes in range', () => {
    const trace = randomMix({ liveBlocks: 1000, operations: 20_000, drift: 0.1 });
    const steadyFrom = trace.meta.steadyFrom as number;
    expect(steadyFrom).toBe(1000);
    let live = 0;
    let low = Number.POSITIVE_INFINITY;
    let high = 0;
    for (let i = 0; i < trace.length; i++) {
      live += trace.kind[i] === EventKind.Alloc ? 1 : -1;
      if (i >= steadyFrom) {
        low = Math.min(low, live);
        high = Math.max(high, live);
      }
    }
    expect(low).toBeGreaterThan(850);
    expect(high).toBeLessThan(1150);
    const summary = summarizeTrace(trace);
    expect(summary.minSize).toBeGreaterThanOrEqual(16);
    expect(summary.maxSize).toBeLessThanOrEqual(65_536);
  });

  it('rejects inverted size bounds', () => {
    expect(() => randomMix({ minSize: 100, maxSize: 10 })).toThrow(
      /minSize \(100\) must not exceed/,
    );
  });
});

describe('trainingLoop', () => {
  it('keeps weights and optimizer state live and frees activations', () => {
    const options = { layers: 2, hidden: 64, heads: 2, vocab: 256, steps: 4 };
    const trace = trainingLoop(options);
    const budget = trainingBudget(options);
    const summary = summarizeTrace(trace);
    expect(trace.meta.weightBytes).toBe(budget.weightBytes);
    // At the end: weights, optimizer state, the last loss; activations and gradients are gone.
    let liveBytes = 0;
    for (let i = 0; i < trace.length; i++) {
      liveBytes += trace.kind[i] === EventKind.Alloc ? trace.size[i]! : -trace.size[i]!;
    }
    expect(liveBytes).toBe(budget.weightBytes + budget.optimizerBytes + 4);
    expect(summary.peakLiveBytes).toBeGreaterThan(
      budget.weightBytes + budget.optimizerBytes + budget.gradientBytes,
    );
  });

  it('states the activations that, with weights and optimizer state, make the peak', () => {
    const options = { layers: 3, hidden: 64, heads: 2, vocab: 256, minSeqLen: 64, maxSeqLen: 64 };
    for (const checkpointing of [false, true]) {
      const budget = trainingBudget({ ...options, checkpointing });
      const peak = summarizeTrace(
        trainingLoop({ ...options, checkpointing, steps: 3 }),
      ).peakLiveBytes;
      const estimate = budget.weightBytes + budget.optimizerBytes + budget.activationBytes;
      // Within a tenth: the peak also holds a few gradients, the prefetched batch, a temporary.
      expect(Math.abs(peak - estimate) / peak, `checkpointing ${checkpointing}`).toBeLessThan(0.1);
    }
    expect(trainingBudget({ ...options, checkpointing: true }).activationBytes).toBeLessThan(
      trainingBudget(options).activationBytes,
    );
  });

  it('uses less peak memory with activation checkpointing', () => {
    const options = { layers: 6, hidden: 64, heads: 2, vocab: 256, steps: 3 };
    const plain = summarizeTrace(trainingLoop(options)).peakLiveBytes;
    const checkpointed = summarizeTrace(trainingLoop({ ...options, checkpointing: true }));
    expect(checkpointed.peakLiveBytes).toBeLessThan(plain);
  });

  it('varies activation sizes from step to step', () => {
    const trace = trainingLoop({
      layers: 1,
      hidden: 32,
      vocab: 64,
      steps: 20,
      minSeqLen: 8,
      maxSeqLen: 512,
    });
    expect(new Set(trace.size).size).toBeGreaterThan(50);
  });

  it('names a bad option', () => {
    expect(() => trainingLoop({ minSeqLen: 300, maxSeqLen: 200 })).toThrow(/minSeqLen/);
  });
});

describe('inferenceServing', () => {
  it('frees every block and finishes requests out of order', () => {
    const trace = inferenceServing({ requests: 40, maxConcurrent: 8 });
    expect(summarizeTrace(trace).liveAtEnd).toBe(0);
    // Prompt-id blocks are allocated in admission order; frees of them are not in that order.
    const promptIds = new Set<number>();
    for (let i = 0; i < trace.length; i++) {
      if (trace.kind[i] === EventKind.Alloc && trace.size[i]! % 4 === 0 && trace.size[i]! < 4096) {
        promptIds.add(trace.id[i]!);
      }
    }
    const freedOrder: number[] = [];
    for (let i = 0; i < trace.length; i++) {
      if (trace.kind[i] === EventKind.Free && promptIds.has(trace.id[i]!))
        freedOrder.push(trace.id[i]!);
    }
    const sorted = [...freedOrder].sort((a, b) => a - b);
    expect(freedOrder).not.toEqual(sorted);
  });
});
