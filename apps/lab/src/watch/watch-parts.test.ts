/**
 * The parts of `allot-lab watch` that need no recording: where a dump joins the one before it,
 * `memory_stats()` from a dump's segments, the trend, the folder's complete files, the Prometheus
 * text, and the command's options.
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EndSegment } from '@allot/workloads';
import { describe, expect, it } from 'vitest';
import { lab } from '../lab';
import { EXIT_BAD_INPUT, parseArguments, UsageError } from '../options';
import { Capture } from '../test-capture';
import { ACTION, type DumpEntries } from './dump-entries';
import { dumpStats } from './dump-stats';
import { FolderPoll } from './folder-poll';
import { metricsText } from './metrics';
import { joinPoint } from './rank-timeline';
import { trendText } from './watch-table';
import { WatchedJob } from './watched-job';

/** Columns of entries `[action, addr, size, time]`. */
function columns(rows: readonly (readonly [keyof typeof ACTION, number, number, number])[]) {
  const entries: DumpEntries = {
    length: rows.length,
    action: Uint8Array.from(rows, ([action]) => ACTION[action]),
    addr: Float64Array.from(rows, ([, addr]) => addr),
    size: Float64Array.from(rows, ([, , size]) => size),
    stream: new Float64Array(rows.length),
    time: Float64Array.from(rows, ([, , , time]) => time),
    deviceFree: new Map(),
  };
  return entries;
}

/** `n` entries, the i-th an allocation at time `from + i`. */
function run(from: number, n: number): [keyof typeof ACTION, number, number, number][] {
  return Array.from({ length: n }, (_, i) => ['alloc', 0x1000 * (from + i), 512, from + i]);
}

describe('where a dump joins the dump before it', () => {
  it('finds the end of the earlier window in the later one, however much they overlap', () => {
    const before = columns(run(0, 100));
    // The later window began at entry 60 of the earlier one's: 40 shared, 25 new.
    expect(joinPoint(before, columns(run(60, 65)))).toBe(40);
    // It holds all of the earlier window and more.
    expect(joinPoint(before, columns(run(0, 130)))).toBe(100);
    // The same window again: nothing new.
    expect(joinPoint(before, columns(run(0, 100)))).toBe(100);
    // One entry shared is enough when the window holds no more of the earlier one.
    expect(joinPoint(before, columns(run(99, 5)))).toBe(1);
  });

  it('is a gap when the window does not reach back, or when an entry differs', () => {
    const before = columns(run(0, 100));
    expect(joinPoint(before, columns(run(100, 50)))).toBe(-1);
    const changed = run(60, 65);
    changed[10] = ['alloc', 0x1000 * 70, 1024, 70]; // the size of entry 70 differs
    expect(joinPoint(before, columns(changed))).toBe(-1);
  });

  it('matches entries whose times a later snapshot converted a microsecond apart', () => {
    // PyTorch converts clock readings to time_us again at every snapshot: the same entries, read
    // in two dumps of a real job, differed by a microsecond here and there.
    const before = columns(run(0, 100));
    const later = run(60, 65).map(([action, addr, size, time], i) =>
      i % 7 === 3
        ? ([action, addr, size, time + (i % 2 ? 1 : -1)] as const)
        : ([action, addr, size, time] as const),
    );
    expect(joinPoint(before, columns(later))).toBe(40);
  });

  it('takes the match nearest the earlier tail in time where the tail repeats', () => {
    // A loop that allocates alike at the same addresses: the tail occurs again 500 µs later.
    const at = (time: number): [keyof typeof ACTION, number, number, number][] => [
      ['alloc', 1, 512, time],
      ['free_completed', 1, 512, time + 1],
      ['alloc', 2, 512, time + 2],
    ];
    const before = columns(at(10));
    const after = columns([...at(10), ...at(510), ['alloc', 3, 512, 600]]);
    expect(joinPoint(before, after)).toBe(3);
    // Read a microsecond apart, the first still wins; without the first, the second is the end.
    expect(joinPoint(before, columns([...at(11), ...at(510)]))).toBe(3);
    expect(joinPoint(columns(at(510)), after)).toBe(6);
  });

  it('takes the latest match without times, so no entry is counted twice', () => {
    // Without times, the last three entries of the earlier window occur twice in the later one.
    const repeated: [keyof typeof ACTION, number, number, number][] = [
      ['alloc', 1, 512, Number.NaN],
      ['free_completed', 1, 512, Number.NaN],
      ['alloc', 2, 512, Number.NaN],
    ];
    const before = columns(repeated);
    const after = columns([...repeated, ...repeated, ['alloc', 3, 512, Number.NaN]]);
    expect(joinPoint(before, after)).toBe(6);
  });
});

