import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * docs/06-testing.md's app files and tests, run as they are written: each ```ts block that starts with
 * `// src/…` or `// test/…` is written under that path in a folder of its own (node_modules linked to
 * the workspace's), and its tests — the unit test with `DeferredHandleDoubles`, the e2e test with
 * `withMemorySinks()` — are loaded into this file and run by Jest here, with the `.js` suffixes of their
 * relative imports mapped away as the page tells a CommonJS app to.
 */
const root = join(import.meta.dirname, '..', '..');
const page = readFileSync(join(root, 'docs/06-testing.md'), 'utf8');
const files = [...page.matchAll(/^```ts\n\/\/ ((?:src|test)\/[\w./-]+\.ts)\n([\s\S]*?)^```/gm)].map((m) => ({ path: m[1], code: `// ${m[1]}\n${m[2]}` }));
const app = mkdtempSync(join(tmpdir(), 'dw-testing-page-'));
symlinkSync(join(root, 'node_modules'), join(app, 'node_modules'), 'dir');
for (const file of files) {
  mkdirSync(dirname(join(app, file.path)), { recursive: true });
  writeFileSync(join(app, file.path), file.code);
}
afterAll(() => rmSync(app, { recursive: true, force: true }));

describe('docs/06-testing.md', () => {
  it('has the app files and both tests', () => {
    expect(files.map((f) => f.path).sort()).toEqual([
      'src/orders/orders.controller.spec.ts',
      'src/orders/orders.controller.ts',
      'src/orders/orders.module.ts',
      'test/orders.e2e-spec.ts',
    ]);
  });
});

// The page's tests register their `describe` blocks as they load.
for (const file of files.filter((f) => /[.-]spec\.ts$/.test(f.path))) await import(join(app, file.path));
