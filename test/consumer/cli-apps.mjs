// The apps `nest new` writes today, created by the real @nestjs/cli from the registry and cached, for the
// consumer test (`pnpm test:consumer`, see guide-apps.mjs, which pastes the docs into them).
//
// Each app is keyed by the CLI's exact version and the module type it was asked for:
//   <cache>/cli/<version>/                    the CLI, `npm install @nestjs/cli@<version>` (what `npx` runs)
//   <cache>/apps/cli<version>-<type>/my-app/   `nest new my-app --package-manager npm --skip-git
//                                              --skip-install …`, then `npm install` (the app's own lockfile)
// The cache lives outside the repository (default: the OS temp folder), so that nothing in these apps
// resolves a package from the workspace's node_modules. A run copies an app (node_modules hard-linked)
// into its work folder and changes only the copy. The newest version of each CLI major is looked up on
// the registry once per run; a new CLI release therefore makes new apps (and offline, the newest cached
// version is used).
//
//   CONSUMER_CLI_CACHE      the cache folder (default <os tmp>/nestjs-deferred-work-cli-apps)
//   CONSUMER_CLI_REFRESH=1  create the apps again (keeps the CLIs)
import { spawn } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** The three apps: @nestjs/cli 12 as it writes by default (ESM) and asked for CommonJS, and @nestjs/cli 11. */
export const CLI_APPS = [
  { cli: '12', type: 'esm', nest: '12' },
  { cli: '12', type: 'cjs', nest: '12' },
  { cli: '11', type: 'cjs', nest: '11' },
];
export const CLI_CACHE = resolve(process.env.CONSUMER_CLI_CACHE ?? join(tmpdir(), 'nestjs-deferred-work-cli-apps'));
const APP_NAME = 'my-app';
const memo = new Map();
const once = (key, make) => (memo.has(key) ? memo.get(key) : memo.set(key, make()).get(key));

/** The newest @nestjs/cli of a major on the registry, else the newest one in the cache. */
export function cliVersion(major, ctx) {
  return once(`version ${major}`, async () => {
    try {
      const { stdout } = await ctx.run('npm view', 'npm', ['view', `@nestjs/cli@^${major}`, 'version', '--json'], { cwd: tmpdir(), timeoutMs: 60_000 });
      const versions = [].concat(JSON.parse(stdout)).filter((v) => /^\d+\.\d+\.\d+$/.test(v));
      if (versions.length) return versions.sort(byVersion).at(-1);
    } catch (error) {
      const cached = readdirSafe(join(CLI_CACHE, 'cli')).filter((v) => v.startsWith(`${major}.`) && existsSync(cliBin(v)));
      if (cached.length) return cached.sort(byVersion).at(-1);
      throw error;
    }
    throw new ctx.StepError('npm view', `no release of @nestjs/cli ${major} on the registry`);
  });
}

const byVersion = (a, b) => {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number));
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
};
const cliBin = (version) => join(CLI_CACHE, 'cli', version, 'node_modules', '@nestjs', 'cli', 'bin', 'nest.js');

function readdirSafe(dir) {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** The CLI of that exact version, installed once into the cache; resolves to what `nest new --help` offers. */
export function installCli(version, ctx) {
  return once(`cli ${version}`, async () => {
    const dir = join(CLI_CACHE, 'cli', version);
    let ms = 0;
    if (!existsSync(cliBin(version))) {
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: `nest-cli-${version}`, private: true }, null, 2)}\n`);
      ({ ms } = await ctx.run(`npm install @nestjs/cli@${version}`, 'npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', `@nestjs/cli@${version}`], { cwd: dir, timeoutMs: 600_000 }));
    }
    const { stdout } = await ctx.run('nest new --help', process.execPath, [cliBin(version), 'new', '--help'], { cwd: dir, timeoutMs: 60_000 });
    return { version, bin: cliBin(version), help: stdout, ms };
  });
}

/**
 * `nest new` as a user runs it, every question answered: npm, no git, no install (the cache installs).
 * The CLI's own flags where it has them (`--no-observe`; a module-type flag if a release adds one);
 * else @nestjs/cli 12's "Which module system" question, asked by @nestjs/schematics only in a
 * terminal, is answered on its input (NG_FORCE_TTY=1 makes the schematics CLI ask): ESM is the first
 * choice and the default, CJS the second.
 */
function nestNew(cli, type, cwd, ctx) {
  const args = [cli.bin, 'new', APP_NAME, '--package-manager', 'npm', '--skip-git', '--skip-install'];
  if (/--no-observe\b/.test(cli.help)) args.push('--no-observe');
  const typeFlag = /--type\b/.test(cli.help) ? '--type' : /--module-type\b/.test(cli.help) ? '--module-type' : undefined;
  if (typeFlag) args.push(typeFlag, type);
  const ask = !typeFlag && cli.version.split('.')[0] >= 12;
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, args, { cwd, env: ctx.childEnv(ask ? { NG_FORCE_TTY: '1' } : {}), detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    ctx.children.add(child);
    let output = '';
    let answered = !ask;
    const timer = setTimeout(() => ctx.killGroup(child, 'SIGKILL'), 180_000);
    const onData = (chunk) => {
      output += chunk;
      if (!answered && /Which module system/.test(output)) {
        answered = true;
        child.stdin.write(type === 'cjs' ? '\x1b[B\r' : '\r');
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    if (!ask) child.stdin.end();
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      ctx.children.delete(child);
      const plain = output.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '');
      if (code !== 0) fail(new ctx.StepError('nest new', `\`nest ${args.slice(1).join(' ')}\` exited with ${code ?? signal}`, plain));
      else if (ask && !answered) fail(new ctx.StepError('nest new', '@nestjs/cli did not ask which module system to use', plain));
      else done({ command: `nest ${args.slice(1).join(' ')}${ask ? ` (asked "Which module system": ${type.toUpperCase()})` : ''}`, output: plain });
    });
  });
}

