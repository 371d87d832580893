/**
 * Who holds the memory, on recordings other people published with `stacks="all"` (C++ frames
 * before the Python ones): at the peak of every device, no source the lab names as a line of your
 * code is a C++ symbol, an object file or the interpreter's C, and the blocks with no frame of
 * yours say what made them. Skips, with a message, when `../shared/traces/public` is absent.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { findTracesDir, readTraces } from '@allot/workloads/node';
import { describe, expect, it } from 'vitest';
import { holdersOf } from './analysis/holders';
import { peakEventIndex } from './analysis/measure';

const folder = (() => {
  const traces = findTracesDir();
  const dir = traces === null ? null : join(traces, 'public');
  if (dir !== null && existsSync(dir)) return dir;
  console.warn('public recordings skipped: no ../shared/traces/public');
  return null;
})();

/** The recordings whose stacks hold C++ frames (PyTorch's `stacks="all"`). */
const WITH_CPP = [
  'SQAttn-cuda_memory_snapshot.pickle',
  'code_location-memory_snapshot.pickle',
  'select_n-snapshot.pickle',
];

/** A frame that is not Python source: a C++ symbol, `??`, an object file, C or C++ sources. */
const NATIVE = /::|\(\?\?:|\.(?:o|so|c|cc|cpp|h|hpp|cu|S):\d+\)$/;

describe.skipIf(folder === null)(
  'who holds the memory, on public recordings with C++ frames',
  () => {
    it.each(WITH_CPP)('%s: no C++ frame is credited as your code', async (file) => {
      for (const trace of await readTraces(join(folder!, file))) {
        expect(trace.frames?.size ?? 0).toBeGreaterThan(0);
        const peak = peakEventIndex(trace);
        const live = new Map<number, number>();
        for (let i = 0; i <= peak; i++) {
          if (trace.kind[i] === 0) live.set(trace.id[i]!, trace.size[i]!);
          else live.delete(trace.id[i]!);
        }
        const holders = holdersOf(trace, [...live.keys()], (block) => live.get(block)!, live.size);
        expect(holders.length).toBeGreaterThan(0);
        for (const holder of holders) {
          if (holder.origin === 'code') expect(holder.frame).not.toMatch(NATIVE);
          else expect(holder.frame).toMatch(/in a library|C\+\+|no stack/);
          expect(holder.frame).not.toMatch(/torch::unwind|thread\d*\.o/);
        }
      }
    });
  },
);
