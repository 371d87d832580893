/**
 * The web app says what the command line says, at 1280 and at 390 px, in headless Chromium, served
 * by `allot-lab serve` from the built CLI (the shared recordings; skipped, with a message, where
 * absent):
 *
 * - who holds the memory never names a C++ frame as a line of your code (SQAttn, recorded with
 *   `stacks="all"`);
 * - a card smaller than the recording's peak live bytes gets no setting, in `tune --memory`'s words;
 * - a job whose ranks recorded different settings is predicted as `replay DIR` predicts it, said
 *   to be in `tune DIR`'s words, and tuned as one only when asked again (`tune DIR --force`'s
 *   setting);
 * - a job with an unreadable rank names it in words, and advises over the others;
 * - an out-of-memory error under a per-process fraction gets the wall `oom` gives it, from the
 *   recorder's sidecar given beside the snapshot;
 * - a folder `allot-lab record` wrote is a job of each rank's newest dump, predicted as
 *   `replay DIR` predicts it;
 * - a recording 0 s long is drawn on its events; the file's line says how its events came from its
 *   trace entries; the pool's last event is said to be the last.
 *
 * Every request that is not to the server is blocked and counted: none may be made. No console
 * error or warning may appear.
 */
import { type ChildProcess, execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { formatBytes } from '@allot/lab/engine';
import { findTracesDir } from '@allot/workloads/node';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumOrSkip, launchChromium } from '../../lab/test/chromium';
import { cli, onlyFrom, serve, tab } from './app-tab';

const hasChromium = chromiumOrSkip('web app answers test');
const shared = findTracesDir();
const h100 = shared === null ? null : join(shared, 'pytorch-h100');
const publicDir = shared === null ? null : join(shared, 'public');
const trainDefault = h100 === null ? null : join(h100, 'train-default.pickle.gz');
const trainExpandable =
  h100 === null ? null : join(h100, 'train-expandable_segments-True.pickle.gz');
const sqattn = publicDir === null ? null : join(publicDir, 'SQAttn-cuda_memory_snapshot.pickle');
const haveRecordings = [trainDefault, trainExpandable, sqattn].every(
  (file) => file !== null && existsSync(file),
);
if (!haveRecordings) console.warn('web app answers test skipped: no ../shared/traces recordings');
const demo = join(import.meta.dirname, '../../lab/dist/watch-demo.js');
const fixture = join(
  import.meta.dirname,
  '../../../packages/workloads/src/readers/fixtures/snapshot.json',
);

/** `allot-lab ARGS... --json` in `cwd`: its parsed output and exit status. */
async function cliJson(args: readonly string[], cwd?: string) {
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [cli, ...args, '--json'], {
      maxBuffer: 1 << 26,
      ...(cwd ? { cwd } : {}),
    });
    return { status: 0, json: JSON.parse(stdout), stderr: '' };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return {
      status: failed.code,
      json: failed.stdout ? JSON.parse(failed.stdout) : null,
      stderr: failed.stderr,
    };
  }
}

/** The job panel's predicted peak of each rank, in bytes, in its rows' order. */
function predictedPeaks(panel: Locator): Promise<number[]> {
  return panel
    .locator('[data-testid="job-rank"] td[data-bytes]')
    .evaluateAll((cells) => cells.map((cell) => Number(cell.getAttribute('data-bytes'))));
}

/** `replay DIR --json`'s predicted peak of each rank under its recorded settings. */
function replayPeaks(json: { ranks: { replayed: { peakReservedBytes: number } }[] }): number[] {
  return json.ranks.map((rank) => rank.replayed.peakReservedBytes);
}

/** A folder of two ranks in torchtitan's layout, from `rank0` and `rank1`'s bytes. */
function jobFolder(parent: string, rank0: Buffer, rank1: Buffer): string {
  const folder = join(parent, 'memory_snapshot');
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, 'rank0_memory_snapshot.pickle.gz'), rank0);
  writeFileSync(join(folder, 'rank1_memory_snapshot.pickle.gz'), rank1);
  return folder;
}