/** What an app is: its module type, tsconfig module settings, test runner and installed versions. */
export function describeApp(dir) {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const { compilerOptions = {} } = JSON.parse(readFileSync(join(dir, 'tsconfig.json'), 'utf8'));
  const dev = pkg.devDependencies ?? {};
  const version = (name) => JSON.parse(readFileSync(join(dir, 'node_modules', name, 'package.json'), 'utf8')).version;
  return {
    type: pkg.type === 'module' ? 'esm' : 'cjs',
    module: compilerOptions.module,
    moduleResolution: compilerOptions.moduleResolution,
    testRunner: dev.vitest ? 'vitest' : dev.jest ? 'jest' : 'none',
    jestConfig: existsSync(join(dir, 'jest.config.ts')) ? 'jest.config.ts' : pkg.jest ? 'package.json' : undefined,
    testScript: pkg.scripts?.test,
    nest: version('@nestjs/core'),
    typescript: version('typescript'),
  };
}

/** The cached app of this CLI version and type: created (and installed) once, then reused. */
export function cachedApp(app, ctx) {
  return once(`app ${app.cli} ${app.type}`, async () => {
    const cli = await installCli(await cliVersion(app.cli, ctx), ctx);
    const key = join(CLI_CACHE, 'apps', `cli${cli.version}-${app.type}`);
    const dir = join(key, APP_NAME);
    if (process.env.CONSUMER_CLI_REFRESH !== '1' && existsSync(join(key, 'ready.json')) && existsSync(join(dir, 'node_modules'))) {
      return { cli, dir, ...JSON.parse(readFileSync(join(key, 'ready.json'), 'utf8')), cached: true };
    }
    const started = Date.now();
    const staging = `${key}.staging-${process.pid}`;
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true });
    const created = await nestNew(cli, app.type, staging, ctx);
    const stagedApp = join(staging, APP_NAME);
    const written = JSON.parse(readFileSync(join(stagedApp, 'package.json'), 'utf8'));
    if ((written.type === 'module' ? 'esm' : 'cjs') !== app.type) {
      throw new ctx.StepError('nest new', `asked for a ${app.type} app, @nestjs/cli ${cli.version} wrote "type": ${JSON.stringify(written.type)}`, created.output);
    }
    const install = await ctx.run('npm install (the new app)', 'npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], { cwd: stagedApp, timeoutMs: 900_000 });
    const described = { command: created.command, app: describeApp(stagedApp), createdMs: Date.now() - started, installMs: install.ms };
    writeFileSync(join(staging, 'ready.json'), `${JSON.stringify(described, null, 2)}\n`);
    rmSync(key, { recursive: true, force: true });
    renameSync(staging, key);
    return { cli, dir, ...described, cached: false };
  });
}

/**
 * A private copy of a cached app in `dir`: its node_modules hard-linked (copied where links cannot be
 * made), everything else copied, and the files npm rewrites in place made copies of their own.
 */
export async function copyApp(from, dir, ctx) {
  mkdirSync(dir, { recursive: true });
  for (const entry of readdirSync(from)) {
    if (entry !== 'node_modules') cpSync(join(from, entry), join(dir, entry), { recursive: true });
  }
  try {
    await ctx.run('cp -al', 'cp', ['-al', join(from, 'node_modules'), join(dir, 'node_modules')], { cwd: dir, timeoutMs: 120_000 });
  } catch {
    rmSync(join(dir, 'node_modules'), { recursive: true, force: true });
    cpSync(join(from, 'node_modules'), join(dir, 'node_modules'), { recursive: true, verbatimSymlinks: true });
  }
  const lock = join(dir, 'node_modules', '.package-lock.json');
  if (existsSync(lock)) {
    rmSync(lock);
    copyFileSync(join(from, 'node_modules', '.package-lock.json'), lock);
  }
}
