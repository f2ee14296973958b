// The getting-started guide, pasted where users paste it: into each app `nest new` writes
// (cli-apps.mjs: @nestjs/cli 12's ES-module app, its CommonJS app, and @nestjs/cli 11's), as a user
// follows it. The guide's `// src/…` files are written verbatim from the markdown, the packed library
// is installed (`npm install <tarball>` for the guide's `npm install nestjs-deferred-work`), the app is
// started with the guide's `npm run start`, the guide's curl commands are sent, and the answers and the
// console lines the guide shows are compared with what the app printed: the text and the order, without
// the `[Nest] <pid> - <date>` prefix. Then Ctrl-C (SIGINT to the process group) must stop it cleanly.
// docs/06-testing.md's complete spec files run in the same app with its own test runner.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cachedApp, copyApp } from './cli-apps.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const GUIDE = 'docs/01-getting-started.md';
const TESTING = 'docs/06-testing.md';
const read = (page) => readFileSync(join(ROOT, page), 'utf8');
const secs = (ms) => `${(ms / 1000).toFixed(1)}s`;
const stripAnsi = (s) => s.replace(/\x1b\[[0-9;]*m/g, '');
// A timer that keeps the process alive (run.mjs's `delay` is unref'd: with the app gone, nothing else would).
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

/** The fenced blocks of a page, each with the prose since the block before it. */
export function blocks(markdown) {
  const out = [];
  let last = 0;
  for (const m of markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)) {
    out.push({ lang: m[1], code: m[2], before: markdown.slice(last, m.index) });
    last = m.index + m[0].length;
  }
  return out;
}

/**
 * The files a page shows whole: ```ts blocks that start with their path (`// src/app.module.ts`, written
 * with that line, as pasted) and ```json blocks whose sentence before ends with their path in backticks.
 */
export function pageFiles(markdown) {
  const files = new Map();
  for (const { lang, code, before } of blocks(markdown)) {
    const path = lang === 'ts' ? /^\/\/ ([\w.-]+(?:\/[\w.-]+)*\.ts)\n/.exec(code)?.[1] : lang === 'json' ? /`([\w./-]+\.json)`:\s*$/.exec(before)?.[1] : undefined;
    if (path) files.set(path, code);
  }
  return files;
}

/** Console lines as the guide shows them, without the `[Nest] pid  - date` prefix that varies. */
export function consoleLines(text) {
  return stripAnsi(text)
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => line.replace(/^\[Nest\] \d+\s+-\s+.+?\s+(LOG|WARN|ERROR|DEBUG|VERBOSE) /, '$1 ').trimEnd());
}

/** What the guide says to run and shows: commands, answers and console lines (Nest 12's and Nest 11's). */
export function guideSteps(markdown = read(GUIDE)) {
  const all = blocks(markdown);
  const after = (test, lang) => {
    const at = all.findIndex(test);
    const found = at < 0 ? undefined : all.slice(at + 1).find((b) => b.lang === lang);
    if (!found) throw new Error(`${GUIDE}: no \`\`\`${lang} block where the consumer test expects one`);
    return found.code.trim();
  };
  const command = (pattern) => all.flatMap((b) => (b.lang === 'bash' ? b.code.split('\n') : [])).find((l) => pattern.test(l));
  const steps = {
    create: command(/^npx @nestjs\/cli new my-app --package-manager npm$/),
    install: command(/^npm install nestjs-deferred-work$/),
    start: command(/^npm run start$/),
    post: command(/^curl -X POST http:\/\/localhost:3000\/\S+$/),
    stats: command(/^curl http:\/\/localhost:3000\/deferred\/stats$/),
  };
  const missing = Object.entries(steps).filter(([, v]) => !v);
  if (missing.length) throw new Error(`${GUIDE}: the consumer test follows the commands ${missing.map(([k]) => k).join(', ')}, not found on the page`);
  const text = all.filter((b) => b.lang === 'text');
  const nest11 = text.find((b) => /Nest 11/.test(b.before));
  return {
    ...steps,
    postAnswer: JSON.parse(after((b) => b.code.includes(steps.post), 'json')),
    lines: { 12: consoleLines(after((b) => b.code.includes(steps.post), 'text')), 11: nest11 && consoleLines(nest11.code) },
    statsAnswer: abridged(after((b) => b.code.includes(steps.stats), 'json')),
  };
}

/** A JSON answer the guide abridges with "…", as the object to match. */
const abridged = (json) => JSON.parse(json.replace(/,\s*…\s*(?=[}\]])/g, '').replace(/\s*…\s*,/g, ''));

