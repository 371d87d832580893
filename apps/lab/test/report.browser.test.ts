/**
 * Opens a generated report in headless Chromium (Debian's `chromium` with playwright-core) and checks
 * that every chart and layout rendered, that nothing was fetched from the network and that the page
 * logged no errors. Skipped, with a message, where no Chromium executable exists; set CHROMIUM_PATH
 * to use another one.
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lab } from '../src/lab';
import { chromiumOrSkip, launchChromium } from './chromium';
import { fragmentation } from './oom-recordings';
import { open, Sink } from './report-tab';
import { SCORES_BLOCK, snapshotWithFrames } from './snapshot-with-frames';

const hasChromium = chromiumOrSkip('report browser test');

interface CanvasFigures {
  readonly width: number;
  readonly height: number;
  /** Pixels drawn in a colour darker than the background. */
  readonly inked: number;
}

interface Figures {
  /** Per workload's section: whether it has both charts and the layouts. */
  readonly sections: boolean[];
  readonly axisToggle: number;
  readonly charts: CanvasFigures[];
  readonly layouts: CanvasFigures[];
  readonly timelines: CanvasFigures[];
  readonly titles: string[];
  readonly legend: string[];
  readonly same: string[];
  readonly diagnosis: string;
  readonly peakRows: string[];
}

/** Evaluated in the page (a string: this package's types have no DOM). */
const FIGURES = `(() => {
  const inked = (canvas) => {
    // Read a copy: reading the page's own canvases back twice makes Chromium warn.
    const copy = document.createElement('canvas');
    copy.width = canvas.width;
    copy.height = canvas.height;
    const context = copy.getContext('2d', { willReadFrequently: true });
    context.drawImage(canvas, 0, 0);
    const { data } = context.getImageData(0, 0, canvas.width, canvas.height);
    let count = 0;
    for (let i = 0; i < data.length; i += 4) {
      if (data[i + 3] > 0 && (data[i] < 200 || data[i + 1] < 200 || data[i + 2] < 200)) count++;
    }
    return count;
  };
  const figures = (selector) => [...document.querySelectorAll(selector)].map((c) => ({
    width: c.width, height: c.height, inked: inked(c) }));
  const diagnosis = document.querySelector('.diagnosis');
  const texts = (selector) => [...document.querySelectorAll(selector)].map((e) => e.textContent);
  const sections = [...document.querySelectorAll('section[id^="workload-"]')];
  return {
    sections: sections.map((s) => ['.chart.chart-memory', '.chart.chart-fragmentation', '.layouts']
      .every((selector) => s.querySelector(selector) !== null)),
    axisToggle: document.querySelectorAll('input[name="x-axis"][value="time"]').length,
    charts: figures('.uplot canvas'),
    layouts: figures('figure.layout canvas'),
    titles: texts('.u-title'),
    legend: texts('.u-legend .u-series .u-label'),
    timelines: figures('.timeline canvas:not(.timeline-overview)'),
    same: texts('span.same'),
    diagnosis: diagnosis ? diagnosis.textContent : '',
    peakRows: [...document.querySelectorAll('table.peak-table tbody tr')].map((r) => r.textContent),
  };
})()`;

/** Moves the mouse to page coordinates (scrolling them into view) and returns the tooltip's text. */
async function hoverAt(tab: Page, x: number, y: number): Promise<string> {
  await tab.evaluate(`window.scrollTo(0, ${Math.max(0, y - 300)})`);
  const scrollY = (await tab.evaluate('window.scrollY')) as number;
  const scrollX = (await tab.evaluate('window.scrollX')) as number;
  await tab.mouse.move(x - scrollX, y - scrollY);
  return (await tab.evaluate(
    `(() => { const t = document.getElementById('lab-tooltip'); return t.style.display === 'none' ? '' : t.innerText; })()`,
  )) as string;
}

