/**
 * The web app's browser tests' tools: `allot-lab serve` from the built CLI, a tab that records
 * what the console says, and the predicted peak once a replay has finished.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';

/** The lab's command line, built. */
export const cli = join(import.meta.dirname, '..', '..', 'lab', 'bin', 'allot-lab.js');

/** `allot-lab serve FILES...` on a free port: the process and the URL it prints. */
export function serve(...files: string[]): Promise<{ child: ChildProcess; url: string }> {
  return serveWith(files);
}

/** `allot-lab serve ARGS...`: the process and the URL it prints. */
export async function serveWith(
  args: readonly string[],
): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [cli, 'serve', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let text = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const found = /http:\/\/127\.0\.0\.1:\d+\/\S*/.exec(text);
      if (found) resolve(found[0]);
    });
    child.stderr!.on('data', (chunk: Buffer) => reject(new Error(chunk.toString())));
    child.on('exit', (code) => reject(new Error(`allot-lab serve exited with ${code}`)));
  });
  return { child, url };
}

/**
 * A tab that records console problems (the context blocks and counts requests elsewhere), `width`
 * CSS pixels wide (a phone's height at 390, else the context's).
 */
export async function tab(
  context: BrowserContext,
  problems: string[],
  width?: number,
): Promise<Page> {
  const page = await context.newPage();
  if (width !== undefined) await page.setViewportSize({ width, height: width < 600 ? 844 : 900 });
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning')
      problems.push(`${message.type()}: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return page;
}

export const peak = '[data-testid="predicted-peak"]';

/** Waits for a finished replay (whose what-if is `config`, if given); returns the predicted bytes. */
export async function predicted(page: Page, config?: string): Promise<number> {
  const setting = config === undefined ? '' : `[data-config="${config}"]`;
  const ready = page.locator(`${peak}[data-state="ready"]${setting}`).first();
  await ready.waitFor({ timeout: 60_000 });
  return Number(await ready.getAttribute('data-bytes'));
}

/** Lets `context` reach `origin` (and blob, data and file URLs) only: any other request is blocked and listed in `blocked`. */
export async function onlyFrom(
  context: BrowserContext,
  origin: string,
  blocked: string[],
): Promise<void> {
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(`${origin}/`) || /^(blob|data|file):/.test(url)) return route.continue();
    blocked.push(url);
    return route.abort('blockedbyclient');
  });
}
