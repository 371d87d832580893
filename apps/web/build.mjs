#!/usr/bin/env node
/**
 * Builds the web app into dist/, a static folder that works from file:// and from any static host:
 *
 * ```
 *  src/worker.ts ─► esbuild (IIFE, everything bundled) ─► text ─┐
 *  src/main.ts ───► esbuild (IIFE), the worker's text inside ◄──┘ ─► dist/app.js
 *  src/index.html (+ the content security policy) ─► dist/index.html
 *  src/style.css and src/live.css, then the report's (the lab's dist/client/report-client.css:
 *  uPlot's and the lab's) ─► dist/app.css
 * ```
 *
 * The worker travels inside app.js and starts from a blob: a page opened from file:// may not load
 * a worker script from a file. Nothing is left to fetch at run time: no CDN, font or script.
 *
 * The page draws the report with the lab's own client modules (`@allot/lab/ui`, uPlot bundled from
 * the `uplot` package); the worker makes its data (`@allot/lab/report`). Neither needs a Node.js
 * module: any Node.js module anywhere fails the build (esbuild's "Could not resolve").
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { build } from 'esbuild';

const here = import.meta.dirname;
const out = join(here, 'dist');

/**
 * What the page may load and connect to (serve.ts in the lab sends the same as a header): nothing
 * beyond where it came from, no inline script or style. `'unsafe-eval'`: the lab compiles a
 * replay loop per row.
 */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self' 'unsafe-eval' blob:; worker-src blob:; " +
  "style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'";

const common = {
  bundle: true,
  platform: 'browser',
  format: 'iife',
  target: 'es2022',
  minify: true,
  legalComments: 'none',
  write: false,
  logLevel: 'warning',
  // tsup keeps `import '@allot/stats'` for modules whose imports were all types: nothing to run.
  logOverride: { 'ignored-bare-import': 'silent' },
  define: { 'import.meta.url': '"about:blank"' },
};

const worker = await build({
  ...common,
  entryPoints: [join(here, 'src', 'worker.ts')],
});
const workerText = worker.outputFiles[0].text;

const page = await build({
  ...common,
  entryPoints: [join(here, 'src', 'main.ts')],
  plugins: [
    {
      name: 'worker-source',
      setup(build) {
        build.onResolve({ filter: /^virtual:worker$/ }, () => ({
          path: 'worker',
          namespace: 'virtual',
        }));
        build.onLoad({ filter: /.*/, namespace: 'virtual' }, () => ({
          loader: 'js',
          contents: `export default ${JSON.stringify(workerText)};`,
        }));
      },
    },
  ],
});

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
writeFileSync(join(out, 'app.js'), page.outputFiles[0].text);
const lab = dirname(createRequire(import.meta.url).resolve('@allot/lab/package.json'));
const reportStyle = join(lab, 'dist', 'client', 'report-client.css');
writeFileSync(
  join(out, 'app.css'),
  [join(here, 'src', 'style.css'), join(here, 'src', 'live.css'), reportStyle]
    .map((file) => readFileSync(file, 'utf8'))
    .join('\n'),
);
writeFileSync(
  join(out, 'index.html'),
  readFileSync(join(here, 'src', 'index.html'), 'utf8').replace('%CSP%', CONTENT_SECURITY_POLICY),
);
const kib = (bytes) => `${(bytes / 1024).toFixed(0)} KiB`;
console.log(
  `dist/: index.html, app.js ${kib(page.outputFiles[0].contents.length)} (worker ${kib(worker.outputFiles[0].contents.length)} inside), app.css`,
);
