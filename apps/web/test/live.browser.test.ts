/**
 * The live page in headless Chromium (the lab's browser tests' launcher): `allot-lab serve --watch
 * DIR` from the built CLI on an empty folder, the page opened at the URL it prints, then a
 * generated four-rank job's dumps (`watch-demo.js` from the shared H100 recordings: ranks 0 and 2
 * train, rank 1 serves, rank 3 trains until it runs out of memory) moved into the folder one by one,
 * in the order the job wrote them. After each one:
 *
 * - the rank's row names that file, and there is a row for each rank so far;
 * - the rank's chart holds a point per dump the rank wrote so far, and is the same element as
 *   before (changed in place);
 * - no post-mortem before the OOM dump; rank 3's, with who holds the memory, the wall and the
 *   settings that avoid it, once it has landed;
 * - no reload: a mark left on `window` is still there.
 *
 * Then the advice reads as `allot-lab watch DIR --once` prints it, and each rank's replayed peak is
 * its figure; the page fits 390 px; the server, stopped and started again on its port, is found
 * again without a reload, and an update that is no state is refused whole, saying why, the page
 * as it was. Every request is recorded: none leaves 127.0.0.1 (others are blocked
 * and counted), and the console stays clean, the server's outage included. `/metrics` passes
 * `promtool check metrics`. Skipped, with a message, without Chromium or
 * the shared recordings; `ALLOT_SCREENSHOTS=DIR` keeps a screenshot of the page at 1280 px there.
 */
import { type ChildProcess, execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { formatBytes, type LiveState } from '@allot/lab/ui';
import { findTracesDir } from '@allot/workloads/node';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumOrSkip, launchChromium } from '../../lab/test/chromium';
import { cli, serveWith } from './app-tab';

const hasChromium = chromiumOrSkip('live page browser test');
const root = join(import.meta.dirname, '..', '..', '..');
const demo = join(root, 'apps', 'lab', 'dist', 'watch-demo.js');
const traces = (() => {
  const found = findTracesDir();
  if (found !== null && existsSync(join(found, 'pytorch-h100', 'train-default.pickle.gz')))
    return found;
  if (hasChromium) console.warn('live page test skipped: no ../shared/traces/pytorch-h100 here');
  return null;
})();
const run = promisify(execFile);

/** `allot-lab serve --watch FOLDER` on `port` (0: a free one): the process and the URL it prints. */
function serveWatch(folder: string, port = 0): Promise<{ child: ChildProcess; url: string }> {
  return serveWith(['--watch', folder, '--interval', '0.1', '--port', String(port)]);
}

/** Stops `child` and waits until it is gone. */
function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** What the page shows of the job, read in one go. */
function pageView(page: Page) {
  return page.evaluate(() => {
    const rows = [
      ...document.querySelectorAll<HTMLTableRowElement>('[data-testid="watch-ranks"] tbody tr'),
    ];
    const charts = [...document.querySelectorAll<HTMLElement>('.watch-chart .chart')];
    const deaths = [...document.querySelectorAll<HTMLElement>('[data-testid="watch-post-mortem"]')];
    return {
      marked: (window as { liveMark?: string }).liveMark ?? null,
      rows: rows.map((row) => ({
        rank: Number(row.dataset.rank),
        file: row.dataset.file,
        dumps: Number(row.dataset.dumps),
        cells: [...row.cells].map((cell) => cell.textContent),
        worst: row.classList.contains('worst'),
      })),
      charts: charts.map((chart) => ({
        rank: Number(chart.dataset.rank),
        points: Number(chart.dataset.points),
        kept: (chart as { liveKept?: boolean }).liveKept === true,
        canvasWidth: chart.querySelector('canvas')?.getBoundingClientRect().width ?? 0,
      })),
      deaths: deaths.map((death) => ({
        rank: Number(death.dataset.rank),
        title: death.querySelector('h3')?.textContent,
        wall: death.querySelector('[data-testid="watch-wall"]')?.textContent,
        holders: death.querySelectorAll('[data-testid="watch-holders"] tbody tr').length,
        avoidedBy: [...death.querySelectorAll('[data-testid="watch-avoided-by"] li')].map(
          (li) => li.textContent,
        ),
        layouts: death.querySelectorAll('.oom-layouts canvas').length,
        text: death.querySelector('pre')?.textContent ?? '',
      })),
      advice: document.querySelector('[data-testid="watch-advice"]')?.textContent ?? '',
      status: document.querySelector<HTMLElement>('[data-testid="watch-status"]')?.dataset.state,
      empty: !(document.querySelector<HTMLElement>('[data-testid="watch-empty"]')?.hidden ?? true),
      scrollWidth: document.documentElement.scrollWidth,
    };
  });
}

