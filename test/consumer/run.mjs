#!/usr/bin/env node
// Consumer install test (`pnpm test:consumer`): packs the library with `npm pack`, checks what the
// tarball contains (and that every package dist loads by name is a dependency or a peer dependency,
// with no third-party code bundled into dist), then for Nest 10, 11 and 12 and for a CommonJS and an
// ESM ("type": "module") app: creates a fresh app in a temporary folder, `npm install`s the tarball,
// compiles it with `tsc`, starts it and checks over HTTP (127.0.0.1 only) that the work deferred by an
// `@AfterResponse()` route is delivered after its response finished. That basic app also installs
// the optional peers `@nestjs/terminus` and `@nestjs/testing` of its Nest major: `GET /health` (a
// Terminus `HealthCheckService` with the package's `DeferredWorkHealthIndicator`) must answer 200 with
// the `deferredWork` indicator up, and a script compiled with the app runs its module under
// `@nestjs/testing` with `withMemorySinks()` / `DeferredWorkTesting` from `nestjs-deferred-work/testing`.
// The basic apps run under each Node.js major of CONSUMER_NODES: the system node, and Node binaries
// installed from the registry's `node` package into node_modules/.cache/consumer-node/<major>
// (compiled once, with tsc under the system node; each runtime starts the same compiled app).
// For Nest 11 and 12 (CommonJS and ESM) a second app also installs `bullmq` and `@nestjs/bullmq`,
// defers its jobs to `BullMqSink` (`nestjs-deferred-work/bullmq`) and consumes them with a real
// `@Processor`, against a private `redis-server` the runner starts on a free port; it also defers an
// audit job per POST to `BullMqSink.offloaded()`, whose worker thread is started from the installed
// package's dist/worker (CommonJS and ESM builds alike) and adds the job on its own connection.
// For Nest 11 and 12 (CommonJS and ESM) a GraphQL app installs `@nestjs/graphql` and `@nestjs/apollo`
// of that major with Apollo Server 4 (Nest 11) or 5 and `@as-integrations/express5` (Nest 12): a
// code-first mutation with `@AfterResponse()` defers a job and a log into MemorySinks, checked over
// HTTP to be delivered after the response of its GraphQL request finished.
// The getting-started guide is followed in the apps `nest new` writes, created by the real @nestjs/cli
// (12's ES-module and CommonJS apps, 11's CommonJS app) and cached outside the repository: its files
// pasted from the markdown, the console lines it shows compared with the app's (guide-apps.mjs).
//
// Environment (all optional):
//   CONSUMER_NEST_MAJORS  comma-separated Nest majors to test (default "10,11,12")
//   CONSUMER_FORMATS      comma-separated consumer formats (default "cjs,esm")
//   CONSUMER_APPS         comma-separated apps (default "basic,bullmq,graphql,guide"; bullmq, graphql and guide run
//                         for Nest 11 and 12)
//   CONSUMER_NODES        comma-separated Node.js majors the basic apps run under (default "20,22,24");
//                         the system node's major means the system node, any other is installed once
//                         with `npm install node@<major>` into CONSUMER_NODE_CACHE
//   CONSUMER_NODE_CACHE   where those Node binaries are kept (default <repo>/node_modules/.cache/consumer-node)
//   REDIS_SERVER_BIN      the redis-server binary for the bullmq apps (default: redis-server on the PATH)
//   CONSUMER_NPM_CACHE    npm cache folder shared by every install
//                         (default <repo>/node_modules/.cache/consumer-npm)
//   CONSUMER_CONCURRENCY  apps set up at once (default 2)
//   CONSUMER_KEEP=1       keep the temporary folder (its path is printed) for debugging
//   CONSUMER_TARBALL      test this tarball (e.g. from `pnpm pack:lib`) instead of building and packing
//   CONSUMER_TIMEOUT_S    give up on the whole run after this many seconds (default 1500)
import { spawn } from 'node:child_process';
import { builtinModules } from 'node:module';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect as connectTcp, createServer as createNetServer } from 'node:net';
import { CLI_APPS, cachedApp } from './cli-apps.mjs';
import { guideTask } from './guide-apps.mjs';
import { RedisServer } from './redis-server.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..', '..');
const PKG_DIR = join(ROOT, 'packages', 'nestjs-deferred-work');
const FIXTURE_SRC = {
  basic: join(HERE, 'fixture', 'src'),
  bullmq: join(HERE, 'fixture-bullmq', 'src'),
  graphql: join(HERE, 'fixture-graphql', 'src'),
};
const PKG_NAME = 'nestjs-deferred-work';

const MAJORS = listEnv('CONSUMER_NEST_MAJORS', '10,11,12');
const FORMATS = listEnv('CONSUMER_FORMATS', 'cjs,esm');
const APPS = listEnv('CONSUMER_APPS', 'basic,bullmq,graphql,guide');
const CONCURRENCY = Math.max(1, Number(process.env.CONSUMER_CONCURRENCY ?? 2) || 2);
const NODES = listEnv('CONSUMER_NODES', '20,22,24');
const NODE_CACHE = resolve(process.env.CONSUMER_NODE_CACHE ?? join(ROOT, 'node_modules', '.cache', 'consumer-node'));
const NPM_CACHE = resolve(process.env.CONSUMER_NPM_CACHE ?? join(ROOT, 'node_modules', '.cache', 'consumer-npm'));
const KEEP = process.env.CONSUMER_KEEP === '1';
const TOTAL_TIMEOUT_MS = Number(process.env.CONSUMER_TIMEOUT_S ?? 1500) * 1000;

// POSTs per app; each defers a job (-> audit sink), a log and a metric (-> memory sink) and a
// callback (-> the built-in callbacks runner).
const REQUESTS = 3;
const ITEMS_PER_REQUEST = 4;
// Where the basic app's own sink (AuditFileSink) writes, relative to the app's folder.
const AUDIT_FILE = 'deferred-audit.jsonl';

// The basic app's optional peers, of the app's Nest major: Terminus for the health check and
// @nestjs/testing for the script that uses nestjs-deferred-work/testing.
const basicDeps = (major) => ({ '@nestjs/terminus': `^${major}.0.0`, '@nestjs/testing': `^${major}.0.0` });

// The BullMQ app, per Nest major: the @nestjs/bullmq of that major, and BullMQ 5 (Nest 11) or 6
// (Nest 12), so both majors the sink supports are met. BullMQ 6 made `ioredis` an optional peer
// dependency: an app that passes connection options installs it itself. Each POST defers one job
// (-> BullMqSink -> the "mail" queue -> the app's @Processor) and one log (-> a MemorySink named
// "telemetry").
const BULLMQ_DEPS = {
  11: { '@nestjs/bullmq': '^11.0.0', bullmq: '^5.7.0' },
  12: { '@nestjs/bullmq': '^12.0.0', bullmq: '^6.0.0', ioredis: '^5.0.0' },
};
const BULLMQ_REQUESTS = 5;

// The GraphQL app, per Nest major. @nestjs/apollo 13.2 and later want Apollo Server 5; 13.1 is the last
// for Apollo Server 4 (whose Express integration is built in). Apollo Server 5 on Express needs
// @as-integrations/express5. Each mutation defers one job (-> MemorySink "jobs") and one log
// (-> MemorySink "telemetry").
const GRAPHQL_DEPS = {
  11: { '@nestjs/graphql': '~13.1.0', '@nestjs/apollo': '~13.1.0', '@apollo/server': '^4.11.3', graphql: '^16.11.0' },
  12: { '@nestjs/graphql': '^14.0.0', '@nestjs/apollo': '^14.0.0', '@apollo/server': '^5.0.0', '@as-integrations/express5': '^1.0.0', graphql: '^16.11.0' },
};
const GRAPHQL_REQUESTS = 3;
// Unique per run and app: the apps share one private Redis, and never touch another run's keys.
const BULLMQ_RUN = `consumer-${process.pid}-${Date.now().toString(36)}`;