describe("memory_stats() from a dump's segments", () => {
  it('sums reserved, allocated, active, requested and inactive split bytes per pool', () => {
    const MiB = 2 ** 20;
    const block = (address: number, size: number, requested: number, state: string) => ({
      address,
      size,
      requested,
      active: state.startsWith('active'),
      allocated: state === 'active_allocated',
      stack: 0,
    });
    const segment = (
      address: number,
      size: number,
      pool: 'small' | 'large',
      blocks: ReturnType<typeof block>[],
      device = 0,
    ): EndSegment => ({ device, address, size, pool, stream: 0, expandable: false, blocks });
    const segments = [
      segment(0, 2 * MiB, 'small', [
        block(0, 512, 500, 'active_allocated'),
        block(512, 2 * MiB - 512, 2 * MiB - 512, 'inactive'),
      ]),
      segment(4 * MiB, 20 * MiB, 'large', [
        block(4 * MiB, 8 * MiB, 8 * MiB - 1, 'active_pending_free'),
        block(12 * MiB, 12 * MiB, 12 * MiB, 'inactive'),
      ]),
      // A whole free segment: empty_cache can release it, so it is no inactive split.
      segment(32 * MiB, 4 * MiB, 'large', [block(32 * MiB, 4 * MiB, 4 * MiB, 'inactive')]),
      segment(0, 2 ** 30, 'large', [], 1),
    ];
    const stats = dumpStats(segments, 0);
    expect(stats.reserved_bytes).toEqual({
      all: 2 ** 21 + 20 * 2 ** 20 + 2 ** 22,
      small_pool: 2 ** 21,
      large_pool: 20 * 2 ** 20 + 2 ** 22,
    });
    expect(stats.allocated_bytes.all).toBe(512);
    expect(stats.active_bytes.all).toBe(512 + 8 * 2 ** 20);
    expect(stats.requested_bytes.all).toBe(500 + 8 * 2 ** 20 - 1);
    expect(stats.inactive_split_bytes).toEqual({
      all: 2 ** 21 - 512 + 12 * 2 ** 20,
      small_pool: 2 ** 21 - 512,
      large_pool: 12 * 2 ** 20,
    });
    expect(stats.segment.all).toBe(3);
    expect([stats.allocation.all, stats.active.all, stats.inactive_split.all]).toEqual([1, 2, 2]);
    expect(dumpStats(undefined, 0).reserved_bytes.all).toBe(0);
  });
});

describe("a rank's trend", () => {
  it('draws each recent peak as a bar and says where the last went', () => {
    const point = (peak: number | null) => ({
      step: 1,
      file: 'rank0_step1.pickle',
      recordedPeakBytes: peak,
      peakReservedBytes: 0,
      reservedBytes: 0,
      allocatedBytes: 0,
      advisedPeakReservedBytes: null,
    });
    expect(trendText([])).toBe('–');
    expect(trendText([point(4)])).toBe('█');
    expect(trendText([point(1), point(2), point(4), point(8)])).toBe('▁▂▄█ ↑');
    expect(trendText([point(8), point(null), point(4)])).toBe('█▄ ↓');
    expect(trendText([point(8), point(8)])).toBe('██ →');
  });
});

