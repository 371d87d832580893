import { describe, expect, it } from 'vitest';
import { LiveStateError, liveState } from './live-check';
import type { LiveState } from './live-data';

const pools = (all: number) => ({ all, small_pool: 0, large_pool: all });

/** A state of one rank that died, as the server sends it (its figures made up). */
function state(): LiveState {
  return {
    folder: '/run/memory',
    ranks: [
      {
        rank: 3,
        device: 0,
        file: 'rank3_step9_oom.pickle',
        step: 10,
        dumps: 2,
        stats: {
          reserved_bytes: pools(900),
          allocated_bytes: pools(700),
          inactive_split_bytes: pools(100),
        },
        recordedPeakReservedBytes: 1000,
        peakReservedBytes: 1000,
        advisedPeakReservedBytes: 800,
        recordedConf: '',
        entries: 40,
        gaps: [],
        trend: [
          {
            step: 4,
            file: 'rank3_step4.pickle',
            recordedPeakBytes: 1000,
            peakReservedBytes: 1000,
            reservedBytes: 1000,
            allocatedBytes: 600,
            advisedPeakReservedBytes: null,
          },
          {
            step: 10,
            file: 'rank3_step9_oom.pickle',
            recordedPeakBytes: null,
            peakReservedBytes: 1000,
            reservedBytes: 900,
            allocatedBytes: 700,
            advisedPeakReservedBytes: 800,
          },
        ],
        diedAt: { file: 'rank3_step9_oom.pickle', step: 10 },
      },
    ],
    advice: {
      index: 1,
      config: 'expandable_segments:True',
      worst: { rank: 3, peakReservedBytes: 800 },
      defaultsWorst: { rank: 3, peakReservedBytes: 1000 },
      savingBytes: 200,
      savingFraction: 0.2,
      failures: 0,
      ruledOut: { failing: 0, worseOnARank: 0 },
    },
    adviceText: 'advice so far: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; ...',
    ooms: [
      {
        rank: 3,
        file: 'rank3_step9_oom.pickle',
        step: 10,
        oom: {
          recorded: {
            event: 39,
            sizeBytes: 300,
            stream: 0,
            deviceFreeBytes: 100,
            reservedBytes: 900,
            allocatedBytes: 700,
          },
          capacityBytes: 1000,
          capacitySource: 'oom',
        },
        lines: ['rank 3 ran out of memory in step 10:'],
      },
    ],
    skipped: [{ file: 'rank0_step6.pickle', message: 'rank0_step6.pickle: byte offset 12: ...' }],
  };
}

type Node = Record<string | number, unknown>;

/** A copy of `state()` with the field at `path` set to `value`, or removed (`undefined`). */
function changed(path: readonly (string | number)[], value: unknown): unknown {
  const copy = structuredClone(state()) as unknown as Node;
  let at = copy;
  for (const key of path.slice(0, -1)) at = at[key] as Node;
  const last = path.at(-1)!;
  if (value === undefined) delete at[last];
  else at[last] = value;
  return copy;
}

function refusal(value: unknown): LiveStateError {
  try {
    liveState(value);
  } catch (error) {
    if (error instanceof LiveStateError) return error;
    throw error;
  }
  throw new Error('expected a LiveStateError');
}

describe("the live page's check of a state", () => {
  it('takes a state as the server sends it, as it is', () => {
    const value = state();
    expect(liveState(value)).toBe(value);
    expect(liveState(JSON.parse(JSON.stringify(value)))).toEqual(value);
    expect(liveState({ ...value, ranks: [], advice: null, ooms: [], skipped: [] }).ranks).toEqual(
      [],
    );
  });

  it('refuses anything else whole, naming the first field amiss, and changes nothing', () => {
    const cases: [unknown, string, string][] = [
      [null, '', 'the state is not an object'],
      [[], '', 'the state is not an object'],
      [changed(['folder'], undefined), 'folder', 'folder is not text'],
      [changed(['ranks'], {}), 'ranks', 'ranks is not a list'],
      [
        changed(['ranks', 0, 'trend', 1, 'reservedBytes'], '900'),
        'ranks[0].trend[1].reservedBytes',
        'ranks[0].trend[1].reservedBytes is not a number',
      ],
      [
        changed(['ranks', 0, 'step'], Number.NaN),
        'ranks[0].step',
        'ranks[0].step is not a number or null',
      ],
      [
        changed(['ranks', 0, 'stats', 'inactive_split_bytes'], undefined),
        'ranks[0].stats.inactive_split_bytes',
        'ranks[0].stats.inactive_split_bytes is not an object',
      ],
      [changed(['ranks', 0, 'gaps'], [7]), 'ranks[0].gaps[0]', 'ranks[0].gaps[0] is not text'],
      [changed(['advice', 'worst'], undefined), 'advice.worst', 'advice.worst is not an object'],
      [
        changed(['ooms', 0, 'lines'], ['a', null]),
        'ooms[0].lines[1]',
        'ooms[0].lines[1] is not text',
      ],
      [
        changed(['ooms', 0, 'oom', 'recorded', 'sizeBytes'], undefined),
        'ooms[0].oom.recorded.sizeBytes',
        'ooms[0].oom.recorded.sizeBytes is not a number',
      ],
      [
        changed(['skipped'], [{ file: 'x' }]),
        'skipped[0].message',
        'skipped[0].message is not text',
      ],
    ];
    for (const [value, path, message] of cases) {
      const before = JSON.stringify(value);
      const error = refusal(value);
      expect(error.path, message).toBe(path);
      expect(error.message).toBe(message);
      expect(error.name).toBe('LiveStateError');
      expect(JSON.stringify(value)).toBe(before);
    }
  });
});