// What `nest new` writes, with the default (non-strict) answers. CommonJS: the Nest 10 starter
// (`module: commonjs`, i.e. node10 resolution, which ignores `exports`). ESM: the Nest 12 `ts-esm`
// starter (`module: nodenext`, `"type": "module"`, `.js` suffixes in relative imports).
const TSCONFIG_CJS = {
  compilerOptions: {
    module: 'commonjs',
    declaration: true,
    removeComments: true,
    emitDecoratorMetadata: true,
    experimentalDecorators: true,
    allowSyntheticDefaultImports: true,
    target: 'ES2021',
    sourceMap: true,
    outDir: './dist',
    baseUrl: './',
    incremental: true,
    skipLibCheck: true,
    strictNullChecks: false,
    noImplicitAny: false,
    strictBindCallApply: false,
    forceConsistentCasingInFileNames: false,
    noFallthroughCasesInSwitch: false,
  },
};
// The CommonJS starter of `nest new` 11 and 12 (`module: nodenext` in a package without "type"):
// type-checked too, so both CommonJS resolutions (node10 and node16+) are covered.
const TSCONFIG_CJS_NODENEXT = {
  compilerOptions: {
    module: 'nodenext',
    moduleResolution: 'nodenext',
    resolvePackageJsonExports: true,
    esModuleInterop: true,
    isolatedModules: true,
    declaration: true,
    removeComments: true,
    emitDecoratorMetadata: true,
    experimentalDecorators: true,
    allowSyntheticDefaultImports: true,
    target: 'ES2023',
    sourceMap: true,
    outDir: './dist-nodenext',
    baseUrl: './',
    incremental: false,
    skipLibCheck: true,
    strictNullChecks: true,
    forceConsistentCasingInFileNames: true,
    noImplicitAny: false,
    strictBindCallApply: false,
    noFallthroughCasesInSwitch: false,
  },
};
const TSCONFIG_ESM = {
  compilerOptions: {
    module: 'nodenext',
    moduleResolution: 'nodenext',
    resolvePackageJsonExports: true,
    esModuleInterop: true,
    isolatedModules: true,
    declaration: true,
    removeComments: true,
    emitDecoratorMetadata: true,
    experimentalDecorators: true,
    allowSyntheticDefaultImports: true,
    target: 'ES2023',
    sourceMap: true,
    outDir: './dist',
    rootDir: '.',
    incremental: true,
    skipLibCheck: true,
    strict: false,
    strictPropertyInitialization: false,
    types: ['node'],
  },
};

// Files allowed in the tarball (src/: the TypeScript sources the source maps point at, no specs).
const ALLOWED_FILE = /^(dist\/.+\.(js|cjs|d\.ts|d\.cts|js\.map|cjs\.map)|src\/.+(?<!\.spec)\.ts|README\.md|LICENSE|package\.json)$/;
const REQUIRED_FILES = ['package.json', 'README.md', 'LICENSE'];
const SUBPATHS = ['.', './bull', './bullmq', './prometheus', './opentelemetry', './microservices', './sql', './redis-streams', './sqs', './sns', './testing'];

const children = new Set();
let workDir;

function listEnv(name, fallback) {
  return (process.env[name] ?? fallback)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** A step failed: `output` is what the failing command printed. */
class StepError extends Error {
  constructor(step, message, output = '') {
    super(message);
    this.step = step;
    this.output = output;
  }
}

/** The environment of every child: ours minus the package manager's per-run settings. */
function childEnv(extra = {}) {
  const env = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(npm_|pnpm_|PNPM_)/i.test(key) || key === 'NODE_OPTIONS' || key === 'INIT_CWD') continue;
    env[key] = value;
  }
  return {
    ...env,
    npm_config_cache: NPM_CACHE,
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
    npm_config_yes: 'true',
    ...extra,
  };
}

/** Runs a command to completion (killed with its process group after `timeoutMs`). */
function run(step, command, args, { cwd, timeoutMs, env = childEnv() }) {
  return new Promise((resolvePromise, reject) => {
    const started = Date.now();
    const child = spawn(command, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child, 'SIGKILL');
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      children.delete(child);
      reject(new StepError(step, `could not start \`${command}\`: ${error.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      const output = joinOutput(stdout, stderr);
      const ms = Date.now() - started;
      if (timedOut) reject(new StepError(step, `\`${[command, ...args].join(' ')}\` timed out after ${timeoutMs} ms`, output));
      else if (code !== 0) {
        reject(new StepError(step, `\`${[command, ...args].join(' ')}\` exited with ${code ?? signal}`, output));
      } else resolvePromise({ stdout, stderr, ms });
    });
  });
}

function joinOutput(stdout, stderr) {
  return [stdout.trim() && `--- stdout\n${stdout.trim()}`, stderr.trim() && `--- stderr\n${stderr.trim()}`]
    .filter(Boolean)
    .join('\n');
}

function killGroup(child, signal) {
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      /* already gone */
    }
  }
}

function pnpmCommand() {
  const execPath = process.env.npm_execpath;
  if (execPath && /pnpm/i.test(execPath) && existsSync(execPath)) {
    return /\.(c?js|mjs)$/.test(execPath) ? [process.execPath, [execPath]] : [execPath, []];
  }
  return ['pnpm', []];
}

// ---------------------------------------------------------------------------------------------
// Step 1: build, pack, check the tarball.

async function packLibrary(packDir) {
  const [pnpm, pnpmArgs] = pnpmCommand();
  await run('build', pnpm, [...pnpmArgs, '--filter', PKG_NAME, 'build'], { cwd: ROOT, timeoutMs: 180_000 });
  const { stdout } = await run('npm pack', 'npm', ['pack', '--json', '--pack-destination', packDir], {
    cwd: PKG_DIR,
    timeoutMs: 180_000,
  });
  // Lifecycle scripts (prepack) print to stdout too; the JSON report is the last top-level array.
  const start = stdout.lastIndexOf('\n[\n') >= 0 ? stdout.lastIndexOf('\n[\n') + 1 : stdout.indexOf('[');
  let report;
  try {
    report = JSON.parse(stdout.slice(start));
  } catch (error) {
    throw new StepError('npm pack', `could not read the JSON report of npm pack: ${error.message}`, stdout);
  }
  const tarball = join(packDir, report[0].filename);
  if (!existsSync(tarball)) throw new StepError('npm pack', `npm pack reported ${report[0].filename} but it is not in ${packDir}`);
  return { tarball, files: report[0].files.map((f) => f.path) };
}

