/**
 * The report's call tree of the live blocks at the peak, in headless Chromium at 1280 and 390 px,
 * on the small snapshot recorded with stack frames (`snapshot-with-frames.ts`): the heaviest path
 * open at first, sizes and shares per frame, the arrow keys, and the search by frame text.
 * Skipped, with a message, where no Chromium executable exists.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lab } from '../src/lab';
import { chromiumOrSkip, launchChromium } from './chromium';
import { open, Sink } from './report-tab';
import { snapshotWithFrames } from './snapshot-with-frames';

const hasChromium = chromiumOrSkip('report stack tree browser test');
const MiB = 2 ** 20;

/** The items shown (not inside a closed group): their level, frame, bytes and share, in order. */
const SHOWN = `[...document.querySelectorAll('#workload-0 [role="tree"] [role="treeitem"]')]
  .filter((item) => item.parentElement.closest('ul[hidden]') === null)
  .map((item) => [Number(item.getAttribute('aria-level')), item.dataset.frame,
    Number(item.dataset.bytes), item.querySelector('.stack-share').textContent,
    item.getAttribute('aria-expanded')])`;

type Shown = [number, string, number, string, string | null][];

const focused = (tab: Page) =>
  tab.evaluate('document.activeElement.dataset.frame ?? document.activeElement.tagName');

describe.skipIf(!hasChromium)('the report’s call tree at the peak', () => {
  let context: BrowserContext;
  const dir = mkdtempSync(join(tmpdir(), 'allot-lab-tree-'));
  beforeAll(async () => {
    writeFileSync(join(dir, 'frames.json'), JSON.stringify(snapshotWithFrames()));
    const status = await lab(['replay', 'frames.json', '--allocators', 'caching', '--quiet'], {
      stdout: new Sink(),
      stderr: new Sink(),
      cwd: dir,
    });
    expect(status).toBe(0);
    context = await launchChromium();
  });
  afterAll(async () => {
    await context?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const width of [1280, 390]) {
    it(`opens the heaviest path, steps with the keys and finds frames, at ${width} px`, async () => {
      const page = join(dir, 'lab-report', 'index.html');
      const { tab, problems, requests } = await open(context, page, width);
      const tree = tab.getByRole('tree', { name: 'live memory at the peak by call stack' });
      await tree.scrollIntoViewIfNeeded();
      // Half the bytes or more: open at first.
      expect((await tab.evaluate(SHOWN)) as Shown).toEqual([
        [1, 'train_step (train.py:31)', 56 * MiB, '100.0 %', 'true'],
        [2, 'Block.forward (model.py:120)', 32 * MiB, '57.1 %', 'true'],
        [3, 'attention_scores (model.py:88)', 32 * MiB, '57.1 %', null],
        [2, 'Block.mlp (model.py:102)', 16 * MiB, '28.6 %', null],
        [2, 'embed (model.py:40)', 8 * MiB, '14.3 %', null],
      ]);
      // One item takes the focus by Tab; the arrow keys walk and fold the tree.
      const tabbable = (await tab.evaluate(
        `[...document.querySelectorAll('#workload-0 [role="treeitem"][tabindex="0"]')].map((i) => i.dataset.frame)`,
      )) as string[];
      expect(tabbable).toEqual(['train_step (train.py:31)']);
      await tree.getByRole('treeitem').first().focus();
      await tab.keyboard.press('ArrowDown');
      expect(await focused(tab)).toBe('Block.forward (model.py:120)');
      await tab.keyboard.press('ArrowLeft'); // closes it
      await tab.keyboard.press('ArrowDown');
      expect(await focused(tab)).toBe('Block.mlp (model.py:102)');
      await tab.keyboard.press('ArrowLeft'); // a leaf: to its parent
      expect(await focused(tab)).toBe('train_step (train.py:31)');
      await tab.keyboard.press('ArrowLeft'); // closes the root
      expect(((await tab.evaluate(SHOWN)) as Shown).map((item) => item[1])).toEqual([
        'train_step (train.py:31)',
      ]);
      await tab.keyboard.press('ArrowRight'); // opens it again, Block.forward still closed
      await tab.keyboard.press('End');
      expect(await focused(tab)).toBe('embed (model.py:40)');
      await tab.keyboard.press('Home');
      await tab.keyboard.press('ArrowDown');
      await tab.keyboard.press('Enter');
      expect(((await tab.evaluate(SHOWN)) as Shown)[2]![1]).toBe('attention_scores (model.py:88)');

      // A search by frame text: the matches with the callers above them, marked, summed.
      await tab.getByRole('searchbox', { name: /find a frame/ }).fill('MODEL.py:1');
      expect(((await tab.evaluate(SHOWN)) as Shown).map((item) => item.slice(0, 2))).toEqual([
        [1, 'train_step (train.py:31)'],
        [2, 'Block.forward (model.py:120)'],
        [2, 'Block.mlp (model.py:102)'],
      ]);
      const marks = (await tab.evaluate(
        `[...document.querySelectorAll('#workload-0 .stack-tree mark')].map((m) => m.textContent)`,
      )) as string[];
      expect(marks).toEqual(['model.py:1', 'model.py:1']);
      await expect(tab.locator('#workload-0 .stack-found').textContent()).resolves.toBe(
        '2 frames match: 48.0 MiB (85.7 %) of the live bytes pass through them.',
      );
      await tab.getByRole('searchbox', { name: /find a frame/ }).fill('');
      expect(((await tab.evaluate(SHOWN)) as Shown).length).toBe(5);

      // Nothing wider than the window.
      const overflow = (await tab.evaluate(
        `document.documentElement.scrollWidth - document.documentElement.clientWidth`,
      )) as number;
      expect(overflow).toBeLessThanOrEqual(0);
      expect(problems).toEqual([]);
      expect(requests).toEqual([]);
      await tab.close();
    });
  }
});
