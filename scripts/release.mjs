#!/usr/bin/env node
// `pnpm release`: tests, build, one tarball, publint --strict and attw on that tarball, then
// `npm publish <tarball> --access public` (with --provenance when CI can sign it).
//
//   pnpm release                 everything, then the upload
//   pnpm release --dry-run       everything except the upload (npm publish --dry-run)
//   --skip-tests                 (or RELEASE_SKIP_TESTS=1) for when the tests just ran, as in CI
//   --no-provenance              publish from a machine that cannot sign provenance (see RELEASING.md)
//
// Provenance needs an OIDC token: GitHub Actions with `permissions: id-token: write`, or GitLab CI
// with an `id_tokens: SIGSTORE_ID_TOKEN` entry. Elsewhere npm refuses `--provenance`.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const PKG_DIR = join(ROOT, 'packages', 'nestjs-deferred-work');
const BIN = join(ROOT, 'node_modules', '.bin');

const KNOWN = new Set(['--dry-run', '--skip-tests', '--no-provenance', '--help']);
const args = process.argv.slice(2).filter((arg) => arg !== '--');
const unknown = args.filter((arg) => !KNOWN.has(arg));
if (unknown.length || args.includes('--help')) {
  console.log('Usage: pnpm release [--dry-run] [--skip-tests] [--no-provenance]   (RELEASE_SKIP_TESTS=1 = --skip-tests)');
  process.exit(unknown.length ? 2 : 0);
}
const dryRun = args.includes('--dry-run');
const skipTests = args.includes('--skip-tests') || ['1', 'true'].includes(process.env.RELEASE_SKIP_TESTS ?? '');
const provenanceRefused = args.includes('--no-provenance');

// An inherited npm_config_dry_run (`npm run release --dry-run` sets it) would make `npm pack` write no
// tarball; the dry run is this script's own flag. Every other setting (the registry, the user config
// holding the token) is kept.
const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => key.toLowerCase() !== 'npm_config_dry_run'));

const pkg = JSON.parse(readFileSync(join(PKG_DIR, 'package.json'), 'utf8'));
const version = pkg.version;
const started = Date.now();
let stepNo = 0;

function step(title, fn) {
  stepNo += 1;
  const t0 = Date.now();
  console.log(`\n▶ ${stepNo}. ${title}`);
  const result = fn();
  console.log(`✔ ${stepNo}. ${title} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  return result;
}

function fail(message) {
  console.error(`\n✖ release stopped: ${message}`);
  process.exit(1);
}

function run(command, commandArgs, { cwd = ROOT, capture = false } = {}) {
  console.log(`  $ ${[command, ...commandArgs].join(' ')}`);
  const result = spawnSync(command, commandArgs, { cwd, env, stdio: capture ? ['ignore', 'pipe', 'inherit'] : 'inherit', encoding: 'utf8' });
  if (result.error) fail(`${command}: ${result.error.message}`);
  if (result.status !== 0) fail(`\`${[command, ...commandArgs].join(' ')}\` exited with ${result.status}`);
  return result.stdout;
}

/** Where npm can sign provenance: a CI run that can mint an OIDC token for sigstore. */
function provenanceSupport() {
  if (process.env.GITHUB_ACTIONS === 'true') {
    return process.env.ACTIONS_ID_TOKEN_REQUEST_URL
      ? { ok: true, why: 'GitHub Actions with an OIDC token' }
      : { ok: false, why: 'GitHub Actions without `permissions: id-token: write`' };
  }
  if (process.env.GITLAB_CI === 'true') {
    return process.env.SIGSTORE_ID_TOKEN
      ? { ok: true, why: 'GitLab CI with SIGSTORE_ID_TOKEN' }
      : { ok: false, why: 'GitLab CI without an `id_tokens: SIGSTORE_ID_TOKEN` entry' };
  }
  return { ok: false, why: 'not a GitHub Actions or GitLab CI run' };
}

console.log(`nestjs-deferred-work ${version}: ${dryRun ? 'DRY RUN (no upload)' : 'RELEASE'}${skipTests ? ', tests skipped' : ''}`);

const provenance = provenanceSupport();
if (!dryRun && !provenance.ok && !provenanceRefused) {
  fail(`npm cannot sign provenance here (${provenance.why}). Publish from CI, or pass --no-provenance to publish without it.`);
}
const withProvenance = provenance.ok && !provenanceRefused;