async function checkTarball(tarball, reportedFiles, extractDir) {
  mkdirSync(extractDir, { recursive: true });
  await run('tarball', 'tar', ['-xzf', tarball, '-C', extractDir], { cwd: extractDir, timeoutMs: 60_000 });
  const root = join(extractDir, 'package');
  const files = walk(root).sort();
  const problems = [];
  const reported = [...(reportedFiles ?? files)].sort();
  if (JSON.stringify(files) !== JSON.stringify(reported)) {
    problems.push(`npm pack --json listed [${reported.join(', ')}] but the tarball holds [${files.join(', ')}]`);
  }
  const unexpected = files.filter((f) => !ALLOWED_FILE.test(f));
  if (unexpected.length) {
    problems.push(`unexpected files in the tarball (only dist/**, src/** without specs, README.md, LICENSE, package.json belong there): ${unexpected.join(', ')}`);
  }
  for (const required of REQUIRED_FILES) {
    if (!files.includes(required)) problems.push(`${required} is missing from the tarball`);
  }
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const has = (target) => typeof target === 'string' && files.includes(target.replace(/^\.\//, ''));
  for (const field of ['main', 'module', 'types']) {
    if (manifest[field] !== undefined && !has(manifest[field])) problems.push(`"${field}": ${manifest[field]} is not in the tarball`);
  }
  for (const subpath of SUBPATHS) {
    const entry = manifest.exports?.[subpath];
    if (!entry) {
      problems.push(`exports["${subpath}"] is missing`);
      continue;
    }
    for (const condition of ['import', 'require']) {
      const target = entry[condition];
      if (!target || typeof target !== 'object') {
        problems.push(`exports["${subpath}"].${condition} is missing (expected { types, default })`);
        continue;
      }
      for (const key of ['types', 'default']) {
        if (!has(target[key])) problems.push(`exports["${subpath}"].${condition}.${key} = ${target[key]} is not in the tarball`);
      }
      const expectedExt = condition === 'import' ? ['.js', '.d.ts'] : ['.cjs', '.d.cts'];
      if (!String(target.default).endsWith(expectedExt[0]) || !String(target.types).endsWith(expectedExt[1])) {
        problems.push(`exports["${subpath}"].${condition} should point at ${expectedExt.join(' / ')} files, got ${JSON.stringify(target)}`);
      }
    }
  }
  // TypeScript's node10 resolution (`module: commonjs`) ignores `exports`: every subpath needs a
  // `typesVersions` entry pointing at its CommonJS types.
  for (const subpath of SUBPATHS.filter((s) => s !== '.')) {
    const sub = subpath.slice(2);
    const mapped = manifest.typesVersions?.['*']?.[sub];
    const expected = manifest.exports?.[subpath]?.require?.types;
    if (!Array.isArray(mapped) || mapped.length !== 1 || mapped[0] !== expected) {
      problems.push(`typesVersions["*"]["${sub}"] should be ["${expected}"] (the require types of exports["${subpath}"]) for \`module: commonjs\` consumers, got ${JSON.stringify(mapped)}`);
    }
  }
  for (const [range, map] of Object.entries(manifest.typesVersions ?? {})) {
    for (const [pattern, targets] of Object.entries(map)) {
      for (const target of targets) {
        if (!target.includes('*') && !has(target)) problems.push(`typesVersions["${range}"]["${pattern}"] -> ${target} is not in the tarball`);
      }
    }
  }
  for (const [field, deps] of Object.entries({ dependencies: manifest.dependencies, peerDependencies: manifest.peerDependencies })) {
    for (const [name, range] of Object.entries(deps ?? {})) {
      if (/^(workspace|link|file):/.test(String(range))) problems.push(`${field}.${name} = "${range}" cannot be installed from the registry`);
    }
  }
  problems.push(...checkImports(root, files, manifest));
  if (problems.length) throw new StepError('tarball contents', problems.join('\n'), `files:\n  ${files.join('\n  ')}`);
  return files;
}

/**
 * What dist loads must be installable: every package it imports or requires by a literal name (static
 * or dynamic) is a dependency or a peer dependency of the manifest, and no third-party package was
 * bundled into dist (a bundled copy, e.g. of nestjs-cls, would hand out classes the app's own copy
 * does not know). Source maps name what was bundled; tsup's own shims (import.meta.url in CommonJS) are
 * the one allowed exception.
 */
function checkImports(root, files, manifest) {
  const problems = [];
  const declared = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {}), PKG_NAME]);
  const undeclared = new Map();
  // `import … from 'x'`, `export … from 'x'`, `import 'x'`, `import('x')`, `require('x')`.
  const specifier = /(?:\b(?:import|export)\s[^;'"`]*?\bfrom\s*|^\s*import\s*|\bimport\s*\(\s*|\brequire\s*\(\s*)(["'])([^"'\s$]+)\1/gm;
  for (const file of files.filter((f) => /^dist\/.+\.(c?js|d\.c?ts)$/.test(f))) {
    const text = readFileSync(join(root, file), 'utf8');
    for (const [, , spec] of text.matchAll(specifier)) {
      if (spec.startsWith('.') || spec.startsWith('node:') || builtinModules.includes(spec)) continue;
      const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];
      if (!declared.has(name)) undeclared.set(name, [...(undeclared.get(name) ?? []), file]);
    }
  }
  for (const [name, where] of undeclared) {
    problems.push(`dist loads "${name}" (${[...new Set(where)].slice(0, 3).join(', ')}), which is neither a dependency nor a peer dependency`);
  }
  const bundled = new Set();
  for (const file of files.filter((f) => f.endsWith('.map'))) {
    for (const source of JSON.parse(readFileSync(join(root, file), 'utf8')).sources ?? []) {
      const match = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(source);
      if (match && !(match[1] === 'tsup' && match[2].startsWith('assets/'))) bundled.add(match[1]);
    }
  }
  if (bundled.size) problems.push(`dist bundles third-party code (${[...bundled].join(', ')}): make each an (optional) peer dependency so the build leaves it external`);
  return problems;
}

function walk(dir, base = dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...walk(full, base));
    else out.push(relative(base, full).split('\\').join('/'));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Step 2: one fresh app per Nest major and module format (and a BullMQ app for Nest 11 and 12).

function writeApp(dir, major, format, tarball, kind) {
  mkdirSync(join(dir, 'src'), { recursive: true });
  const pkg = {
    name: `consumer-nest${major}-${format}${kind === 'basic' ? '' : `-${kind}`}`,
    version: '0.0.1',
    private: true,
    license: 'UNLICENSED',
    ...(format === 'esm' ? { type: 'module' } : {}),
    scripts: { build: 'tsc -p tsconfig.json' },
    dependencies: {
      '@nestjs/common': `^${major}.0.0`,
      '@nestjs/core': `^${major}.0.0`,
      '@nestjs/platform-express': `^${major}.0.0`,
      [PKG_NAME]: `file:${tarball}`,
      'reflect-metadata': '^0.2.0',
      rxjs: '^7.8.1',
      ...(kind === 'basic' ? basicDeps(major) : {}),
      ...(kind === 'bullmq' ? BULLMQ_DEPS[major] : {}),
      ...(kind === 'graphql' ? GRAPHQL_DEPS[major] : {}),
    },
    devDependencies: {
      '@types/node': '^20.19.0',
      typescript: '^5.0.0',
    },
  };
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  writeFileSync(join(dir, 'tsconfig.json'), `${JSON.stringify(format === 'esm' ? TSCONFIG_ESM : TSCONFIG_CJS, null, 2)}\n`);
  if (format === 'cjs') {
    writeFileSync(join(dir, 'tsconfig.nodenext.json'), `${JSON.stringify(TSCONFIG_CJS_NODENEXT, null, 2)}\n`);
  }
  for (const file of readdirSync(FIXTURE_SRC[kind])) {
    let source = readFileSync(join(FIXTURE_SRC[kind], file), 'utf8');
    // A CommonJS app written by hand has no `.js` suffixes on relative imports.
    if (format === 'cjs') source = source.replace(/(from\s+'\.{1,2}\/[^']+)\.js'/g, "$1'");
    writeFileSync(join(dir, 'src', file), source);
  }
}