describe.skipIf(!hasChromium || traces === null)('the live page of serve --watch', () => {
  const stage = mkdtempSync(join(tmpdir(), 'allot-live-stage-'));
  const folder = mkdtempSync(join(tmpdir(), 'allot-live-'));
  /** The job's dumps, relative to its folder, in the order it wrote them. */
  let dumps: string[] = [];
  let server: { child: ChildProcess; url: string };
  let context: BrowserContext;
  let page: Page;
  let origin: string;
  const requests: string[] = [];
  const blocked: string[] = [];
  const problems: string[] = [];

  beforeAll(async () => {
    // The job's dumps are made first, then moved into the folder one by one: each lands whole.
    const { stdout } = await run(
      process.execPath,
      [demo, stage, '--delay', '0', '--traces', traces!],
      { maxBuffer: 1 << 20 },
    );
    dumps = stdout
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => relative(stage, line));
    server = await serveWatch(folder);
    origin = new URL(server.url).origin;
    context = await launchChromium();
    context.on('request', (request) => requests.push(request.url()));
    await context.route(
      (url) => url.origin !== origin && !/^(blob|data):/.test(url.href),
      (route) => {
        blocked.push(route.request().url());
        return route.abort('blockedbyclient');
      },
    );
    page = await context.newPage();
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning')
        problems.push(`${message.type()}: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    if (server !== undefined) await stop(server.child);
    rmSync(stage, { recursive: true, force: true });
    rmSync(folder, { recursive: true, force: true });
  });

  it('updates in place as the files land, the post-mortem with the OOM dump, with no reload', async () => {
    expect(dumps).toHaveLength(15);
    expect(new URL(server.url).searchParams.has('watch')).toBe(true);
    await page.goto(server.url);
    await page.locator('[data-testid="watch-status"][data-state="open"]').waitFor();
    await page.evaluate(() => {
      (window as { liveMark?: string }).liveMark = 'kept';
    });
    const before = await pageView(page);
    expect(before).toMatchObject({ rows: [], charts: [], deaths: [], empty: true });

    const written = new Map<number, number>();
    for (const dump of dumps) {
      const rank = Number(/^rank(\d+)_/.exec(dump)![1]);
      written.set(rank, (written.get(rank) ?? 0) + 1);
      renameSync(join(stage, dump), join(folder, dump));
      await page.waitForFunction(
        ([rank, file]) =>
          document.querySelector<HTMLElement>(`[data-testid="watch-ranks"] tr[data-rank="${rank}"]`)
            ?.dataset.file === file,
        [rank, dump] as const,
        { timeout: 120_000 },
      );
      const view = await pageView(page);
      expect(view.marked, `after ${dump}`).toBe('kept');
      expect(view.empty).toBe(false);
      const ranks = [...written.keys()].sort((a, b) => a - b);
      expect(view.rows.map((row) => row.rank)).toEqual(ranks);
      expect(view.rows.map((row) => row.dumps)).toEqual(ranks.map((r) => written.get(r)));
      expect(view.charts.map((chart) => [chart.rank, chart.points])).toEqual(
        ranks.map((r) => [r, written.get(r)]),
      );
      // Charts drawn before are the same elements: changed in place, never made again.
      expect(view.charts.every((chart) => chart.kept || written.get(chart.rank) === 1)).toBe(true);
      await page.evaluate(() => {
        for (const chart of document.querySelectorAll('.watch-chart .chart'))
          (chart as { liveKept?: boolean }).liveKept = true;
      });
      if (!dump.includes('_oom')) {
        expect(
          view.deaths.map((death) => death.rank),
          `after ${dump}`,
        ).toEqual(
          written.has(3) && dumps.indexOf(dump) > dumps.findIndex((d) => d.includes('_oom'))
            ? [3]
            : [],
        );
        continue;
      }
      expect(view.deaths).toHaveLength(1);
      const death = view.deaths[0]!;
      expect(death.title).toBe('Rank 3 ran out of memory in step 10');
      expect(death.wall).toMatch(
        /^The wall: [\d.]+ GiB, [\d.]+ GiB reserved by PyTorch \([\d.]+ GiB of it allocated\) \+ [\d.]+ GiB free on the device\.$/,
      );
      expect(death.holders).toBeGreaterThan(0);
      expect(death.avoidedBy[0]).toMatch(/^PYTORCH_CUDA_ALLOC_CONF=\S+: peak reserved /);
      expect(death.layouts).toBe(2);
      // The whole post-mortem, in the words allot-lab watch prints.
      expect(death.text).toMatch(
        /^rank 3 ran out of memory in step 10:\n {2}rank3_step9_oom\.pickle: /,
      );
      expect(death.text).toContain(
        'who holds the memory at that request, by the innermost frame of your own code:',
      );
      const row = view.rows.find((r) => r.rank === 3)!;
      expect(row.cells.at(-1)).toBe('rank3_step9_oom.pickle (out of memory)');
    }

    // The figures and the words are the command line's.
    const once = await run(process.execPath, [cli, 'watch', folder, '--once', '--quiet'], {
      maxBuffer: 1 << 24,
    });
    const adviceLine = once.stdout
      .split('\n')
      .filter((line) => line.startsWith('advice so far: '))
      .at(-1);
    const final = await pageView(page);
    expect(final.advice).toBe(adviceLine);
    const json = await run(
      process.execPath,
      [cli, 'watch', folder, '--once', '--json', '--quiet'],
      {
        maxBuffer: 1 << 24,
      },
    );
    const lines = json.stdout
      .split('\n')
      .filter((line) => line !== '')
      .map(
        (line) => JSON.parse(line) as { rank: number; peakReservedBytes?: number; oom?: unknown },
      );
    for (const row of final.rows) {
      const last = lines.filter((line) => line.rank === row.rank && line.oom === undefined).at(-1)!;
      expect(row.cells[7], `rank ${row.rank}'s replayed peak`).toBe(
        formatBytes(last.peakReservedBytes!),
      );
    }
    expect(final.rows.filter((row) => row.worst)).toHaveLength(1);
    expect(final.status).toBe('open');

    const shots = process.env.ALLOT_SCREENSHOTS;
    if (shots !== undefined) {
      await page.screenshot({ path: join(shots, 'watch-1280.png'), fullPage: true });
    }
    // At 390 px: nothing wider than the window, the charts drawn to it.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForFunction(() =>
      [...document.querySelectorAll('.watch-chart canvas')].every(
        (canvas) => canvas.getBoundingClientRect().width <= 390,
      ),
    );
    const narrow = await pageView(page);
    expect(narrow.scrollWidth).toBeLessThanOrEqual(390);
    expect(narrow.charts.every((chart) => chart.canvasWidth > 200)).toBe(true);
    await page.setViewportSize({ width: 1280, height: 900 });
  }, 300_000);

  it('finds the server again when it restarts, with no reload', async () => {
    const port = new URL(server.url).port;
    await stop(server.child);
    await page.locator('[data-testid="watch-status"][data-state="lost"]').waitFor();
    const lost = await pageView(page);
    // The page keeps what it showed while the server is away.
    expect(lost.rows).toHaveLength(4);
    server = await serveWatch(folder, Number(port));
    // The new server reads the folder again from the start; the page follows it to the end.
    const last = lost.rows.map((row) => row.file);
    expect(last).toEqual([
      'rank0_step16_exit.pickle',
      'rank1_step16_exit.pickle',
      'rank2_step16_exit.pickle',
      'rank3_step9_oom.pickle',
    ]);
    await page.waitForFunction(
      (files) =>
        document.querySelector<HTMLElement>('[data-testid="watch-status"]')?.dataset.state ===
          'open' &&
        [...document.querySelectorAll<HTMLElement>('[data-testid="watch-ranks"] tbody tr')]
          .map((row) => row.dataset.file)
          .join() === files.join(),
      last,
      { timeout: 120_000 },
    );
    const back = await pageView(page);
    expect(back.marked).toBe('kept');
    expect(back.rows.map((row) => row.dumps)).toEqual(lost.rows.map((row) => row.dumps));
    expect(back.deaths.map((death) => death.rank)).toEqual([3]);
    expect(back.advice).toBe(lost.advice);
  }, 300_000);

  it('refuses an update it cannot read, whole, says so, and keeps what it showed', async () => {
    const good = await (await fetch(`${origin}/watch/state`)).text();
    const other = await context.newPage();
    other.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    await other.route(`${origin}/watch/updates`, (route) =>
      route.fulfill({
        status: 200,
        contentType: 'text/event-stream',
        body: `event: state\ndata: ${good}\n\nevent: state\ndata: {"folder":"/x","adviceText":"","ranks":{}}\n\n`,
      }),
    );
    await other.goto(server.url);
    const problem = other.locator('[data-testid="watch-problem"]');
    await problem.waitFor();
    expect(await problem.textContent()).toBe(
      'An update from allot-lab serve could not be read: ranks is not a list. The page keeps what it showed.',
    );
    const view = await pageView(other);
    expect(view.rows.map((row) => row.file)).toEqual(
      (JSON.parse(good) as LiveState).ranks.map((rank) => rank.file),
    );
    expect(view.deaths).toHaveLength(1);
    await other.close();
  });

  it('makes no request beyond 127.0.0.1, logs nothing, and serves /metrics that promtool passes', async () => {
    expect(blocked).toEqual([]);
    expect(requests.length).toBeGreaterThan(0);
    for (const url of requests) expect(url).toMatch(new RegExp(`^(${origin}/|blob:|data:)`));
    expect(requests).toContain(`${origin}/watch/updates`);
    expect(problems).toEqual([]);
    const metrics = await (await fetch(`${origin}/metrics`)).text();
    expect(metrics).toContain('allot_reserved_bytes_all_current{rank="3",device="0"} ');
    const promtool = spawnSync('promtool', ['check', 'metrics'], { input: metrics });
    if (promtool.error !== undefined) {
      console.log(
        'promtool check metrics skipped: promtool is not on PATH (Debian package prometheus)',
      );
      return;
    }
    expect(promtool.stdout.toString() + promtool.stderr.toString()).toBe('');
    expect(promtool.status).toBe(0);
  });
});
