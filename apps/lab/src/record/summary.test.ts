import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { forwards, inTerminalForeground } from './signals';
import { parseStatus, type StatusRecord, summaryLine } from './summary';

const OUT = '/job/out';

function dump(pid: number, rank: number, step: number, reason: 'step' | 'exit' | 'oom') {
  const suffix = reason === 'step' ? '' : `_${reason}`;
  return {
    event: 'dump',
    pid,
    rank,
    step,
    reason,
    file: `rank${rank}_step${step}${suffix}.pickle`,
  };
}

describe("record's closing line", () => {
  it('says how many snapshots each rank wrote, at which steps, and how to read them', () => {
    const records: StatusRecord[] = [
      { event: 'loaded', pid: 10 },
      { event: 'loaded', pid: 11 },
      { event: 'loaded', pid: 12 },
      dump(11, 1, 2, 'step'),
      dump(11, 1, 4, 'step'),
      dump(11, 1, 5, 'exit'),
      dump(10, 0, 2, 'step'),
      dump(10, 0, 4, 'step'),
      dump(10, 0, 5, 'oom'),
      dump(10, 0, 5, 'exit'),
    ];
    expect(summaryLine(records, OUT)).toBe(
      '7 snapshots of 2 ranks in /job/out (rank 0: 4 (steps 2, 4; out of memory in step 6; exit at step 5), ' +
        'rank 1: 3 (steps 2, 4; exit at step 5)); rank 0 ran out of memory in step 6: ' +
        'allot-lab oom /job/out/rank0_step5_oom.pickle explains it; ' +
        'allot-lab replay /job/out and allot-lab tune /job/out read them',
    );
  });

  it('says when a rank was written by more than one process: torchrun started it again', () => {
    const records: StatusRecord[] = [
      dump(10, 0, 5, 'step'),
      dump(10, 0, 7, 'oom'),
      { ...dump(20, 0, 5, 'step'), file: 'rank0_restart1_step5.pickle' },
      { ...dump(20, 0, 6, 'exit'), file: 'rank0_restart1_step6_exit.pickle' },
    ];
    expect(summaryLine(records, OUT)).toMatch(
      /^4 snapshots of 1 rank in \/job\/out \(rank 0: 4, from 2 processes \(steps 5; out of memory in step 8; exit at step 6\)\); rank 0 ran out of memory in step 8/,
    );
  });

  it('shortens many steps and many ranks, and names a failure beside what was written', () => {
    const many = Array.from({ length: 10 }, (_, rank) => [
      ...Array.from({ length: 50 }, (_, i) => dump(rank + 1, rank, (i + 1) * 10, 'step')),
      ...(rank === 3 ? [] : [dump(rank + 1, rank, 500, 'exit')]),
    ]).flat();
    const line = summaryLine(
      [...many, { event: 'error', pid: 4, message: 'OSError: [Errno 28] No space left on device' }],
      OUT,
    );
    expect(line).toMatch(/^509 snapshots of 10 ranks in \/job\/out \(50 to 51 each\);/);
    expect(line).toMatch(/the recorder stopped in 1 process: OSError: \[Errno 28\]/);
    const one = summaryLine(many.slice(0, 51), OUT);
    expect(one).toMatch(/\(rank 0: 51 \(steps 10 to 500; exit at step 500\)\)/);
  });

  it('says why nothing was recorded: the first reason that applies', () => {
    const cases: [StatusRecord[], RegExp][] = [
      [[], /^nothing was recorded: no Python process loaded the recorder \(.*-I, -E or -S/],
      [
        [{ event: 'loaded', pid: 1 }],
        /^nothing was recorded: 1 Python process ran and none imported torch$/,
      ],
      [
        [
          { event: 'loaded', pid: 1 },
          { event: 'torch', pid: 1, version: '2.6.0' },
          { event: 'cuda-unused', pid: 1 },
          { event: 'loaded', pid: 2 },
        ],
        /^nothing was recorded: 1 process of 2 Python processes imported torch but none used CUDA/,
      ],
      [
        [
          { event: 'loaded', pid: 1 },
          { event: 'torch', pid: 1, version: '2.6.0+cpu' },
          { event: 'no-cuda', pid: 1, version: '2.6.0+cpu' },
        ],
        /^nothing was recorded: torch 2\.6\.0\+cpu has no CUDA \(a CPU build\), in 1 process of 1 Python process$/,
      ],
      [
        [
          { event: 'loaded', pid: 1 },
          { event: 'torch', pid: 1 },
          { event: 'recording', pid: 1, rank: 0 },
        ],
        /^nothing was recorded: 1 process recorded CUDA memory but ended before writing a snapshot/,
      ],
      [
        [
          { event: 'loaded', pid: 1 },
          { event: 'recording', pid: 1, rank: 0 },
          { event: 'error', pid: 1, message: 'TypeError: bad' },
        ],
        /^nothing was recorded: the recorder stopped in 1 process: TypeError: bad$/,
      ],
    ];
    for (const [records, expected] of cases) expect(summaryLine(records, OUT)).toMatch(expected);
  });

  it('reads status files, skipping a line cut short', () => {
    const text = '{"event": "loaded", "pid": 7}\n{"event": "torch", "pid": 7, "vers\n\n[1]\n';
    expect(parseStatus(text)).toEqual([{ event: 'loaded', pid: 7 }]);
  });
});

describe('which signals record forwards', () => {
  it('forwards SIGTERM always, SIGINT and SIGHUP unless the terminal sent them to the group', () => {
    expect(forwards('SIGTERM', true)).toBe(true);
    expect(forwards('SIGINT', true)).toBe(false);
    expect(forwards('SIGHUP', true)).toBe(false);
    expect(forwards('SIGINT', false)).toBe(true);
    expect(forwards('SIGHUP', false)).toBe(true);
  });

  it("tells the terminal's foreground group from /proc/self/stat, whatever the command's name", () => {
    const path = join(mkdtempSync(join(tmpdir(), 'allot-stat-')), 'stat');
    const stat = (text: string) => {
      writeFileSync(path, text);
      return inTerminalForeground(path);
    };
    expect(stat('42 (node) S 1 42 42 34816 42 4194560 ...')).toBe(true);
    expect(stat('42 (a) b) (c) S 1 42 42 34816 77 4194560 ...')).toBe(false);
    expect(stat('42 (node) S 1 42 42 0 -1 4194560 ...')).toBe(false);
  });
});