/** Resolves every subpath through Node's `require` and `import` conditions, from inside the app. */
const RESOLVE_CHECK = `
const { createRequire } = await import('node:module');
const { existsSync } = await import('node:fs');
const require = createRequire(process.cwd() + '/package.json');
const out = [];
for (const sub of ${JSON.stringify(SUBPATHS.map((s) => (s === '.' ? PKG_NAME : `${PKG_NAME}/${s.slice(2)}`)))}) {
  const viaRequire = require.resolve(sub);
  const viaImport = new URL(import.meta.resolve(sub)).pathname;
  if (!viaRequire.endsWith('.cjs')) throw new Error(sub + ': require resolved ' + viaRequire + ', expected a .cjs file');
  if (!viaImport.endsWith('.js')) throw new Error(sub + ': import resolved ' + viaImport + ', expected a .js file');
  for (const p of [viaRequire, viaImport]) if (!existsSync(p)) throw new Error(sub + ': ' + p + ' does not exist');
  out.push(sub);
}
console.log('resolved ' + out.join(', '));
`;

function installedVersion(dir, name) {
  return JSON.parse(readFileSync(join(dir, 'node_modules', name, 'package.json'), 'utf8')).version;
}

/** The file TypeScript listed among the program's files (`--listFiles`, absolute paths) that ends with `suffix`. */
function listedFile(stdout, suffix) {
  return stdout
    .split('\n')
    .map((line) => line.trim())
    .find((line) => line.endsWith(suffix));
}

/**
 * Creates, installs and compiles one app (with the system node); returns what `runChecks` needs.
 * The exports resolution and the app itself are checked per Node runtime by `runChecks`.
 */
async function setupApp(dir, major, format, tarball, kind, redis) {
  const timings = {};
  if (kind === 'bullmq' && !redis.server) throw new StepError('redis', redis.error?.message ?? 'no Redis was started');
  writeApp(dir, major, format, tarball, kind);
  let t = await run('npm install', 'npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], {
    cwd: dir,
    timeoutMs: 300_000,
  });
  timings.install = t.ms;
  const installed = installedVersion(dir, '@nestjs/core');
  if (!installed.startsWith(`${major}.`)) throw new StepError('npm install', `installed @nestjs/core ${installed}, expected ${major}.x`);
  let versions = `nest ${installed}`;
  if (kind === 'bullmq') {
    const bullmq = installedVersion(dir, 'bullmq');
    const nestBullmq = installedVersion(dir, '@nestjs/bullmq');
    const wanted = { bullmq: BULLMQ_DEPS[major].bullmq.match(/\d+/)[0], '@nestjs/bullmq': String(major) };
    if (!bullmq.startsWith(`${wanted.bullmq}.`) || !nestBullmq.startsWith(`${wanted['@nestjs/bullmq']}.`)) {
      throw new StepError('npm install', `installed bullmq ${bullmq} and @nestjs/bullmq ${nestBullmq}, expected ${wanted.bullmq}.x and ${wanted['@nestjs/bullmq']}.x`);
    }
    versions += `, bullmq ${bullmq}, @nestjs/bullmq ${nestBullmq}`;
  }
  if (kind === 'graphql') {
    const got = Object.fromEntries(['@nestjs/graphql', '@nestjs/apollo', '@apollo/server'].map((name) => [name, installedVersion(dir, name)]));
    const wanted = { '@nestjs/graphql': major === '11' ? '13' : '14', '@nestjs/apollo': major === '11' ? '13' : '14', '@apollo/server': major === '11' ? '4' : '5' };
    const wrong = Object.keys(wanted).filter((name) => !got[name].startsWith(`${wanted[name]}.`));
    if (wrong.length) throw new StepError('npm install', `installed ${JSON.stringify(got)}, expected ${JSON.stringify(wanted)} majors`);
    versions += `, ${Object.entries(got).map(([name, version]) => `${name} ${version}`).join(', ')}`;
  }
  if (kind === 'basic') {
    // The optional peers of the package, of the app's own Nest major, must install beside it.
    const got = Object.fromEntries(Object.keys(basicDeps(major)).map((name) => [name, installedVersion(dir, name)]));
    const wrong = Object.entries(got).filter(([, version]) => !version.startsWith(`${major}.`));
    if (wrong.length) throw new StepError('npm install', `installed ${JSON.stringify(got)}, expected ${major}.x of each`);
    versions += `, ${Object.entries(got).map(([name, version]) => `${name} ${version}`).join(', ')}`;
  }

  const tsc = join(dir, 'node_modules', 'typescript', 'bin', 'tsc');
  // The BullMQ app imports the ./bullmq subpath: its types must come from the build of the app's
  // module system (`.d.cts` through typesVersions or exports' require condition, `.d.ts` through import).
  const typesCheck = kind === 'bullmq' ? ['--listFiles'] : [];
  const subpathTypes = (fmt) => `node_modules/${PKG_NAME}/dist/bullmq/index.${fmt === 'cjs' ? 'd.cts' : 'd.ts'}`;
  t = await run('tsc', process.execPath, [tsc, '-p', 'tsconfig.json', ...typesCheck], { cwd: dir, timeoutMs: 180_000 });
  timings.tsc = t.ms;
  if (kind === 'bullmq' && !listedFile(t.stdout, subpathTypes(format))) {
    throw new StepError('tsc', `${PKG_NAME}/bullmq did not resolve to ${subpathTypes(format)} under tsconfig.json`, t.stdout);
  }
  if (format === 'cjs') {
    t = await run('tsc (nest 11+ CommonJS tsconfig, nodenext)', process.execPath, [tsc, '-p', 'tsconfig.nodenext.json', '--noEmit', ...typesCheck], {
      cwd: dir,
      timeoutMs: 180_000,
    });
    if (kind === 'bullmq' && !listedFile(t.stdout, subpathTypes('cjs'))) {
      throw new StepError('tsc', `${PKG_NAME}/bullmq did not resolve to ${subpathTypes('cjs')} under tsconfig.nodenext.json`, t.stdout);
    }
  }
  const main = ['dist/main.js', 'dist/src/main.js'].find((p) => existsSync(join(dir, p)));
  if (!main) throw new StepError('tsc', 'tsc emitted no dist/main.js or dist/src/main.js', walk(join(dir, 'dist')).join('\n'));
  // The app really is what it claims: CommonJS loads Nest and the library with require(), ESM with import.
  const loadsAs = (specifier) => (format === 'cjs' ? new RegExp(`require\\("${specifier}"\\)`) : new RegExp(`from '${specifier}'`));
  const how = format === 'cjs' ? 'CommonJS (require)' : 'ESM (import)';
  const compiled = readFileSync(join(dir, main), 'utf8');
  if (!loadsAs(PKG_NAME).test(compiled)) throw new StepError('tsc', `${main} does not load the library as ${how}`, compiled);
  if (kind === 'bullmq') {
    const appModule = join(dirname(main), 'app.module.js');
    const compiledModule = readFileSync(join(dir, appModule), 'utf8');
    if (!loadsAs(`${PKG_NAME}/bullmq`).test(compiledModule)) throw new StepError('tsc', `${appModule} does not load ${PKG_NAME}/bullmq as ${how}`, compiledModule);
  }
  return { dir, major, format, kind, main, versions, timings };
}

