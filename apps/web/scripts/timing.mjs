#!/usr/bin/env node
/**
 * How long the web app takes on a snapshot, in headless Chromium, served by `allot-lab serve`:
 * the file read in the worker, the first replay, and a what-if per control changed (from the
 * change to the new peak on the page), with the page's longest pause between 20 ms timers while
 * the file was read. Needs `pnpm build` and Chromium (CHROMIUM_PATH, default /usr/bin/chromium).
 *
 * Usage: node apps/web/scripts/timing.mjs FILE
 */
import { servedApp } from './served-app.mjs';

const file = process.argv[2];
if (!file) {
  console.error('usage: node apps/web/scripts/timing.mjs FILE');
  process.exit(2);
}
const { url, browser, close } = await servedApp();
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(url);
  await page.evaluate(`(() => {
    window.gaps = []; let last = performance.now();
    setInterval(() => { const now = performance.now(); window.gaps.push(now - last); last = now; }, 20);
  })()`);
  const ready = (config) =>
    page.waitForFunction(
      (c) => {
        const peak = document.querySelector('[data-testid="predicted-peak"]');
        return peak?.dataset.state === 'ready' && (c === null || peak.dataset.config === c);
      },
      config,
      { timeout: 600_000, polling: 10 },
    );
  const started = performance.now();
  await page.getByTestId('file-input').setInputFiles(file);
  await page.locator('.file.read, .file.failed').first().waitFor({ timeout: 600_000 });
  const read = performance.now() - started;
  const gaps = await page.evaluate('window.gaps');
  await ready(null);
  const first = performance.now() - started;
  // The tuner searches beside the first replays; the what-ifs below are timed once it is done.
  await page.getByTestId('advice').first().waitFor({ timeout: 600_000 });
  const tuned = performance.now() - started;
  const peak = page.getByTestId('predicted-peak').first();
  const rows = [
    ['file read in the worker', read],
    ['first replay shown', first - read],
    ['the tuner advice shown', tuned - read],
  ];
  const change = async (label, act) => {
    const before = await page.evaluate('document.body.dataset.replayed');
    const at = performance.now();
    await act();
    await page.waitForFunction(
      (b) =>
        document.body.dataset.replayed !== b &&
        document.querySelector('[data-testid="predicted-peak"]').dataset.state === 'ready',
      before,
      { timeout: 600_000, polling: 10 },
    );
    rows.push([
      `${label} → ${await peak.getAttribute('data-config')}: ${await peak.textContent()}`,
      performance.now() - at,
    ]);
  };
  await change('expandable_segments on', () => page.getByTestId('expandable_segments').check());
  await change('expandable_segments off', () => page.getByTestId('expandable_segments').uncheck());
  await change('max_split_size_mb 128', () =>
    page.getByTestId('max_split_size_mb').selectOption('128'),
  );
  await change('roundup_power2_divisions 4', () =>
    page.getByTestId('roundup_power2_divisions').selectOption('4'),
  );
  await change('memory 16 GiB', () =>
    page
      .getByTestId('memory')
      .fill('16')
      .then(() => page.getByTestId('memory').press('Enter')),
  );
  for (const [label, ms] of rows) console.log(`${ms.toFixed(0).padStart(7)} ms  ${label}`);
  console.log(
    `longest pause of the page while reading: ${Math.max(...gaps).toFixed(0)} ms between 20 ms timers`,
  );
} finally {
  await close();
}
