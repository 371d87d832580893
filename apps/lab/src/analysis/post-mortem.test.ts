/**
 * The post-mortem on recordings whose out-of-memory error is known by construction: each is a small
 * snapshot (PyTorch's defaults) that ends in an `oom` entry, with `device_free` setting the wall.
 *
 * ```
 *  fragmentation   60 MiB segment split 20 | 20 | 20, the outer two freed; 40 MiB asked at a 90 MiB
 *                  wall: no cached block fits, 60 + 40 > 90. Expandable segments grow the free end
 *                  by 20 MiB instead (80 MiB).
 *  oversize split  100 MiB cached, 30 MiB splits it, 100 MiB asked at a 135 MiB wall: 100 + 100 >
 *                  135. With max_split_size_mb ≤ 64 the 30 MiB gets a segment of its own (130 MiB)
 *                  and the 100 MiB block is reused; expandable segments would need 140 MiB.
 *  too big         50 MiB live, 100 MiB asked at a 70 MiB wall: nothing fits 150 MiB in 70.
 * ```
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fragmentation, oversizeSplit, Recording } from '../../test/oom-recordings';
import { lab } from '../lab';
import { Capture } from '../test-capture';
import type { ReportData } from '../ui/report-data';
import type { OomFigures } from './post-mortem';

const MiB = 2 ** 20;

const dir = mkdtempSync(join(tmpdir(), 'allot-post-mortem-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function postMortemOf(name: string, recording: Recording): Promise<OomFigures> {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, recording.snapshot());
  const stdout = new Capture();
  await lab(['replay', file, '--allocators', 'caching', '--json', '--no-report', '--quiet'], {
    stdout,
    stderr: new Capture(),
  });
  return JSON.parse(stdout.text).workloads[0].torch.oom as OomFigures;
}

const confs = (oom: OomFigures) => oom.avoidedBy!.map((setting) => setting.allocConf);

describe('the out-of-memory post-mortem, on recordings built to fail', () => {
  it('fragmentation: reproduced under the defaults, avoided by expandable segments', async () => {
    const oom = await postMortemOf('fragmentation', fragmentation());
    expect(oom.capacityBytes).toBe(90 * MiB);
    expect(oom.reproduced).toEqual({ event: 11, sizeBytes: 40 * MiB });
    // 40 MiB free in the cache, in two 20 MiB remainders of a segment still in use.
    expect(oom.state).toMatchObject({
      freeInCacheBytes: 40 * MiB,
      freeBlocks: 2,
      largestFreeBlockBytes: 20 * MiB,
      tooSmallBlocks: 2,
      remainderBytes: 40 * MiB,
    });
    expect(confs(oom)).not.toContain('');
    expect(confs(oom)).toContain('expandable_segments:True');
    const expandable = oom.avoidedBy!.find((s) => s.allocConf === 'expandable_segments:True')!;
    expect(expandable.peakReservedBytes).toBe(80 * MiB);
    expect(expandable.headroomBytes).toBe(10 * MiB);
  });

  it('an oversize block split: avoided by max_split_size_mb, not by expandable segments', async () => {
    const oom = await postMortemOf('oversize', oversizeSplit());
    expect(oom.capacityBytes).toBe(135 * MiB);
    expect(oom.reproduced).toEqual({ event: 5, sizeBytes: 100 * MiB });
    expect(oom.state!.largestFreeBlockBytes).toBe(70 * MiB);
    const avoiding = confs(oom);
    expect(avoiding.length).toBeGreaterThan(0);
    expect(avoiding.every((conf) => conf.includes('max_split_size_mb'))).toBe(true);
    expect(avoiding).not.toContain('expandable_segments:True');
    expect(oom.avoidedBy![0]!.peakReservedBytes).toBe(130 * MiB);
    expect(oom.avoidedBy![0]!.headroomBytes).toBe(5 * MiB);
  });

  it('simply too big: no setting avoids it, and it says what it would take', async () => {
    const oom = await postMortemOf(
      'too-big',
      new Recording().segment(0, 50).alloc(0, 50).oom(100, 20),
    );
    expect(oom.capacityBytes).toBe(70 * MiB);
    expect(oom.reproduced).toEqual({ event: 2, sizeBytes: 100 * MiB });
    expect(oom.avoidedBy).toEqual([]);
    expect(oom.needs!.leastBytes).toBe(150 * MiB);
    expect(oom.needs!.bestBytes).toBeGreaterThanOrEqual(150 * MiB);
  });

  it('says the verdict and the advice in the terminal', async () => {
    const file = join(dir, 'terminal.json');
    writeFileSync(file, fragmentation().snapshot());
    const stdout = new Capture();
    await lab(['replay', file, '--allocators', 'caching', '--no-report', '--quiet'], {
      stdout,
      stderr: new Capture(),
    });
    expect(stdout.text).toMatch(
      /reproduced: replaying the recorded settings at the wall fails at entry 11 too/,
    );
    expect(stdout.text).toMatch(
      /at that request: 40\.0 MiB reserved but unallocated, in 2 free blocks, the largest 20\.0 MiB/,
    );
    expect(stdout.text).toMatch(
      /avoided by \d+ settings? tried; the most headroom: PYTORCH_CUDA_ALLOC_CONF=/,
    );
  });

  it('allot-lab oom: the long form, --json, a file without an error, and no file', async () => {
    const file = join(dir, 'long.json');
    writeFileSync(
      file,
      new Recording()
        .segment(0, 100)
        .alloc(0, 100)
        .free(0, 100)
        .alloc(0, 30)
        .oom(100, 35)
        .snapshot(),
    );
    const run = async (...argv: string[]) => {
      const stdout = new Capture();
      const stderr = new Capture();
      const status = await lab(['oom', ...argv, '--quiet'], { stdout, stderr });
      return { status, stdout: stdout.text, stderr: stderr.text };
    };
    const text = await run(file);
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/^long\.json: recorded with PYTORCH_CUDA_ALLOC_CONF=''/);
    expect(text.stdout).toMatch(
      /pool +stream +reserved +free in the cache\n +large +0 +100 MiB +70\.0 MiB/,
    );
    expect(text.stdout).toMatch(
      /avoided by \d+ settings? tried; the most headroom: PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:/,
    );
    const json = JSON.parse((await run(file, '--json')).stdout);
    expect(json.traces[0].oom.reproduced).toEqual({ event: 5, sizeBytes: 100 * MiB });
    // The same device stated: the wall is the one given.
    const stated = JSON.parse((await run(file, '--json', '--memory', '1GiB')).stdout);
    expect(stated.traces[0].oom.capacitySource).toBe('--memory');
    expect(stated.traces[0].oom.reproduced).toBeNull();
    const none = join(dir, 'none.json');
    writeFileSync(none, new Recording().segment(0, 20).alloc(0, 20).free(0, 20).snapshot());
    expect((await run(none)).stdout).toMatch(/none\.json: no out-of-memory error recorded/);
    const bare = await run();
    expect(bare.status).toBe(2);
    expect(bare.stderr).toMatch(/oom needs a snapshot that recorded an out-of-memory error/);
  });

  it('draws the layout at the failing request in the report, beside the advice', async () => {
    const file = join(dir, 'report.json');
    writeFileSync(file, fragmentation().snapshot());
    const out = join(dir, 'report');
    await lab(['replay', file, '--allocators', 'caching', '--out', out, '--quiet'], {
      stdout: new Capture(),
      stderr: new Capture(),
    });
    const html = readFileSync(join(out, 'index.html'), 'utf8');
    const data = JSON.parse(
      /<script type="application\/json" id="lab-data">(.*?)<\/script>/s.exec(html)![1]!,
    ) as ReportData;
    // The page draws them under the recorded error (report.browser.test.ts checks it does).
    expect(data.workloads[0]!.ooms).toHaveLength(1);
    const layouts = data.workloads[0]!.oomLayouts;
    expect(layouts.map((l: { name: string }) => l.name)).toEqual([
      'at the failing request (entry 11), recorded settings',
      'the same moment under expandable_segments:True, the request served',
    ]);
    // 60 MiB reserved at the failure, 20 MiB of it live; under the advice the 40 MiB request is live.
    expect(layouts[0]!.view).toMatchObject({ totalBytes: 60 * MiB, liveBytes: 20 * MiB });
    expect(layouts[1]!.view).toMatchObject({ totalBytes: 80 * MiB, liveBytes: 60 * MiB });
  });

  it('each setting that avoids it, checked by a separate replay at the wall', async () => {
    const cases = [
      ['checked-fragmentation', fragmentation()],
      ['checked-oversize', oversizeSplit()],
    ] as const;
    for (const [name, recording] of cases) {
      const oom = await postMortemOf(name, recording);
      expect(oom.avoidedBy!.length).toBeGreaterThan(0);
      const file = join(dir, `${name}.json`);
      for (const setting of oom.avoidedBy!) {
        const stdout = new Capture();
        const argv = [
          'replay',
          file,
          '--allocators',
          'caching',
          '--json',
          '--no-report',
          '--quiet',
        ];
        argv.push('--memory', String(oom.capacityBytes));
        if (setting.allocConf !== '') argv.push('--config', setting.allocConf);
        await lab(argv, { stdout, stderr: new Capture() });
        const rows = JSON.parse(stdout.text).workloads[0].rows as {
          config?: string;
          failures: number;
          recordedOomsFailed?: number;
          peakReservedBytes: number;
        }[];
        const row = rows.find((r) => r.config === setting.allocConf)!;
        expect(row.failures, setting.allocConf).toBe(0);
        expect(row.recordedOomsFailed, setting.allocConf).toBe(0);
      }
      // And the recorded settings do not: their row fails the recorded request.
      const stdout = new Capture();
      await lab(['replay', file, '--allocators', 'caching', '--json', '--no-report', '--quiet'], {
        stdout,
        stderr: new Capture(),
      });
      expect(JSON.parse(stdout.text).workloads[0].rows[0].recordedOomsFailed).toBe(1);
    }
  });
});
