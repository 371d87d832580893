/**
 * A job's page (`OUT/index.html` of `replay DIR` and `tune DIR`) opened from disk in headless
 * Chromium, on a job generated here: three ranks, two of which ran out of memory, one whose
 * recording disagrees with the model, and one file that is no snapshot. The page draws what the
 * lab printed, the chart of each rank's peak, the table of ranks with a link to each rank's own
 * page, the rank flagged, the failed rank and the worst rank's page in place, with no request off
 * the file system and nothing logged. Skipped, with a message, where no Chromium executable exists.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lab } from '../src/lab';
import { Capture } from '../src/test-capture';
import { chromiumOrSkip, launchChromium } from './chromium';
import { deadRanksJob, Recording } from './oom-recordings';
import { open, Sink } from './report-tab';

const hasChromium = chromiumOrSkip("job page's browser test");

/** What the page shows, read in one go (a string: this package's types have no DOM). */
const SHOWN = `(() => {
  const texts = (selector) => [...document.querySelectorAll(selector)].map((e) => e.textContent);
  const worst = document.querySelector('iframe.worst');
  return {
    title: document.title,
    h1: texts('h1'),
    h2: texts('h2'),
    advice: texts('pre.advice'),
    pre: texts('pre:not(.advice)'),
    bars: texts('svg.chart rect title'),
    ticks: texts('svg.chart line title'),
    legend: texts('.rank-chart + p.small'),
    head: texts('table.job-ranks thead th'),
    rows: [...document.querySelectorAll('table.job-ranks tbody tr')].map((tr) => ({
      failed: tr.classList.contains('failed'),
      cells: [...tr.cells].map((cell) => cell.textContent),
      link: tr.querySelector('th a')?.getAttribute('href') ?? null,
    })),
    worst: worst === null ? null : worst.getAttribute('src'),
  };
})()`;

interface Shown {
  readonly title: string;
  readonly h1: string[];
  readonly h2: string[];
  readonly advice: string[];
  readonly pre: string[];
  readonly bars: string[];
  readonly ticks: string[];
  readonly legend: string[];
  readonly head: string[];
  readonly rows: { failed: boolean; cells: string[]; link: string | null }[];
  readonly worst: string | null;
}

const ERROR = /^rank4_snapshot\.json:1: expected a PyTorch memory snapshot/;
/** Why rank 3 is flagged: PyTorch made a second segment where the model reuses the cached one. */
const FLAG = 'predicted peak reserved −50.0 % from the recorded, 1 of 2 segment decisions matched';