describe.skipIf(!hasChromium)('the HTML report in headless Chromium', () => {
  let context: BrowserContext;
  beforeAll(async () => {
    context = await launchChromium();
  });
  afterAll(async () => {
    await context?.close();
  });

  it('explains a snapshot: diagnosis, charts, timeline with frames on hover, layouts, no errors', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'allot-lab-frames-'));
    writeFileSync(join(dir, 'frames.json'), JSON.stringify(snapshotWithFrames()));
    const status = await lab(
      [
        'replay',
        'frames.json',
        '--allocators',
        'first-fit,best-fit,caching,caching-tuned',
        '--quiet',
      ],
      { stdout: new Sink(), stderr: new Sink(), cwd: dir },
    );
    expect(status).toBe(0);
    const { tab, problems, requests } = await open(context, join(dir, 'lab-report', 'index.html'));

    const figures = (await tab.evaluate(FIGURES)) as Figures;
    expect(figures.sections).toEqual([true]);
    expect(figures.axisToggle).toBe(1);
    expect(figures.charts).toHaveLength(2);
    expect(figures.timelines).toHaveLength(1);
    expect(figures.layouts).toHaveLength(4);
    for (const canvas of [...figures.charts, ...figures.timelines, ...figures.layouts]) {
      expect(canvas.inked).toBeGreaterThan(100);
    }
    expect(figures.legend).toContain('PyTorch reserved (recorded)');
    // The tuned row names its setting, as the table does: the one the action recommends.
    expect(figures.legend).toContain('caching-tuned (expandable_segments:True) reserved');
    expect(figures.diagnosis).toMatch(
      /Action: Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True /,
    );
    expect(figures.same).toEqual(['= first-fit']);
    expect(figures.diagnosis).toMatch(/Action:/);
    expect(figures.diagnosis).toMatch(/free but fragmented/);
    expect(figures.diagnosis).toMatch(/PYTORCH_CUDA_ALLOC_CONF/);
    expect(figures.peakRows[0]).toMatch(/32\.0 MiB.*attention_scores \(model\.py:88\)/);

    // Hover on the known allocation in the timeline: its size, times and frames.
    const where = (await tab.evaluate(`window.labReport.timelines[0].locate(${SCORES_BLOCK})`)) as {
      x: number;
      y: number;
    } | null;
    expect(where).not.toBeNull();
    const text = await hoverAt(tab, where!.x, where!.y);
    expect(text).toMatch(/32\.0 MiB/);
    expect(text).toMatch(/allocated at 0\.002 s/);
    expect(text).toMatch(/freed at 0\.004 s/);
    expect(text).toMatch(/attention_scores \(model\.py:88\)/);
    expect(text).toMatch(/train_step \(train\.py:31\)/);

    // Hover on a block of a layout.
    const box = await tab.locator('figure.layout canvas').first().boundingBox();
    const layoutText = await hoverAt(
      tab,
      box!.x + 3 + ((await tab.evaluate('window.scrollX')) as number),
      box!.y + 5 + ((await tab.evaluate('window.scrollY')) as number),
    );
    expect(layoutText).toMatch(/segment 1 of \d+/);

    // The events axis instead of seconds redraws every chart.
    await tab.check('input[name="x-axis"][value="event"]');
    const byEvent = (await tab.evaluate(FIGURES)) as Figures;
    expect(byEvent.charts).toHaveLength(2);
    expect(byEvent.timelines).toHaveLength(1);
    expect(byEvent.timelines[0]!.inked).toBeGreaterThan(100);

    // renderSections(root, data) again, as the web app does on each replay: the charts are
    // replaced, the old ones destroyed, and the radios answer once; without the heading on request,
    // and text from the data is text, never markup.
    const again = (await tab.evaluate(`(() => {
      const data = JSON.parse(document.getElementById('lab-data').textContent);
      const root = document.getElementById('report');
      delete document.body.dataset.rendered;
      labUi.renderSections(root, data);
      data.workloads[0].title = 'frames <b>&</b>';
      data.workloads[0].ooms = [['out of memory recorded at entry 7', 'requested at step <script> (train.py:9)']];
      labUi.renderSections(root, data, { header: false });
      return { uplots: document.querySelectorAll('.uplot').length,
        rendered: document.body.dataset.rendered, charts: window.labReport.charts.length,
        headings: document.querySelectorAll('h1').length,
        command: root.textContent.includes('allot-lab replay frames.json'),
        title: root.querySelector('#workload-0 h2').innerHTML,
        oom: [...root.querySelectorAll('.oom h3, .oom li')].map((e) => e.innerText),
        scripts: root.querySelectorAll('script').length };
    })()`)) as Record<string, unknown>;
    expect(again).toEqual({
      uplots: 2,
      rendered: 'true',
      charts: 1,
      headings: 0,
      command: false,
      title: 'frames &lt;b&gt;&amp;&lt;/b&gt;',
      oom: [
        'Out of memory, as recorded',
        'out of memory recorded at entry 7\nrequested at step <script> (train.py:9)',
      ],
      scripts: 0,
    });

    expect(problems).toEqual([]);
    expect(requests).toEqual([]);
  });

  it('renders every chart and layout, with no network and no console errors', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'allot-lab-report-'));
    const allocators = ['best-fit', 'buddy', 'caching', 'caching-expandable'];
    const status = await lab(
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

    {
      const { tab, problems, requests } = await open(context, page);
      const figures = (await tab.evaluate(FIGURES)) as Figures;
      expect(problems).toEqual([]);
      expect(requests).toEqual([]);
      // Two workloads: a memory chart and a fragmentation chart each, a layout per allocator.
      expect(figures.sections).toEqual([true, true]);
      expect(figures.axisToggle).toBe(0); // the built-in workloads have no times
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
      // The built-in workloads have no times: an active-memory timeline each, on events.
      expect(figures.timelines).toHaveLength(2);
      // The preface speaks of the rows the report has, the ranges by name.
      const preface = (await tab.evaluate(
        `document.querySelector('h1 ~ p.small:not(.muted)').textContent`,
      )) as string;
      expect(preface).toMatch(/high-water mark for the ranges \(best-fit, buddy: /);
      expect(preface).toMatch(/caching pools/);
      expect(preface).not.toMatch(/good fit|slab/);
      await tab.close();
    }
  });

  it('draws the pool at a recorded out-of-memory error and under the advice, to one scale', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'allot-lab-oom-'));
    writeFileSync(join(dir, 'oom.json'), fragmentation().snapshot());
    const status = await lab(['replay', 'oom.json', '--allocators', 'caching', '--quiet'], {
      stdout: new Sink(),
      stderr: new Sink(),
      cwd: dir,
    });
    expect(status).toBe(0);
    const { tab, problems, requests } = await open(context, join(dir, 'lab-report', 'index.html'));
    const oom = (await tab.evaluate(`(() => {
      const box = document.querySelector('#workload-0 .oom');
      return { heading: box.querySelector('h3').textContent,
        items: box.querySelectorAll('li').length,
        captions: [...box.querySelectorAll('.oom-layouts figcaption b')].map((b) => b.textContent),
        scale: box.querySelector('.oom-scale').textContent };
    })()`)) as { heading: string; items: number; captions: string[]; scale: string };
    expect(oom).toEqual({
      heading: 'Out of memory, as recorded',
      items: 1,
      captions: [
        'at the failing request (entry 11), recorded settings',
        'the same moment under expandable_segments:True, the request served',
      ],
      scale: expect.stringMatching(/^both to one scale: 1 pixel = /),
    });
    const figures = (await tab.evaluate(FIGURES)) as Figures;
    // The caching row's layout at the peak, then the two at the error.
    expect(figures.layouts).toHaveLength(3);
    for (const canvas of figures.layouts) expect(canvas.inked).toBeGreaterThan(100);
    expect(problems).toEqual([]);
    expect(requests).toEqual([]);
    await tab.close();
  });

  const TRAIN = '/work/shared/traces/pytorch-h100/train-default.pickle.gz';
  describe.skipIf(!existsSync(TRAIN))('the active-memory timeline of a training snapshot', () => {
    let page = '';
    beforeAll(async () => {
      const dir = mkdtempSync(join(tmpdir(), 'allot-lab-timeline-'));
      const status = await lab(['replay', TRAIN, '--allocators', 'caching', '--quiet'], {
        stdout: new Sink(),
        stderr: new Sink(),
        cwd: dir,
      });
      expect(status).toBe(0);
      page = join(dir, 'lab-report', 'index.html');
    });
    type Range = { from: number; to: number; first: number; last: number };
    const range = (tab: Page) =>
      tab.evaluate('window.labReport.timelines[0].range()') as Promise<Range>;

    it('draws thousands of allocations, zooms to a dragged range, pans, and resets', async () => {
      const { tab, problems } = await open(context, page);
      const drawn = (await tab.evaluate('window.labReport.timelines[0].drawn')) as number;
      expect(drawn).toBeGreaterThanOrEqual(1000);
      await tab.locator('.timeline canvas').first().scrollIntoViewIfNeeded();
      const box = (await tab.locator('.timeline canvas').first().boundingBox())!;
      const whole = await range(tab);
      // Drag across the middle of the plot (84 px of axis on the left).
      const plotLeft = box.x + 84;
      const plotWidth = box.width - 96;
      await tab.mouse.move(plotLeft + plotWidth * 0.4, box.y + 150);
      await tab.mouse.down();
      await tab.mouse.move(plotLeft + plotWidth * 0.5, box.y + 150, { steps: 4 });
      await tab.mouse.move(plotLeft + plotWidth * 0.6, box.y + 150, { steps: 4 });
      await tab.mouse.up();
      const zoomed = await range(tab);
      const span = whole.to - whole.from;
      expect(zoomed.from).toBeCloseTo(whole.from + span * 0.4, 1);
      expect(zoomed.to).toBeCloseTo(whole.from + span * 0.6, 1);
      // Drag the strip's window to the right: the same width, later.
      const strip = (await tab.locator('.timeline canvas.timeline-overview').boundingBox())!;
      const middle = plotLeft + plotWidth * 0.5;
      await tab.mouse.move(middle, strip.y + strip.height / 2);
      await tab.mouse.down();
      await tab.mouse.move(middle + plotWidth * 0.1, strip.y + strip.height / 2, { steps: 4 });
      await tab.mouse.up();
      const panned = await range(tab);
      expect(panned.to - panned.from).toBeCloseTo(zoomed.to - zoomed.from, 6);
      expect(panned.from).toBeCloseTo(zoomed.from + span * 0.1, 1);
      // A double-click shows the whole run again.
      await tab.mouse.dblclick(plotLeft + plotWidth * 0.5, box.y + 150);
      expect(await range(tab)).toEqual(whole);
      expect(problems).toEqual([]);
      await tab.close();
    });

    it('pins the tooltip on a click: it stays when the mouse leaves, until Escape', async () => {
      const { tab, problems } = await open(context, page);
      const visible = () =>
        tab.evaluate(
          `(() => { const t = document.getElementById('lab-tooltip'); return t.style.display === 'none' ? '' : t.innerText; })()`,
        ) as Promise<string>;
      const id = (await tab.evaluate(
        `(() => { const d = JSON.parse(document.getElementById('lab-data').textContent);
          const all = d.workloads[0].explain.timeline.allocations;
          return all.reduce((a, b) => (b.size * (b.to - b.from) > a.size * (a.to - a.from) ? b : a)).id; })()`,
      )) as number;
      const where = (await tab.evaluate(`window.labReport.timelines[0].locate(${id})`)) as {
        x: number;
        y: number;
      };
      const text = await hoverAt(tab, where.x, where.y);
      expect(text).toMatch(new RegExp(`block ${id}`));
      await tab.mouse.down();
      await tab.mouse.up();
      await tab.mouse.move(2, 2);
      expect(await visible()).toMatch(new RegExp(`block ${id}`));
      await tab.keyboard.press('Escape');
      expect(await visible()).toBe('');
      expect(problems).toEqual([]);
      await tab.close();
    });
  });

  describe('of a PyTorch snapshot with a starting state, at 1280 and 390 px', () => {
    const CONFIG = 'roundup_power2_divisions:8,expandable_segments:True';
    let page = '';
    beforeAll(async () => {
      const dir = mkdtempSync(join(tmpdir(), 'allot-lab-start-'));
      writeFileSync(
        join(dir, 'weights.json'),
        JSON.stringify(snapshotWithFrames({ startingState: true })),
      );
      const status = await lab(['replay', 'weights.json', '--config', CONFIG, '--quiet'], {
        stdout: new Sink(),
        stderr: new Sink(),
        cwd: dir,
      });
      expect(status).toBe(0);
      page = join(dir, 'lab-report', 'index.html');
    });

    it('highlights the best of the rows PyTorch can use, and says so', async () => {
      const { tab, problems } = await open(context, page);
      const best = (await tab.evaluate(
        `[...document.querySelectorAll('tr.best th')].map((th) => th.textContent)`,
      )) as string[];
      expect(best.length).toBeGreaterThan(0);
      for (const name of best) expect(name).toMatch(/^caching/);
      const legend = (await tab.evaluate(
        `document.querySelector('#workload-0 .table-note').textContent`,
      )) as string;
      expect(legend).toMatch(/only the caching rows/);
      expect(problems).toEqual([]);
      await tab.close();
    });

    it('draws every line in its own colour, PyTorch alone in red', async () => {
      const { tab } = await open(context, page);
      const markers = (await tab.evaluate(`[...document.querySelectorAll(
        '.chart-memory .u-legend .u-series')].slice(1).map((s) => [
        s.querySelector('.u-label').textContent,
        getComputedStyle(s.querySelector('.u-marker')).borderColor])`)) as [string, string][];
      expect(markers.length).toBeGreaterThan(8);
      // Red and pink: a saturated colour whose hue lies within 20° of red.
      const reddish = ([, color]: [string, string]) => {
        const [r, g, b] = color.match(/\d+/g)!.map(Number) as [number, number, number];
        const spread = r - Math.min(g, b);
        if (r < Math.max(g, b) || spread < 60) return false;
        const hue = (((g - b) / spread) * 60 + 360) % 360;
        return hue < 20 || hue > 340;
      };
      const distinct = (lines: [string, string][]) => new Set(lines.map(([, c]) => c)).size;
      const solid = markers.filter(([label]) => !/\(= /.test(label));
      expect(distinct(solid)).toBe(solid.length);
      expect(markers.filter(reddish).map(([label]) => label)).toEqual([
        'PyTorch reserved (recorded)',
      ]);
      await tab.close();
    });

    it('ticks byte axes at 0 and powers of two', async () => {
      const { tab } = await open(context, page);
      const ticks = (await tab.evaluate(
        `[...window.labReport.charts.flatMap((c) => [c.memory]), ...window.labReport.timelines]
          .map((c) => c.byteTicks)`,
      )) as number[][];
      expect(ticks).toHaveLength(2);
      for (const values of ticks) {
        expect(values.length).toBeGreaterThanOrEqual(3);
        for (const v of values) expect(v === 0 || Math.log2(v) % 1 === 0, `${v}`).toBe(true);
      }
      await tab.close();
    });

    it('explains the segments the layouts show beyond the table’s', async () => {
      const { tab } = await open(context, page);
      const captions = (await tab.evaluate(
        `[...document.querySelectorAll('#workload-0 figure.layout figcaption')].map((c) => c.textContent)`,
      )) as string[];
      const caching = captions.find((c) => c.startsWith('caching '))!;
      // The table counts the 3 segments allocated in the window; the layout adds the restored one.
      expect(caching).toMatch(/3 segments at the peak/);
      expect(caching).toMatch(/1 from the starting state/);
      expect(caching).toMatch(/the table counts the 3 allocated in the window/);
      await tab.close();
    });

    for (const width of [1280, 390]) {
      it(`cuts nothing off at ${width} px: no page wider than the window, no text clipped`, async () => {
        const tab = await context.newPage();
        await tab.setViewportSize({ width, height: 844 });
        await tab.goto(pathToFileURL(page).href);
        await tab.waitForSelector('body[data-rendered="true"]', { timeout: 15_000 });
        const found = (await tab.evaluate(`(() => {
          const width = document.documentElement.clientWidth;
          const scrolls = (el) => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
          const inScroller = (el) => { for (let p = el.parentElement; p; p = p.parentElement) if (scrolls(p)) return true; return false; };
          const out = [];
          for (const el of document.querySelectorAll('body *')) {
            if (el.id === 'lab-tooltip' || el.closest('script, style') || inScroller(el)) continue;
            const rect = el.getBoundingClientRect();
            if (rect.width === 0) continue;
            const name = el.tagName + '.' + el.className + ' ' + (el.textContent || '').slice(0, 40);
            if (rect.right > width + 1) out.push('past the window: ' + name);
            const clips = getComputedStyle(el).overflowX !== 'visible' && !scrolls(el);
            if (clips && el.textContent.trim() !== '' && el.scrollWidth > el.clientWidth + 1) out.push('clipped: ' + name);
          }
          return { scrollWidth: document.documentElement.scrollWidth, width, out };
        })()`)) as { scrollWidth: number; width: number; out: string[] };
        expect(found.out).toEqual([]);
        expect(found.scrollWidth).toBeLessThanOrEqual(found.width);
        await tab.close();
      });
    }
  });
});
