import { AllotError } from '@allot/core';
import { describe, expect, it } from 'vitest';
import { TraceFormatError } from './errors';
import {
  DEFAULT_MAX_EVENTS,
  EventKind,
  peakLiveBytes,
  summarizeTrace,
  TraceBuilder,
} from './trace';

describe('TraceBuilder', () => {
  it('numbers blocks by allocation order and records the freed size', () => {
    const builder = new TraceBuilder();
    const a = builder.alloc(100);
    const b = builder.alloc(50, 256);
    builder.free(a);
    const trace = builder.build('t', { note: 'x' });
    expect([a, b]).toEqual([0, 1]);
    expect(trace.length).toBe(3);
    expect(trace.allocCount).toBe(2);
    expect(Array.from(trace.kind)).toEqual([EventKind.Alloc, EventKind.Alloc, EventKind.Free]);
    expect(Array.from(trace.size)).toEqual([100, 50, 100]);
    expect(Array.from(trace.alignment)).toEqual([0, 256, 0]);
    expect(trace.meta).toEqual({ note: 'x' });
  });

  it('grows past its initial capacity', () => {
    const builder = new TraceBuilder();
    for (let i = 0; i < 5000; i++) builder.free(builder.alloc(8));
    expect(builder.build('t').length).toBe(10_000);
  });

  it('rejects bad sizes, bad alignments and frees of blocks that are not live', () => {
    const builder = new TraceBuilder('fixture');
    expect(() => builder.alloc(0)).toThrow(TraceFormatError);
    expect(() => builder.alloc(1.5)).toThrow(/positive integer size/);
    expect(() => builder.alloc(8, 3)).toThrow(/power of two/);
    expect(() => builder.free(0)).toThrow(/never allocated/);
    builder.free(builder.alloc(8));
    const error = (() => {
      try {
        builder.free(0);
      } catch (e) {
        return e;
      }
    })();
    expect(AllotError.isInstance(error)).toBe(true);
    expect((error as TraceFormatError).code).toBe('ALLOT_TRACE_FORMAT');
    expect((error as TraceFormatError).message).toMatch(/^fixture:3: .*already freed/);
  });
});

describe('summaries', () => {
  it('computes peaks, totals and size bands', () => {
    const builder = new TraceBuilder();
    const a = builder.alloc(10);
    const b = builder.alloc(1000);
    builder.free(a);
    builder.alloc(20);
    builder.free(b);
    const trace = builder.build('t');
    expect(peakLiveBytes(trace)).toBe(1020);
    expect(peakLiveBytes(trace, { maxSize: 100 })).toBe(20);
    expect(peakLiveBytes(trace, { minSize: 100 })).toBe(1000);
    expect(summarizeTrace(trace)).toEqual({
      events: 5,
      allocs: 3,
      frees: 2,
      peakLiveBytes: 1020,
      peakLiveBlocks: 2,
      liveAtEnd: 1,
      totalAllocatedBytes: 1030,
      minSize: 10,
      maxSize: 1000,
      maxAlignment: 0,
    });
  });
});

describe('TraceBuilder with a capacity', () => {
  it('builds a trace of exactly that many events without copying, and stays usable', () => {
    const builder = new TraceBuilder('t', DEFAULT_MAX_EVENTS, 3);
    const a = builder.alloc(100, 0, 2);
    builder.alloc(50);
    builder.free(a);
    const full = builder.build('full');
    expect(full.length).toBe(3);
    expect(full.kind.length).toBe(3);
    expect([...full.id]).toEqual([0, 1, 0]);
    expect([...full.stream!]).toEqual([2, 0, 0]);
    // The next event grows the builder's columns into new ones: the trace built stays as it was.
    builder.alloc(7, 0, 5);
    const more = builder.build('more');
    expect([...full.size]).toEqual([100, 50, 100]);
    expect([...full.stream!]).toEqual([2, 0, 0]);
    expect([...more.size]).toEqual([100, 50, 100, 7]);
    expect([...more.stream!]).toEqual([2, 0, 0, 5]);
  });
});
