#!/usr/bin/env node
/**
 * The lab README's pictures of the web app: FILE opened through the file input of the app that
 * `allot-lab serve` serves, `expandable_segments` switched on, the tuner's advice waited for, then
 * the window at 1280 × 860 px (`web-1280.png`) and the top 1,300 px of the page at 390 px
 * (`web-390.png`), in headless Chromium; with `--dump DUMP`, also a state dump's section (its
 * figures and the segments to scale) at 1280 px (`state-dump-1280.png`). Needs `pnpm build` and
 * Chromium (CHROMIUM_PATH, default /usr/bin/chromium).
 *
 * Usage: node apps/web/scripts/screenshots.mjs FILE [--dump DUMP] [--out DIR]   (default: apps/lab/docs)
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { servedApp } from './served-app.mjs';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { out: { type: 'string' }, dump: { type: 'string' } },
});
const file = positionals[0];
if (!file) {
  console.error('usage: node apps/web/scripts/screenshots.mjs FILE [--dump DUMP] [--out DIR]');
  process.exit(2);
}
const out = values.out ?? join(import.meta.dirname, '..', '..', 'lab', 'docs');
const { url, browser, close } = await servedApp();
try {
  for (const [width, height, name, clip] of [
    [1280, 860, 'web-1280.png', null],
    [390, 844, 'web-390.png', { x: 0, y: 0, width: 390, height: 1300 }],
  ]) {
    const page = await browser.newPage({ viewport: { width, height } });
    await page.goto(url);
    await page.getByTestId('file-input').setInputFiles(file);
    await page.locator('[data-testid="predicted-peak"][data-state="ready"]').waitFor();
    await page.getByTestId('expandable_segments').check();
    await page
      .locator(
        '[data-testid="predicted-peak"][data-state="ready"][data-config="expandable_segments:True"]',
      )
      .waitFor({ timeout: 120_000 });
    await page.getByTestId('advice').first().waitFor({ timeout: 120_000 });
    await page.waitForSelector('body[data-rendered="true"]');
    await page.evaluate('window.scrollTo(0, 0)');
    const path = join(out, name);
    await page.screenshot(clip ? { path, clip, fullPage: true } : { path });
    console.log(path);
    await page.close();
  }
  if (values.dump) {
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    await page.goto(url);
    await page.getByTestId('file-input').setInputFiles(values.dump);
    const section = page.locator('#report section.state-dump').first();
    await section.locator('.segment-map canvas').first().waitFor({ timeout: 120_000 });
    await page.waitForSelector('body[data-rendered="true"]');
    const path = join(out, 'state-dump-1280.png');
    await section.screenshot({ path });
    console.log(path);
    await page.close();
  }
} finally {
  await close();
}
