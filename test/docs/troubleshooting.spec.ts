import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HOLE, headingPattern, type LibraryMessage, libraryMessages, longestWords, names } from './library-messages';

const root = join(import.meta.dirname, '..', '..');
const src = join(root, 'packages/nestjs-deferred-work/src');
/** The troubleshooting pages: docs/troubleshooting/README.md (how to use them, the index) and one page per area. */
const dir = join(root, 'docs/troubleshooting');
const pages = readdirSync(dir)
  .filter((name) => name.endsWith('.md'))
  .sort()
  .map((name) => ({ name, text: readFileSync(join(dir, name), 'utf8') }));
/** Most lines a page may have: a page longer than that is split by area. */
const MAX_LINES = 600;

/**
 * Messages that never reach the user as they are: placeholders wrapped into a message the page does
 * document (the reason inside "the worker thread of sink … could not start: <why>", "Sink … write
 * failed: <why>"), or guards against the library's own misuse. Each entry is a substring of the
 * message pattern; keep this list short — a message a user can read belongs on the page.
 */
const INTERNAL: ReadonlyArray<readonly [string, string]> = [
  ['shutdown deadline reached', "the abort reason of a write cut at the deadline; the user sees the deadline's log line"],
  ['callback rejected', 'a callback that rejected with undefined; shown as the dead letter of the callback'],
  ['failed', 'a send that failed without an error (kit/isolate, ClientProxySink); wrapped in "write failed"'],
  ['not sent', 'an item cut short by the abort of its write; wrapped in "write failed"'],
  ['cut short before it was confirmed', 'the same, for a partly confirmed write'],
  ['no reply', 'a Redis pipeline entry without a reply; wrapped in "Redis PUBLISH … failed"'],
  [' is not a number SQL stores; give null, or a string', 'SqlSink: a value of row(item); always wrapped in "row(item) gave column …", documented there'],
  ['an invalid Date; give a valid Date, or null', 'the same'],
  [' is not a column value', 'the same'],
  [`not connected after ${HOLE} ms`, 'the broker connection wait; wrapped in "the connection failed before the batch was flushed"'],
  ['not a string', 'an internal signal of the URL check, replaced by "is not an absolute URL"'],
  ['its record builders (RmqRecordBuilder, …) were not found', 'wrapped in "@nestjs/microservices could not be loaded"'],
  [`Spool ${HOLE} is closed`, 'a spool used after its sink shut down; the dispatcher never does'],
  [`Spool segment ${HOLE} is sealed`, 'an internal invariant of the spool'],
  [`the dead-letter store in ${HOLE} is not open`, 'the file store used before open(); the dispatcher opens it when it is built'],
  [`its worker thread did not start within`, 'wrapped in "the worker thread of sink … could not start"'],
  [`its worker thread exited with code`, 'the same'],
  [`it is true but @opentelemetry/api cannot be loaded`, 'wrapped in the "correlation.openTelemetry" bootstrap error'],
  [`${HOLE} is missing, not a class or function`, 'raised in the worker; wrapped in "could not build its sink"'],
  [`${HOLE} is a ${HOLE}, not a class or function`, 'the same'],
  [`did not return a sink (an object with write(batch, context))`, 'the same'],
  [`the row is larger than max_allowed_packet allows`, 'a per-row failure; the statement-level message is documented'],
  // Wrappers whose words are all placeholders: the messages they carry are documented one by one.
  [`${HOLE}: option "${HOLE}" ${HOLE}, got ${HOLE}. ${HOLE}`, "the template of the sinks' option errors; each call is read as its own message"],
  [`${HOLE}: option "${HOLE}" ${HOLE}, got ${HOLE}.`, 'the same'],
  [`${HOLE}: option "${HOLE}" ${HOLE}. ${HOLE}`, 'the same'],
  [`${HOLE}: option "${HOLE}" ${HOLE}.`, 'the same'],
  [`${HOLE}: metrics[${HOLE}].name ${HOLE}: ${HOLE}`, 'a metric name the naming rule refuses; the page documents it under "metrics[<i>].name"'],
  [`${HOLE}: ${HOLE} ${HOLE}`, 'a queue given in "queues" that is the other library\'s ("is a BullMQ queue … use BullMqSink")'],
  [`${HOLE} "${HOLE}": queue "${HOLE}" ${HOLE}`, 'the same, at write time'],
  [`${HOLE}: ${HOLE}.`, "SqlSink's wrapper of the table checks (\"table … does not exist\", …), each documented"],
  [`HttpSink "${HOLE}": ${HOLE}.`, 'a network error of the HTTP sink, with the error\'s own message'],
];

interface Heading {
  /** The page the heading is on. */
  readonly page: string;
  readonly text: string;
  readonly pattern: string;
}