describe("a folder's complete files", () => {
  it('takes a file once it has the same size and time twice in a row, and a rewritten one again', async () => {
    const root = mkdtempSync(join(tmpdir(), 'allot-poll-'));
    const poll = new FolderPoll(root);
    writeFileSync(join(root, 'rank0_step4.pickle.tmp'), 'under way');
    writeFileSync(join(root, 'notes.txt'), 'no snapshot');
    writeFileSync(join(root, 'rank1_step4.pickle'), '');
    expect(await poll.poll()).toEqual([]);
    renameSync(join(root, 'rank0_step4.pickle.tmp'), join(root, 'rank0_step4.pickle'));
    expect(await poll.poll()).toEqual([]); // seen once
    const [found, ...rest] = await poll.poll();
    expect(rest).toEqual([]); // the empty file is not complete
    expect(found).toMatchObject({ file: 'rank0_step4.pickle', rank: 0, step: 4, oom: false });
    expect(await poll.poll()).toEqual([]); // read already
    writeFileSync(join(root, 'rank0_step4.pickle'), 'written again, longer');
    await poll.poll();
    expect((await poll.poll()).map((file) => file.file)).toEqual(['rank0_step4.pickle']);
    rmSync(root, { recursive: true });
  });

  it('orders what it finds as ranks wrote it: by restart, by step, in a step the OOM dump then the exit dump, then by rank', async () => {
    const root = mkdtempSync(join(tmpdir(), 'allot-poll-'));
    for (const name of [
      'rank1_step8.pickle',
      'rank0_restart1_step4.pickle',
      'rank0_step8_exit.pickle',
      'rank0_step8_oom.pickle',
      'rank0_step4.pickle',
      'rank1_step4.pickle',
      'snapshot_oom_observer_rank2_pid1_2.pickle',
    ]) {
      writeFileSync(join(root, name), 'x');
    }
    const found = await new FolderPoll(root).poll(true);
    expect(found.map((file) => file.file)).toEqual([
      'rank0_step4.pickle',
      'rank1_step4.pickle',
      'rank1_step8.pickle',
      'rank0_step8_oom.pickle',
      'rank0_step8_exit.pickle',
      'snapshot_oom_observer_rank2_pid1_2.pickle',
      // Started again by torchrun: its steps count from 0, after all the first processes wrote.
      'rank0_restart1_step4.pickle',
    ]);
    rmSync(root, { recursive: true });
  });
});

describe('the Prometheus text of a watched job', () => {
  it('has HELP and TYPE lines for every gauge, named after memory_stats() keys', () => {
    const text = metricsText(new WatchedJob({ memory: null, fraction: null }));
    for (const name of [
      'allot_reserved_bytes_all_current',
      'allot_inactive_split_bytes_large_pool_current',
      'allot_reserved_bytes_all_peak',
      'allot_num_ooms',
      'allot_advice_info',
    ]) {
      expect(text).toContain(`# HELP ${name} `);
      expect(text).toContain(`# TYPE ${name} gauge\n`);
    }
    expect(text).toContain('allot_watch_skipped_files 0\n');
    expect(text.endsWith('\n')).toBe(true);
  });
});

describe('watch options', () => {
  it('takes one folder, --once and --interval; serve takes --watch', () => {
    expect(parseArguments(['watch', 'run'])).toMatchObject({
      command: 'watch',
      files: ['run'],
      once: false,
      interval: 2,
      watch: null,
    });
    expect(parseArguments(['watch', 'run', '--once', '--interval', '0.5', '--json'])).toMatchObject(
      {
        once: true,
        interval: 0.5,
        json: true,
      },
    );
    expect(parseArguments(['serve', '--watch', 'run', '--interval', '5'])).toMatchObject({
      command: 'serve',
      watch: 'run',
      interval: 5,
    });
    for (const [argv, message] of [
      [['watch'], /one folder/],
      [['watch', 'a', 'b'], /one folder/],
      [['replay', 'x.pickle', '--once'], /--once is an option of watch/],
      [['watch', 'a', '--interval', '0'], /--interval expects seconds/],
      [['watch', 'a', '--interval', 'soon'], /--interval expects seconds/],
      [['tune', 'x', '--interval', '1'], /--interval is an option of watch/],
      [['watch', 'a', '--watch', 'b'], /--watch is an option of serve/],
    ] as const) {
      expect(() => parseArguments([...argv]), argv.join(' ')).toThrow(UsageError);
      expect(() => parseArguments([...argv])).toThrow(message);
    }
  });

  it('exits 2 on one line for a folder that is missing or a file', async () => {
    const root = mkdtempSync(join(tmpdir(), 'allot-watch-'));
    writeFileSync(join(root, 'a.pickle'), 'x');
    for (const [folder, why] of [
      ['missing', 'no such folder'],
      ['a.pickle', 'not a folder'],
    ] as const) {
      const stdout = new Capture();
      const stderr = new Capture();
      expect(await lab(['watch', folder, '--once'], { stdout, stderr, cwd: root })).toBe(
        EXIT_BAD_INPUT,
      );
      expect(stderr.text).toBe(
        `allot-lab: cannot watch ${folder}: ${why}${why === 'no such folder' ? ' (ENOENT)' : ''}\n`,
      );
    }
    rmSync(root, { recursive: true });
  });
});
