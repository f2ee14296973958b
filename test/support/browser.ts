import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';

/** Where Debian's `chromium` package puts the browser; `$CHROMIUM_BIN` to use another. */
export const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';

/** The flags of a quiet, headless, offline-friendly Chromium in a container (no sandbox: it runs as root in CI). */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** A headless Chromium with a fresh profile, and the errors its pages logged. */
export interface TestBrowser {
  context: BrowserContext;
  /** Console errors and uncaught page errors of every page opened so far. */
  errors: string[];
  /** A new page whose console errors and page errors are collected. */
  page(): Promise<Page>;
  close(): Promise<void>;
}

/**
 * Starts Debian's Chromium through playwright-core (which cannot download a browser here), with a fresh
 * `--user-data-dir` removed at `close()`. Fails with how to install it when it is missing: a browser test
 * never skips.
 */
export async function startBrowser(options: { httpCredentials?: { username: string; password: string } } = {}): Promise<TestBrowser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`No Chromium at ${CHROMIUM}: the console's browser tests need one. Install Debian's package (apt-get install -y chromium; .ci/run does it) or set CHROMIUM_BIN.`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'deferred-work-chromium-'));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    httpCredentials: options.httpCredentials,
    viewport: { width: 1360, height: 900 },
  });
  const errors: string[] = [];
  return {
    context,
    errors,
    async page() {
      const page = await context.newPage();
      page.on('console', (message) => {
        if (message.type() === 'error') errors.push(`${page.url()}: ${message.text()}`);
      });
      page.on('pageerror', (error) => errors.push(`${page.url()}: ${error.message}`));
      page.on('dialog', (dialog) => void dialog.accept());
      return page;
    },
    async close() {
      await context.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
