/**
 * The frames-list fast path of the streaming pickle machine changes no result: generated snapshots
 * with stacks, damaged at random and cut into chunks at random, under tight limits or not, end in
 * the same traces and stacks, or the same error, with the fast path as without it; and pickles
 * written by hand for the cases the generator does not make (a list's item referring to a dict of
 * the same list, a list appended to after it was read, a memo slot stored again).
 *
 * Runs: FC_NUM_RUNS (default 200); seeded (FC_SEED overrides, FC_PATH replays).
 */
import { createHash } from 'node:crypto';
import { type MachineLimits, withoutFastPaths } from '@allot/pickle';
import { assertYielding } from '@allot/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors';
import { torchSnapshotChunks } from '../generators/snapshot-generator';
import type { Trace } from '../trace';
import { SnapshotReader } from './snapshot-reader';
import { snapshotTraces } from './snapshot-traces';

const parameters: fc.Parameters<unknown> = {
  numRuns: Number(process.env.FC_NUM_RUNS ?? 200),
  seed: Number(process.env.FC_SEED ?? 20_261_126),
  ...(process.env.FC_PATH === undefined ? {} : { path: process.env.FC_PATH }),
};

function digest(array: ArrayLike<number> | undefined): string | null {
  return array === undefined
    ? null
    : createHash('sha256')
        .update(JSON.stringify(Array.from(array)))
        .digest('hex');
}

/** What a test compares of a trace. */
function essence(trace: Trace): unknown {
  const frames: string[] = [];
  for (const [block, stack] of trace.frames ?? []) {
    frames.push(`${block}:${stack.map((f) => `${f.name}@${f.filename}:${f.line}`).join('<')}`);
  }
  return {
    name: trace.name,
    kind: digest(trace.kind),
    id: digest(trace.id),
    size: digest(trace.size),
    time: digest(trace.time),
    meta: trace.meta,
    start: trace.start,
    frames,
  };
}

/** What a read ends in: its stacks and traces, or where it failed. */
interface Outcome {
  readonly stacks?: number;
  readonly frames?: number;
  readonly traces?: unknown[];
  readonly error?: string;
}

/** What reading `bytes` in chunks of `cuts` (cycled) ends in. */
function outcome(
  bytes: Uint8Array,
  cuts: readonly number[],
  limits?: Partial<MachineLimits>,
): Outcome {
  try {
    const stream = new SnapshotReader({ name: 's', ...(limits ? { limits } : {}) });
    for (let at = 0, i = 0; at < bytes.length && !stream.complete; i++) {
      const n = cuts[i % cuts.length]!;
      stream.push(bytes.subarray(at, at + n));
      at += n;
    }
    const records = stream.end();
    const read = { stacks: records.stacks.size, frames: records.stacks.frames.length };
    try {
      return { ...read, traces: snapshotTraces(records, { name: 's' }).map(essence) };
    } catch (error) {
      if (!(error instanceof TraceFormatError)) throw error;
      return { ...read, error: error.message };
    }
  } catch (error) {
    if (!(error instanceof TraceFormatError)) throw error;
    return { error: error.message };
  }
}

function generated(options: Parameters<typeof torchSnapshotChunks>[0]): Uint8Array {
  const parts: Uint8Array[] = [];
  const chunks = torchSnapshotChunks(options);
  for (let r = chunks.next(); !r.done; r = chunks.next()) parts.push(r.value.slice());
  const bytes = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.length;
  }
  return bytes;
}

/** Opcodes a damaged byte becomes, besides any byte: those the fast paths read and a few more. */
const OPCODES = [0x68, 0x6a, 0x7d, 0x5d, 0x28, 0x65, 0x75, 0x94, 0x8c, 0x61, 0x30, 0x32, 0x71];

const damage = fc.oneof(
  fc.constant([] as [number, number, number][]),
  fc.array(
    fc.tuple(
      fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
      fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(...OPCODES)),
      fc.integer({ min: 0, max: 3 }),
    ),
    { minLength: 1, maxLength: 3 },
  ),
);

const snapshots = fc.record({
  events: fc.integer({ min: 10, max: 400 }),
  depth: fc.constantFrom(0, 1, 2, 5, 8, 20, 70),
  sharedFrames: fc.constantFrom(0, 0.3, 0.7, 1),
  sharedStrings: fc.boolean(),
  devices: fc.integer({ min: 1, max: 2 }),
  seed: fc.integer({ min: 1, max: 1000 }),
});

const limits = fc.option(
  fc.record({
    maxItems: fc.integer({ min: 50, max: 4000 }),
    maxMemo: fc.integer({ min: 100, max: 20_000 }),
    maxMemoStringBytes: fc.integer({ min: 100, max: 50_000 }),
  }),
  { nil: undefined },
);

