/**
 * State dumps in the web app, in headless Chromium: the hand-built dump with stacks, the public
 * dumps (one in PyTorch 2.0's format) and a dump made of an H100 recording (`state-dumps.ts` of the
 * lab's tests), dropped on the app at once, with an empty file and an image beside them. Each dump's
 * section gives reserved and allocated equal to the dump's own segments, the holders by source
 * line, the segments drawn to scale and the settings marked as an estimate, with its assumption;
 * the tuner says its figures are estimates; the two files that are no trace say what they are.
 * Read once at 1280 px, then the same page at 390 px: nothing scrolls sideways and a tapped block
 * is described on screen. No request leaves the server; no console error or warning. Skips, with a
 * message, without Chromium.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { findTracesDir } from '@allot/workloads/node';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumOrSkip, launchChromium } from '../../lab/test/chromium';
import { type DumpCase, stateDumpCases } from '../../lab/test/state-dumps';
import { onlyFrom, serve, tab } from './app-tab';

const hasChromium = chromiumOrSkip('web app state dump test');

/** The section of each device of each dump: its title, as the app names the trace. */
function titles(dump: DumpCase): string[] {
  const name = basename(dump.path);
  return dump.devices.length === 1 ? [name] : dump.devices.map((_, d) => `${name}#cuda:${d}`);
}

describe.skipIf(!hasChromium)('state dumps in the web app', () => {
  let context: BrowserContext;
  let server: { child: ChildProcess; url: string };
  let page: Page;
  let dir: string;
  let dumps: DumpCase[];
  const blocked: string[] = [];
  const problems: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'allot-web-dumps-'));
    const shared = findTracesDir();
    if (shared === null) console.warn('state dumps of ../shared/traces skipped: not found');
    [server, dumps] = await Promise.all([serve(), stateDumpCases(dir, shared, /^train-default\./)]);
    context = await launchChromium();
    await onlyFrom(context, new URL(server.url).origin, blocked);
    page = await tab(context, problems, 1280);
    await page.goto(server.url);
    writeFileSync(join(dir, 'empty.pickle'), '');
    writeFileSync(
      join(dir, 'picture.pickle'),
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 13, 10, 26, 10, 0, 0]),
    );
    await page
      .getByTestId('file-input')
      .setInputFiles([
        ...dumps.map((dump) => dump.path),
        join(dir, 'empty.pickle'),
        join(dir, 'picture.pickle'),
      ]);
    const sections = dumps.reduce((n, dump) => n + dump.devices.length, 0);
    await page.waitForFunction(
      (n) => document.querySelectorAll('#report section.state-dump canvas').length === n,
      sections,
      { timeout: 90_000 },
    );
  });
  afterAll(async () => {
    await context?.close();
    server?.child.kill();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('gives each dump’s figures, holders, segments to scale and the estimate, marked', async () => {
    for (const dump of dumps) {
      for (const [d, title] of titles(dump).entries()) {
        const expected = dump.devices[d]!;
        const section = page.locator('#report section.state-dump', {
          has: page.locator('h2', { hasText: new RegExp(`^${title.replace(/[.#]/g, '\\$&')}$`) }),
        });
        await expect(section.getAttribute('data-reserved-bytes')).resolves.toBe(
          String(expected.reservedBytes),
        );
        await expect(section.getAttribute('data-allocated-bytes')).resolves.toBe(
          String(expected.allocatedBytes),
        );
        await expect(section.locator('.dump-lines').textContent()).resolves.toContain(
          'A state dump',
        );
        const frames = await section.locator('table.peak-table td.frame').allTextContents();
        for (const line of expected.bySource.keys()) {
          expect(
            frames.some((frame) => frame.endsWith(`(${line})`)),
            `${title}: ${line}`,
          ).toBe(true);
        }
        if (expected.bySource.size === 0) {
          await expect(section.textContent()).resolves.toContain('the dump holds no stacks');
        }
        const map = section.locator('.segment-map canvas');
        await expect(map.getAttribute('data-segments')).resolves.toBe(String(expected.segments));
        await expect(section.locator('.estimate-basis').textContent()).resolves.toMatch(
          /^An estimate, not a replay/,
        );
        await expect(
          section.locator('h3', { hasText: 'under each setting: an estimate' }).count(),
        ).resolves.toBe(1);
        const cells = await section.locator('table.dump-estimate td').allTextContents();
        expect(cells.some((cell) => cell.endsWith('(estimated)'))).toBe(true);
      }
    }
    // The tuner's table and advice say they are estimates.
    const advice = page.locator('[data-testid="tuner-advice"]', {
      hasText: 'An estimate, not a replay',
    });
    await advice.first().waitFor({ timeout: 90_000 });
    await expect(page.getByTestId('tuner-estimated').first().textContent()).resolves.toMatch(
      /^Every figure is an estimate/,
    );
  });

  it('says what a file that is no trace is', async () => {
    const failed = page.locator('[data-testid="file"].failed');
    await expect(failed.filter({ hasText: 'empty.pickle' }).textContent()).resolves.toMatch(
      /empty\.pickle: not a PyTorch memory snapshot, .*: it is an empty file$/,
    );
    await expect(failed.filter({ hasText: 'picture.pickle' }).textContent()).resolves.toMatch(
      /it is a file that starts with bytes 89 50 4E 47 0D 0A 1A 0A …: a PNG image$/,
    );
  });

  it('at 390 px: nothing scrolls sideways, a tapped block is described on screen', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    const map = page.locator('#report section.state-dump .segment-map canvas').first();
    await page.waitForFunction(
      () => {
        const canvas = document.querySelector('#report section.state-dump .segment-map canvas');
        return canvas instanceof HTMLCanvasElement && canvas.width < 390;
      },
      undefined,
      { timeout: 30_000 },
    );
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    expect(width).toBeLessThanOrEqual(390);
    await map.scrollIntoViewIfNeeded();
    const box = (await map.boundingBox())!;
    await map.dispatchEvent('pointerdown', {
      clientX: box.x + 2,
      clientY: box.y + 4,
      pointerType: 'touch',
    });
    const tip = page.locator('#lab-tooltip');
    await expect(tip.textContent()).resolves.toMatch(/segment 0x[0-9a-f]+, .* allocated/);
    const tipBox = (await tip.boundingBox())!;
    expect(tipBox.x).toBeGreaterThanOrEqual(0);
    expect(tipBox.x + tipBox.width).toBeLessThanOrEqual(390);
    expect(problems).toEqual([]);
    expect(blocked).toEqual([]);
  });
});
