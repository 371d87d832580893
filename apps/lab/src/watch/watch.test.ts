/**
 * `allot-lab watch` on a job of four ranks whose dumps land one after another while it runs: the
 * ring-buffer dumps PyTorch would have written of the real H100 recordings (ring-dumps.ts; ranks
 * 0 and 2 train, rank 1 serves, rank 3 trains until it runs out of memory in step 10). Skipped,
 * saying so, when ../shared/traces is absent.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findTracesDir } from '@allot/workloads/node';
import { beforeAll, describe, expect, it } from 'vitest';
import { lab } from '../lab';
import { EXIT_BAD_INPUT, EXIT_OK } from '../options';
import { Capture } from '../test-capture';
import { formatBytes } from '../units';
import { metricsText } from './metrics';
import { readDump } from './read-dump';
import { type PlannedDump, type RingJob, ringJob } from './ring-dumps';
import { jobFolder, jsonLines, runLab, startWatch, until } from './test-watch';
import { WatchedJob } from './watched-job';

const traces = findTracesDir();
const h100 = traces === null ? null : join(traces, 'pytorch-h100');
const TRAIN = h100 === null ? '' : join(h100, 'train-default.pickle.gz');
const INFER = h100 === null ? '' : join(h100, 'infer-default.pickle.gz');
const present = h100 !== null && existsSync(TRAIN) && existsSync(INFER);

/** The line of `text` that is `dump`'s row: its rank first, its file last. */
function rowOf(text: string, dump: PlannedDump): string | undefined {
  return text
    .split('\n')
    .find(
      (line) => line.startsWith(String(dump.rank).padStart(5)) && line.includes(`  ${dump.path}`),
    );
}

/** `replay FILE --json`'s first workload: its fidelity figure and its post-mortem. */
async function replayed(path: string) {
  const { status, stdout } = await runLab([
    'replay',
    path,
    '--json',
    '--no-report',
    '--quiet',
    '--allocators',
    'caching',
  ]);
  expect(status, path).toBe(EXIT_OK);
  const torch = (JSON.parse(stdout) as { workloads: { torch: Record<string, unknown> }[] })
    .workloads[0]!.torch as { fidelity: { predictedPeakReservedBytes: number }; oom?: unknown };
  return { peak: torch.fidelity.predictedPeakReservedBytes, oom: torch.oom };
}