const cuts = fc.oneof(
  fc.constant([1 << 30]),
  fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 6 }),
  fc.array(fc.integer({ min: 1, max: 5000 }), { minLength: 1, maxLength: 6 }),
);

/** `bytes` with each `[where, byte, how]` of `damage` done: a byte set, cut out, or doubled. */
function damaged(bytes: Uint8Array, changes: readonly [number, number, number][]): Uint8Array {
  let out = bytes.slice();
  for (const [where, byte, how] of changes) {
    const at = Math.floor(where * out.length);
    if (how <= 1) out[at] = byte;
    else if (how === 2)
      out = Uint8Array.from([...out.subarray(0, at), ...out.subarray(at + 1 + (byte % 16))]);
    else out = out.subarray(0, at + Math.floor(out.length / 8));
  }
  return out;
}

/** Byte code of a pickle written by hand: each string memoized the first time, as Python does. */
class Writer {
  readonly bytes: number[] = [0x80, 4];
  private next = 0;
  private readonly strings = new Map<string, number>();

  memoize(): number {
    this.bytes.push(0x94);
    return this.next++;
  }
  get(index: number): this {
    this.bytes.push(0x6a, index & 0xff, (index >>> 8) & 0xff, (index >>> 16) & 0xff, index >>> 24);
    return this;
  }
  op(...bytes: number[]): this {
    this.bytes.push(...bytes);
    return this;
  }
  int(value: number): this {
    this.bytes.push(0x4a, value & 0xff, (value >>> 8) & 0xff, (value >>> 16) & 0xff, value >>> 24);
    return this;
  }
  /** Stores string `value` in memo slot `slot` again (LONG_BINPUT). */
  store(slot: number, value: string): this {
    const bytes = new TextEncoder().encode(value);
    this.bytes.push(0x8c, bytes.length, ...bytes);
    return this.op(0x72, slot & 0xff, (slot >>> 8) & 0xff, slot >>> 16, 0, 0x30);
  }
  /** The memo slot of string `value`. */
  slotOf(value: string): number {
    return this.strings.get(value)!;
  }
  text(value: string): this {
    const seen = this.strings.get(value);
    if (seen !== undefined) return this.get(seen);
    const bytes = new TextEncoder().encode(value);
    this.bytes.push(0x8c, bytes.length, ...bytes);
    this.strings.set(value, this.memoize());
    return this;
  }
  /** A frame dict written anew; returns its memo slot. */
  frame(filename: string, line: number, name: string): number {
    this.op(0x7d);
    const slot = this.memoize();
    this.op(0x28).text('filename').text(filename).text('line').int(line).text('name').text(name);
    this.op(0x75);
    return slot;
  }
  /** Starts a snapshot: `{'device_traces': [[` then entries, ended by {@link end}. */
  start(): this {
    this.op(0x7d);
    this.memoize();
    this.op(0x28).text('device_traces').op(0x5d);
    this.memoize();
    this.op(0x5d);
    this.memoize();
    return this.op(0x28);
  }
  /** An entry, its `frames` written by `frames` (which returns the list's memo slot). */
  entry(action: string, addr: number, frames: () => void): this {
    this.op(0x7d);
    this.memoize();
    this.op(0x28).text('action').text(action).text('addr').int(addr).text('size').int(512);
    this.text('stream').int(0).text('frames');
    frames();
    return this.op(0x75);
  }
  end(): Uint8Array {
    return Uint8Array.from([...this.op(0x65, 0x61, 0x75, 0x2e).bytes]);
  }
}

function both(bytes: Uint8Array, chunks: readonly number[] = [1 << 30]) {
  const fast = outcome(bytes, chunks);
  expect(withoutFastPaths(() => outcome(bytes, chunks))).toEqual(fast);
  return fast;
}

