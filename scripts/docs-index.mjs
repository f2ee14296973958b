#!/usr/bin/env node
// Writes the documentation index of docs/README.md (between its docs-index markers) into README.md
// (links relative to the repository root) and into the package's README, the npm page (links made
// absolute to the repository on GitHub, since npm does not resolve relative links). The package's
// README is the root README's first screen (between the npm-page markers) followed by that index.
//
// For maintainers: docs/README.md's index is the one list of the documentation, grouped for readers
// (tutorial, how-to guides, reference, explanation). Edit it there, never in the two READMEs, then run
// `pnpm docs:index` and commit the three files. The test suite (test/docs/docs-index.spec.ts) fails
// when either README differs from what this script would write, when a page under docs/ (the
// troubleshooting pages included) is missing from the index, or when the npm page has a relative
// link; test/docs/links-and-dates.spec.ts checks that every relative link and anchor resolves, and
// test/docs/docs.spec.ts compiles every TypeScript snippet of the pages. None of this belongs on the
// pages themselves: they are for the library's users.
//
//   node scripts/docs-index.mjs           write both READMEs
//   node scripts/docs-index.mjs --check   exit 1 and name the file if one is not up to date
//   node scripts/docs-index.mjs --published
//                                         also drop the "not on npm yet" note (the release step)
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const PKG_README = 'packages/nestjs-deferred-work/README.md';
const { repository } = JSON.parse(readFileSync(join(ROOT, 'packages/nestjs-deferred-work/package.json'), 'utf8'));
const REPO_URL = repository.url.replace(/^git\+/, '').replace(/\.git$/, '');
const BLOB = `${REPO_URL}/blob/main/`;

/** The text between `<!-- name:start -->` and `<!-- name:end -->` in `text`. */
export function between(text, name, file) {
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  const a = text.indexOf(start);
  const b = text.indexOf(end);
  if (a < 0 || b < a) throw new Error(`${file} has no "${start}" … "${end}" block: put the markers back around that part.`);
  return { before: text.slice(0, a + start.length), inner: text.slice(a + start.length, b), after: text.slice(b) };
}

/** Rewrites the relative links of markdown written in `fromDir` (repo-relative) for `toDir`, or as absolute GitHub URLs. */
export function relink(markdown, fromDir, toDir) {
  return markdown.replace(/\]\(([^)\s]+)\)/g, (whole, target) => {
    if (/^[a-z]+:/i.test(target)) return whole;
    // A heading of the page itself (the repository README, docs/README.md): on the npm page, on GitHub.
    if (target.startsWith('#')) return toDir === null ? `](${fromDir ? `${BLOB}${fromDir}/README.md` : REPO_URL}${target})` : whole;
    const repoPath = posix.normalize(posix.join(fromDir, target));
    if (toDir === null) return `](${BLOB}${repoPath})`;
    const rel = posix.relative(toDir, repoPath.split('#')[0]) || '.';
    const hash = target.includes('#') ? target.slice(target.indexOf('#')) : '';
    return `](${rel}${hash})`;
  });
}

/** What the two READMEs should hold, given the current files. */
export function expectedReadmes({ published = false } = {}) {
  const docsIndex = between(readFileSync(join(ROOT, 'docs/README.md'), 'utf8'), 'docs-index', 'docs/README.md').inner;
  let readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  if (published) {
    const note = between(readme, 'not-on-npm-yet', 'README.md');
    readme = `${note.before}\n${note.after}`;
  }
  const idx = between(readme, 'docs-index', 'README.md');
  readme = `${idx.before}${relink(docsIndex, 'docs', '')}${idx.after}`;
  const firstScreen = between(readme, 'npm-page', 'README.md').inner.trim();
  const pkg = [
    '<!-- Written by scripts/docs-index.mjs from the repository README and docs/README.md: edit those, then run `pnpm docs:index`. -->',
    '',
    '# nestjs-deferred-work',
    '',
    relink(firstScreen, '', null).replace(/<!-- [\w-]+:(start|end) -->\n?/g, ''),
    '',
    '## Documentation',
    relink(docsIndex, 'docs', null),
  ].join('\n');
  return { 'README.md': readme, [PKG_README]: pkg.replace(/\n{3,}/g, '\n\n') };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes('--check');
  const expected = expectedReadmes({ published: process.argv.includes('--published') });
  let stale = 0;
  for (const [file, text] of Object.entries(expected)) {
    const current = readFileSync(join(ROOT, file), 'utf8');
    if (current === text) continue;
    if (check) {
      console.error(`${file} is not up to date with docs/README.md: run "pnpm docs:index" and commit the result.`);
      stale++;
    } else {
      writeFileSync(join(ROOT, file), text);
      console.log(`wrote ${relative(ROOT, join(ROOT, file))}`);
    }
  }
  process.exitCode = stale ? 1 : 0;
}
