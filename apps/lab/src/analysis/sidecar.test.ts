/**
 * The recorder's sidecar as the lab reads it: the card and the per-process fraction it states, and
 * the device every command then replays and searches on.
 */
import { TraceBuilder } from '@allot/workloads';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { recordedDevice, replayDevice, searchDevice } from './device';
import { fractionOfLimit, sidecarMeta, sidecarPath, withSidecar } from './sidecar';

const GiB = 2 ** 30;
const CARD = 85_017_493_504; // an H100's cudaMemGetInfo total

/** A trace of one allocation, on device 0. */
const oneAlloc = (name: string) => {
  const builder = new TraceBuilder(name);
  builder.alloc(512);
  return builder.build(name, { device: 0 });
};

const sidecar = (fields: Record<string, unknown>) =>
  JSON.stringify({ format: 'allot-lab-record', version: 1, device: 0, ...fields });

describe("a recorder's sidecar", () => {
  it('lies beside its snapshot, gzipped or not', () => {
    expect(sidecarPath('/job/rank1_step12_oom.pickle')).toBe('/job/rank1_step12_oom.json');
    expect(sidecarPath('rank0_step5.pickle.gz')).toBe('rank0_step5.json');
    expect(sidecarPath('trace.json')).toBeNull();
  });

  it('states the card, and the fraction PyTorch reports or the limit its observer was told', () => {
    expect(sidecarMeta(sidecar({ deviceTotalBytes: CARD, memoryFraction: 0.05 }), 0)).toEqual({
      deviceMemoryBytes: CARD,
      memoryFraction: 0.05,
    });
    // PyTorch before 2.9 has no getter: the observer's limit gives the fraction back.
    const meta = sidecarMeta(
      sidecar({ deviceTotalBytes: CARD, memoryFraction: null, oom: { limitBytes: 4_250_874_675 } }),
      0,
    );
    expect(Math.floor(CARD * (meta.memoryFraction as number))).toBe(4_250_874_675);
    // No fraction set (PyTorch reports 1), or a limit that is the card: the card alone.
    expect(sidecarMeta(sidecar({ deviceTotalBytes: CARD, memoryFraction: 1 }), 0)).toEqual({
      deviceMemoryBytes: CARD,
    });
    expect(sidecarMeta(sidecar({ deviceTotalBytes: CARD, oom: { limitBytes: CARD } }), 0)).toEqual({
      deviceMemoryBytes: CARD,
    });
  });

  it('adds nothing when it is damaged, not the recorder’s, of another device, or states no card', () => {
    for (const text of [
      '{"format": "allot-lab-record", "deviceTotalBytes": 1',
      JSON.stringify({ format: 'other', deviceTotalBytes: CARD }),
      sidecar({ device: 1, deviceTotalBytes: CARD, memoryFraction: 0.5 }),
      sidecar({ deviceTotalBytes: null, memoryFraction: 0.5 }),
      sidecar({ deviceTotalBytes: -1 }),
      '[1, 2]',
      'null',
    ]) {
      expect(sidecarMeta(text, 0), text).toEqual({});
    }
    const trace = oneAlloc('t');
    expect(withSidecar(trace, 'not json')).toBe(trace);
  });

  it('gives the fraction whose cap is the limit, for any limit below any card', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2 ** 40 }),
        fc.integer({ min: 1, max: 2 ** 40 }),
        (a, b) => {
          const [limit, memory] = a < b ? [a, b] : b < a ? [b, a] : [a, a + 1];
          expect(Math.floor(fractionOfLimit(limit, memory) * memory)).toBe(limit);
        },
      ),
      { seed: 41, numRuns: 2_000 },
    );
  });
});

describe('the device a recording with a sidecar is answered on', () => {
  const trace = withSidecar(
    oneAlloc('rank1'),
    sidecar({ deviceTotalBytes: CARD, memoryFraction: 0.05 }),
  );

  it('replays on the card and fraction recorded, unless --memory states a device', () => {
    expect(recordedDevice(trace)).toEqual({ memory: CARD, fraction: 0.05 });
    expect(replayDevice(trace)).toEqual({ memory: CARD, fraction: 0.05 });
    expect(replayDevice(trace, { memory: 40 * GiB, fraction: null })).toEqual({
      memory: 40 * GiB,
      fraction: null,
    });
  });

  it('searches on the card recorded, under the fraction recorded unless --fraction states one', () => {
    expect(searchDevice(trace, {})).toEqual({
      device: { memory: CARD, fraction: 0.05 },
      origin: 'recorded',
    });
    expect(searchDevice(trace, { memory: 40 * GiB })).toEqual({
      device: { memory: 40 * GiB, fraction: 0.05 },
      origin: 'stated',
    });
    expect(searchDevice(trace, { fraction: 0.5 }).device.fraction).toBe(0.5);
  });
});