describe('the frames-list fast path', () => {
  it('changes nothing in damaged snapshots with stacks, wherever the chunks end', async () => {
    await assertYielding(
      fc.property(snapshots, damage, cuts, limits, (options, changes, chunks, most) => {
        const bytes = damaged(generated(options), changes);
        const fast = outcome(bytes, chunks, most);
        expect(withoutFastPaths(() => outcome(bytes, chunks, most))).toEqual(fast);
      }),
      { ...parameters, numRuns: Math.ceil((parameters.numRuns ?? 200) / 2) },
    );
  });

  it('changes nothing in whole snapshots of every layout', () => {
    for (const sharedFrames of [0, 0.3, 0.7, 1]) {
      for (const [depth, seed] of [
        [3, 65],
        [8, 329],
        [20, 939],
      ] as const) {
        const bytes = generated({ events: 150, depth, sharedFrames, devices: 2, seed });
        for (const sharedStrings of [true, false]) {
          const other = sharedStrings
            ? bytes
            : generated({ events: 150, depth, sharedFrames, sharedStrings, seed });
          expect(both(other, [depth * 97]).error).toBeUndefined();
        }
      }
    }
  });

  it('fails where the opcodes one by one fail, under every limit', () => {
    const bytes = generated({ events: 60, depth: 5, sharedFrames: 0.7, seed: 5 });
    const sweeps: [keyof MachineLimits, number, number, number][] = [
      ['maxItems', 2, 1500, 3],
      ['maxMemo', 20, 3000, 11],
      ['maxMemoStringBytes', 20, 3000, 11],
    ];
    for (const [limit, from, to, step] of sweeps) {
      for (let most = from; most < to; most += step) {
        const fast = outcome(bytes, [bytes.length], { [limit]: most });
        expect(withoutFastPaths(() => outcome(bytes, [bytes.length], { [limit]: most }))).toEqual(
          fast,
        );
      }
    }
  });

  it('reads stacks of over a thousand frames (two APPENDS groups)', () => {
    const bytes = generated({ events: 8, depth: 1100, sharedFrames: 0.5, seed: 3 });
    const read = both(bytes, [4096]);
    expect(read.error).toBeUndefined();
    expect(read.frames).toBeGreaterThan(0);
  });

  /** A writer whose first two entries have frames a, b and c: the fast path knows them then. */
  function known(): Writer {
    const w = new Writer().start();
    for (const addr of [1024, 2048]) {
      w.entry('alloc', addr, () => {
        w.op(0x5d);
        w.memoize();
        w.op(0x28);
        w.frame('a.py', 1, 'f');
        w.frame('b.py', 2, 'g');
        w.frame('c.py', 3, 'h');
        w.op(0x65);
      });
    }
    return w;
  }
  const PRELUDE = ['0:f@a.py:1<g@b.py:2<h@c.py:3', '1:f@a.py:1<g@b.py:2<h@c.py:3'];

  function stacksOf(read: Outcome): string[] {
    expect(read.error).toBeUndefined();
    return (read.traces as { frames: string[] }[])[0]!.frames;
  }

  it('reads an item that refers to a dict of its own list, and a list appended to later', () => {
    const w = known();
    let list = 0;
    w.entry('alloc', 4096, () => {
      w.op(0x5d);
      list = w.memoize();
      w.op(0x28);
      const a = w.frame('a.py', 1, 'f');
      w.frame('b.py', 2, 'g');
      w.get(a).op(0x65);
    });
    // The same list again, for the next allocation.
    w.entry('alloc', 8192, () => {
      w.get(list);
    });
    expect(stacksOf(both(w.end()))).toEqual([
      ...PRELUDE,
      '2:f@a.py:1<g@b.py:2<f@a.py:1',
      '3:f@a.py:1<g@b.py:2<f@a.py:1',
    ]);
    const again = known();
    again.entry('alloc', 4096, () => {
      again.op(0x5d);
      list = again.memoize();
      again.op(0x28);
      again.frame('a.py', 1, 'f');
      again.frame('b.py', 2, 'g');
      again.op(0x65);
      // APPEND to the list before the entry takes it.
      again.get(list).frame('c.py', 3, 'h');
      again.op(0x61, 0x30);
    });
    expect(stacksOf(both(again.end()))).toEqual([...PRELUDE, '2:f@a.py:1<g@b.py:2<h@c.py:3']);
  });

  it('sees a memo slot stored again between two dicts alike', () => {
    const w = known();
    const frames = () => {
      w.op(0x5d);
      w.memoize();
      w.op(0x28);
      w.frame('a.py', 1, 'f');
      w.frame('b.py', 2, 'g');
      w.op(0x65);
    };
    w.entry('alloc', 4096, frames);
    // LONG_BINPUT: the slot of 'a.py' now holds 'z.py' (the dicts after refer to it by slot).
    const slot = w.slotOf('a.py');
    w.store(slot, 'z.py');
    w.entry('alloc', 8192, frames);
    w.entry('alloc', 16384, frames);
    // Again and again: past a few dozen times, the fast path stops keeping dicts by their slots.
    const expected = [
      ...PRELUDE,
      '2:f@a.py:1<g@b.py:2',
      '3:f@z.py:1<g@b.py:2',
      '4:f@z.py:1<g@b.py:2',
    ];
    for (let i = 0; i < 80; i++) {
      const file = `${i % 3}.py`;
      w.store(slot, file);
      w.entry('alloc', 32768 + 4096 * i, frames);
      expected.push(`${5 + i}:f@${file}:1<g@b.py:2`);
    }
    expect(stacksOf(both(w.end()))).toEqual(expected);
  });
});
