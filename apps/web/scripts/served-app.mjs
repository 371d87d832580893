/**
 * The app as the scripts measure it: `allot-lab serve` from the built CLI on a free port, and a
 * headless Chromium (CHROMIUM_PATH, default /usr/bin/chromium). Close both with `close()`.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

/** The server's URL, the browser, and `close()` for both. */
export async function servedApp() {
  const cli = join(import.meta.dirname, '..', '..', 'lab', 'bin', 'allot-lab.js');
  const server = spawn(process.execPath, [cli, 'serve'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise((resolve) => {
    server.stdout.on('data', (chunk) => {
      const found = /http:\S+/.exec(String(chunk));
      if (found) resolve(found[0]);
    });
  });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu'],
  });
  return {
    url,
    browser,
    close: async () => {
      await browser.close();
      server.kill();
    },
  };
}
