#!/usr/bin/env node
/**
 * What the web app costs a tab on one snapshot, in headless Chromium, served by `allot-lab serve`:
 * the time to read the file in the worker, to the first replay's figures, to the report drawn and
 * to the tuner's advice; and the tab's memory as Chromium and Linux count it: the renderer
 * process's peak resident set (`VmHWM` in /proc: the page and its two workers live in it), and the
 * JavaScript heaps of the page (`Performance.getMetrics`) and of each worker (`Runtime.getHeapUsage`
 * over the DevTools protocol: the heap and the typed arrays' buffers outside it), sampled every
 * 250 ms, their largest figures. A worker busy replaying answers only between its tasks, so its
 * figure can miss a peak that the resident set does not. With `--json`, one line of JSON as well.
 * Needs `pnpm build`, Linux's /proc and Chromium (CHROMIUM_PATH, default /usr/bin/chromium).
 *
 * Usage: node apps/web/scripts/tab-memory.mjs FILE [--timeout SECONDS] [--json]
 */
import { readFileSync, statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { servedApp } from './served-app.mjs';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { timeout: { type: 'string' }, json: { type: 'boolean' } },
});
const file = positionals[0];
if (!file) {
  console.error('usage: node apps/web/scripts/tab-memory.mjs FILE [--timeout SECONDS] [--json]');
  process.exit(2);
}
const timeout = Number(values.timeout ?? 900) * 1000;
const MB = 1e6;

/** The figures of /proc/PID/status that are sizes, in bytes. */
function status(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
    return { rss: kib('VmRSS') * 1024, hwm: kib('VmHWM') * 1024 };
  } catch {
    return null;
  }
}

const { url, browser, close } = await servedApp();
// This browser's renderer processes, as Chromium lists them (other browsers may run beside it).
const system = await browser.newBrowserCDPSession();
const renderers = async () =>
  (await system.send('SystemInfo.getProcessInfo')).processInfo
    .filter((info) => info.type === 'renderer')
    .map((info) => info.id);
const peak = { renderer: 0, page: 0, workers: new Map() };
const version = browser.version();
let sampler;
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const problems = [];
  page.on('pageerror', (error) => problems.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  const cdp = await page.context().newCDPSession(page);
  // The workers' heaps: attached to each worker, asked through the page's session.
  const workers = new Map();
  let asked = 0;
  const waiting = new Map();
  cdp.on('Target.attachedToTarget', ({ sessionId, targetInfo }) => {
    if (targetInfo.type === 'worker') workers.set(sessionId, targetInfo.title || targetInfo.url);
  });
  cdp.on('Target.receivedMessageFromTarget', ({ message }) => {
    const answer = JSON.parse(message);
    waiting.get(answer.id)?.(answer.result);
    waiting.delete(answer.id);
  });
  await cdp.send('Target.setAutoAttach', {
    autoAttach: true,
    waitForDebuggerOnStart: false,
    flatten: false,
  });
  await cdp.send('Performance.enable');
  const heapOf = (sessionId) =>
    new Promise((resolve) => {
      const id = ++asked;
      waiting.set(id, resolve);
      cdp
        .send('Target.sendMessageToTarget', {
          sessionId,
          message: JSON.stringify({ id, method: 'Runtime.getHeapUsage' }),
        })
        .catch(() => resolve(null));
      setTimeout(() => resolve(null), 2000);
    });
  const sample = async () => {
    for (const pid of await renderers()) {
      const figures = status(pid);
      if (figures) peak.renderer = Math.max(peak.renderer, figures.hwm);
    }
    const metrics = await cdp.send('Performance.getMetrics').catch(() => null);
    const used = metrics?.metrics.find((m) => m.name === 'JSHeapUsedSize')?.value ?? 0;
    peak.page = Math.max(peak.page, used);
    for (const [sessionId, name] of workers) {
      const heap = await heapOf(sessionId);
      // The heap and the typed arrays' buffers outside it (a trace's columns).
      const used = heap && heap.usedSize + (heap.backingStorageSize ?? 0);
      if (used) peak.workers.set(name, Math.max(peak.workers.get(name) ?? 0, used));
    }
  };
  sampler = setInterval(() => void sample(), 250);
  await page.goto(url);
  const started = performance.now();
  const since = () => (performance.now() - started) / 1000;
  const times = {};
  await page.getByTestId('file-input').setInputFiles(file);
  await page.locator('.file.read, .file.failed').first().waitFor({ timeout });
  times.read = since();
  const failed = await page
    .locator('.file.failed .file-status')
    .first()
    .textContent({ timeout: 100 })
    .catch(() => null);
  if (failed === null) {
    await page
      .locator('[data-testid="predicted-peak"][data-state="ready"]')
      .first()
      .waitFor({ timeout });
    times.firstReplay = since();
    await page.waitForSelector('body[data-rendered="true"]', { timeout });
    times.reportDrawn = since();
    await page.getByTestId('advice').first().waitFor({ timeout });
    times.advice = since();
  }
  await sample();
  const bytes = statSync(file).size;
  const result = {
    file,
    fileBytes: bytes,
    chromium: version,
    node: process.version,
    failed,
    seconds: times,
    peakRendererRssBytes: peak.renderer,
    peakPageHeapBytes: peak.page,
    peakWorkerHeapBytes: Object.fromEntries(peak.workers),
    problems,
  };
  const fmt = (s) => (s === undefined ? '–' : `${s.toFixed(1)} s`);
  console.log(
    `${file}: ${(bytes / MB).toFixed(0)} MB, Chromium ${version}, Node ${process.version}`,
  );
  if (failed !== null) console.log(`  the file was not read: ${failed}`);
  console.log(
    `  read ${fmt(times.read)}, first replay ${fmt(times.firstReplay)}, report drawn ${fmt(times.reportDrawn)}, tuner's advice ${fmt(times.advice)} (from the file chosen)`,
  );
  console.log(
    `  peak: renderer process ${(peak.renderer / MB).toFixed(0)} MB resident; JS heaps: page ${(peak.page / MB).toFixed(0)} MB, ${[...peak.workers].map(([name, used]) => `${name} ${(used / MB).toFixed(0)} MB`).join(', ')} (with their buffers)`,
  );
  if (problems.length > 0) console.log(`  the page said: ${problems.join(' | ')}`);
  if (values.json) console.log(JSON.stringify(result));
} finally {
  clearInterval(sampler);
  await close();
}
