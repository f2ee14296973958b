#!/usr/bin/env node
// `pnpm pack:lib` (or `npm run pack:lib`, no install needed): builds the library alone and packs its
// tarball into packages/nestjs-deferred-work/, without installing the workspace (the example apps'
// and the tests' dependencies). The package's files are copied to a temporary folder outside the
// repository, so that nothing resolves from the workspace's node_modules; there npm installs only what
// the build needs - tsup, TypeScript, Node's types and the packages the sources import by name (the
// peers whose types the declarations use) - at the versions of pnpm-lock.yaml; tsup builds, and
// `npm pack` writes the tarball.
//
//   node scripts/pack-lib.mjs              pack into packages/nestjs-deferred-work/
//   node scripts/pack-lib.mjs --out DIR    pack into DIR
//   PACK_LIB_KEEP=1                        keep the temporary folder (its path is printed)
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const PKG = 'packages/nestjs-deferred-work';
const outIndex = process.argv.indexOf('--out');
const OUT = resolve(outIndex > 0 ? process.argv[outIndex + 1] : join(ROOT, PKG));
const manifest = JSON.parse(readFileSync(join(ROOT, PKG, 'package.json'), 'utf8'));

/** The package names the library's sources (not its specs) import, require or `import()` by name. */
export function importedPackages(dir = join(ROOT, PKG, 'src')) {
  const names = new Set();
  const walk = (d) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts')) {
        const code = readFileSync(path, 'utf8').replace(/\/\*[\s\S]*?\*\/|^\s*\/\/.*$/gm, ''); // not in comments
        for (const [, spec] of code.matchAll(/(?:(?<![.\w])from\s*|(?<![.\w])import\s*\(\s*|(?<![.\w])require\s*\(\s*|^\s*import\s+)'([^'.\s][^'\s]*)'/gm)) {
          if (spec.startsWith('node:')) continue;
          names.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);
        }
      }
    }
  };
  walk(dir);
  names.delete(manifest.name);
  return [...names].sort();
}

/** The versions pnpm-lock.yaml resolved for an importer (`.` or a package folder): name -> version. */
export function lockedVersions(importer, lockfile = readFileSync(join(ROOT, 'pnpm-lock.yaml'), 'utf8')) {
  const start = lockfile.indexOf(`\n  ${importer}:\n`);
  if (start < 0) return new Map();
  const end = lockfile.slice(start + 1).search(/\n {2}\S|\n\S/);
  const block = lockfile.slice(start + 1, end < 0 ? undefined : start + 1 + end);
  const versions = new Map();
  for (const [, name, version] of block.matchAll(/^ {6}'?([^'\s:]+)'?:\n {8}specifier: .*\n {8}version: ([^\s(]+)/gm)) {
    versions.set(name, version);
  }
  return versions;
}

function sh(command, args, cwd) {
  const result = spawnSync(command, args, { cwd, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`\`${command} ${args.join(' ')}\` exited with ${result.status ?? result.signal}\n${result.stdout ?? ''}`);
  return result.stdout;
}

function main() {
  const started = Date.now();
  const work = mkdtempSync(join(tmpdir(), 'nestjs-deferred-work-pack-'));
  const pkgDir = join(work, PKG);
  try {
    mkdirSync(pkgDir, { recursive: true });
    cpSync(join(ROOT, 'tsconfig.base.json'), join(work, 'tsconfig.base.json'));
    for (const entry of ['package.json', 'tsup.config.ts', 'tsup.register.config.ts', 'tsconfig.build.json', 'README.md', 'LICENSE', 'src']) {
      cpSync(join(ROOT, PKG, entry), join(pkgDir, entry), { recursive: true, filter: (src) => !src.endsWith('.spec.ts') });
    }
    // What the build needs, at the versions the workspace builds with (the package's own, then the root's).
    const own = lockedVersions(PKG);
    const rootVersions = lockedVersions('.');
    const wanted = [...new Set([...Object.keys(manifest.devDependencies ?? {}), ...importedPackages(), '@types/node'])];
    const specs = wanted.map((name) => {
      const version = own.get(name) ?? rootVersions.get(name) ?? manifest.devDependencies?.[name] ?? manifest.peerDependencies?.[name];
      if (!version) throw new Error(`no version of ${name} in pnpm-lock.yaml or the package's manifest`);
      return `${name}@${version}`;
    });
    console.log(`pack:lib: installing ${specs.length} packages for the build in ${work}: ${specs.join(' ')}`);
    sh('npm', ['install', '--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--loglevel=error', ...specs], pkgDir);
    const installed = Object.keys(JSON.parse(readFileSync(join(pkgDir, 'node_modules', '.package-lock.json'), 'utf8')).packages ?? {});
    let megabytes = '?';
    try {
      megabytes = sh('du', ['-sm', 'node_modules'], pkgDir).split('\t')[0];
    } catch {
      /* no du on this system */
    }
    const installMs = Date.now() - started;
    // the package's build script: the main entries, then the Lambda preload (built after the main build's clean)
    const tsup = join(pkgDir, 'node_modules', 'tsup', 'dist', 'cli-default.js');
    sh(process.execPath, [tsup], pkgDir);
    sh(process.execPath, [tsup, '--config', 'tsup.register.config.ts'], pkgDir);
    mkdirSync(OUT, { recursive: true });
    const report = JSON.parse(sh('npm', ['pack', '--ignore-scripts', '--json', '--loglevel=error', '--pack-destination', OUT], pkgDir));
    const tarball = join(OUT, report[0].filename);
    const size = (statSync(tarball).size / 1024).toFixed(0);
    console.log(`pack:lib: ${relative(process.cwd(), tarball) || tarball} (${size} KB, ${report[0].files.length} files)`);
    console.log(`pack:lib: ${installed.length} packages (${megabytes} MB) installed in ${(installMs / 1000).toFixed(1)} s, built and packed in ${((Date.now() - started) / 1000).toFixed(1)} s in all`);
  } finally {
    if (process.env.PACK_LIB_KEEP === '1') console.log(`pack:lib: kept ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    main();
  } catch (error) {
    console.error(`pack:lib: ${error.message}`);
    process.exitCode = 1;
  }
}
