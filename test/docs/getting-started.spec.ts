import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { eventually } from '../support/eventually';
import { freePort } from '../support/free-port';
import { NodeApp } from '../support/node-app';

/*
 * The getting-started guide, run as written: its `// src/…` snippets are the example app's files,
 * compiled from the markdown itself and started as a process; its curl commands are sent to it, and
 * the answers and console lines the guide shows are checked against what the app really prints.
 */
const root = join(import.meta.dirname, '..', '..');
const guidePath = join(root, 'docs', '01-getting-started.md');
const exampleDir = join(root, 'examples', 'getting-started');
const buildDir = join(exampleDir, '.guide'); // inside the example, so its node_modules resolve
const guide = readFileSync(guidePath, 'utf8');

interface Block {
  lang: string;
  code: string;
}

function blocks(): Block[] {
  return [...guide.matchAll(/^```(\w*)\n([\s\S]*?)^```/gm)].map((m) => ({ lang: m[1], code: m[2] }));
}

/** The guide's app files: `src/x.ts` → its text without the `// src/x.ts` line. */
function guideFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const { lang, code } of blocks()) {
    const path = lang === 'ts' ? /^\/\/ (src\/[\w./-]+\.ts)\n/.exec(code)?.[1] : undefined;
    if (path) files.set(path, code.slice(code.indexOf('\n') + 1));
  }
  return files;
}

/** The block that follows the one holding `marker`, of the given language. */
function blockAfter(marker: string, lang: string): string {
  const all = blocks();
  const at = all.findIndex((b) => b.code.includes(marker));
  const found = all.slice(at + 1).find((b) => b.lang === lang);
  if (at < 0 || !found) throw new Error(`the guide has no \`\`\`${lang} block after "${marker}"`);
  return found.code;
}

/** `curl [-X METHOD] URL` from the guide, sent to the app's port instead of 3000. */
async function curl(command: string, port: number): Promise<{ status: number; body: string }> {
  const m = /^curl (?:-X (\w+) )?(http:\/\/localhost:3000\S*)$/.exec(command.trim());
  if (!m) throw new Error(`the test reads "curl [-X METHOD] http://localhost:3000/…", not: ${command}`);
  const res = await fetch(m[2].replace('http://localhost:3000', `http://127.0.0.1:${port}`), { method: m[1] ?? 'GET' });
  return { status: res.status, body: await res.text() };
}

/** A JSON answer the guide abridges with "…", as an object to match against. */
function abridged(json: string): unknown {
  return JSON.parse(json.trim().replace(/,\s*…\s*(?=[}\]])/g, '').replace(/\s*…\s*,/g, ''));
}

/** The console lines the guide shows, without the `[Nest] pid - date   LOG ` prefix that varies. */
function consoleLines(text: string): string[] {
  return text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => l.replace(/^\[Nest\] \d+\s+-\s+.+?\s+LOG /, 'LOG '));
}

const stripAnsi = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, '');

describe('the getting-started guide, followed as written', () => {
  it('shows exactly the files of examples/getting-started, every one of them', () => {
    const files = guideFiles();
    const example = readdirSync(join(exampleDir, 'src')).map((f) => `src/${f}`);
    expect([...files.keys()].sort()).toEqual(example.sort());
    for (const [path, code] of files) expect(code).toBe(readFileSync(join(exampleDir, path), 'utf8'));
  });

  describe('the app built from its snippets', () => {
    let app: NodeApp;
    let port: number;

    beforeAll(async () => {
      if (!existsSync(join(exampleDir, 'node_modules', 'nestjs-deferred-work', 'dist', 'index.cjs'))) {
        throw new Error('examples/getting-started has no built nestjs-deferred-work: run "pnpm install" and "pnpm build" first (pnpm test builds before it runs the tests).');
      }
      rmSync(buildDir, { recursive: true, force: true });
      for (const [path, code] of guideFiles()) {
        mkdirSync(join(buildDir, path, '..'), { recursive: true });
        writeFileSync(join(buildDir, path), code);
      }
      writeFileSync(
        join(buildDir, 'tsconfig.json'),
        JSON.stringify({ extends: '../tsconfig.json', compilerOptions: { rootDir: 'src', outDir: 'dist' }, include: ['src'] }),
      );
      const tsc = spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(buildDir, 'tsconfig.json')], {
        encoding: 'utf8',
      });
      if (tsc.status !== 0) throw new Error(`the guide's files do not compile:\n${tsc.stdout}${tsc.stderr}`);
      port = await freePort();
      app = new NodeApp(join(buildDir, 'dist', 'main.js'), { PORT: String(port), NO_COLOR: '1' });
      await eventually(() => {
        expect(app.output).toContain('Nest application successfully started');
      }, 30_000, 50);
      // Nest prints that line once the app is initialised, a moment before it listens.
      await eventually(() => new Promise<void>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1');
        socket.once('connect', () => (socket.destroy(), resolve()));
        socket.once('error', reject);
      }), 10_000, 50);
    }, 60_000);

    afterAll(async () => {
      app?.kill();
      rmSync(buildDir, { recursive: true, force: true });
    });

    it('answers the curl at once, then prints the callback and the deferred log record', async () => {
      const post = guide.match(/^curl -X POST .+$/m)![0];
      const res = await curl(post, port);
      expect(res.status).toBe(201);
      expect(JSON.parse(res.body)).toEqual(JSON.parse(blockAfter(post, 'json')));

      const expected = consoleLines(blockAfter(post, 'text'));
      expect(expected).toHaveLength(3);
      const printed = await eventually(() => {
        const lines = consoleLines(stripAnsi(app.output));
        const at = expected.map((line) => lines.indexOf(line));
        expect(at.every((i) => i >= 0)).toBe(true);
        return at;
      }, 10_000, 20);
      // The handler's line first; the deferred lines only after it, as the guide shows them.
      expect(printed[0]).toBeLessThan(printed[1]);
      expect(printed[0]).toBeLessThan(printed[2]);
    });

    it('shows the counters the guide prints', async () => {
      const get = guide.match(/^curl http:\/\/localhost:3000\/deferred\/stats$/m)![0];
      const res = await curl(get, port);
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body)).toMatchObject(abridged(blockAfter(get, 'json')) as object);
    });

    it('stops on SIGTERM through the shutdown hooks, ended by the re-raised signal (status 143)', async () => {
      app.signal('SIGTERM');
      const { code, signal } = await app.exited;
      expect({ code, signal }).toEqual({ code: null, signal: 'SIGTERM' });
      expect(stripAnsi(app.output)).not.toMatch(/ERROR|Unhandled/);
    });
  });
});
