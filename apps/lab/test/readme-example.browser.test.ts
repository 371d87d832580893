/**
 * The README's hybrid allocator ("Composing a hybrid") in a browser: the block is bundled with
 * esbuild for the browser (everything bundled, no stub or alias for Node.js modules, so a package
 * that imports one fails the build), served from a loopback HTTP server and run in headless
 * Chromium. What it prints there must be what the same bundle prints under Node.js, with no page
 * error and no request beyond the server. Skipped, with a message, where no Chromium exists.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumOrSkip, launchChromium } from './chromium';

const hasChromium = chromiumOrSkip('README example browser test');

const lab = join(import.meta.dirname, '..');
const readme = readFileSync(join(lab, '..', '..', 'README.md'), 'utf8');
const MARK = 'readme-example:';

/** The README's marked composition block, as written. */
function compositionExample(): string {
  const block =
    /<!-- example:composition -->\n```ts\n([\s\S]*?)```\n<!-- \/example:composition -->/.exec(
      readme,
    );
  if (!block) throw new Error('README.md has no <!-- example:composition --> block');
  return block[1]!;
}

/**
 * `code` (TypeScript) bundled for a browser, resolved from this package's dependencies as a
 * browser bundler resolves them (the `browser` and `import` conditions). Rejects with esbuild's
 * errors, "Could not resolve" for a Node.js module among them.
 */
async function bundleForBrowser(code: string): Promise<string> {
  const result = await build({
    stdin: { contents: code, loader: 'ts', resolveDir: lab, sourcefile: 'readme-example.ts' },
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    write: false,
    logLevel: 'silent',
  });
  return result.outputFiles[0]!.text;
}

/**
 * The README example bundled for a browser, printing what `demo()` returns, and what that bundle
 * prints under Node.js (once per file: both tests use it).
 */
const example = (async () => {
  // The example defines makeHeap() and demo(); the bundle prints what demo() returns.
  const code = `${compositionExample()}\nconsole.log(${JSON.stringify(MARK)} + demo());\n`;
  const bundle = await bundleForBrowser(code);
  const file = join(mkdtempSync(join(tmpdir(), 'allot-readme-example-')), 'example.mjs');
  writeFileSync(file, bundle);
  const { stdout } = await promisify(execFile)(process.execPath, [file]);
  return { bundle, printed: stdout.trimEnd() };
})();
// Awaited by the tests; a failure here is reported by them, not as an unhandled rejection.
example.catch(() => undefined);

/** A loopback server of `files` (path → [content type, body]); anything else is a 404. */
async function serve(
  files: Record<string, [string, string]>,
): Promise<{ server: Server; origin: string; served: string[] }> {
  const served: string[] = [];
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://127.0.0.1').pathname;
    served.push(path);
    const file = files[path];
    response.writeHead(file ? 200 : 404, {
      'content-type': file ? file[0] : 'text/plain',
      'cache-control': 'no-store',
    });
    response.end(file ? file[1] : 'not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, origin: `http://127.0.0.1:${port}`, served };
}

describe('the README hybrid example bundled for a browser', () => {
  it('fails to build when a package imports a Node.js module (no stubs)', async () => {
    // @allot/stats/serve is the metrics server over node:http: the same build refuses it.
    const failure = await bundleForBrowser(
      "import { serveMetrics } from '@allot/stats/serve';\nconsole.log(serveMetrics);\n",
    ).then(
      () => null,
      (error: { errors?: { text: string }[] }) => (error.errors ?? []).map((e) => e.text),
    );
    expect(failure).not.toBeNull();
    expect(failure!.join('\n')).toMatch(/Could not resolve "(node:)?http"/);
  });

  it('builds with nothing external and no stub, and the bundle runs under Node.js', async () => {
    const { bundle, printed } = await example;
    expect(bundle).not.toMatch(/\bfrom\s*["'](node:)?[a-z_]+["']/); // no import left unbundled
    expect(printed.startsWith(MARK)).toBe(true);
    expect(printed).toMatch(/Allocated memory/);
    // 1000 slab objects and one 6 MiB best-fit block were live at the peak, and all were freed.
    expect(printed).toMatch(/\| Allocations +\| +0 +\| +1001 +\| +1001 +\| +1001 +\|/);
  });

  describe.skipIf(!hasChromium)('in headless Chromium', () => {
    let context: BrowserContext;
    let server: Server | undefined;
    beforeAll(async () => {
      context = await launchChromium();
    });
    afterAll(async () => {
      await context?.close();
      server?.close();
    });

    it('prints what the bundle prints under Node.js, with no page error and no request off 127.0.0.1', async () => {
      // The same bundle under Node.js says what the page must print.
      const { bundle, printed: expected } = await example;
      const page = [
        '<!doctype html>',
        '<meta charset="utf-8">',
        '<link rel="icon" href="data:,">',
        '<title>allot README example</title>',
        '<script type="module" src="/example.js"></script>',
      ].join('\n');
      const site = await serve({
        '/': ['text/html; charset=utf-8', page],
        '/example.js': ['text/javascript; charset=utf-8', bundle],
      });
      server = site.server;

      const blocked: string[] = [];
      await context.route('**/*', (route) => {
        const url = route.request().url();
        if (new URL(url).origin === site.origin) return route.continue();
        blocked.push(url);
        return route.abort('blockedbyclient');
      });
      const tab = await context.newPage();
      const problems: string[] = [];
      const printed: string[] = [];
      tab.on('console', (message) => {
        if (message.type() === 'error' || message.type() === 'warning')
          problems.push(`${message.type()}: ${message.text()}`);
        else printed.push(message.text());
      });
      tab.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      const done = tab.waitForEvent('console', {
        predicate: (message) => message.text().startsWith(MARK),
        timeout: 15_000,
      });
      await tab.goto(`${site.origin}/`);
      await done;
      await tab.close();

      expect(problems).toEqual([]);
      expect(printed).toEqual([expected]);
      expect(site.served).toEqual(['/', '/example.js']);
      expect(blocked).toEqual([]);
    });
  });
});
