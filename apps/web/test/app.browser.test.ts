/**
 * The web app in headless Chromium (the lab's browser tests' launcher), served by
 * `allot-lab serve` from the built CLI, as a user runs it:
 *
 * - train-default (the shared H100 recordings; skipped, with a message, where absent) through the
 *   file input: the predicted peak is the one `allot-lab replay --json` gives the recorded row, to
 *   the byte, and with expandable_segments on, the one `--config expandable_segments:True` gives;
 *   the tuner's advice comes as a `PYTORCH_CUDA_ALLOC_CONF=` line and the report's charts draw;
 * - a folder of two ranks in torchtitan's layout (train-default as rank 0, infer-default as rank 1,
 *   copied under the temporary folder) through the folder input: a row per rank, the worst named,
 *   and the one setting for every rank is the `allocConf` of `allot-lab tune DIR --json`;
 * - the file `serve FILE` names opens by itself, and the page works from file:// too;
 * - while a generated 250 MB snapshot is read, the page answers clicks at once and its timers run
 *   on time: the reading is in the worker.
 *
 * Every request that is not to the server (or a blob or file URL) is blocked and counted: none may
 * be made. No console error or warning may appear.
 */
import { type ChildProcess, execFile } from 'node:child_process';
import {
  copyFileSync,
  createReadStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
} from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { type JobAdvice, jobAdviceText, streamTraces, WhatIfLab } from '@allot/lab/engine';
import { reportData } from '@allot/lab/report';
import { traceBrief } from '@allot/lab/ui';
import { torchSnapshotChunks } from '@allot/workloads';
import { findTracesDir } from '@allot/workloads/node';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumOrSkip, launchChromium } from '../../lab/test/chromium';
import { cli, onlyFrom, predicted, serve, tab } from './app-tab';

const hasChromium = chromiumOrSkip('web app browser test');
const root = join(import.meta.dirname, '..', '..', '..');
const dist = join(import.meta.dirname, '..', 'dist', 'index.html');
const fixture = join(root, 'packages/workloads/src/readers/fixtures/snapshot.json');
const trainDefault = (() => {
  const traces = findTracesDir();
  const file = traces === null ? null : join(traces, 'pytorch-h100', 'train-default.pickle.gz');
  if (file !== null && existsSync(file)) return file;
  console.warn('web app test of train-default skipped: no pytorch-h100/train-default.pickle.gz');
  return null;
})();
/** Size of the generated snapshot read while the page is asked to answer clicks. */
const BIG_SNAPSHOT_BYTES = 250e6;

/** `allot-lab replay FILE ARGS... --json`: the recorded row's name and each row's peak. */
async function cliPeaks(file: string, ...args: string[]) {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [cli, 'replay', file, '--allocators', 'caching', '--no-report', '--quiet', '--json', ...args],
    { maxBuffer: 1 << 26 },
  );
  const workload = JSON.parse(stdout).workloads[0] as {
    rows: { allocator: string; peakReservedBytes: number }[];
    torch: { fidelity: { allocator: string } };
  };
  const peaks = new Map(workload.rows.map((row) => [row.allocator, row.peakReservedBytes]));
  return { recorded: peaks.get(workload.torch.fidelity.allocator), peaks };
}

/** The engine in Node.js on `file` at PyTorch's defaults: its events and the reserved bytes at its end. */
async function engineEnd(file: string): Promise<{ events: number; reserved: number }> {
  const lab = new WhatIfLab();
  lab.add(await streamTraces(createReadStream(file), { name: file }), file);
  const answer = lab.replay({ config: '', memory: null, fraction: null });
  const workload = answer.results.workloads[0]!;
  const { whatIf } = traceBrief(reportData(answer.results).workloads[0]!, answer.config);
  const row = workload.rows.find((row) => row.allocator === whatIf.allocator)!;
  expect(row.series.event.at(-1)).toBe(workload.events);
  return { events: workload.events, reserved: row.series.reservedBytes.at(-1)! };
}
const inferDefault =
  trainDefault === null ? null : join(trainDefault, '..', 'infer-default.pickle.gz');