/** Whether `actual` holds everything of `expected` (objects: its keys; anything else: equal). */
export function holds(actual, expected) {
  if (expected && typeof expected === 'object' && !Array.isArray(expected)) {
    return !!actual && typeof actual === 'object' && Object.entries(expected).every(([k, v]) => holds(actual[k], v));
  }
  return JSON.stringify(actual) === JSON.stringify(expected);
}

/** The task of one of CLI_APPS for run.mjs's pool (`tarball()`: the packed library, once packed). */
export function guideTask(app, { tarball, workDir, ctx }) {
  return async () => {
    let label = `guide in nest new (@nestjs/cli ${app.cli}, ${app.type})`;
    try {
      const cached = await cachedApp(app, ctx);
      label = `guide in nest new (@nestjs/cli ${cached.cli.version}, ${app.type})`;
      if (!tarball()) throw new ctx.StepError('pack', 'not run: the library could not be packed');
      const dir = join(workDir, `guide-cli${cached.cli.version}-${app.type}`);
      const copied = Date.now();
      await copyApp(cached.dir, dir, ctx);
      const { app: what } = cached;
      const made = cached.cached ? `cached app copied in ${secs(Date.now() - copied)}` : `app created and installed in ${secs(cached.createdMs)}`;
      const ran = await followGuide(dir, app, tarball(), ctx);
      const tested = await runTestingPage(dir, what, ctx);
      const detail = `${cached.command}: "type" ${what.type === 'esm' ? '"module"' : 'none'}, module ${what.module}/${what.moduleResolution}, ${what.testRunner}, nest ${what.nest}, typescript ${what.typescript}; ${made}; ${ran}; ${tested}`;
      return [{ label, ok: true, detail }];
    } catch (error) {
      return [{ label, ok: false, error }];
    }
  };
}

/** Follows the guide in the app folder `dir`; returns the timings. */
async function followGuide(dir, app, tarball, ctx) {
  const steps = guideSteps();
  const expected = steps.lines[app.nest];
  if (!expected) throw new ctx.StepError('guide', `${GUIDE} shows no console lines for Nest ${app.nest}`);
  for (const [path, code] of pageFiles(read(GUIDE))) {
    mkdirSync(join(dir, dirname(path)), { recursive: true });
    writeFileSync(join(dir, path), code);
  }
  const install = await ctx.run(steps.install, 'npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', tarball], { cwd: dir, timeoutMs: 300_000 });
  const port = await ctx.freePort();
  const url = (command) => command.replace(/^curl (-X \w+ )?/, '').replace('http://localhost:3000', `http://127.0.0.1:${port}`);
  const child = spawn('npm', ['run', 'start'], { cwd: dir, env: ctx.childEnv({ PORT: String(port) }), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  ctx.children.add(child);
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (out += c));
  const exited = new Promise((done) => child.on('close', (code, signal) => (ctx.children.delete(child), done({ code, signal }))));
  const output = () => stripAnsi(out);
  const started = Date.now();
  try {
    const ready = /Nest application successfully started/;
    while (!ready.test(out) || !(await ctx.accepts(port))) {
      if (Date.now() - started > 180_000) throw new ctx.StepError('start', `\`${steps.start}\` did not start the app on port ${port} within 180 s`, output());
      if (child.exitCode !== null) throw new ctx.StepError('start', `\`${steps.start}\` exited with ${child.exitCode}`, output());
      await sleep(100);
    }
    const startMs = Date.now() - started;
    const res = await ctx.http('POST', url(steps.post));
    if (res.status !== 201 || !holds(res.body, steps.postAnswer) || !holds(steps.postAnswer, res.body)) {
      throw new ctx.StepError('guide', `${steps.post} answered ${res.status} ${JSON.stringify(res.body)}, the guide shows ${JSON.stringify(steps.postAnswer)}`, output());
    }
    const printed = () => consoleLines(output().slice(output().search(ready))).slice(1);
    for (const deadline = Date.now() + 10_000; printed().length < expected.length && Date.now() < deadline; ) await sleep(50);
    await sleep(200); // nothing more may follow
    if (JSON.stringify(printed()) !== JSON.stringify(expected)) {
      throw new ctx.StepError('guide', `after ${steps.post} the console showed\n${printed().join('\n')}\nthe guide shows (Nest ${app.nest})\n${expected.join('\n')}`, output());
    }
    const stats = await ctx.http('GET', url(steps.stats));
    if (stats.status !== 200 || !holds(stats.body, steps.statsAnswer)) {
      throw new ctx.StepError('guide', `${steps.stats} answered ${stats.status} ${JSON.stringify(stats.body)}, the guide shows ${JSON.stringify(steps.statsAnswer)}`, output());
    }
    ctx.killGroup(child, 'SIGINT'); // Ctrl-C
    let timer;
    const stopped = await Promise.race([exited, new Promise((done) => (timer = setTimeout(done, 15_000, null)))]);
    clearTimeout(timer);
    if (!stopped) throw new ctx.StepError('stop', 'the app did not stop within 15 s of Ctrl-C (SIGINT)', output());
    if (/\bERROR\b|Unhandled|uncaught/i.test(output())) throw new ctx.StepError('logs', 'the app logged an error', output());
    return `install ${secs(install.ms)}, \`${steps.start}\` ${secs(startMs)}, guide ${secs(Date.now() - started - startMs)}`;
  } finally {
    if (child.exitCode === null && child.signalCode === null) ctx.killGroup(child, 'SIGKILL');
  }
}

