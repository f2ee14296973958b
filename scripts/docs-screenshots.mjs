#!/usr/bin/env node
// Takes the console's screenshots for docs/console.md (docs/images/console-*.png): runs the console's
// browser tests on Express (a real app, a private Redis, Debian's Chromium) with DW_CONSOLE_SCREENSHOTS
// pointing at docs/images. The same tests in CI write them to a temporary folder instead.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const result = spawnSync(
  process.execPath,
  ['--experimental-vm-modules', '--no-warnings=ExperimentalWarning', 'node_modules/jest/bin/jest.js', 'test/browser/', '-t', 'on express'],
  { cwd: root, stdio: 'inherit', env: { ...process.env, DW_CONSOLE_SCREENSHOTS: join(root, 'docs', 'images') } },
);
if (result.status !== 0) {
  console.error('docs:screenshots: the browser tests failed, so docs/images may be incomplete (they need redis-server and Chromium: apt-get install -y redis-server chromium).');
  process.exit(result.status ?? 1);
}
console.log('docs:screenshots: wrote docs/images/console-*.png');