describe.skipIf(!hasChromium)('the web app in headless Chromium', () => {
  let context: BrowserContext;
  let server: { child: ChildProcess; url: string };
  let origin: string;
  const blocked: string[] = [];
  const problems: string[] = [];

  beforeAll(async () => {
    server = await serve(fixture);
    origin = new URL(server.url).origin;
    context = await launchChromium();
    await onlyFrom(context, origin, blocked);
  });
  afterAll(async () => {
    await context?.close();
    server?.child.kill();
  });

  /**
   * A tab with train-default read, shared by the stepping test and the comparison (which adds
   * infer-default to it): reading and replaying it once is enough for both.
   */
  let trainTab: Promise<Page> | undefined;
  function withTrain(): Promise<Page> {
    trainTab ??= (async () => {
      const page = await tab(context, problems);
      await page.goto(`${origin}/`);
      await page.getByTestId('file-input').setInputFiles(trainDefault!);
      return page;
    })();
    return trainTab;
  }

  it.skipIf(trainDefault === null)(
    'predicts the peaks the CLI prints, to the byte, and advises a setting to copy',
    async () => {
      const [recorded, expandable] = await Promise.all([
        cliPeaks(trainDefault!),
        cliPeaks(trainDefault!, '--config', 'expandable_segments:True'),
      ]);
      const page = await tab(context, problems);
      await page.goto(`${origin}/`);
      await expect(page.getByTestId('privacy').textContent()).resolves.toMatch(
        /Nothing leaves this machine/,
      );
      await page.getByTestId('file-input').setInputFiles(trainDefault!);
      expect(await predicted(page, '')).toBe(recorded.recorded);

      await page.getByTestId('expandable_segments').check();
      expect(await predicted(page, 'expandable_segments:True')).toBe(
        expandable.peaks.get('caching (expandable_segments:True)'),
      );
      await expect(page.getByTestId('command').textContent()).resolves.toBe(
        'allot-lab replay train-default.pickle.gz --config expandable_segments:True',
      );

      const advice = page.getByTestId('advice').first();
      await advice.waitFor({ timeout: 60_000 });
      expect(await advice.textContent()).toMatch(/^PYTORCH_CUDA_ALLOC_CONF=\S*$/);
      // The report drew: its charts and the pools' layouts, from the same page data.
      await page.waitForSelector('body[data-rendered="true"]');
      expect(await page.locator('.uplot canvas').count()).toBeGreaterThan(0);
      expect(await page.locator('figure.layout canvas').count()).toBeGreaterThan(0);
      await page.close();
      expect(problems).toEqual([]);
      expect(blocked).toEqual([]);
    },
  );

  it.skipIf(trainDefault === null)(
    "steps through the pool's state event by event with the arrow keys",
    async () => {
      const end = await engineEnd(trainDefault!);
      const page = await withTrain();
      const at = (event: number) =>
        page
          .locator(`[data-testid="state-event"][data-state="ready"][data-event="${event}"]`)
          .waitFor({ timeout: 60_000 });
      await at(0);
      await page.getByTestId('state-slider').focus();
      for (let i = 0; i < 3; i++) await page.keyboard.press('ArrowRight');
      await at(3);
      await page.keyboard.press('End');
      await at(end.events - 1);
      const reserved = page.getByTestId('state-reserved');
      expect(Number(await reserved.getAttribute('data-bytes'))).toBe(end.reserved);
      // Back 1 % of the trace, replayed from the start.
      await page.keyboard.press('Shift+ArrowLeft');
      await at(end.events - 1 - Math.round(end.events / 100));
      expect(problems).toEqual([]);
      expect(blocked).toEqual([]);
    },
  );

  it.skipIf(inferDefault === null || !existsSync(inferDefault))(
    'compares two snapshots: the peaks, their difference and the allocations that grew',
    async () => {
      const [train, infer] = await Promise.all([cliPeaks(trainDefault!), cliPeaks(inferDefault!)]);
      const page = await withTrain();
      await predicted(page);
      await page.getByTestId('file-input').setInputFiles(inferDefault!);
      const difference = page.getByTestId('peak-difference');
      const expected = infer.recorded! - train.recorded!;
      await page.locator(`[data-testid="peak-difference"][data-bytes="${expected}"]`).waitFor({
        timeout: 60_000,
      });
      expect(Number(await difference.getAttribute('data-bytes'))).toBe(expected);
      const grown = page.locator('[data-testid="grown"] li');
      await grown.first().waitFor({ timeout: 60_000 });
      const figures = (await grown.evaluateAll((items) =>
        items.map((item) => Number(item.getAttribute('data-grown'))),
      )) as number[];
      expect(figures.length).toBeGreaterThan(0);
      expect(figures.every((bytes) => bytes > 0)).toBe(true);
      expect(figures).toEqual([...figures].sort((a, b) => b - a));
      await page.close();
      expect(problems).toEqual([]);
      expect(blocked).toEqual([]);
    },
  );

  it.skipIf(inferDefault === null || !existsSync(inferDefault))(
    'takes a folder of rank snapshots and advises one setting for every rank, as tune DIR does',
    async () => {
      const parent = mkdtempSync(join(tmpdir(), 'allot-web-job-'));
      try {
        const folder = join(parent, 'memory_snapshot');
        mkdirSync(folder);
        copyFileSync(trainDefault!, join(folder, 'rank0_memory_snapshot.pickle.gz'));
        copyFileSync(inferDefault!, join(folder, 'rank1_memory_snapshot.pickle.gz'));
        const tuned = promisify(execFile)(
          process.execPath,
          [cli, 'tune', 'memory_snapshot', '--json', '--no-report', '--quiet'],
          { cwd: parent, maxBuffer: 1 << 26 },
        );
        const page = await tab(context, problems);
        await page.goto(`${origin}/`);
        await page.getByTestId('folder-input').setInputFiles(folder);
        const panel = page.getByTestId('job-panel');
        await panel.locator('[data-testid="job-worst"]').waitFor({ timeout: 60_000 });
        const rows = panel.locator('[data-testid="job-rank"]');
        await expect(
          rows.evaluateAll((items) => items.map((item) => item.dataset.rank)),
        ).resolves.toEqual(['0', '1']);
        const [peak0, peak1] = (await rows.evaluateAll((items) =>
          items.map((item) =>
            Number(item.querySelector('td[data-bytes]')!.getAttribute('data-bytes')),
          ),
        )) as number[];
        const worst = peak0! >= peak1! ? '0' : '1';
        await expect(panel.getByTestId('job-worst').getAttribute('data-rank')).resolves.toBe(worst);
        await page.getByTestId('job-advise').click();
        const advice = page.getByTestId('job-advice');
        await advice.waitFor({ timeout: 60_000 });
        const expected = JSON.parse((await tuned).stdout) as {
          allocConf: string;
          advice: JobAdvice;
          ranks: { rank: number; defaultsFailures: number; oom?: unknown }[];
        };
        await expect(advice.getAttribute('data-config')).resolves.toBe(expected.allocConf);
        await expect(advice.textContent()).resolves.toBe(
          `PYTORCH_CUDA_ALLOC_CONF=${expected.allocConf}`,
        );
        // Why, in tune DIR's words, from the CLI's own figures: the same saving and the same reason.
        const { reasons } = jobAdviceText(
          expected.advice,
          expected.ranks.map((rank) => ({
            rank: rank.rank,
            defaultsFailures: rank.defaultsFailures,
            died: rank.oom !== undefined,
          })),
        );
        expect(reasons.length).toBeGreaterThan(0);
        await expect(
          page.locator('[data-testid="job-advice-reasons"] li').allTextContents(),
        ).resolves.toEqual(reasons);
        await page.close();
        expect(problems).toEqual([]);
        expect(blocked).toEqual([]);
      } finally {
        rmSync(parent, { recursive: true, force: true });
      }
    },
  );

  it('opens the file serve names, and works from file:// as well', async () => {
    const page = await tab(context, problems);
    await page.goto(server.url);
    const served = await predicted(page);
    expect(served).toBeGreaterThan(0);
    await page.goto(pathToFileURL(dist).href);
    await page.getByTestId('file-input').setInputFiles(fixture);
    expect(await predicted(page)).toBe(served);
    await page.close();
    expect(problems).toEqual([]);
    expect(blocked).toEqual([]);
  });

  it('answers clicks at once while a 250 MB snapshot is read', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'allot-web-big-'));
    const file = join(dir, 'big.pickle');
    try {
      const handle = await open(file, 'w');
      // With 16-deep stacks, as users record them (the generator's default).
      const options = { targetBytes: BIG_SNAPSHOT_BYTES, seed: 3 };
      for (const chunk of torchSnapshotChunks(options)) {
        await handle.write(chunk); // each await lets the test's event loop go
      }
      await handle.close();
      const page = await tab(context, problems);
      await page.goto(`${origin}/`);
      await page.evaluate(`(() => {
        const probe = document.createElement('button');
        probe.id = 'probe';
        probe.textContent = 'probe';
        document.body.prepend(probe);
        window.probe = { clicks: [], gaps: [] };
        probe.addEventListener('click', (event) => window.probe.clicks.push(performance.now() - event.timeStamp));
        let last = performance.now();
        setInterval(() => { const now = performance.now(); window.probe.gaps.push(now - last); last = now; }, 20);
      })()`);
      await page.getByTestId('file-input').setInputFiles(file);
      const bar = page.locator('.file progress').first();
      await page.waitForFunction(
        () => (document.querySelector('.file progress') as HTMLProgressElement)?.value > 0,
      );
      await page.evaluate('window.probe.gaps.length = 0');
      // Clicks while the file is being read (a fast machine may finish before all six).
      const roundTrips: number[] = [];
      for (let i = 0; i < 6 && (await page.locator('.file.reading').count()) === 1; i++) {
        const started = performance.now();
        await page.click('#probe');
        roundTrips.push(performance.now() - started);
        await page.waitForTimeout(100);
      }
      const [value, max] = await bar.evaluate((p: HTMLProgressElement) => [p.value, p.max]);
      // The timers' gaps over the whole read, which must succeed.
      await page.locator('.file.read, .file.failed').first().waitFor({ timeout: 60_000 });
      const probe = (await page.evaluate('window.probe')) as { clicks: number[]; gaps: number[] };
      const ms = (values: number[]) => values.map((v) => v.toFixed(0)).join(', ');
      console.log(
        `clicks answered in ${ms(probe.clicks)} ms (round trips ${ms(roundTrips)} ms) while ${(value! / 1e6).toFixed(0)} of ${(max! / 1e6).toFixed(0)} MB were read; longest gap between 20 ms timers over the read: ${Math.max(...probe.gaps).toFixed(0)} ms`,
      );
      expect(await page.locator('.file.failed').count()).toBe(0);
      expect(roundTrips.length).toBeGreaterThanOrEqual(3);
      expect(probe.clicks).toHaveLength(roundTrips.length);
      expect(Math.max(...probe.clicks)).toBeLessThan(250);
      expect(Math.max(...probe.gaps)).toBeLessThan(250);
      await page.close();
      expect(problems).toEqual([]);
      expect(blocked).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