if (!present) {
  describe.skip('watch, on a job written while it runs (../shared/traces/pytorch-h100 is absent)', () => {
    it('skipped', () => {});
  });
} else {
  describe('watch, on a job of four ranks written while it runs', () => {
    let job: RingJob;
    const folder = jobFolder();
    const whole = jobFolder();
    /** Per rank, what `replay` of its whole recording gives, and its entries. */
    const expected: { peak: number; entries: number }[] = [];

    beforeAll(async () => {
      job = await ringJob({
        ranks: [
          { recording: TRAIN },
          // The serving recording's steps are long: a ring buffer that reaches back to the dump before.
          { recording: INFER, maxEntries: 150_000 },
          { recording: TRAIN },
          { recording: TRAIN, oom: true },
        ],
        stackDepth: 4,
      });
      for (let rank = 0; rank < 4; rank++) {
        const path = join(whole, `rank${rank}.pickle`);
        await job.writeWhole(rank, path);
        expected.push({
          peak: (await replayed(path)).peak,
          entries: (await readDump(path, path)).entries.length,
        });
      }
    }, 300_000);

    it("prints each rank's row as its files arrive, the post-mortem when the OOM dump lands, and stops on Ctrl-C", async () => {
      const watch = startWatch(folder);
      await until(() => watch.stderr.text.includes('watching'), 'the watch to start');
      expect(watch.stdout.text).toMatch(/^ rank {2}step {2}reserved/);
      for (const dump of job.dumps) {
        expect(rowOf(watch.stdout.text, dump), dump.path).toBeUndefined();
        await job.write(dump, folder);
        await until(() => rowOf(watch.stdout.text, dump) !== undefined, `the row of ${dump.path}`);
        if (dump.kind === 'oom') {
          const text = watch.stdout.text;
          const at = text.indexOf('rank 3 ran out of memory in step 10:');
          expect(at).toBeGreaterThan(text.indexOf(rowOf(text, dump)!));
          const postMortem = text.slice(at);
          expect(postMortem).toMatch(/out of memory recorded at entry [\d,]+: a 1\.39 GiB request/);
          expect(postMortem).toMatch(
            /reproduced: replaying the recorded settings at the wall fails at entry/,
          );
          expect(postMortem).toContain(
            'who holds the memory at that request, by the innermost frame of your own code:',
          );
          expect(postMortem).toMatch(
            /avoided by \d+ settings tried; the most headroom: PYTORCH_CUDA_ALLOC_CONF=/,
          );
        }
      }
      expect(await watch.stop()).toBe(EXIT_OK);
      expect(watch.stderr.text).toMatch(/read 15 files of 4 ranks\n$/);
      // The table once more, last: each rank's replayed peak is replay's of its whole recording.
      const table = watch.stdout.text.slice(watch.stdout.text.lastIndexOf('\n rank  step'));
      const lines = table.split('\n').filter((line) => line !== '');
      const end = lines[0]!.indexOf('replayed peak') + 'replayed peak'.length;
      for (let rank = 0; rank < 4; rank++) {
        const line = lines.find((l) => l.startsWith(String(rank).padStart(5)))!;
        expect(line.slice(end - 15, end).trim(), `rank ${rank}`).toBe(
          formatBytes(expected[rank]!.peak),
        );
      }
      expect(lines.at(-1)).toMatch(/^advice so far: PYTORCH_CUDA_ALLOC_CONF=/);
    }, 300_000);

    it('--once --json: a line per file, each rank once per entry, its peak to the byte, the post-mortem as replay gives it', async () => {
      for (const dump of job.dumps) {
        if (!existsSync(join(folder, dump.path))) await job.write(dump, folder);
      }
      const { status, stdout } = await runLab(['watch', folder, '--once', '--json', '--quiet']);
      expect(status).toBe(EXIT_OK);
      const lines = jsonLines(stdout);
      const updates = lines.filter((line) => !('oom' in line));
      expect(updates.map((line) => line.file)).toEqual(job.dumps.map((dump) => dump.path));
      const previous = new Map<number, PlannedDump>();
      const newEntries = [0, 0, 0, 0];
      const ooms = lines.filter((line) => 'oom' in line);
      for (const [i, dump] of job.dumps.entries()) {
        const line = updates[i]!;
        expect(line).toMatchObject({ rank: dump.rank, device: 0, step: dump.step, gap: null });
        const before = previous.get(dump.rank);
        // Each entry once: what the dump shares with the one before, and only what it adds.
        expect(line.overlapEntries).toBe(before === undefined ? 0 : before.to - dump.from);
        newEntries[dump.rank]! += line.newEntries as number;
        expect(line.unallocatedBytes).toBe(
          (line.reservedBytes as number) - (line.allocatedBytes as number),
        );
        expect(line.inactiveSplitBytes).toBeLessThanOrEqual(line.unallocatedBytes as number);
        expect(line.recordedPeakReservedBytes).toBeGreaterThanOrEqual(line.reservedBytes as number);
        const advice = line.advice as { allocConf: string; peakReservedBytes: number };
        expect(typeof advice.allocConf).toBe('string');
        expect(advice.peakReservedBytes).toBeGreaterThan(0);
        expect(line.seconds).toBeGreaterThan(0);
        expect(line.cpuSeconds).toBeGreaterThan(0);
        previous.set(dump.rank, dump);
      }
      for (let rank = 0; rank < 4; rank++) {
        const last = updates.filter((line) => line.rank === rank).at(-1)!;
        expect(last.peakReservedBytes, `rank ${rank}`).toBe(expected[rank]!.peak);
        expect(newEntries[rank], `rank ${rank}: entries`).toBe(expected[rank]!.entries);
      }
      // The OOM dump's post-mortem, right after its row, is replay --json's torch.oom of the dump.
      expect(ooms).toHaveLength(1);
      const oomDump = job.dumps.find((dump) => dump.kind === 'oom')!;
      expect(ooms[0]).toMatchObject({ rank: 3, file: oomDump.path, step: 10 });
      expect(lines.indexOf(ooms[0]!)).toBe(
        lines.findIndex((line) => line.file === oomDump.path) + 1,
      );
      const recorded = (await replayed(join(folder, oomDump.path))).oom;
      expect(ooms[0]!.oom).toEqual(JSON.parse(JSON.stringify(recorded)));
      // After the rank died, the job's advice serves its request at its wall.
      const final = updates.at(-1)!.advice as { allocConf: string };
      const died = lines.find((line) => line.file === oomDump.path && !('oom' in line))!;
      expect(final.allocConf).not.toBe('');
      expect(died.rank).toBe(3);
    }, 300_000);
  });

  describe('watch, on a rank that ran out under a per-process memory fraction', () => {
    it("takes the wall from the recorder's sidecar, not from the device's free memory, as replay does", async () => {
      // Rank 1's cap is PyTorch's fraction of an 80 GiB card: when it fails, the card has tens of
      // GiB free, and reserved + device_free is no wall at all.
      const job = await ringJob({
        ranks: [{ recording: TRAIN }, { recording: TRAIN, oom: true, fraction: true }],
        steps: 8,
        every: 4,
      });
      const folder = jobFolder();
      for (const dump of job.dumps) await job.write(dump, folder);
      const whole = join(jobFolder(), 'rank1.pickle');
      await job.writeWhole(1, whole);
      const oomDump = job.dumps.find((dump) => dump.kind === 'oom')!;
      const sidecar = JSON.parse(
        readFileSync(join(folder, oomDump.path.replace(/\.pickle$/, '.json')), 'utf8'),
      ) as { deviceTotalBytes: number; memoryFraction: number; oom: { limitBytes: number } };
      expect(Math.floor(sidecar.deviceTotalBytes * sidecar.memoryFraction)).toBe(
        sidecar.oom.limitBytes,
      );
      const { status, stdout } = await runLab(['watch', folder, '--once', '--json', '--quiet']);
      expect(status).toBe(EXIT_OK);
      const lines = jsonLines(stdout);
      const oom = lines.find((line) => 'oom' in line)!.oom as {
        recorded: { event: number; sizeBytes: number; deviceFreeBytes: number };
        capacityBytes: number;
        capacitySource: string;
        reproduced: { event: number } | null;
      };
      expect(oom.recorded.deviceFreeBytes).toBeGreaterThan(10 * 2 ** 30);
      expect(oom).toMatchObject({
        capacityBytes: sidecar.oom.limitBytes,
        capacitySource: 'recorded',
      });
      expect(oom.reproduced?.event).toBe(oom.recorded.event);
      // As replay words it, and its peak is replay's of the whole recording (sidecar beside it).
      const replay = await replayed(join(folder, oomDump.path));
      expect(oom).toEqual(JSON.parse(JSON.stringify(replay.oom)));
      const last = lines.filter((line) => line.rank === 1 && !('oom' in line)).at(-1)!;
      expect(last.peakReservedBytes).toBe((await replayed(whole)).peak);
      const text = (await runLab(['watch', folder, '--once', '--quiet'])).stdout;
      expect(text).toContain('(the per-process memory fraction of the card, as recorded)');
      expect(text).not.toContain('the device had room for the request');
      // Without the sidecars, the dump alone cannot tell: the post-mortem says so.
      for (const dump of job.dumps) {
        rmSync(join(folder, dump.path.replace(/\.pickle$/, '.json')), { force: true });
      }
      const bare = (await runLab(['watch', folder, '--once', '--quiet'])).stdout;
      expect(bare).toContain('(reserved + device_free)');
      expect(bare).toContain('the device had room for the request');
    }, 300_000);
  });

  describe('watch, on dumps that do not join or do not read', () => {
    it('marks a gap where a window does not reach back to the dump before it', async () => {
      const job = await ringJob({
        ranks: [{ recording: TRAIN, maxEntries: 3_000 }],
        steps: 8,
        every: 2,
      });
      const folder = jobFolder();
      for (const dump of job.dumps) await job.write(dump, folder);
      const json = jsonLines(
        (await runLab(['watch', folder, '--once', '--json', '--quiet'])).stdout,
      );
      expect(json.map((line) => line.gap === null)).toEqual([true, false, false, false]);
      expect(json[1]!.gap).toBe("the dump's window does not reach back to the dump before it");
      expect(json.map((line) => line.newEntries)).toEqual([3_000, 3_000, 3_000, 3_000]);
      const text = (await runLab(['watch', folder, '--once', '--quiet'])).stdout;
      expect(text).toContain(
        "rank 0, rank0_step4.pickle: a gap in the timeline: the dump's window does not reach back to the dump before it",
      );
      expect(text).toMatch(/rank0_step8_exit\.pickle \(3 gaps\)/);
      // On a terminal, the table is kept in place: each time, up over the one drawn last, cleared.
      const stdout = Object.assign(new Capture(), { isTTY: true });
      const stderr = new Capture();
      expect(await lab(['watch', folder, '--once', '--quiet'], { stdout, stderr })).toBe(EXIT_OK);
      const draws = stdout.text.split('\x1b[0J');
      expect(draws).toHaveLength(4); // the first draw, then three redraws
      for (const [i, draw] of draws.slice(0, -1).entries()) {
        // A draw is the header, one row and the advice: three lines to go up over.
        expect(draw.endsWith('\x1b[3F'), `draw ${i}`).toBe(true);
      }
      expect(draws.at(-1)).toMatch(/gap in the timeline.*\n rank {2}step.*\n {4}0 {5}8 /s);
    }, 300_000);

    it('reads the dumps of a rank started again after those of its first process, a gap between', async () => {
      const job = await ringJob({ ranks: [{ recording: TRAIN }], steps: 8, every: 4 });
      const folder = jobFolder();
      for (const dump of job.dumps) await job.write(dump, folder);
      // torchrun started the rank again: its new process counts steps from 0 (its first dump here
      // is a copy of the first process's step 4, which the ring buffer cannot join).
      writeFileSync(
        join(folder, 'rank0_restart1_step4.pickle'),
        readFileSync(join(folder, job.dumps[0]!.path)),
      );
      const { stdout, stderr } = await runLab(['watch', folder, '--once', '--json']);
      expect(stderr).not.toContain('skipped');
      const lines = jsonLines(stdout);
      expect(lines.map((line) => line.file)).toEqual([
        ...job.dumps.map((dump) => dump.path),
        'rank0_restart1_step4.pickle',
      ]);
      expect(lines.at(-1)).toMatchObject({ rank: 0, step: 4 });
      expect(lines.at(-1)!.gap).toBe("the dump's window does not reach back to the dump before it");
    }, 300_000);

    it('shows a rank only once its first dump is replayed, however often a page asks meanwhile', async () => {
      const job = await ringJob({ ranks: [{ recording: TRAIN }], steps: 8, every: 4 });
      const folder = jobFolder();
      const path = await job.write(job.dumps[0]!, folder);
      const watched = new WatchedJob({ memory: null, fraction: null });
      let done = false;
      const adding = watched
        .add({ path, file: job.dumps[0]!.path, rank: 0, step: 4, oom: false })
        .finally(() => {
          done = true;
        });
      const seen: number[] = [];
      while (!done) {
        seen.push(watched.rows().length);
        expect(metricsText(watched)).toContain('# TYPE allot_reserved_bytes_all_current gauge');
        await new Promise((resolve) => setImmediate(resolve));
      }
      await adding;
      expect(seen.length).toBeGreaterThan(1);
      expect(new Set(seen)).toEqual(new Set([0]));
      expect(watched.rows()).toHaveLength(1);
    }, 300_000);

    it('names a truncated file in one line, skips it and goes on watching, its timeline untouched', async () => {
      const job = await ringJob({
        ranks: [{ recording: TRAIN, maxEntries: 30_000 }],
        steps: 8,
        every: 4,
      });
      const [first, last] = job.dumps as [PlannedDump, PlannedDump];
      const folder = jobFolder();
      const watch = startWatch(folder);
      await job.write(first, folder);
      await until(() => rowOf(watch.stdout.text, first) !== undefined, 'the first row');
      const bytes = readFileSync(join(folder, first.path));
      writeFileSync(join(folder, 'rank0_step6.pickle'), bytes.subarray(0, bytes.length >> 1));
      await until(() => watch.stderr.text.includes('skipped'), 'the truncated file');
      const skipped = watch.stderr.text.split('\n').filter((line) => line.includes('skipped'));
      expect(skipped).toHaveLength(1);
      expect(skipped[0]).toMatch(
        /^allot-lab: skipped rank0_step6\.pickle: byte offset \d+: expected /,
      );
      await job.write(last, folder);
      await until(() => rowOf(watch.stdout.text, last) !== undefined, 'the row after it');
      // The dump after the skipped one joins the timeline as if the damaged file had never been.
      expect(watch.stdout.text).not.toContain('a gap in the timeline');
      // A dump older than the step the rank has merged cannot join it: named, and skipped.
      writeFileSync(join(folder, 'rank0_step2.pickle'), bytes);
      await until(() => watch.stderr.text.includes('rank0_step2.pickle'), 'the older dump');
      expect(watch.stderr.text).toContain(
        'allot-lab: skipped rank0_step2.pickle: older than step 8, which rank 0 has already merged\n',
      );
      expect(await watch.stop()).toBe(EXIT_OK);
      const once = await runLab(['watch', folder, '--once', '--json']);
      expect(once.status).toBe(EXIT_BAD_INPUT);
      const lines = jsonLines(once.stdout);
      expect(lines.map((line) => line.file)).toEqual([
        'rank0_step2.pickle',
        first.path,
        'rank0_step6.pickle',
        last.path,
      ]);
      expect(lines[2]!.skipped).toMatch(/^rank0_step6\.pickle: byte offset \d+: expected /);
      expect(lines[3]).toMatchObject({ gap: null, overlapEntries: first.to - last.from });
    }, 300_000);
  });
}
