import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
// @ts-expect-error -- a plain ES module script without type declarations
import { between, expectedReadmes } from '../../scripts/docs-index.mjs';

const root = join(import.meta.dirname, '..', '..');
const read = (file: string) => readFileSync(join(root, file), 'utf8');

function pages(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? pages(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : [],
  );
}

describe('one documentation index', () => {
  it('the repository README and the package README (the npm page) show the index of docs/README.md', () => {
    const expected = expectedReadmes() as Record<string, string>;
    for (const [file, text] of Object.entries(expected)) {
      // On a difference: run `pnpm docs:index` and commit the result.
      expect({ file, text: read(file) }).toEqual({ file, text });
    }
  });

  it('every page under docs/ is in the index', () => {
    const index = between(read('docs/README.md'), 'docs-index', 'docs/README.md').inner as string;
    const linked = new Set([...index.matchAll(/\]\(([^)#\s]+)/g)].map((m) => join('docs', m[1])));
    const missing = pages('docs').filter((p) => p !== join('docs', 'README.md') && !linked.has(p));
    expect(missing.map((p) => relative(root, join(root, p)))).toEqual([]);
  });

  it('the npm page links only to absolute addresses (npm does not resolve relative links)', () => {
    const text = read('packages/nestjs-deferred-work/README.md').replace(/^```[\s\S]*?^```/gm, '');
    const relativeLinks = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]).filter((t) => !/^(https?:|#)/.test(t));
    expect(relativeLinks).toEqual([]);
  });

  it("the README's first screen installs and uses the package in under 20 lines", () => {
    const firstScreen = between(read('README.md'), 'npm-page', 'README.md').inner as string;
    const install = /```bash\n([\s\S]*?)```/.exec(firstScreen)![1].trim().split('\n');
    const use = /## Use\n\n```ts\n([\s\S]*?)```/.exec(firstScreen)![1].trim().split('\n');
    expect(install).toEqual(['npm install nestjs-deferred-work']);
    expect(install.length + use.length).toBeLessThan(20);
  });
});
