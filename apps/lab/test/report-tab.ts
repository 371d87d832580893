/**
 * A generated report opened in a tab of headless Chromium, for the report's browser tests: the
 * tab, the console problems it logged and the requests it made off the file system.
 */
import { Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import type { BrowserContext, Page } from 'playwright-core';

/** A stream that drops what is written to it: the lab's output, unread. */
export class Sink extends Writable {
  override _write(_chunk: Buffer, _encoding: string, done: () => void): void {
    done();
  }
}

/**
 * A tab on `page`, `width` px wide if given, that collects console problems and requests off the
 * file system.
 */
export async function open(
  context: BrowserContext,
  page: string,
  width?: number,
): Promise<{ tab: Page; problems: string[]; requests: string[] }> {
  const tab = await context.newPage();
  if (width !== undefined) await tab.setViewportSize({ width, height: 844 });
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
  return { tab, problems, requests };
}