/** Checks a set-up app under one Node runtime: exports resolution, then the app over HTTP. */
async function runChecks(app, runtime, redis) {
  const { dir, major, format, kind, main, versions, timings } = app;
  await run('exports resolution', runtime.bin, ['--input-type=module', '-e', RESOLVE_CHECK], { cwd: dir, timeoutMs: 30_000 });
  const started = Date.now();
  if (kind === 'bullmq') {
    const prefix = `${BULLMQ_RUN}-nest${major}-${format}`;
    // The offloaded audit sink is spooled: a fresh directory per app, removed after it.
    const spoolDir = mkdtempSync(join(tmpdir(), 'consumer-spool-'));
    try {
      await runApp(runtime, dir, main, (base, output) => driveBullMq(base, output, redis.server, prefix), {
        CONSUMER_REDIS_PORT: String(redis.server.port),
        CONSUMER_BULLMQ_PREFIX: prefix,
        CONSUMER_SPOOL_DIR: spoolDir,
      });
    } finally {
      rmSync(spoolDir, { recursive: true, force: true });
    }
  } else if (kind === 'graphql') {
    await runApp(runtime, dir, main, (base, output) => driveGraphql(base, output));
  } else {
    // Each runtime starts from an app that has written nothing yet.
    rmSync(join(dir, AUDIT_FILE), { force: true });
    await runTestingCheck(runtime, dir, main);
    await runApp(runtime, dir, main, (base, output) => driveBasic(dir, base, output));
  }
  const ran = `run ${secs(Date.now() - started)}`;
  if (!runtime.system) return `node ${runtime.version}, ${ran}`;
  return `${versions}, install ${secs(timings.install)}, tsc ${secs(timings.tsc)}, ${ran}`;
}

/**
 * The basic app's `testing-check.js`: its AppModule under @nestjs/testing with `withMemorySinks()`;
 * one POST must reach the memory sink that replaced the app's file sink, and nothing the file.
 */
async function runTestingCheck(runtime, dir, main) {
  const script = join(dirname(main), 'testing-check.js');
  const { stdout, stderr } = await run('@nestjs/testing', runtime.bin, [script], { cwd: dir, timeoutMs: 60_000 });
  const output = joinOutput(stdout, stderr);
  const line = /^CONSUMER_TESTING (.*)$/m.exec(stdout);
  if (!line) throw new StepError('@nestjs/testing', `${script} printed no CONSUMER_TESTING line`, output);
  const result = JSON.parse(line[1]);
  const problems = [];
  if (result.status !== 201 || result.body?.id !== 'testing-1') problems.push(`POST /orders answered ${result.status} ${JSON.stringify(result.body)}, expected 201 {"id":"testing-1"}`);
  const jobs = result.jobSink?.items ?? [];
  if (result.jobSink?.name !== 'audit' || jobs.length !== 1 || jobs[0].kind !== 'job' || jobs[0].queue !== 'mail' || jobs[0].name !== 'order-confirmation' || jobs[0].data?.orderId !== 'testing-1') {
    problems.push(`DeferredWorkTesting.sink() is ${JSON.stringify(result.jobSink)}, expected the memory sink "audit" holding the one order-confirmation job of testing-1`);
  }
  if (JSON.stringify(result.kinds) !== '[1,1,1]') problems.push(`items(job/log/metric) counted ${JSON.stringify(result.kinds)}, expected [1,1,1]`);
  if (existsSync(join(dir, AUDIT_FILE))) problems.push(`withMemorySinks() left the app's own file sink writing ${AUDIT_FILE}`);
  if (/\bERROR\b|Unhandled|uncaught/i.test(stdout + stderr)) problems.push('the testing script logged an error');
  if (problems.length) throw new StepError('@nestjs/testing', problems.join('\n'), output);
}

function secs(ms) {
  return `${(ms / 1000).toFixed(1)}s`;
}

/** Starts the compiled app, drives it over HTTP with `drive(base, output)` and stops it with SIGTERM. */
async function runApp(runtime, dir, main, drive, env = {}, listen = undefined) {
  const child = spawn(runtime.bin, [main], { cwd: dir, env: childEnv(env), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let stdout = '';
  let stderr = '';
  let exited = null;
  const exit = new Promise((resolveExit) => {
    child.on('close', (code, signal) => {
      children.delete(child);
      exited = { code, signal };
      resolveExit(exited);
    });
  });
  const port = new Promise((resolvePort) => {
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      const match = listen ? listen.ready.test(stdout) && [, listen.port] : /CONSUMER_LISTENING (\d+)/.exec(stdout);
      if (match) resolvePort(Number(match[1]));
    });
  });
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const output = () => joinOutput(stdout, stderr);
  try {
    const listening = await Promise.race([port, exit.then(() => null), delay(30_000).then(() => undefined)]);
    if (listening === null) throw new StepError('start', `the app exited with ${exited.code ?? exited.signal} before listening`, output());
    if (listening === undefined) throw new StepError('start', 'the app did not print CONSUMER_LISTENING within 30 s', output());
    const base = `http://127.0.0.1:${listening}`;
    const afterStop = await drive(base, output);

    // Graceful stop: enableShutdownHooks drains and Nest re-raises the signal.
    killGroup(child, 'SIGTERM');
    const stopped = await Promise.race([exit, delay(15_000).then(() => null)]);
    if (!stopped) throw new StepError('stop', 'the app did not exit within 15 s of SIGTERM', output());
    if (!(stopped.code === 0 || stopped.signal === 'SIGTERM')) throw new StepError('stop', `the app exited with ${stopped.code ?? stopped.signal} on SIGTERM`, output());
    if (/\bERROR\b|Unhandled|uncaught/i.test(stdout + stderr)) throw new StepError('logs', 'the app logged an error', output());
    await afterStop?.();
  } finally {
    if (!exited) {
      killGroup(child, 'SIGKILL');
      await Promise.race([exit, delay(5_000)]);
    }
  }
}

/** Whether something accepts a TCP connection on 127.0.0.1:`port` now. */
function accepts(port) {
  return new Promise((resolveAccepts) => {
    const socket = connectTcp(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolveAccepts(true)));
    socket.once('error', () => resolveAccepts(false));
  });
}

/** A TCP port free on 127.0.0.1 now. */
function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createNetServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

