import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const DIST = join(ROOT, 'packages/nestjs-deferred-work/dist');

/**
 * Compiles a TypeScript app under test/fixtures to an ES module next to it (test/fixtures/.build),
 * its `nestjs-deferred-work` imports pointing at the built package, so that it can run as a process
 * of its own — for tests that send it signals. Needs `pnpm build` first (`pnpm test` builds before
 * it runs the tests).
 */
export function compileFixture(name: string): string {
  if (!existsSync(join(DIST, 'index.js'))) {
    throw new Error(`${DIST}/index.js is missing: run "pnpm build" first (pnpm test builds before running the tests).`);
  }
  const source = readFileSync(join(ROOT, 'test/fixtures', `${name}.ts`), 'utf8');
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: {
      module: ts.ModuleKind.ESNext,
      target: ts.ScriptTarget.ES2022,
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      esModuleInterop: true,
    },
  });
  const code = outputText
    .replace(/from 'nestjs-deferred-work\/([\w-]+)'/g, (_m, sub: string) => `from '${pathToFileURL(join(DIST, sub, 'index.js')).href}'`)
    .replace(/from 'nestjs-deferred-work'/g, `from '${pathToFileURL(join(DIST, 'index.js')).href}'`);
  const out = join(ROOT, 'test/fixtures/.build', `${name}.mjs`);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, code);
  return out;
}

/** A fixture app running as a child process, with its output collected. */
export class NodeApp {
  output = '';
  private readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(file: string, env: Record<string, string>) {
    this.child = spawn(process.execPath, [file], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.child.stderr!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  /** The first JSON line of its output that has `key`, waiting up to `timeoutMs`. */
  async json<T>(key: string, timeoutMs = 15_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (const line of this.output.split('\n')) {
        if (!line.startsWith('{')) continue;
        try {
          const value = JSON.parse(line) as Record<string, unknown>;
          if (key in value) return value as T;
        } catch {
          // a partial line; read again
        }
      }
      if (Date.now() > deadline || this.child.exitCode !== null) {
        throw new Error(`No JSON line with "${key}" from the app within ${timeoutMs} ms. Its output:\n${this.output}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  kill(): void {
    if (this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}