const WIDTHS = [1280, 390] as const;

/** The generated files' folder, made when first asked for, removed when the file's tests are done. */
let scratch: string | undefined;
function scratchDir(): string {
  scratch ??= mkdtempSync(join(tmpdir(), 'allot-web-answers-'));
  return scratch;
}
afterAll(() => {
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

/**
 * A four-rank job as `allot-lab record` writes it (`watch-demo.js --fraction`: a dump every 4
 * steps of every rank, sidecars beside rank 3's, which runs out of memory under a per-process
 * memory fraction), made once: its folder.
 */
function recordedJob(): Promise<string> {
  return once('recorded-job', async () => {
    const dir = join(scratchDir(), 'memory-snapshots');
    const args = [demo, dir, '--delay', '0', '--fraction', '--stack-depth', '0'];
    await promisify(execFile)(process.execPath, args);
    return dir;
  });
}

/**
 * What the command line answers does not depend on the page's width: each question is asked once,
 * by the first width's test, and both widths check the page against that answer.
 */
const asked = new Map<string, Promise<unknown>>();
function once<T>(question: string, ask: () => Promise<T>): Promise<T> {
  if (!asked.has(question)) asked.set(question, ask());
  return asked.get(question) as Promise<T>;
}

describe.skipIf(!hasChromium || !haveRecordings).each(WIDTHS)('the web app at %i px', (width) => {
  let context: BrowserContext;
  let server: { child: ChildProcess; url: string };
  let origin: string;
  const blocked: string[] = [];
  const problems: string[] = [];

  beforeAll(async () => {
    server = await serve();
    origin = new URL(server.url).origin;
    context = await launchChromium();
    await onlyFrom(context, origin, blocked);
  });
  afterAll(async () => {
    await context?.close();
    server?.child.kill();
  });

  async function page(): Promise<Page> {
    const opened = await tab(context, problems, width);
    await opened.goto(`${origin}/`);
    return opened;
  }

  async function done(opened: Page): Promise<void> {
    await opened.close();
    expect(problems).toEqual([]);
    expect(blocked).toEqual([]);
  }

  it('never credits a C++ frame as a line of your code', async () => {
    const opened = await page();
    await opened.getByTestId('file-input').setInputFiles(sqattn!);
    const holders = opened.locator('#report table.peak-table td.frame');
    await holders.first().waitFor({ timeout: 90_000 });
    const texts = await holders.allTextContents();
    expect(texts.some((text) => /in a library: no frame of your own code/.test(text))).toBe(true);
    for (const text of texts) expect(text).not.toMatch(/torch::unwind|\(\?\?:\d+\)|thread\d*\.o/);
    await done(opened);
  });

  it("takes an out-of-memory error's wall from the recorder's sidecar given beside it, as oom does", async () => {
    const { pickle, stated } = await once('fraction', async () => {
      // Rank 3 of the generated job runs out under a per-process memory fraction: its snapshot
      // says most of the card was free; the sidecar beside it states the fraction.
      const pickle = join(await recordedJob(), 'rank3_step9_oom.pickle');
      return { pickle, stated: await cliJson(['oom', pickle, '--quiet']) };
    });
    const oom = stated.json.traces[0].oom as { capacityBytes: number; capacitySource: string };
    expect(oom.capacitySource).toBe('recorded');
    const opened = await page();
    await opened
      .getByTestId('file-input')
      .setInputFiles([pickle, pickle.replace(/\.pickle$/, '.json')]);
    const line = opened.locator('#report .oom li').first();
    await line.waitFor({ timeout: 90_000 });
    await expect(line.textContent()).resolves.toContain(
      `the wall: ${formatBytes(oom.capacityBytes)} (the per-process memory fraction of the card, as recorded)`,
    );
    // One file opened: the sidecar is not a trace.
    await expect(opened.locator('[data-testid="file"]').count()).resolves.toBe(1);
    await done(opened);
  });

  it("opens a folder allot-lab record wrote as a job of each rank's newest dump, as replay DIR does", async () => {
    const { dir, replayed } = await once('record-folder', async () => {
      const dir = await recordedJob();
      return { dir, replayed: await cliJson(['replay', dir, '--no-report', '--quiet']) };
    });
    const opened = await page();
    await opened.getByTestId('folder-input').setInputFiles(dir);
    const panel = opened.getByTestId('job-panel');
    await panel.getByTestId('job-worst').waitFor({ timeout: 90_000 });
    expect(replayed.json.ranks).toHaveLength(4);
    expect(await predictedPeaks(panel)).toEqual(replayPeaks(replayed.json));
    await done(opened);
  });

  it('advises nothing on a card smaller than the peak live bytes, as tune --memory refuses', async () => {
    const refused = await once('card-too-small', () =>
      cliJson(['tune', trainDefault!, '--memory', '4GiB', '--quiet']),
    );
    expect(refused.status).toBe(2);
    const opened = await page();
    await opened.getByTestId('file-input').setInputFiles(trainDefault!);
    await opened.locator('[data-testid="tuner-advice"]').first().waitFor({ timeout: 90_000 });
    const memory = opened.getByTestId('memory');
    await memory.fill('4');
    await memory.dispatchEvent('change');
    const advice = opened.locator('[data-testid="tuner-advice"][data-reason="card-too-small"]');
    await advice.waitFor({ timeout: 90_000 });
    await expect(advice.getAttribute('data-advised')).resolves.toBe('false');
    const words =
      /is less than the recording's peak live bytes \(9\.70 GiB\): every setting would fail; give the GPU memory, at least the peak/;
    await expect(advice.textContent()).resolves.toMatch(words);
    // The command line's refusal, in the same words.
    expect(refused.stderr).toMatch(
      /--memory 4\.00 GiB is less than .* peak live bytes \(9\.70 GiB\): every setting would fail/,
    );
    expect(await opened.getByTestId('advice').count()).toBe(0);
    // The report beside it says the same once it replays with the search.
    await opened
      .locator('#report li.advice', { hasText: 'every setting would fail' })
      .waitFor({ timeout: 90_000 });
    await done(opened);
  });

  it('says a job recorded with different settings is not tuned as one, and tunes it only when asked', async () => {
    const { folder, replayed, refused, forced } = await once('mixed', async () => {
      const dir = join(scratchDir(), 'mixed');
      const folder = jobFolder(dir, readFileSync(trainDefault!), readFileSync(trainExpandable!));
      const [replayed, refused, forced] = await Promise.all([
        cliJson(['replay', 'memory_snapshot', '--no-report', '--quiet'], dir),
        cliJson(['tune', 'memory_snapshot', '--no-report', '--quiet'], dir),
        cliJson(['tune', 'memory_snapshot', '--no-report', '--quiet', '--force'], dir),
      ]);
      return { folder, replayed, refused, forced };
    });
    expect(refused.status).toBe(2);
    const opened = await page();
    await opened.getByTestId('folder-input').setInputFiles(folder);
    const panel = opened.getByTestId('job-panel');
    const mixed = panel.getByTestId('job-mixed');
    await panel.getByTestId('job-worst').waitFor({ timeout: 90_000 });
    await mixed.waitFor({ timeout: 90_000 });
    // tune DIR's sentence, in the page.
    const sentence =
      /the ranks were recorded with 2 different settings \(\(defaults\) on ranks 0; expandable_segments:True on ranks 1\), so they are not tuned as one/;
    expect(refused.stderr).toMatch(sentence);
    await expect(mixed.textContent()).resolves.toMatch(new RegExp(sentence.source, 'i'));
    // Each rank predicted under the settings it recorded, as replay DIR predicts it.
    expect(await predictedPeaks(panel)).toEqual(replayPeaks(replayed.json));
    const spread = Number(await panel.getByTestId('job-spread').getAttribute('data-bytes'));
    expect(spread).toBe(replayed.json.spread.maxBytes - replayed.json.spread.minBytes);
    expect(spread).toBeGreaterThan(0);
    // Tuned as one only when asked again, as --force does.
    const button = opened.getByTestId('job-advise');
    await expect(button.textContent()).resolves.toBe('Tune them as one anyway');
    await button.click();
    const advice = opened.getByTestId('job-advice');
    await advice.waitFor({ timeout: 90_000 });
    await expect(advice.getAttribute('data-config')).resolves.toBe(forced.json.allocConf);
    await done(opened);
  });

  it('names a rank that cannot be read, in words, and advises over the others', async () => {
    const { folder, tuned } = await once('damaged', async () => {
      const dir = join(scratchDir(), 'damaged');
      const whole = readFileSync(trainDefault!);
      const folder = jobFolder(dir, whole, whole.subarray(0, whole.length >> 1));
      const tuned = await cliJson(['tune', 'memory_snapshot', '--no-report', '--quiet'], dir);
      return { folder, tuned };
    });
    expect(tuned.status).toBe(2);
    expect(tuned.stderr).toMatch(/rank 1: .*truncated gzip data/);
    const opened = await page();
    await opened.getByTestId('folder-input').setInputFiles(folder);
    const failed = opened.locator('[data-testid="job-rank"][data-rank="1"][data-failed="true"]');
    await failed.waitFor({ timeout: 90_000 });
    const words = await failed.textContent();
    expect(words).toMatch(/found the end of the file \(truncated gzip data\)/);
    expect(words).not.toMatch(/Failed to execute|WritableStream/);
    // Enabled once the other rank is read too.
    await opened.locator('[data-testid="job-advise"]:not([disabled])').waitFor({ timeout: 90_000 });
    await opened.getByTestId('job-advise').click();
    const advice = opened.getByTestId('job-advice');
    await advice.waitFor({ timeout: 90_000 });
    await expect(advice.getAttribute('data-config')).resolves.toBe(tuned.json.allocConf);
    await expect(opened.getByTestId('job-advice-failed').textContent()).resolves.toMatch(
      /1 of 2 ranks failed \(rank 1\).*rank 1: .*truncated gzip data/,
    );
    await done(opened);
  });

  it("says how a file's events came from its entries, and which event is the last", async () => {
    const opened = await page();
    await opened.getByTestId('file-input').setInputFiles(trainDefault!);
    const status = opened.locator('.file.read .file-status');
    await status.waitFor({ timeout: 90_000 });
    const events = Number(await status.getAttribute('data-events'));
    const entries = Number(await status.getAttribute('data-entries'));
    expect(entries).toBeGreaterThan(events);
    await expect(status.textContent()).resolves.toBe(
      `read: ${events.toLocaleString('en-US')} events (allocations and frees) from ${entries.toLocaleString('en-US')} trace entries; the other entries are free requests and PyTorch's segment entries`,
    );
    const last = events - 1;
    await opened.getByTestId('state-slider').focus();
    await opened.keyboard.press('End');
    const event = opened.locator(
      `[data-testid="state-event"][data-state="ready"][data-event="${last}"]`,
    );
    await event.waitFor({ timeout: 90_000 });
    await expect(event.textContent()).resolves.toBe(
      `event ${last.toLocaleString('en-US')}, the last (events 0 to ${last.toLocaleString('en-US')})`,
    );
    await done(opened);
  });

  it('draws a recording 0 s long on its events', async () => {
    const snapshot = JSON.parse(readFileSync(fixture, 'utf8')) as {
      device_traces: { time_us?: number }[][];
    };
    for (const entry of snapshot.device_traces.flat()) entry.time_us = 1_700_000_000_000_000;
    const file = join(scratchDir(), `still-${width}.json`);
    writeFileSync(file, JSON.stringify(snapshot));
    const opened = await page();
    await opened.getByTestId('file-input').setInputFiles(file);
    await opened.waitForSelector('body[data-rendered="true"]', { timeout: 90_000 });
    expect(await opened.locator('#report input[name="x-axis"]').count()).toBe(0);
    // The legend names the x series: what the axis counts.
    const x = opened
      .locator('#report .chart-memory .u-legend .u-series')
      .first()
      .locator('.u-label');
    await expect(x.textContent()).resolves.toBe('event');
    await done(opened);
  });
});
