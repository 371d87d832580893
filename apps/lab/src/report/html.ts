/**
 * The HTML report as `allot-lab` writes it: the page of `page.ts` with uPlot's IIFE build and its
 * CSS read from the installed `uplot` package and inlined.
 */
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { LabResults } from '../run';
import { renderReportWith, reportParts } from './page';

export { identicalRows, pageData } from './page';

let assets: { script: string; style: string } | null = null;

/** uPlot's script and style, from the installed package. */
export function uplotAssets(): { script: string; style: string } {
  if (!assets) {
    const require = createRequire(import.meta.url);
    assets = {
      script: readFileSync(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8'),
      style: readFileSync(require.resolve('uplot/dist/uPlot.min.css'), 'utf8'),
    };
  }
  return assets;
}

/** The report page. */
export function renderReport(results: LabResults): string {
  return renderReportWith(results, uplotAssets());
}

/**
 * Writes the report page to `path` part by part: a big snapshot's page holds megabytes of data,
 * which the writer then never holds twice more (as one joined string and as its bytes).
 */
export function writeReportFile(path: string, results: LabResults): void {
  writeParts(path, reportParts(results, uplotAssets()));
}

/** Writes `parts` to `path`, one after the other. */
export function writeParts(path: string, parts: readonly string[]): void {
  const fd = openSync(path, 'w');
  try {
    for (const part of parts) writeSync(fd, part);
  } finally {
    closeSync(fd);
  }
}
