import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const PKG_DIR = join(ROOT, 'packages/nestjs-deferred-work');
/**
 * Where installed dependency sets are kept between runs (override: TEST_APPS_CACHE). Outside the
 * workspace: from a directory inside it, Node would find what the set lacks in the workspace's own
 * node_modules.
 */
const CACHE = resolve(process.env.TEST_APPS_CACHE ?? join(tmpdir(), 'nestjs-deferred-work-test-apps'));
/** npm's download cache, shared with the consumer install test (`test/consumer/run.mjs`). */
const NPM_CACHE = resolve(process.env.CONSUMER_NPM_CACHE ?? join(ROOT, 'node_modules/.cache/consumer-npm'));
const INSTALL_TIMEOUT_MS = 240_000;
/** Runs older than this, left by a test process that was killed, are removed. */
const STALE_RUN_MS = 3_600_000;

/** A dependency set installed with npm into a directory of its own, outside the workspace. */
export interface InstalledApp {
  /** The directory holding `package.json` and `node_modules`. */
  readonly dir: string;
  /** The version npm installed of each dependency asked for. */
  readonly versions: Readonly<Record<string, string>>;
}

/** The environment of npm: ours without the package manager's per-run settings (as the consumer test does). */
function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(npm_|pnpm_|PNPM_)/i.test(key) || key === 'NODE_OPTIONS' || key === 'INIT_CWD') continue;
    env[key] = value;
  }
  return { ...env, npm_config_cache: NPM_CACHE, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' };
}

function npmInstall(dir: string): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'], { cwd: dir, env: npmEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), INSTALL_TIMEOUT_MS);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`Cannot run npm to install a test app in ${dir}: ${error.message}. These tests need npm and the npm registry (or a warm cache in ${NPM_CACHE}).`));
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolvePromise();
      else reject(new Error(`npm install in ${dir} failed (${code ?? signal}); these tests need the npm registry, or a warm cache in ${NPM_CACHE}:\n${output.slice(-3000)}`));
    });
  });
}

/**
 * `dependencies` installed from the registry with npm into a directory of its own — for a test that
 * needs a set the workspace cannot have (BullMQ 6 without ioredis). Installed once, into
 * `<tmpdir>/nestjs-deferred-work-test-apps/<label>-<key>` (the key: a hash of the dependency specs and the Node
 * major), and reused by later runs; an install goes to a directory of its own first, then is moved into
 * place, so concurrent runs never see half of one. A failed install throws, saying what is needed.
 */
export async function installedApp(label: string, dependencies: Record<string, string>): Promise<InstalledApp> {
  const specs = Object.fromEntries(Object.entries(dependencies).sort(([a], [b]) => a.localeCompare(b)));
  const key = createHash('sha256').update(JSON.stringify({ specs, node: process.versions.node.split('.')[0] })).digest('hex').slice(0, 12);
  const dir = join(CACHE, `${label}-${key}`);
  const done = join(dir, 'installed.json');
  if (!existsSync(done)) {
    mkdirSync(CACHE, { recursive: true });
    const staging = `${dir}.installing-${process.pid}-${Date.now()}`;
    mkdirSync(staging, { recursive: true });
    try {
      writeFileSync(join(staging, 'package.json'), `${JSON.stringify({ name: `test-app-${label}`, private: true, dependencies: specs }, null, 2)}\n`);
      await npmInstall(staging);
      const versions = Object.fromEntries(
        Object.keys(specs).map((name) => [name, (JSON.parse(readFileSync(join(staging, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version]),
      );
      writeFileSync(join(staging, 'installed.json'), `${JSON.stringify(versions, null, 2)}\n`);
      if (existsSync(dir)) rmSync(dir, { recursive: true, force: true }); // an earlier layout without installed.json
      renameSync(staging, dir);
    } catch (error) {
      rmSync(staging, { recursive: true, force: true });
      if (!existsSync(done)) throw error; // another run finished the same install first: use it
    }
  }
  return { dir, versions: JSON.parse(readFileSync(done, 'utf8')) as Record<string, string> };
}

/** A run of a fixture app in an installed set: its compiled entry, and the directory to remove after. */
export interface AppRun {
  readonly main: string;
  readonly dir: string;
  dispose(): void;
}

/**
 * A fresh directory under `app.dir` that holds the built library as an installed package
 * (`node_modules/nestjs-deferred-work`: its `package.json` and `dist`, copied — a link would resolve
 * the library's own imports from the workspace) and the fixture `test/fixtures/<fixture>.ts` compiled
 * to an ES module whose imports stay bare: the app, the library and their peers all resolve from the
 * installed set, as in an app that ran `npm install`. Needs `pnpm build` first.
 */
export function appRun(app: InstalledApp, fixture: string): AppRun {
  if (!existsSync(join(PKG_DIR, 'dist/index.js'))) {
    throw new Error(`${PKG_DIR}/dist/index.js is missing: run "pnpm build" first (pnpm test builds before running the tests).`);
  }
  const runs = join(app.dir, 'runs');
  mkdirSync(runs, { recursive: true });
  for (const old of readdirSync(runs)) {
    const path = join(runs, old);
    if (Date.now() - statSync(path).mtimeMs > STALE_RUN_MS) rmSync(path, { recursive: true, force: true });
  }
  const dir = join(runs, `${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`);
  const pkg = join(dir, 'node_modules/nestjs-deferred-work');
  mkdirSync(pkg, { recursive: true });
  cpSync(join(PKG_DIR, 'package.json'), join(pkg, 'package.json'));
  cpSync(join(PKG_DIR, 'dist'), join(pkg, 'dist'), { recursive: true });
  const source = readFileSync(join(ROOT, 'test/fixtures', `${fixture}.ts`), 'utf8');
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, experimentalDecorators: true, emitDecoratorMetadata: true, esModuleInterop: true },
  });
  const main = join(dir, `${fixture}.mjs`);
  mkdirSync(dirname(main), { recursive: true });
  writeFileSync(main, outputText);
  return { main, dir, dispose: () => rmSync(dir, { recursive: true, force: true }) };
}
