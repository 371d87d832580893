/**
 * Snapshots whose memo repeats what the reader would expand: a list of trace entries placed again
 * and again (a few hundred KB standing for hundreds of millions of entries), nested repeats, dicts
 * that hold such a list, segments with their blocks, and frames lists. The reader bounds its work
 * and memory by what the input expands to: each is refused at the opcode that passes the limit,
 * with its byte offset, or read within the bounds of what was read once.
 */
import { type PickleValue, pickle } from '@allot/pickle';
import { describe, expect, it, vi } from 'vitest';
import { TraceFormatError } from '../errors';
import { StackTable } from './stack-table';
import { parseTraces, streamTraces } from './trace-stream';

/** `count` trace entries: allocations and their frees, each a new dict. */
function entries(count: number, frames?: PickleValue[]): Record<string, PickleValue>[] {
  return Array.from({ length: count }, (_, i) => ({
    action: i % 2 === 0 ? 'alloc' : 'free_completed',
    addr: 4096 * (1 + (i >> 1)),
    size: 512,
    ...(frames === undefined ? {} : { frames }),
  }));
}

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

/** `value` placed `times` times in a list (memo references after the first). */
const repeated = (value: PickleValue, times: number): PickleValue[] => new Array(times).fill(value);

/** What reading `bytes` as a stream ends in: the error, with the opcode at its offset. */
async function refusal(bytes: Uint8Array): Promise<{ error: TraceFormatError; opcode: number }> {
  try {
    await streamTraces(once(bytes), { name: 'repeats.pickle' });
  } catch (error) {
    if (!(error instanceof TraceFormatError)) throw error;
    return { error, opcode: bytes[error.line]! };
  }
  throw new Error('read without an error');
}

const EXPANDED =
  /^repeats\.pickle: byte offset \d+: expected at most 8,000,000 trace entries after memo expansion/;

describe('a snapshot whose memo repeats a list of trace entries', () => {
  it('is refused at the APPENDS that passes the event limit, not after expanding it', async () => {
    // The shape of the report: 10,000 entries placed 25,000 times, 250 million once expanded.
    const bytes = pickle({ device_traces: repeated(entries(10_000), 25_000) });
    expect(bytes.length).toBeLessThan(500_000);
    const { error, opcode } = await refusal(bytes);
    expect(error.message).toMatch(EXPANDED);
    expect(error.unit).toBe('byte');
    expect(opcode).toBe(0x65); // APPENDS
    // The limit is passed within the first thousand references (BINGET, two bytes each): 24,000
    // are left unread.
    expect(bytes.length - error.line).toBeGreaterThan(24_000 * 2);
  });

  it('is refused when the repeats are nested, or held by dicts', async () => {
    const list = entries(1000);
    const nested = repeated(repeated(list, 100), 100);
    const held = repeated({ entries: list }, 10_000);
    for (const snapshot of [
      { device_traces: nested },
      { device_traces: [list], annotations: held },
      { segments: [], device_traces: [entries(2)], extra: { deep: [nested] } },
    ]) {
      const { error } = await refusal(pickle(snapshot));
      expect(error.message).toMatch(EXPANDED);
    }
  });

  it('counts the repeats against the limit it is given', async () => {
    const bytes = pickle({ device_traces: repeated(entries(100), 30) });
    await expect(parseTraces(bytes, { name: 'r', maxEvents: 2999 })).rejects.toThrow(
      /r: byte offset \d+: expected at most 2,999 trace entries after memo expansion/,
    );
    // Below the limit, the list is refused at its second place: PyTorch writes one per device.
    await expect(parseTraces(bytes, { name: 'r', maxEvents: 3000 })).rejects.toThrow(
      /r \(device_traces\[1\]\): event 1: expected a list of trace entries of its own \(PyTorch writes one per device\), found the list of device_traces\[0\] again/,
    );
  });

  it('is refused when the end state repeats a segment of many blocks', async () => {
    const blocks = Array.from({ length: 1000 }, (_, i) => ({
      address: 2 ** 30 + i * 512,
      size: 512,
      requested_size: 512,
      state: 'active_allocated',
      frames: [],
    }));
    const segment = { device: 0, address: 2 ** 30, total_size: 2 ** 21, stream: 0, blocks };
    const bytes = pickle({ segments: repeated(segment, 100_000), device_traces: [entries(2)] });
    const { error, opcode } = await refusal(bytes);
    // At its second place: a segment is read, and dropped, as the list takes it.
    expect(error.message).toMatch(
      /byte offset \d+: expected a memo index of a value that is still held, found index \d+, a trace entry, segment or blocks list read already/,
    );
    expect([0x68, 0x6a]).toContain(opcode); // BINGET, LONG_BINGET
  });

  it('reads blocks that share one frames list without making its frames for each', async () => {
    const frames = Array.from({ length: 60 }, (_, i) => ({
      filename: 'model.py',
      line: i,
      name: `layer${i}`,
    }));
    const trace = entries(2, frames);
    // 200,000 block dicts, each a few bytes, each holding the one frames list of an entry.
    const blocks = Array.from({ length: 200_000 }, (_, i) => ({
      address: 2 ** 31 + i * 512,
      frames,
    }));
    const segment = { device: 0, address: 2 ** 31, total_size: 2 ** 30, blocks };
    const made = vi.spyOn(StackTable.prototype, 'framesOf');
    try {
      const bytes = pickle({ segments: [segment], device_traces: [trace] });
      const [read] = await streamTraces(once(bytes), { name: 'shared.pickle' });
      expect(read!.frames?.get(0)).toHaveLength(60);
      // The stack's frames are made for the trace once, not for each of the 200,000 blocks.
      expect(made.mock.calls.length).toBeLessThan(10);
    } finally {
      made.mockRestore();
    }
  });
});