/** The headings that are a message of the library: a whole `###` or `####` heading in backticks. */
function headings(): Heading[] {
  return pages.flatMap(({ name, text }) => [...text.matchAll(/^#{3,4} `([^`]+)`\s*$/gm)].map((m) => ({ page: name, text: m[1], pattern: headingPattern(m[1]) })));
}

/** Characters of a heading that are words, not placeholders. */
const wordCount = (pattern: string) => pattern.replaceAll(HOLE, '').trim().length;

/**
 * Whether the heading names the message. Each run of words of the heading (between placeholders, edge
 * punctuation trimmed) of 10 characters or more is in the message as it is — except a first run the
 * message builds from a parameter (`HttpSink "<name>"` of a message starting with `${prefix}`) — and
 * the whole heading fits the message, placeholders against the message's variable parts.
 */
function documents(heading: Heading, message: LibraryMessage): boolean {
  const raw = heading.pattern.split(HOLE);
  const skipFirst = !heading.pattern.startsWith(HOLE) && message.pattern.startsWith(HOLE);
  const checked = raw.filter((_, i) => !(i === 0 && skipFirst));
  const trimmed = checked.map((run) => run.replace(/^[\s"':,.()]+|[\s"':,.()]+$/g, ''));
  const verbatim = trimmed.every((run) => run.length < 10 || message.pattern.includes(run));
  const anchored = [...checked, ...trimmed].some((run) => run.length >= 8 && message.pattern.includes(run));
  return verbatim && anchored && names(heading.pattern, message.pattern);
}

const show = (pattern: string) => pattern.replaceAll(HOLE, '<…>');

describe('docs/troubleshooting/', () => {
  const messages = libraryMessages(src);
  const found = headings();

  it('reads the messages from the source, and headings from the pages', () => {
    expect(messages.length).toBeGreaterThan(150);
    expect(messages.filter((m) => m.via === 'DeferredWorkConfigError').length).toBeGreaterThan(20);
    expect(messages.filter((m) => m.via === 'log').length).toBeGreaterThan(15);
    expect(found.length).toBeGreaterThan(60);
    expect(pages.length).toBeGreaterThan(8);
    // messages built by a function and logged or thrown by its caller: the stop signal's, the serverless platform's, an invocation's, BullMQ's option checks
    for (const file of ['nest/stop-signals.ts', 'serverless/platform.ts', 'serverless/invocation.ts', 'sinks/bullmq/bullmq-job-options.ts']) {
      expect({ file, read: messages.some((m) => m.via === 'log' && m.at.startsWith(`src/${file}:`)) }).toEqual({ file, read: true });
    }
  });

  it(`every page is at most ${MAX_LINES} lines`, () => {
    expect(pages.filter((p) => p.text.split('\n').length > MAX_LINES).map((p) => `${p.name}: ${p.text.split('\n').length} lines`)).toEqual([]);
  });

  it('the README links every page of the folder', () => {
    const readme = pages.find((p) => p.name === 'README.md')!.text;
    const linked = new Set([...readme.matchAll(/\]\(([\w.-]+\.md)(?:#[^)]*)?\)/g)].map((m) => m[1]));
    expect(pages.map((p) => p.name).filter((name) => name !== 'README.md' && !linked.has(name))).toEqual([]);
  });

  it('each message heading is on one page only', () => {
    const seen = new Map<string, string>();
    const twice: string[] = [];
    for (const heading of found) {
      const first = seen.get(heading.text);
      if (first !== undefined) twice.push(`${heading.text} (${first}, ${heading.page})`);
      else seen.set(heading.text, heading.page);
    }
    expect(twice).toEqual([]);
  });

  it('every heading is specific: at least 16 characters of words, 8 of them in a row', () => {
    expect(found.filter((h) => wordCount(h.pattern) < 16 || longestWords(h.pattern).length < 8).map((h) => h.text)).toEqual([]);
  });

  it('every message heading still occurs in the library source (a reworded message fails here)', () => {
    const stale = found.filter((heading) => !messages.some((message) => documents(heading, message)));
    expect(stale.map((h) => `${h.page}: ${h.text}`)).toEqual([]);
  });

  it('every message a user can meet is documented (internal ones are listed above, with why)', () => {
    const internal = (m: LibraryMessage) => INTERNAL.some(([part]) => m.pattern === part || (part.length > 20 && m.pattern.includes(part)));
    const missing = messages.filter((m) => !internal(m) && !found.some((heading) => documents(heading, m)));
    expect(missing.map((m) => `${m.at} [${m.via}] ${show(m.pattern)}`)).toEqual([]);
  });

  it('the internal list names only messages that still exist', () => {
    const gone = INTERNAL.filter(([part]) => !messages.some((m) => m.pattern === part || m.pattern.includes(part)));
    expect(gone).toEqual([]);
  });
});