/** The basic app: jobs to a custom sink, logs and metrics to a MemorySink, a callback. */
async function driveBasic(dir, base, output) {
  for (let i = 1; i <= REQUESTS; i++) {
    const id = `order-${i}`;
    const res = await http('POST', `${base}/orders`, { id });
    if (res.status !== 201 || res.body?.id !== id) {
      throw new StepError('http', `POST /orders {"id":"${id}"} answered ${res.status} ${JSON.stringify(res.body)}, expected 201 {"id":"${id}"}`, output());
    }
    const stats = await waitForDelivered(base, i * ITEMS_PER_REQUEST, output);
    const probe = stats.probes.filter((p) => p.method === 'POST' && p.url === '/orders')[i - 1];
    if (!probe) throw new StepError('http', `no finish probe recorded for POST /orders number ${i}`, output());
    // When the response finished, nothing of this request had been handed to the dispatcher or
    // written to the audit file yet: the work ran after the response.
    const before = (i - 1) * ITEMS_PER_REQUEST;
    if (probe.acceptedAtFinish !== before || probe.deliveredAtFinish !== before || probe.auditLinesAtFinish !== i - 1) {
      throw new StepError('after-response', `at the finish of POST /orders number ${i} the library had already taken its work: ${JSON.stringify(probe)} (expected accepted = delivered = ${before}, ${i - 1} audit lines)`, output());
    }
  }

  const { body } = await http('GET', `${base}/__consumer/stats`);
  const { stats } = body;
  const problems = [];
  const total = REQUESTS * ITEMS_PER_REQUEST;
  if (stats.accepted !== total || stats.delivered !== total) problems.push(`accepted ${stats.accepted}, delivered ${stats.delivered}, expected ${total}`);
  if (stats.dropped || stats.deadLettered || stats.rejected || stats.pending) problems.push('items were dropped, dead-lettered, rejected or left pending');
  const expectedPerSink = { audit: REQUESTS, memory: 2 * REQUESTS, callbacks: REQUESTS };
  for (const [sink, count] of Object.entries(expectedPerSink)) {
    if (stats.sinks?.[sink]?.delivered !== count) problems.push(`sink "${sink}" delivered ${stats.sinks?.[sink]?.delivered}, expected ${count}`);
  }
  if (stats.requests?.finished !== REQUESTS) problems.push(`requests.finished is ${stats.requests?.finished}, expected ${REQUESTS}`);
  if (body.testingSubpathSameClass !== true) problems.push(`${PKG_NAME}/testing exports a different MemorySink class than ${PKG_NAME}`);
  const audit = readFileSync(join(dir, AUDIT_FILE), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const jobIds = audit.map((item) => (item.kind === 'job' && item.queue === 'mail' && item.name === 'order-confirmation' ? item.data?.orderId : `unexpected ${JSON.stringify(item)}`));
  if (JSON.stringify(jobIds) !== JSON.stringify(Array.from({ length: REQUESTS }, (_, k) => `order-${k + 1}`))) {
    problems.push(`audit file holds ${JSON.stringify(jobIds)}, expected the ${REQUESTS} order-confirmation jobs in order`);
  }
  if (problems.length) throw new StepError('stats', problems.join('\n'), `${JSON.stringify(body, null, 2)}\n${output()}`);

  // The health check: Terminus's HealthCheckService runs the package's DeferredWorkHealthIndicator.
  const health = await http('GET', `${base}/health`);
  const indicator = health.body?.info?.deferredWork;
  const sinks = Object.keys(indicator?.sinks ?? {}).sort();
  if (
    health.status !== 200 ||
    health.body?.status !== 'ok' ||
    indicator?.status !== 'up' ||
    indicator.degraded !== false ||
    indicator.reasons?.length !== 0 ||
    JSON.stringify(sinks) !== JSON.stringify(['audit', 'callbacks', 'memory']) ||
    indicator.sinks.audit.pending !== 0 ||
    indicator.sinks.audit.dropped !== 0
  ) {
    throw new StepError('health', `GET /health answered ${health.status} ${JSON.stringify(health.body)}, expected 200 with status "ok" and the deferredWork indicator up, not degraded, listing the sinks audit, callbacks and memory`, output());
  }
}

/**
 * The GraphQL app: each `placeOrder` mutation defers a job and a log from its resolver; when the HTTP
 * response of the GraphQL request finished, neither had reached the library's dispatcher yet.
 */
async function driveGraphql(base, output) {
  for (let i = 1; i <= GRAPHQL_REQUESTS; i++) {
    const id = `order-${i}`;
    const res = await http('POST', `${base}/graphql`, { query: `mutation { placeOrder(id: "${id}") { id } }` });
    if (res.status !== 200 || res.body?.data?.placeOrder?.id !== id || res.body?.errors) {
      throw new StepError('http', `POST /graphql placeOrder(id: "${id}") answered ${res.status} ${JSON.stringify(res.body)}, expected 200 {"data":{"placeOrder":{"id":"${id}"}}}`, output());
    }
    const stats = await waitForDelivered(base, i * 2, output);
    const probe = stats.probes.filter((p) => p.method === 'POST' && p.url === '/graphql')[i - 1];
    if (!probe) throw new StepError('http', `no finish probe recorded for POST /graphql number ${i}`, output());
    const before = (i - 1) * 2;
    if (probe.status !== 200 || probe.acceptedAtFinish !== before || probe.deliveredAtFinish !== before || probe.sinkItemsAtFinish !== before) {
      throw new StepError('after-response', `at the finish of POST /graphql number ${i} the library had already taken its work: ${JSON.stringify(probe)} (expected accepted = delivered = sink items = ${before})`, output());
    }
  }
  const { body } = await http('GET', `${base}/__consumer/stats`);
  const { stats } = body;
  const n = GRAPHQL_REQUESTS;
  const problems = [];
  if (stats.accepted !== 2 * n || stats.delivered !== 2 * n) problems.push(`accepted ${stats.accepted}, delivered ${stats.delivered}, expected ${2 * n}`);
  if (stats.dropped || stats.deadLettered || stats.rejected || stats.pending || stats.skipped) problems.push('items were dropped, dead-lettered, rejected, skipped or left pending');
  if (stats.requests?.finished !== n) problems.push(`requests.finished is ${stats.requests?.finished}, expected ${n}`);
  const ids = Array.from({ length: n }, (_, k) => `order-${k + 1}`);
  const jobIds = (body.jobs ?? []).map((item) => (item.kind === 'job' && item.queue === 'mail' && item.name === 'order-confirmation' ? item.data?.orderId : `unexpected ${JSON.stringify(item)}`));
  const logIds = (body.telemetry ?? []).map((item) => (item.kind === 'log' && item.message === 'order placed' ? item.fields?.orderId : `unexpected ${JSON.stringify(item)}`));
  if (JSON.stringify(jobIds) !== JSON.stringify(ids)) problems.push(`sink "jobs" holds ${JSON.stringify(jobIds)}, expected the ${n} order-confirmation jobs in order`);
  if (JSON.stringify(logIds) !== JSON.stringify(ids)) problems.push(`sink "telemetry" holds ${JSON.stringify(logIds)}, expected the ${n} "order placed" logs in order`);
  if (problems.length) throw new StepError('stats', problems.join('\n'), `${JSON.stringify(body, null, 2)}\n${output()}`);
}

/**
 * The BullMQ app: each POST defers a job to BullMqSink and a log to a MemorySink; the app's own
 * @Processor consumes the job from the private Redis. N requests must give N jobs processed once.
 */
async function driveBullMq(base, output, redis, prefix) {
  for (let i = 1; i <= BULLMQ_REQUESTS; i++) {
    const id = `order-${i}`;
    const res = await http('POST', `${base}/orders/${id}`);
    if (res.status !== 201 || res.body?.id !== id) {
      throw new StepError('http', `POST /orders/${id} answered ${res.status} ${JSON.stringify(res.body)}, expected 201 {"id":"${id}"}`, output());
    }
    const report = await waitForReport(base, `${i} jobs processed`, (r) => r.processed?.length >= i, output);
    const probe = report.probes.find((p) => p.method === 'POST' && p.url === `/orders/${id}`);
    if (!probe) throw new StepError('http', `no finish probe recorded for POST /orders/${id}`, output());
    // When the response finished, the sink had not been handed this request's job yet.
    if (probe.acceptedAtFinish !== i - 1 || probe.processedAtFinish !== i - 1) {
      throw new StepError('after-response', `at the finish of POST /orders/${id} the job was already taken: ${JSON.stringify(probe)} (expected ${i - 1} accepted by the bullmq sink and ${i - 1} processed)`, output());
    }
  }
  const body = await waitForReport(
    base,
    `${BULLMQ_REQUESTS} jobs completed and ${BULLMQ_REQUESTS} audit jobs processed`,
    (r) => r.queue?.counts?.completed >= BULLMQ_REQUESTS && r.audit?.length >= BULLMQ_REQUESTS,
    output,
  );
  const { stats, processed, queue, audit } = body;
  const problems = [];
  const n = BULLMQ_REQUESTS;
  const expected = Array.from({ length: n }, (_, k) => ({ id: `order-confirmation-order-${k + 1}`, queue: 'mail', name: 'order-confirmation', data: { orderId: `order-${k + 1}` }, attempts: 3 }));
  if (JSON.stringify(processed) !== JSON.stringify(expected)) {
    problems.push(`the processor ran ${JSON.stringify(processed)}, expected each of the ${n} jobs once, in order: ${JSON.stringify(expected)}`);
  }
  const sink = stats.sinks?.[body.sinkName];
  if (body.sinkName !== 'bullmq' || sink?.accepted !== n || sink?.delivered !== n) problems.push(`sink "${body.sinkName}" accepted ${sink?.accepted}, delivered ${sink?.delivered}, expected ${n}`);
  if (stats.sinks?.telemetry?.delivered !== n) problems.push(`sink "telemetry" delivered ${stats.sinks?.telemetry?.delivered} logs, expected ${n}`);
  // The offloaded sink (BullMqSink.offloaded, a worker thread started from the installed package's dist/worker).
  const audited = (audit ?? []).map((job) => job.data?.orderId).sort();
  const expectedAudit = Array.from({ length: n }, (_, k) => `order-${k + 1}`).sort();
  if (JSON.stringify(audited) !== JSON.stringify(expectedAudit) || new Set((audit ?? []).map((job) => job.id)).size !== n) {
    problems.push(`the audit processor ran ${JSON.stringify(audit)}, expected one job per order with its own id: ${JSON.stringify(expectedAudit)}`);
  }
  const offloaded = stats.sinks?.['audit-jobs'];
  if (offloaded?.delivered !== n || offloaded?.host?.thread !== 'worker' || offloaded?.host?.restarts !== 0) {
    problems.push(`sink "audit-jobs" (offloaded) delivered ${offloaded?.delivered} (expected ${n}), host ${JSON.stringify(offloaded?.host)}`);
  }
  // ...behind the disk spool: every job appended and acked, none left, nothing replayed (a fresh directory).
  const spool = offloaded?.spool;
  if (spool?.appended !== n || spool?.acked !== n || spool?.pending !== 0 || spool?.replayed !== 0 || spool?.refused !== 0) {
    problems.push(`sink "audit-jobs" spool ${JSON.stringify(spool)}, expected ${n} appended and acked, none pending, replayed or refused`);
  }
  if (stats.accepted !== 3 * n || stats.delivered !== 3 * n) problems.push(`accepted ${stats.accepted}, delivered ${stats.delivered}, expected ${3 * n}`);
  if (stats.dropped || stats.deadLettered || stats.rejected || stats.pending) problems.push('items were dropped, dead-lettered, rejected or left pending');
  if (stats.requests?.finished !== n) problems.push(`requests.finished is ${stats.requests?.finished}, expected ${n}`);
  if (body.queueTokenMatches !== true) problems.push("bullMqQueueToken('mail') differs from getQueueToken('mail') of @nestjs/bullmq");
  const counts = queue?.counts ?? {};
  if (queue?.name !== 'mail' || counts.completed !== n || counts.failed || counts.waiting || counts.active || counts.delayed) {
    problems.push(`queue ${queue?.name} counts ${JSON.stringify(counts)}, expected ${n} completed and nothing else`);
  }
  if (problems.length) throw new StepError('stats', problems.join('\n'), `${JSON.stringify(body, null, 2)}\n${output()}`);

  // After the app stopped: the jobs are in this app's key prefix of the private Redis, and nothing
  // was written under BullMQ's default prefix.
  return async () => {
    const completed = await redis.command('ZCARD', `${prefix}:mail:completed`);
    const defaults = await redis.command('EXISTS', 'bull:mail:id', 'bull:mail:meta', 'bull:mail:completed');
    if (completed !== `:${n}` || defaults !== ':0') {
      throw new StepError('redis', `ZCARD ${prefix}:mail:completed = ${completed} (expected :${n}); keys under the default "bull:" prefix: ${defaults} (expected :0)`, output());
    }
  };
}

async function waitForReport(base, what, done, output) {
  const deadline = Date.now() + 10_000;
  let last;
  while (Date.now() < deadline) {
    last = (await http('GET', `${base}/__consumer/processed`)).body;
    if (done(last)) return last;
    await delay(50);
  }
  throw new StepError('processing', `not ${what} within 10 s`, `${JSON.stringify(last, null, 2)}\n${output()}`);
}

async function waitForDelivered(base, count, output) {
  const deadline = Date.now() + 10_000;
  let last;
  while (Date.now() < deadline) {
    last = (await http('GET', `${base}/__consumer/stats`)).body;
    if (last?.stats?.delivered >= count) return last;
    await delay(50);
  }
  throw new StepError('delivery', `only ${last?.stats?.delivered} of ${count} items delivered within 10 s`, `${JSON.stringify(last?.stats)}\n${output()}`);
}

async function http(method, url, json) {
  let res;
  try {
    res = await fetch(url, {
      method,
      signal: AbortSignal.timeout(5_000),
      ...(json === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(json) }),
    });
  } catch (error) {
    throw new StepError('http', `${method} ${url} failed: ${error.cause?.message ?? error.message}`);
  }
  const text = await res.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, body };
}

