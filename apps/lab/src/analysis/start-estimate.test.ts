/**
 * A profiler trace whose `Total Reserved` never moves: PyTorch's cache served every request. Built
 * so that the reader's first estimate (the 60 MiB reserved as one free segment) cannot serve it:
 *
 * ```
 *  B 10 MiB, A 40 MiB, free B, C 20 MiB       one 60 MiB segment: B | A | 10 free; B freed leaves
 *                                              10 + 10 MiB apart, and C needs a new segment (80 MiB)
 *  segments of 40 and 20 MiB                   B splits the 20, A takes the 40, B's free merges the
 *                                              20 whole again, C takes it: 60 MiB, as recorded
 * ```
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lab } from '../lab';
import { Capture } from '../test-capture';

const MiB = 2 ** 20;
const dir = mkdtempSync(join(tmpdir(), 'allot-start-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function profilerTrace(reserved: number, last = reserved): string {
  let allocated = 0;
  const events = [
    [0x1000_0000, 10],
    [0x2000_0000, 40],
    [0x1000_0000, -10],
    [0x3000_0000, 20],
  ].map(([addr, mib], i) => {
    allocated += mib! * MiB;
    return {
      ph: 'i',
      name: '[memory]',
      ts: 100 + i,
      args: {
        Addr: addr,
        Bytes: mib! * MiB,
        'Total Allocated': allocated,
        'Total Reserved': i === 3 ? last : reserved,
        'Device Type': 1,
        'Device Id': 0,
      },
    };
  });
  return JSON.stringify({ traceEvents: events });
}

async function fidelityOf(name: string, reserved: number, last = reserved) {
  const file = join(dir, name);
  writeFileSync(file, profilerTrace(reserved, last));
  const stdout = new Capture();
  await lab(['replay', file, '--allocators', 'caching', '--json', '--no-report', '--quiet'], {
    stdout,
    stderr: new Capture(),
  });
  return JSON.parse(stdout.text).workloads[0].torch.fidelity;
}

describe('the starting state of a profiler trace whose reserved bytes never move', () => {
  it('holds segments that serve the window, as PyTorch’s cache did', async () => {
    const fidelity = await fidelityOf('steady.json', 60 * MiB);
    expect(fidelity.recordedPeakReservedBytes).toBe(60 * MiB);
    expect(fidelity.predictedPeakReservedBytes).toBe(60 * MiB);
  });

  it('keeps the reader’s estimate when reserved bytes rise in the window', async () => {
    // PyTorch allocated a segment for C (60 → 80 MiB): its cache did not serve the window, and the
    // one free segment stands; C's new segment makes the 80 MiB.
    const fidelity = await fidelityOf('rising.json', 60 * MiB, 80 * MiB);
    expect(fidelity.recordedPeakReservedBytes).toBe(80 * MiB);
    expect(fidelity.predictedPeakReservedBytes).toBe(80 * MiB);
  });
});
