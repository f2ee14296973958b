import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';

let dir: string | undefined;

/**
 * Where the console's screenshots go: `$DW_CONSOLE_SCREENSHOTS` (`pnpm docs:screenshots` sets it to
 * docs/images), else a temporary folder, so that a test run leaves the tree clean.
 */
export function screenshotDir(): string {
  if (dir) return dir;
  const wanted = process.env.DW_CONSOLE_SCREENSHOTS;
  if (wanted) mkdirSync((dir = resolve(wanted)), { recursive: true });
  else dir = mkdtempSync(join(tmpdir(), 'deferred-work-console-'));
  return dir;
}

/** Saves `docs/images/console-<name>.png` (or its temporary twin) of the page, and returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  const path = join(screenshotDir(), `console-${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