function delay(ms) {
  return new Promise((r) => setTimeout(r, ms).unref());
}

async function pool(tasks, size) {
  const results = new Array(tasks.length);
  let next = 0;
  async function worker() {
    while (next < tasks.length) {
      const index = next++;
      results[index] = await tasks[index]();
    }
  }
  await Promise.all(Array.from({ length: Math.min(size, tasks.length) }, worker));
  return results;
}

function report(label, outcome) {
  if (outcome.ok) {
    console.log(`${label}: ok (${outcome.detail})`);
  } else {
    const error = outcome.error;
    console.log(`${label}: FAILED at ${error.step ?? 'unknown step'}: ${error.message}`);
    if (error.output) console.log(error.output.replace(/^/gm, '    '));
    if (!(error instanceof StepError) && error.stack) console.log(error.stack.replace(/^/gm, '    '));
  }
}

let redisServer;
let wholeRunTimer;

function cleanup() {
  for (const child of children) killGroup(child, 'SIGKILL');
  redisServer?.kill();
  if (workDir && !KEEP) rmSync(workDir, { recursive: true, force: true });
}

const SYSTEM_NODE = { major: process.versions.node.split('.')[0], bin: process.execPath, version: process.version, system: true };

/**
 * The Node runtime of one CONSUMER_NODES entry: the system node for its own major, else the binary of
 * the registry's `node` package (`npm install node@<major>`, through the shared npm cache), installed
 * once into NODE_CACHE/<major> and reused while it still answers `--version` with that major.
 */
