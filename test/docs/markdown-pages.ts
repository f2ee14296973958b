/**
 * Reading the user pages (README.md and docs/) as GitHub renders them: their prose without code,
 * their relative links, and the anchors GitHub gives their headings. Used by links-and-dates.spec.ts.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

export const root = join(import.meta.dirname, '..', '..');

/** README.md and every page under docs/ (CHANGELOG.md and the benchmark's results are not user pages). */
export function userPages(): string[] {
  const found = [join(root, 'README.md')];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) found.push(path);
    }
  };
  walk(join(root, 'docs'));
  return found;
}

/** The page with its fenced code blocks blanked out (line numbers kept). */
export function withoutFences(text: string): string {
  return text.replace(/^ {0,3}(```|~~~)[^\n]*\n[\s\S]*?^ {0,3}\1[^\n]*$/gm, (block) => block.replace(/[^\n]/g, ''));
}

/**
 * GitHub's anchor for a heading's text (github-slugger): lowercase, punctuation dropped, spaces to
 * hyphens. HTML tags are dropped, but not in code: `` `<name>` `` is the text `<name>`, whose letters stay.
 */
export function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .split(/(`[^`]*`)/)
    .map((part) => (part.startsWith('`') && part.endsWith('`') && part.length > 1 ? part.slice(1, -1) : part.replace(/<[^>]+>/g, ''))) // code: its text; elsewhere HTML tags dropped
    .join('')
    .replace(/`/g, '');
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

const anchorCache = new Map<string, Set<string>>();

/** The anchors a page offers: its headings' (numbered -1, -2 … when repeated) and its `<a id|name>`s. */
export function anchorsOf(file: string): Set<string> {
  let anchors = anchorCache.get(file);
  if (anchors) return anchors;
  anchors = new Set();
  const seen = new Map<string, number>();
  const text = withoutFences(readFileSync(file, 'utf8'));
  for (const m of text.matchAll(/^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/gm)) {
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of text.matchAll(/<a\s[^>]*?(?:id|name)="([^"]+)"/g)) anchors.add(m[1]);
  anchorCache.set(file, anchors);
  return anchors;
}

/** Every relative link of a page that does not resolve: no such file, or no such anchor in it. */
export function brokenLinks(file: string): string[] {
  const text = withoutFences(readFileSync(file, 'utf8'));
  const targets = [
    ...[...text.matchAll(/\]\(<?([^)\s>]+)>?(?:\s+"[^"]*")?\)/g)].map((m) => m[1]),
    ...[...text.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)].map((m) => m[1]),
  ];
  const broken: string[] = [];
  for (const target of targets) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: …
    const hashAt = target.indexOf('#');
    const path = hashAt < 0 ? target : target.slice(0, hashAt);
    const hash = hashAt < 0 ? undefined : decodeURIComponent(target.slice(hashAt + 1));
    const resolved = path === '' ? file : resolve(dirname(file), decodeURI(path));
    const where = `${relative(root, file)} → ${target}`;
    if (!existsSync(resolved)) broken.push(`${where}: no such file`);
    else if (hash !== undefined && statSync(resolved).isFile() && resolved.endsWith('.md') && !anchorsOf(resolved).has(hash.toLowerCase())) {
      broken.push(`${where}: no heading or anchor "${hash}" in ${relative(root, resolved)}`);
    }
  }
  return broken;
}

const MONTH = 'January|February|March|April|May|June|July|August|September|October|November|December';
const MON = 'Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec';
/** Calendar dates as prose writes them: 2026-11-26, 11/26/2026, 26 November 2026, Nov 26, 2026, November 2026. */
const DATES = new RegExp(
  [
    String.raw`(?<![\w/.-])(?:19|20)\d{2}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])(?![\w])`,
    String.raw`(?<![\w/.])\d{1,2}/\d{1,2}/(?:19|20)\d{2}\b`,
    String.raw`\b\d{1,2}(?:st|nd|rd|th)? (?:${MONTH}|${MON})\.? (?:19|20)\d{2}\b`,
    String.raw`\b(?:${MONTH}|${MON})\.? \d{1,2}(?:st|nd|rd|th)?,? (?:19|20)\d{2}\b`,
    String.raw`\b(?:${MONTH}) (?:19|20)\d{2}\b`,
  ].join('|'),
  'g',
);

/**
 * The dates in a page's prose — headings, paragraphs, lists, tables — as `file:line: date`. Not read:
 * code blocks and inline code (code samples), link addresses (a run folder named by its date, an API
 * version path such as `/2020-01-01/extension`), and HTML tags and comments (anchors kept for old links).
 */
export function datesIn(file: string): string[] {
  return datesInText(readFileSync(file, 'utf8'), relative(root, file));
}

/** {@link datesIn} for a page's text, named `name` in what it returns. */
export function datesInText(text: string, name: string): string[] {
  const lines = withoutFences(text)
    .replace(/<!--[\s\S]*?-->/g, (c) => c.replace(/[^\n]/g, ''))
    .split('\n');
  const found: string[] = [];
  lines.forEach((line, i) => {
    const prose = line
      .replace(/`[^`]*`/g, '')
      .replace(/\]\([^)]*\)/g, ']')
      .replace(/<[^>]+>/g, '')
      .replace(/\bhttps?:\/\/\S+/g, '');
    for (const m of prose.matchAll(DATES)) found.push(`${name}:${i + 1}: ${m[0]}`);
  });
  return found;
}