step('Preflight: changelog, changesets, registry', () => {
  const changelog = readFileSync(join(ROOT, 'CHANGELOG.md'), 'utf8');
  if (!new RegExp(`^## \\[${version.replace(/\./g, '\\.')}\\] - \\d{4}-\\d{2}-\\d{2}$`, 'm').test(changelog)) {
    fail(`CHANGELOG.md has no "## [${version}] - YYYY-MM-DD" section`);
  }
  console.log(`  CHANGELOG.md has a section for ${version}`);

  const pending = readdirSync(join(ROOT, '.changeset')).filter((name) => name.endsWith('.md') && name !== 'README.md');
  if (pending.length) {
    const message = `${pending.length} changeset(s) not yet versioned (${pending.join(', ')}): run \`pnpm changeset version\` first`;
    if (!dryRun) fail(message);
    console.log(`  note: ${message}`);
  }

  const view = spawnSync('npm', ['view', `${pkg.name}@${version}`, 'version'], { cwd: ROOT, env, encoding: 'utf8' });
  if (view.status === 0 && view.stdout.trim() === version) {
    const message = `${pkg.name}@${version} is already on the registry`;
    if (!dryRun) fail(`${message}: bump the version (pnpm changeset version)`);
    console.log(`  note: ${message} (a dry run goes on)`);
  } else if (view.status === 0 || /E404|404 Not Found/.test(view.stderr)) {
    console.log(`  ${pkg.name}@${version} is not on the registry yet`);
  } else {
    console.log(`  note: could not ask the registry (${view.stderr.trim().split('\n').pop()}); npm publish will tell`);
  }

  if (!dryRun) {
    const status = spawnSync('git', ['status', '--porcelain'], { cwd: ROOT, encoding: 'utf8' });
    if (status.status === 0 && status.stdout.trim()) fail('the git working tree has uncommitted changes');
  }
  console.log(`  provenance: ${withProvenance ? 'on' : 'off'} (${provenanceRefused ? '--no-provenance' : provenance.why})`);
});

if (skipTests) {
  console.log(`\n- tests skipped (${args.includes('--skip-tests') ? '--skip-tests' : 'RELEASE_SKIP_TESTS'})`);
} else {
  step('Tests: pnpm test', () => run('pnpm', ['test']));
  step('Consumer install test: pnpm test:consumer', () => run('pnpm', ['test:consumer']));
}

step('Build', () => run('pnpm', ['build']));

const packDir = mkdtempSync(join(tmpdir(), 'nestjs-deferred-work-release-'));
process.on('exit', () => rmSync(packDir, { recursive: true, force: true }));

// One tarball: what is checked is byte for byte what is uploaded. The build just ran, so the
// package's prepack (a second build) is skipped.
const tarball = step('Pack', () => {
  const out = run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', packDir], { cwd: PKG_DIR, capture: true });
  const [report] = JSON.parse(out);
  const file = join(packDir, report.filename);
  if (!existsSync(file)) fail(`npm pack reported ${report.filename} but wrote no such file`);
  console.log(`  ${report.filename}: ${(report.size / 1000).toFixed(1)} kB packed, ${(report.unpackedSize / 1000).toFixed(1)} kB unpacked, ${report.entryCount} files`);
  checkSourceMaps(new Set(report.files.map((entry) => entry.path)));
  return file;
});

/** Every source a shipped map names is shipped too (the maps carry no copy of the sources). */
function checkSourceMaps(shipped) {
  const missing = new Set();
  let maps = 0;
  for (const path of shipped) {
    if (!path.endsWith('.map')) continue;
    maps += 1;
    const map = JSON.parse(readFileSync(join(PKG_DIR, path), 'utf8'));
    for (const source of map.sources) {
      // tsup's own CommonJS shim (import.meta.url) is the one file from outside src/ a build may hold.
      if (source.includes('/node_modules/tsup/assets/')) continue;
      if (source.includes('/node_modules/')) fail(`${path} bundles a dependency (${source}): it must stay external`);
      const target = posix.normalize(posix.join(posix.dirname(path), source));
      if (!shipped.has(target)) missing.add(`${target} (from ${path})`);
    }
  }
  if (missing.size) fail(`source maps name files the tarball lacks: ${[...missing].slice(0, 5).join(', ')}${missing.size > 5 ? ', …' : ''}`);
  console.log(`  ${maps} source maps, every source they name is in the tarball`);
}

step('publint --strict', () => run(join(BIN, 'publint'), ['run', tarball, '--strict']));

// The strict profile checks every resolution, node10 included (served by typesVersions).
step('Are the types wrong (attw, profile strict)', () => run(join(BIN, 'attw'), [tarball, '--profile', 'strict', '--format', 'table-flipped']));

step(dryRun ? 'npm publish --dry-run' : 'npm publish', () => {
  const publishArgs = ['publish', tarball, '--access', 'public'];
  if (withProvenance) publishArgs.push('--provenance');
  if (dryRun) publishArgs.push('--dry-run');
  run('npm', publishArgs, { cwd: PKG_DIR });
});

if (!dryRun) {
  const tag = `v${version}`;
  const exists = spawnSync('git', ['rev-parse', '-q', '--verify', `refs/tags/${tag}`], { cwd: ROOT }).status === 0;
  if (!exists) run('git', ['tag', '-a', tag, '-m', `${pkg.name} ${version}`]);
  console.log(`\nPublished ${pkg.name}@${version}. Push the tag: git push origin ${tag}`);
  // The READMEs' one "not on the registry yet" note goes with the first release.
  if (readFileSync(join(ROOT, 'README.md'), 'utf8').includes('<!-- not-on-npm-yet:start -->')) {
    run('node', [join(ROOT, 'scripts', 'docs-index.mjs'), '--published']);
    console.log('The READMEs no longer say the package is not on npm: commit README.md and packages/nestjs-deferred-work/README.md.');
  }
}
console.log(`\n${dryRun ? 'Dry run passed' : 'Release done'} in ${((Date.now() - started) / 1000).toFixed(1)} s.`);