async function nodeRuntime(major) {
  if (!/^\d+$/.test(major)) throw new StepError('node', `CONSUMER_NODES: "${major}" is not a Node.js major version`);
  if (major === SYSTEM_NODE.major) return SYSTEM_NODE;
  const dir = join(NODE_CACHE, major);
  const bin = join(dir, 'node_modules', '.bin', 'node');
  let version = await binaryVersion(bin);
  let fetched = '';
  if (!version?.startsWith(`v${major}.`)) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: `consumer-node-${major}`, private: true }, null, 2)}\n`);
    // The package's preinstall script adds the binary of this platform (node-<os>-<arch>).
    const t = await run(`npm install node@${major}`, 'npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', `node@${major}`], {
      cwd: dir,
      timeoutMs: 600_000,
      env: childEnv({ npm_config_ignore_scripts: 'false' }),
    });
    fetched = `, installed in ${secs(t.ms)}`;
    version = await binaryVersion(bin);
  }
  if (!version?.startsWith(`v${major}.`)) throw new StepError('node', `${bin} answers --version with ${version ?? 'nothing'}, expected v${major}.x`);
  console.log(`node: ${version} from ${relative(ROOT, bin)}${fetched}`);
  return { major, bin, version, system: false };
}

async function binaryVersion(bin) {
  if (!existsSync(bin)) return undefined;
  try {
    return (await run('node --version', bin, ['--version'], { cwd: dirname(bin), timeoutMs: 30_000 })).stdout.trim();
  } catch {
    return undefined;
  }
}

/**
 * The matrix: the basic app for every major and format, the BullMQ and GraphQL apps for Nest 11 and 12,
 * the guide in the apps of @nestjs/cli 11 and 12 (CLI_APPS, by their Nest major and module type).
 */
function matrix() {
  const known = [...Object.keys(FIXTURE_SRC), 'guide'];
  const unknown = APPS.filter((app) => !known.includes(app));
  if (unknown.length) throw new Error(`CONSUMER_APPS: unknown app(s) ${unknown.join(', ')} (known: ${known.join(', ')})`);
  const deps = { bullmq: BULLMQ_DEPS, graphql: GRAPHQL_DEPS };
  return APPS.flatMap((kind) =>
    kind === 'guide'
      ? CLI_APPS.filter((app) => MAJORS.includes(app.nest) && FORMATS.includes(app.type)).map((app) => ({ major: app.nest, format: app.type, kind, app }))
      : MAJORS.filter((major) => kind === 'basic' || deps[kind][major]).flatMap((major) => FORMATS.map((format) => ({ major, format, kind }))),
  );
}

/** What guide-apps.mjs and cli-apps.mjs use of this runner. */
const CTX = { run, childEnv, StepError, killGroup, children, http, freePort, accepts, delay, nodeRuntime };

async function main() {
  const combos = matrix();
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
      cleanup();
      process.exit(130);
    });
  }
  wholeRunTimer = setTimeout(() => {
    console.log(`consumer: FAILED: the whole run took longer than ${TOTAL_TIMEOUT_MS / 1000} s (CONSUMER_TIMEOUT_S); stopped`);
    cleanup();
    console.log(`consumer: 0 passed, ${1 + combos.reduce((n, c) => n + (c.kind === 'basic' ? NODES.length : 1), 0)} failed`);
    process.exit(1);
  }, TOTAL_TIMEOUT_MS).unref();
  workDir = mkdtempSync(join(tmpdir(), 'nestjs-deferred-work-consumer-'));
  mkdirSync(NPM_CACHE, { recursive: true });
  console.log(`consumer: node ${process.version}, npm cache ${NPM_CACHE}, work dir ${workDir}${KEEP ? ' (kept)' : ''}`);
  let passed = 0;
  let failed = 0;
  const started = Date.now();

  // The BullMQ apps share one private Redis (each under its own key prefix), started during the pack.
  const redis = {};
  const redisReady = combos.some((c) => c.kind === 'bullmq')
    ? (async () => {
        const server = new RedisServer();
        redisServer = server;
        try {
          await server.start({ cwd: workDir });
          redis.server = server;
          console.log(`redis: redis-server ${await server.version()} on ${server.host}:${server.port}, key prefixes ${BULLMQ_RUN}-*`);
        } catch (error) {
          redis.error = error;
          console.log(`redis: FAILED: ${error.message}`);
        }
      })()
    : Promise.resolve();

  // The Node binaries of CONSUMER_NODES, fetched (once; then from the cache) during the pack.
  const runtimes = {};
  const runtimesReady = Promise.all(
    (combos.some((c) => c.kind === 'basic') ? NODES : []).map(async (major) => {
      try {
        runtimes[major] = await nodeRuntime(major);
      } catch (error) {
        runtimes[major] = { major, error };
        console.log(`node: ${major}: FAILED: ${error.message}`);
        if (error.output) console.log(error.output.replace(/^/gm, '    '));
      }
    }),
  );

  // The apps `nest new` writes for the guide: created (once; then from their cache) during the pack.
  for (const { app } of combos.filter((c) => c.kind === 'guide')) cachedApp(app, CTX).catch(() => undefined);

  let tarball;
  try {
    const packDir = join(workDir, 'pack');
    mkdirSync(packDir);
    const given = process.env.CONSUMER_TARBALL && resolve(process.env.CONSUMER_TARBALL);
    const packed = given ? { tarball: given, files: null } : await packLibrary(packDir);
    tarball = packed.tarball;
    const files = await checkTarball(packed.tarball, packed.files, join(workDir, 'unpacked'));
    report('pack', { ok: true, detail: `${files.length} files: ${files.filter((f) => !f.startsWith('dist/')).join(', ')}, dist/**` });
    passed++;
  } catch (error) {
    report('pack', { ok: false, error });
    failed++;
  }

  await redisReady;
  await runtimesReady;

  // One task per app: set it up once, then check it under each of its Node runtimes in turn (the
  // basic app under every one of CONSUMER_NODES, the others under the system node). Its folder is
  // removed as soon as its checks are done, while the next apps install.
  const removals = [];
  const tasks = combos.map(({ major, format, kind, app: cliApp }) => kind === 'guide' ? guideTask(cliApp, { tarball: () => tarball, workDir, ctx: CTX }) : async () => {
    const name = `nest${major}-${format}${kind === 'basic' ? '' : `-${kind}`}`;
    const app = `nest ${major} ${format}${kind === 'basic' ? '' : ` ${kind}`}`;
    const targets = kind === 'basic' ? NODES.map((n) => runtimes[n]) : [SYSTEM_NODE];
    const labelOf = (runtime) => (runtime.system ? app : `${app} node ${runtime.major}`);
    const results = [];
    try {
      if (!tarball) throw new StepError('pack', 'not run: the library could not be packed');
      const setUp = await setupApp(join(workDir, name), major, format, tarball, kind, redis);
      for (const runtime of targets) {
        const label = labelOf(runtime);
        try {
          if (runtime.error) throw new StepError('node', `no Node.js ${runtime.major}: ${runtime.error.message}`);
          results.push({ label, ok: true, detail: await runChecks(setUp, runtime, redis) });
        } catch (error) {
          results.push({ label, ok: false, error });
        }
      }
    } catch (error) {
      targets.forEach((runtime, i) => {
        const notRun = new StepError(error.step ?? 'setup', `not run: the app could not be set up (see ${labelOf(targets[0])})`);
        results.push({ label: labelOf(runtime), ok: false, error: i === 0 ? error : notRun });
      });
    } finally {
      if (!KEEP) removals.push(rm(join(workDir, name), { recursive: true, force: true }).catch(() => undefined));
    }
    return results;
  });
  // Run in parallel, print in matrix order.
  const outcomes = (await pool(tasks, CONCURRENCY)).flat();
  await Promise.all(removals);
  for (const outcome of outcomes) {
    report(outcome.label, outcome);
    if (outcome.ok) passed++;
    else failed++;
  }
  console.log(`consumer: total ${secs(Date.now() - started)}`);
  console.log(`consumer: ${passed} passed, ${failed} failed`);
  return failed === 0 ? 0 : 1;
}

main()
  .then((code) => {
    clearTimeout(wholeRunTimer);
    cleanup();
    process.exitCode = code;
  })
  .catch((error) => {
    clearTimeout(wholeRunTimer);
    console.error(error);
    cleanup();
    console.log('consumer: 0 passed, 1 failed');
    process.exitCode = 1;
  });