const write = (dir, path, text) => (mkdirSync(join(dir, dirname(path)), { recursive: true }), writeFileSync(join(dir, path), text));
const atLeast = (version, major, minor) => {
  const [a, b] = version.split('.').map(Number);
  return a > major || (a === major && b >= minor);
};

/**
 * docs/06-testing.md in the app, as its reader follows it: its complete files written (the jest
 * configurations only into the jest apps; @nestjs/cli 11 keeps jest's configuration under `"jest"` in
 * package.json, where the page's `moduleNameMapper` then goes), and its tests run with the commands the
 * page gives (`npm test`, `npm run test:e2e`), only the page's test files. Jest loads the ES-module-only
 * Nest 12 through require(esm), which it supports from Node.js 24.9: below that, a CommonJS Nest 12
 * app's jest runs under `ctx.nodeRuntime('24')`, and the page must say so.
 */
export async function runTestingPage(dir, app, ctx, markdown = read(TESTING)) {
  const files = pageFiles(markdown);
  const specs = [...files.keys()].filter((path) => /[.-]spec\.ts$/.test(path));
  if (!specs.length) return `${TESTING}: no complete test file (\`// src/….spec.ts\`) on the page yet`;
  const jestOnly = (path) => /^jest\.config\.ts$|(^|\/)jest[\w.-]*\.json$/.test(path);
  for (const [path, code] of files) {
    if (jestOnly(path) && app.testRunner !== 'jest') continue;
    if (path === 'jest.config.ts' && app.jestConfig === 'package.json') {
      if (!/`"jest"`[^.]*`package\.json`/.test(markdown)) throw new ctx.StepError(TESTING, 'the page does not say where an app with jest\'s configuration under "jest" in package.json (@nestjs/cli 11) puts the moduleNameMapper');
      if (!code.includes("'^(\\\\.{1,2}/.*)\\\\.js$': '$1'")) throw new ctx.StepError(TESTING, "the page's jest.config.ts maps no `.js` suffix", code);
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
      pkg.jest.moduleNameMapper = { '^(\\.{1,2}/.*)\\.js$': '$1', ...pkg.jest.moduleNameMapper };
      write(dir, 'package.json', `${JSON.stringify(pkg, null, 2)}\n`);
    } else write(dir, path, code);
  }
  let env = {};
  let on = `node ${process.version}`;
  if (app.testRunner === 'jest' && Number(app.nest.split('.')[0]) >= 12 && !atLeast(process.versions.node, 24, 9)) {
    if (!/Node\.js 24\.9/.test(markdown)) throw new ctx.StepError(TESTING, `the page does not say that jest in a CommonJS Nest 12 app needs Node.js 24.9 or later (this is ${process.version})`);
    const node = await ctx.nodeRuntime('24');
    if (!atLeast(node.version.slice(1), 24, 9)) throw new ctx.StepError(TESTING, `Node.js ${node.version} is older than 24.9`);
    env = { PATH: `${dirname(node.bin)}:${process.env.PATH}` };
    on = `node ${node.version}`;
  }
  const ran = [];
  for (const [command, args, tests] of [
    ['npm test', ['test'], specs.filter((p) => !p.endsWith('.e2e-spec.ts'))],
    ['npm run test:e2e', ['run', 'test:e2e'], specs.filter((p) => p.endsWith('.e2e-spec.ts'))],
  ]) {
    if (!tests.length) continue;
    if (!markdown.includes(`\`${command}\``)) throw new ctx.StepError(TESTING, `the page has ${tests.join(', ')} but does not say to run \`${command}\``);
    const t = await ctx.run(`${command} (${app.testRunner}, ${on})`, 'npm', [...args, '--', ...tests], { cwd: dir, timeoutMs: 300_000, env: ctx.childEnv(env) });
    ran.push(`${command} ${secs(t.ms)}`);
  }
  return `${TESTING}: ${specs.length} test files passed with ${app.testRunner} on ${on} (${ran.join(', ')})`;
}
