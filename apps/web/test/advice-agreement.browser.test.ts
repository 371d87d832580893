/**
 * One question, one answer, in the browser: every recording in `../shared/traces` (the H100 runs
 * and the public files) that `tune` reads, dropped on the app at once, checked at 1280 px, then at
 * 390 px in the same tab: the tuner's advice for each is `allot-lab tune FILE --json`'s, the same
 * setting, saving and reason in the same words, and the app's report says it too.
 * (`apps/lab/src/advice-agreement.test.ts` checks the report file's data against `tune --json`.) A
 * state dump (the public `state-dump-*` files) is tuned on an estimate: the same words, which say
 * what it assumes, and the tuner marks its figures as estimates. A file `tune` refuses (exit status
 * 2) is left out. Skips, with a message, without Chromium or the recordings.
 */
import { type ChildProcess, execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Advice } from '@allot/lab/engine';
import { findTracesDir } from '@allot/workloads/node';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumOrSkip, launchChromium } from '../../lab/test/chromium';
import { recordingsToTune } from '../../lab/test/recordings';
import { cli, onlyFrom, serve, tab } from './app-tab';

const hasChromium = chromiumOrSkip('web app advice agreement test');
const shared = findTracesDir();
const files = shared === null ? [] : recordingsToTune(shared);
if (files.length === 0) console.warn('web app advice agreement skipped: no ../shared/traces');

interface Tuned {
  readonly file: string;
  readonly trace: string;
  readonly advice: Advice;
}

/** `tune --json` of `file`, or null when tune cannot read it (exit 2). */
async function tuneOne(file: string): Promise<Tuned | null> {
  try {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [cli, 'tune', file, '--json', '--quiet'],
      { maxBuffer: 1 << 28 },
    );
    const json = JSON.parse(stdout) as { trace: string; advice: Advice };
    return { file, trace: json.trace, advice: json.advice };
  } catch (error) {
    const failed = error as { code: number; stdout: string };
    if (failed.code === 2) return null;
    if (failed.code !== 1) throw error;
    const json = JSON.parse(failed.stdout) as { trace: string; advice: Advice };
    return { file, trace: json.trace, advice: json.advice };
  }
}

/** `tune --json` of every file it reads, two at a time. */
async function tuneAll(): Promise<Tuned[]> {
  const found: (Tuned | null)[] = [];
  for (let i = 0; i < files.length; i += 2)
    found.push(...(await Promise.all(files.slice(i, i + 2).map(tuneOne))));
  return found.filter((tuned): tuned is Tuned => tuned !== null);
}

describe.skipIf(!hasChromium || files.length === 0)('the app’s advice against tune --json', () => {
  let context: BrowserContext;
  let server: { child: ChildProcess; url: string };
  let origin: string;
  let tuned: Tuned[];
  const blocked: string[] = [];
  const problems: string[] = [];

  beforeAll(async () => {
    [server, tuned] = await Promise.all([serve(), tuneAll()]);
    origin = new URL(server.url).origin;
    context = await launchChromium();
    await onlyFrom(context, origin, blocked);
  });
  afterAll(async () => {
    await context?.close();
    server?.child.kill();
  });

  /**
   * One tab with every recording dropped on it, shared by both widths: the tuner's searches are
   * the slow part, and their answers do not depend on the window, so they run once and each width
   * checks them, the window resized in between.
   */
  let dropped: Promise<Page> | undefined;
  function droppedAll(): Promise<Page> {
    dropped ??= (async () => {
      const page = await tab(context, problems, 1280);
      await page.goto(`${origin}/`);
      await page.getByTestId('file-input').setInputFiles(tuned.map((t) => t.file));
      return page;
    })();
    return dropped;
  }

  it.each([1280, 390])(
    'at %i px: the same setting, saving and reason for every recording',
    async (width) => {
      expect(tuned.length).toBeGreaterThan(0);
      const page = await droppedAll();
      await page.setViewportSize({ width, height: width < 600 ? 844 : 900 });
      // The report draws its charts again to the window's new width.
      await page.waitForFunction(
        (w) =>
          window.innerWidth === w &&
          [...document.querySelectorAll('#report canvas')].every(
            (canvas) => canvas.getBoundingClientRect().width <= w,
          ),
        width,
        { timeout: 110_000 },
      );
      for (const { trace, advice } of tuned) {
        const shown = page.locator(
          `[data-testid="tuner-advice"][data-trace="${trace.replaceAll('"', '\\"')}"]`,
        );
        await shown.waitFor({ timeout: 110_000 });
        const got = await shown.evaluate((element: HTMLElement) => ({
          reason: element.dataset.reason,
          config: element.dataset.advised === 'true' ? element.dataset.config : null,
          savingBytes: Number(element.dataset.savingBytes),
          text: element.textContent,
        }));
        const { text, ...figures } = got;
        expect({ trace, ...figures }).toEqual({
          trace,
          reason: advice.reason,
          config: advice.config,
          savingBytes: advice.savingBytes,
        });
        for (const words of [advice.summary, advice.because]) expect(text).toContain(words);
        if (advice.config !== null && advice.config !== '')
          expect(text).toContain(`PYTORCH_CUDA_ALLOC_CONF=${advice.config}`);
        if (advice.estimate) {
          const search = page.locator('[data-testid="tuner-search"]', { has: shown });
          await expect(search.getByTestId('tuner-estimated').count()).resolves.toBe(1);
        }
      }
      // The app's report says each in the same words, once it has replayed with every search.
      const paragraphs = page.locator('#report li.advice');
      await page.waitForFunction(
        (count) => document.querySelectorAll('#report li.advice').length >= count,
        tuned.length,
        { timeout: 110_000 },
      );
      const texts = await paragraphs.allTextContents();
      for (const { advice } of tuned) {
        expect(
          texts.some((text) => text.includes(advice.summary) && text.includes(advice.because)),
        ).toBe(true);
      }
      expect(problems).toEqual([]);
      expect(blocked).toEqual([]);
    },
    240_000,
  );
});