describe.skipIf(!hasChromium)("a job's page in headless Chromium", () => {
  let context: BrowserContext;
  const root = mkdtempSync(join(tmpdir(), 'allot-job-page-'));
  beforeAll(async () => {
    context = await launchChromium();
    const folder = join(root, 'ranks');
    mkdirSync(folder);
    for (const [name, text] of Object.entries(deadRanksJob()))
      writeFileSync(join(folder, name), text);
    writeFileSync(
      join(folder, 'rank3_snapshot.json'),
      new Recording()
        .segment(0, 20)
        .alloc(0, 20)
        .free(0, 20)
        .segment(20, 20)
        .alloc(20, 20)
        .snapshot(),
    );
    writeFileSync(join(folder, 'rank4_snapshot.json'), 'not a snapshot\n');
  });
  afterAll(async () => {
    await context?.close();
    rmSync(root, { recursive: true, force: true });
  });

  /** Runs `command ranks`, opens its page; returns what it printed and what the page shows. */
  async function jobPage(command: 'replay' | 'tune') {
    const stdout = new Capture();
    const status = await lab([command, 'ranks', '--quiet', '--out', command], {
      stdout,
      stderr: new Sink(),
      cwd: root,
    });
    expect(status).toBe(2); // rank 4 failed; the page is written all the same
    const { tab, problems, requests } = await open(context, join(root, command, 'index.html'));
    return {
      printed: stdout.text,
      tab,
      problems,
      requests,
      shown: (await tab.evaluate(SHOWN)) as Shown,
    };
  }

  /** Waits for the worst rank's own page to be drawn in its frame; returns its first heading. */
  async function worstFrame(tab: Page, src: string): Promise<string> {
    const frame = tab.frames().find((f) => f.url().endsWith(src));
    expect(frame).toBeDefined();
    await frame!.waitForSelector('body[data-rendered="true"]', { timeout: 15_000 });
    return (await frame!.evaluate(`document.querySelector('section h2').textContent`)) as string;
  }

  it('replay DIR: the chart, the ranks linked to their pages, flagged and failed, the worst in place', async () => {
    const { printed, tab, problems, requests, shown } = await jobPage('replay');
    expect(shown.title).toBe('allot-lab replay: a job of 5 ranks');
    expect(shown.h1).toEqual(['allot-lab replay: a job of 5 ranks']);
    expect(shown.h2).toEqual([
      'Peak reserved per rank',
      'The worst rank: rank 1',
      'Ranks',
      'What the lab printed',
    ]);
    expect(shown.advice).toEqual([]);
    // The summary, then what the lab printed, whole.
    expect(shown.pre[0]).toMatch(/^Worst rank: 1, predicted peak reserved 100 MiB/);
    expect(shown.pre[0]).toContain(`rank 3: ${FLAG}`);
    expect(printed.startsWith(shown.pre[1]!)).toBe(true);
    expect(shown.pre[1]).toMatch(/^Job: 5 ranks .*; 4 replayed, 1 failed\n/);
    // Two bars per rank read, predicted and recorded, and a tick at its peak live.
    const peaks = ['60.0 MiB', '100 MiB', '20.0 MiB', '20.0 MiB'];
    expect(shown.bars).toEqual(
      peaks.flatMap((peak, rank) => [
        `rank ${rank}, predicted (recorded settings): ${peak}`,
        `rank ${rank}, recorded by PyTorch: ${rank === 3 ? '40.0 MiB' : peak}`,
      ]),
    );
    expect(shown.ticks).toEqual(peaks.map((peak, rank) => `rank ${rank}, peak live: ${peak}`));
    expect(shown.legend).toEqual(['predicted (recorded settings)recorded by PyTorchpeak live']);
    expect(shown.head.join(' | ')).toBe(
      'rank | file | events | peak live | predicted | recorded | error | ',
    );
    expect(shown.rows.map((row) => row.cells.join(' | '))).toEqual([
      'rank 0 | ranks/rank0_snapshot.json | 7 | 60.0 MiB | 60.0 MiB | 60.0 MiB | +0.0 % | ',
      'rank 1 | ranks/rank1_snapshot.json | 3 | 100 MiB | 100 MiB | 100 MiB | +0.0 % | ',
      'rank 2 | ranks/rank2_snapshot.json | 2 | 20.0 MiB | 20.0 MiB | 20.0 MiB | +0.0 % | ',
      `rank 3 | ranks/rank3_snapshot.json | 3 | 20.0 MiB | 20.0 MiB | 40.0 MiB | −50.0 % | ! ${FLAG}`,
      expect.stringMatching(
        /^rank 4 \| rank4_snapshot\.json:1: expected a PyTorch memory snapshot/,
      ),
    ]);
    // Each rank read links to its own page; the rank flagged and the one that failed are marked.
    expect(shown.rows.map((row) => row.link)).toEqual([
      ...[0, 1, 2, 3].map((rank) => `ranks/rank-${rank}/index.html`),
      null,
    ]);
    expect(shown.rows.map((row) => row.failed)).toEqual([false, false, false, true, true]);
    // The worst rank's own page, drawn in place.
    expect(shown.worst).toBe('ranks/rank-1/index.html');
    await expect(worstFrame(tab, shown.worst!)).resolves.toBe('rank 1: ranks/rank1_snapshot.json');
    expect(problems).toEqual([]);
    expect(requests).toEqual([]);
    await tab.close();
  });

  it('tune DIR: the setting for every rank, each rank with it and with the defaults', async () => {
    const { printed, tab, problems, requests, shown } = await jobPage('tune');
    expect(shown.h2).toEqual([
      'The setting for every rank',
      'Peak reserved per rank',
      'The worst rank: rank 1',
      'Ranks',
      'What the lab printed',
    ]);
    // The advice in tune DIR's words, as printed.
    expect(shown.advice).toHaveLength(1);
    expect(shown.advice[0]).toMatch(/^PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:\d+\n/);
    expect(printed).toContain(shown.advice[0]);
    expect(printed.startsWith(shown.pre[1]!)).toBe(true);
    const setting = /^PYTORCH_CUDA_ALLOC_CONF=(\S+)/.exec(shown.advice[0]!)![1]!;
    expect(shown.legend).toEqual([`defaultswith ${setting}peak live`]);
    expect(shown.bars).toHaveLength(8);
    expect(shown.bars[0]).toBe('rank 0, defaults: 60.0 MiB');
    expect(shown.bars[1]).toMatch(/^rank 0, with max_split_size_mb:\d+: /);
    expect(shown.head.slice(7)).toEqual(['defaults', 'with the setting', 'saving', '']);
    // Defaults that fail an allocation have no saving to show, as tune DIR prints it.
    expect(shown.rows[0]!.cells.slice(7, 8)).toEqual(['60.0 MiB, 1 failed']);
    expect(shown.rows[0]!.cells[9]).toBe('–');
    expect(shown.rows[2]!.cells.slice(7, 10)).toEqual(['20.0 MiB', '20.0 MiB', '0.0 %']);
    expect(shown.rows[4]!.cells[1]).toMatch(ERROR);
    expect(problems).toEqual([]);
    expect(requests).toEqual([]);
    await tab.close();
  });
});
