/**
 * Opens a generated report in headless Chromium (Debian's `chromium` with playwright-core) and checks
 * that every chart and layout rendered, that nothing was fetched from the network and that the page
 * logged no errors. Skipped, with a message, where no Chromium executable exists; set CHROMIUM_PATH
 * to use another one.
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { lab } from '../src/lab';

const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const hasChromium = existsSync(executablePath);
if (!hasChromium) {
  console.warn(
    `report browser test skipped: no Chromium at ${executablePath} (install Debian's chromium, or set CHROMIUM_PATH)`,
  );
}

interface CanvasFigures {
  readonly width: number;
  readonly height: number;
  /** Pixels drawn in a colour darker than the background. */
  readonly inked: number;
}

interface Figures {
  readonly charts: CanvasFigures[];
  readonly layouts: CanvasFigures[];
  readonly titles: string[];
  readonly legend: string[];
}

/** Evaluated in the page (a string: this package's types have no DOM). */
const FIGURES = `(() => {
  const inked = (canvas) => {
    const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    let count = 0;
    for (let i = 0; i < data.length; i += 4) {
      if (data[i + 3] > 0 && (data[i] < 200 || data[i + 1] < 200 || data[i + 2] < 200)) count++;
    }
    return count;
  };
  const figures = (selector) => [...document.querySelectorAll(selector)].map((c) => ({
    width: c.width, height: c.height, inked: inked(c) }));
  const texts = (selector) => [...document.querySelectorAll(selector)].map((e) => e.textContent);
  return {
    charts: figures('.uplot canvas'),
    layouts: figures('figure.layout canvas'),
    titles: texts('.u-title'),
    legend: texts('.u-legend .u-series .u-label'),
  };
})()`;

class Sink extends Writable {
  override _write(_chunk: Buffer, _encoding: string, done: () => void): void {
    done();
  }
}

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

describe.skipIf(!hasChromium)('the HTML report in headless Chromium', () => {
  it('renders every chart and layout, with no network and no console errors', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'allot-lab-report-'));
    const allocators = ['best-fit', 'buddy', 'caching', 'caching-expandable'];
    const status = lab(
      [
        '--quick',
        '--workloads',
        'inference,larson',
        '--allocators',
        allocators.join(','),
        '--quiet',
      ],
      { stdout: new Sink(), stderr: new Sink(), cwd: dir },
    );
    expect(status).toBe(0);
    const page = join(dir, 'lab-report', 'index.html');

    const context = await chromium.launchPersistentContext(
      mkdtempSync(join(tmpdir(), 'chromium-')),
      {
        executablePath,
        headless: true,
        args: ARGS,
        viewport: { width: 1280, height: 900 },
      },
    );
    try {
      const tab = await context.newPage();
      const problems: string[] = [];
      const requests: string[] = [];
      tab.on('console', (message) => {
        if (message.type() === 'error' || message.type() === 'warning')
          problems.push(`${message.type()}: ${message.text()}`);
      });
      tab.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      tab.on('request', (request) => {
        if (!request.url().startsWith('file:')) requests.push(request.url());
      });
      await tab.goto(pathToFileURL(page).href);
      await tab.waitForSelector('body[data-rendered="true"]', { timeout: 15_000 });

      const figures = (await tab.evaluate(FIGURES)) as Figures;
      expect(problems).toEqual([]);
      expect(requests).toEqual([]);
      // Two workloads: a memory chart and a fragmentation chart each, a layout per allocator.
      expect(figures.charts).toHaveLength(4);
      expect(figures.layouts).toHaveLength(2 * allocators.length);
      for (const canvas of [...figures.charts, ...figures.layouts]) {
        expect(canvas.width).toBeGreaterThan(0);
        expect(canvas.height).toBeGreaterThan(0);
        expect(canvas.inked).toBeGreaterThan(100); // lines or blocks were drawn, not a blank canvas
      }
      // Axis labels are drawn on the canvas by uPlot; titles and legends are in the page.
      expect(figures.titles).toContain('Memory over time: live vs reserved');
      expect(figures.legend).toContain('caching-expandable reserved');
    } finally {
      await context.close();
    }
  });
});
