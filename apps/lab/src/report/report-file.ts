/**
 * The lab's page files as `allot-lab` writes them, each one file that opens from disk with no
 * network access: the report of a run, and a job's page (`job/report.ts`).
 *
 * ```
 *  <style> uPlot's style and the report's (ui/report.css) </style>
 *  <main id="report" data-page="report | job"></main>
 *  <script type="application/json" id="lab-data"> the page data (page.ts, or a job's) </script>
 *  <script> the client modules and uPlot, one IIFE (ui/standalone.ts) </script>
 * ```
 *
 * The lab's build bundles the script and the style into `dist/client/`, read from there: beside
 * the built command line (`dist/cli.js`, `dist/job-worker.js`), or under the package when the
 * source runs (the tests).
 */
import { closeSync, existsSync, openSync, readFileSync, writeSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { LabResults } from '../run';
import { reportData } from './page';

let assets: { script: string; style: string } | null = null;

/** A file of the report's client bundle (see the module comment). */
function clientFile(name: string): string {
  for (const folder of ['./client/', '../../dist/client/']) {
    const path = fileURLToPath(new URL(folder + name, import.meta.url));
    if (existsSync(path)) return readFileSync(path, 'utf8');
  }
  throw new Error(`the report's ${name} is not built: run \`pnpm build\``);
}

/** The report's script and style, as the lab's build bundled them. */
function clientAssets(): { script: string; style: string } {
  assets ??= { script: clientFile('report-client.js'), style: clientFile('report-client.css') };
  return assets;
}

/** JSON safe inside a `<script>` element. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value).replaceAll('<', '\\u003c').replaceAll('\u2028', '\\u2028');
}

/** Which page a file is: the script draws its data as the one or the other. */
export type PageKind = 'report' | 'job';

/**
 * A page file in parts, in order: a writer writes them one after the other without joining a
 * page of megabytes into one string (and that string into one buffer).
 */
export function pageParts(page: PageKind, data: unknown): string[] {
  const { script, style } = clientAssets();
  return [
    `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>allot lab ${page}</title>
<style>${style}</style>
</head>
<body>
<main id="report" data-page="${page}"><noscript>This page is drawn by its script: open it with JavaScript on.</noscript></main>
<script type="application/json" id="lab-data">`,
    scriptJson(data),
    `</script>\n<script>${script}</script>\n</body>\n</html>\n`,
  ];
}

/** The report page of `results`, in parts (see {@link pageParts}). */
export function reportParts(results: LabResults): string[] {
  return pageParts('report', reportData(results));
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

/** Writes the report of `results` to `path` (see the module comment). */
export function writeReportFile(path: string, results: LabResults): void {
  writeParts(path, reportParts(results));
}
