import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');
const page = readFileSync(join(root, 'docs/support-matrix.md'), 'utf8');

/** Every file the matrix names as proof: `test/…`, `packages/…` or `.ci/…` paths in backticks (globs left out). */
function namedFiles(): string[] {
  const found = [...page.matchAll(/`((?:test|packages|\.ci)\/[^`\s*]+)`/g)].map((m) => m[1]);
  return [...new Set(found)];
}

describe('docs/support-matrix.md', () => {
  it('names the tests that prove its cells', () => {
    const files = namedFiles();
    expect(files.length).toBeGreaterThanOrEqual(15);
    expect(files.filter((f) => f.endsWith('.spec.ts')).length).toBeGreaterThanOrEqual(10);
  });

  it('every file it names exists', () => {
    expect(namedFiles().filter((file) => !existsSync(join(root, file)))).toEqual([]);
  });

  it('every file pattern it names matches at least one file', () => {
    // `test/conformance/microservices-*.conformance.spec.ts`: the part before the * is a prefix of a file.
    const globs = [...page.matchAll(/`((?:test|packages)\/[^`\s]*\*[^`\s]*)`/g)].map((m) => m[1]);
    for (const glob of globs) {
      const dir = join(root, glob.slice(0, glob.lastIndexOf('/')));
      const [prefix, suffix] = glob.slice(glob.lastIndexOf('/') + 1).split('*');
      const matches = existsSync(dir) ? readdirSync(dir).filter((n) => n.startsWith(prefix) && n.endsWith(suffix)) : [];
      expect([glob, matches.length > 0]).toEqual([glob, true]);
    }
  });
});
