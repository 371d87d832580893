/**
 * The app's views in headless Chromium at 1280 px and at 390 px with a touch screen (a phone),
 * on snapshots generated at test time (with stacks, two of them a job's ranks), served by
 * `allot-lab serve`:
 *
 * - the side panel shows every column of its tables, the page never scrolls sideways, and setting
 *   names break only after a comma, colon or equals sign;
 * - the report's preface speaks only of the allocators the app shows;
 * - the trace picker and the pool's canvas have names; the timeline takes the focus and its keys;
 * - a finger's drag zooms the timeline, and a tapped tooltip stays on the screen;
 * - the call tree of the blocks live at the stepper's event is the engine's, in Node.js;
 * - `serve A B` shows A before B whichever is read first; a sample made in the page; a file removed.
 *
 * Every request that is not to the server (or a blob, data or file URL) is blocked and counted:
 * none may be made. No console error or warning may appear.
 */
import type { ChildProcess } from 'node:child_process';
import { createReadStream, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { open as openFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { stackTreeAt, streamTraces } from '@allot/lab/engine';
import { type TorchSnapshotOptions, torchSnapshotChunks } from '@allot/workloads';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumOrSkip, launchChromium } from '../../lab/test/chromium';
import { onlyFrom, peak, predicted, serve, tab } from './app-tab';

const hasChromium = chromiumOrSkip('web app views browser test');

/** Writes a generated snapshot to `file`, letting the event loop go between chunks. */
async function generate(file: string, options: TorchSnapshotOptions): Promise<string> {
  const handle = await openFile(file, 'w');
  for (const chunk of torchSnapshotChunks(options)) await handle.write(chunk);
  await handle.close();
  return file;
}

/** Evaluated in the page: each table cell of the side panel that reaches past its edge. */
const CUT_OFF = `(() => {
  const panel = document.getElementById('panel');
  const box = panel.getBoundingClientRect();
  const right = box.left + panel.clientWidth;
  const cut = [];
  for (const cell of panel.querySelectorAll('table th, table td')) {
    const rect = cell.getBoundingClientRect();
    if (rect.width > 0 && rect.right > right + 0.5) cut.push(cell.textContent);
  }
  return { cut, panel: panel.scrollWidth - panel.clientWidth,
    page: document.documentElement.scrollWidth - document.documentElement.clientWidth };
})()`;

/**
 * Evaluated in the page: each line break inside a word of a text that names a setting
 * (`word_word:` or `WORD_WORD=`), as the text before and after it.
 */
const BROKEN_SETTINGS = `(() => {
  const setting = /[A-Za-z0-9]_[A-Za-z0-9_]*[:=]/;
  const word = /[A-Za-z0-9_]/;
  const broken = [];
  let checked = 0;
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.data;
    if (!setting.test(text) && !node.parentElement.closest('.setting-text')) continue;
    const range = document.createRange();
    let top = null;
    for (let i = 0; i < text.length; i++) {
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      const rect = range.getClientRects()[0];
      if (!rect || rect.width === 0) continue;
      if (top !== null && rect.top > top + 2 && word.test(text[i - 1]) && word.test(text[i]))
        broken.push(text.slice(0, i) + ' | ' + text.slice(i));
      top = rect.top;
    }
    if (top !== null) checked++;
  }
  return { broken, checked };
})()`;

/** Evaluated in the page: the rows of a call tree under `root` that are shown. */
const TREE_ITEMS = (root: string) => `[...document.querySelectorAll('${root} [role="treeitem"]')]
  .filter((item) => item.parentElement.closest('ul[hidden]') === null)
  .map((item) => ({ level: Number(item.getAttribute('aria-level')), frame: item.dataset.frame,
    bytes: Number(item.dataset.bytes) }))`;

type Range = { from: number; to: number; first: number; last: number };
const timelineRange = (page: Page) =>
  page.evaluate('window.labReport.timelines[0].range()') as Promise<Range>;

/** The tooltip's box and text when shown, else null. */
const TOOLTIP = `(() => { const t = document.getElementById('lab-tooltip');
  if (t.style.display === 'none' || t.style.display === '') return null;
  const r = t.getBoundingClientRect();
  return { left: r.left, right: r.right, width: r.width, text: t.innerText,
    window: document.documentElement.clientWidth }; })()`;

describe.skipIf(!hasChromium)('the app’s views in headless Chromium', () => {
  const dir = mkdtempSync(join(tmpdir(), 'allot-web-views-'));
  const job = join(dir, 'memory_snapshot');
  let server: { child: ChildProcess; url: string };
  let origin: string;
  let first = '';
  let second = '';
  const blocked: string[] = [];
  const problems: string[] = [];
  const contexts = new Map<number, BrowserContext>();

  beforeAll(async () => {
    mkdirSync(job);
    for (const rank of [0, 1]) {
      await generate(join(job, `rank${rank}_memory_snapshot.pickle`), {
        events: 6000,
        depth: 8,
        seed: 1 + rank,
      });
    }
    // `serve A B`: A takes far longer to read than B.
    first = await generate(join(dir, 'a-long-recording.pickle'), { events: 400_000, depth: 0 });
    second = await generate(join(dir, 'b-short-recording.pickle'), { events: 2000, depth: 4 });
    server = await serve(first, second);
    origin = new URL(server.url).origin;
    for (const width of [1280, 390]) {
      const context = await launchChromium({
        viewport: { width, height: width === 390 ? 844 : 900 },
        hasTouch: true,
        isMobile: width === 390,
      });
      await onlyFrom(context, origin, blocked);
      contexts.set(width, context);
    }
  });
  afterAll(async () => {
    for (const context of contexts.values()) await context.close();
    server?.child.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * A tab on the app with the job's two ranks read (a job, and two snapshots to compare), settled:
   * the tuner has advised on both and the report has been drawn again with its advice, so nothing
   * the tests hold (the timeline's canvas, its handle) is replaced under them. Opened once per width
   * and shared by that width's tests (closed with its context), which each reset the zoom they set.
   */
  const jobPages = new Map<number, Promise<Page>>();
  function withJob(width: number): Promise<Page> {
    let page = jobPages.get(width);
    if (page === undefined) {
      page = openJob(width);
      jobPages.set(width, page);
    }
    return page;
  }
  async function openJob(width: number): Promise<Page> {
    const page = await tab(contexts.get(width)!, problems);
    await page.goto(`${origin}/`);
    await page.getByTestId('folder-input').setInputFiles(job);
    await page.getByTestId('job-worst').waitFor({ timeout: 60_000 });
    await page.getByTestId('peak-difference').waitFor({ timeout: 60_000 });
    await page.waitForSelector('body[data-rendered="true"]');
    // Each search's advice makes the page replay and draw the report again: wait for the last.
    await page.waitForFunction(
      () =>
        document.querySelectorAll('[data-testid="advice"]').length === 2 &&
        document.querySelectorAll('#report li.advice').length === 2,
      undefined,
      { timeout: 60_000 },
    );
    return page;
  }

  for (const width of [1280, 390]) {
    describe(`at ${width} px`, () => {
      it('shows every column of the side panel’s tables, and never scrolls sideways', async () => {
        const page = await withJob(width);
        await page.getByTestId('advice').first().waitFor({ timeout: 60_000 });
        await page.getByTestId('advice').nth(1).waitFor({ timeout: 60_000 });
        const headers = (await page.evaluate(
          `[...document.querySelectorAll('#panel table th')].map((th) => th.textContent)`,
        )) as string[];
        expect(headers.filter((text) => text === 'recorded')).toHaveLength(2);
        expect(await page.evaluate(CUT_OFF)).toEqual({ cut: [], panel: 0, page: 0 });
        // Setting names break after a comma, colon or equals sign, never inside a word.
        const settings = (await page.evaluate(BROKEN_SETTINGS)) as {
          broken: string[];
          checked: number;
        };
        expect(settings.checked).toBeGreaterThan(5);
        expect(settings.broken).toEqual([]);
        // The preface speaks of the caching pools the app replays, not of ranges it never shows.
        const preface = (await page.locator('#report > p.small').first().textContent())!;
        expect(preface).toMatch(/caching pool/);
        expect(preface).not.toMatch(/first, best|buddy|slab|high-water mark for ranges/);
        expect(problems).toEqual([]);
        expect(blocked).toEqual([]);
      });

      it('names the trace picker and the pool’s canvas; the timeline takes the focus and keys', async () => {
        const page = await withJob(width);
        await expect(
          page.getByRole('combobox', { name: 'the trace to step through' }).isVisible(),
        ).resolves.toBe(true);
        await expect(page.getByRole('img', { name: /^the pool's segments/ }).count()).resolves.toBe(
          1,
        );
        const canvas = page.locator('#report .timeline canvas:not(.timeline-overview)').first();
        await canvas.focus();
        expect(
          await page.evaluate(
            `document.activeElement === document.querySelector('#report .timeline canvas')`,
          ),
        ).toBe(true);
        const whole = await timelineRange(page);
        const span = whole.last - whole.first;
        await page.keyboard.press('+');
        const zoomed = await timelineRange(page);
        expect(zoomed.to - zoomed.from).toBeCloseTo(span / 2, 6);
        await page.keyboard.press('ArrowRight');
        const panned = await timelineRange(page);
        expect(panned.from).toBeCloseTo(zoomed.from + (zoomed.to - zoomed.from) / 10, 6);
        await page.keyboard.press('0');
        expect(await timelineRange(page)).toEqual(whole);
        // ↓ picks an allocation and shows what it is beside it; Escape lets it go.
        await page.keyboard.press('ArrowDown');
        await page.waitForFunction(TOOLTIP);
        const tip = (await page.evaluate(TOOLTIP)) as { text: string } | null;
        expect(tip?.text).toMatch(/block \d+/);
        await page.keyboard.press('Escape');
        await page.waitForFunction(`${TOOLTIP} === null`);
        expect(await page.evaluate(TOOLTIP)).toBeNull();
        expect(problems).toEqual([]);
      });

      it('zooms the timeline with a finger’s drag, and keeps a tapped tooltip on the screen', async () => {
        const page = await withJob(width);
        const canvas = page.locator('#report .timeline canvas:not(.timeline-overview)').first();
        await canvas.scrollIntoViewIfNeeded();
        const box = (await canvas.boundingBox())!;
        const whole = await timelineRange(page);
        const left = box.x + 84;
        const plot = box.width - 96;
        const y = box.y + 150;
        const cdp = await page.context().newCDPSession(page);
        const touch = (type: 'touchStart' | 'touchMove' | 'touchEnd', x?: number) =>
          cdp.send('Input.dispatchTouchEvent', {
            type,
            touchPoints: x === undefined ? [] : [{ x, y }],
          });
        await touch('touchStart', left + plot * 0.3);
        for (let step = 1; step <= 8; step++)
          await touch('touchMove', left + plot * (0.3 + 0.05 * step));
        await touch('touchEnd');
        const zoomed = await timelineRange(page);
        const span = whole.last - whole.first;
        expect(zoomed.from).toBeCloseTo(whole.first + span * 0.3, 0);
        expect((zoomed.to - zoomed.from) / span).toBeCloseTo(0.4, 1);
        await page.keyboard.press('0');
        // A tap on the drawn allocation of the most bytes × time: its tooltip, inside the window.
        const where = (await page.evaluate(
          'window.labReport.timelines[0].locate(window.labReport.timelines[0].biggest())',
        )) as { x: number; y: number };
        const scroll = (await page.evaluate('[window.scrollX, window.scrollY]')) as number[];
        await page.touchscreen.tap(where.x - scroll[0]!, where.y - scroll[1]!);
        await page.waitForFunction(TOOLTIP);
        const tip = (await page.evaluate(TOOLTIP)) as {
          left: number;
          right: number;
          width: number;
          text: string;
          window: number;
        };
        expect(tip.text).toMatch(/block \d+/);
        expect(tip.left).toBeGreaterThanOrEqual(0);
        expect(tip.right).toBeLessThanOrEqual(tip.window);
        expect(problems).toEqual([]);
      });

      it('shows who holds the memory at the stepper’s event, as the engine does in Node.js', async () => {
        const page = await withJob(width);
        const picked = (await page.locator('#state-trace option:checked').textContent())!;
        const file = join(job, basename(picked));
        const [trace] = await streamTraces(createReadStream(file), { name: file });
        const step = Math.max(1, Math.round(trace!.length / 100));
        const event = trace!.length - 1 - 3 * step;
        await page.getByTestId('state-slider').focus();
        await page.keyboard.press('End');
        for (let i = 0; i < 3; i++) await page.keyboard.press('Shift+ArrowLeft');
        await page
          .locator(`[data-testid="state-event"][data-state="ready"][data-event="${event}"]`)
          .waitFor({ timeout: 60_000 });
        const expected = stackTreeAt(trace!, event)!;
        const tree = page.getByRole('tree', { name: 'live memory at the event by call stack' });
        await tree.waitFor();
        const items = (await page.evaluate(TREE_ITEMS('#state-stacks'))) as {
          level: number;
          frame: string;
          bytes: number;
        }[];
        const roots = items.filter((item) => item.level === 1);
        expect(roots.map((item) => [item.frame, item.bytes])).toEqual(
          expected.children.map((node) => [node.frame, node.bytes]),
        );
        await expect(page.locator('#state-stacks .stack-total').textContent()).resolves.toMatch(
          new RegExp(`in ${expected.blocks.toLocaleString('en-US')} blocks?\\.`),
        );
        expect(problems).toEqual([]);
      });
    });
  }

  it('shows the files serve names in the order given, whichever is read first', async () => {
    const page = await tab(contexts.get(1280)!, problems);
    await page.goto(server.url);
    await page.locator(`${peak}[data-state="ready"]`).nth(1).waitFor({ timeout: 60_000 });
    const names = [basename(first), basename(second)];
    await expect(
      page.locator('article.peak-card h3').evaluateAll((cards) => cards.map((c) => c.textContent)),
    ).resolves.toEqual(names);
    await expect(
      page
        .locator('#state-trace option')
        .evaluateAll((options) => options.map((o) => o.textContent)),
    ).resolves.toEqual(names);
    await expect(
      page.locator('#report section h2').evaluateAll((titles) => titles.map((t) => t.textContent)),
    ).resolves.toEqual(names);
    await page.close();
    expect(problems).toEqual([]);
  });

  it('makes a sample in the page to try, and takes a file away again', async () => {
    const page = await tab(contexts.get(1280)!, problems);
    await page.goto(`${origin}/`);
    await page.getByRole('button', { name: /sample/ }).click();
    const alone = await predicted(page);
    expect(alone).toBeGreaterThan(0);
    await page.getByRole('tree', { name: 'live memory at the peak by call stack' }).waitFor();
    // A second file, then the sample removed: the second is all that is left.
    await page.getByTestId('file-input').setInputFiles(second);
    await page.locator(`${peak}[data-state="ready"]`).nth(1).waitFor({ timeout: 60_000 });
    await page.getByTestId('peak-difference').waitFor();
    const [, secondPeak] = (await page
      .locator(peak)
      .evaluateAll((outputs) =>
        outputs.map((o) => Number(o.getAttribute('data-bytes'))),
      )) as number[];
    await page.getByRole('button', { name: /^remove sample/ }).click();
    await page.waitForFunction(() => document.querySelectorAll('article.peak-card').length === 1);
    await expect(page.locator('article.peak-card h3').textContent()).resolves.toBe(
      basename(second),
    );
    expect(await predicted(page)).toBe(secondPeak);
    await expect(page.locator('#compare').isHidden()).resolves.toBe(true);
    await expect(page.locator('#state-trace option').count()).resolves.toBe(1);
    await expect(page.locator('#report section h2').count()).resolves.toBe(1);
    await expect(page.locator('[data-testid="file"]').count()).resolves.toBe(1);
    // The last one removed: the page as it opened.
    await page.getByRole('button', { name: `remove ${basename(second)}` }).click();
    await page.locator('#report .empty').waitFor();
    await expect(page.locator('#what-if').isHidden()).resolves.toBe(true);
    await page.close();
    expect(problems).toEqual([]);
    expect(blocked).toEqual([]);
  });
});
