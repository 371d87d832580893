/**
 * Headless Chromium for the browser tests: Debian's `chromium` (CHROMIUM_PATH names another)
 * driven by playwright-core, in a fresh profile, with the browser's own background traffic off.
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, type BrowserContextOptions, chromium } from 'playwright-core';

export const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const hasChromium = existsSync(executablePath);

/** Whether Chromium is here; if not, says that `what` is skipped and why. */
export function chromiumOrSkip(what: string): boolean {
  if (!hasChromium) {
    console.warn(
      `${what} skipped: no Chromium at ${executablePath} (install Debian's chromium, or set CHROMIUM_PATH)`,
    );
  }
  return hasChromium;
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

/**
 * A headless Chromium in a throwaway profile, 1280 × 900 px unless `options` say otherwise (a
 * phone's touch screen, say); close it when done.
 */
export function launchChromium(options: BrowserContextOptions = {}): Promise<BrowserContext> {
  return chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), 'chromium-')), {
    executablePath,
    headless: true,
    args: ARGS,
    viewport: { width: 1280, height: 900 },
    ...options,
  });
}
