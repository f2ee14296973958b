import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LambdaEmulator } from './lambda-emulator';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const RIC_PACKAGE = join(ROOT, 'node_modules/aws-lambda-ric');

/** How long building the runtime interface client may take (curl and aws-lambda-cpp from source: about 5 minutes here). */
export const RIC_BUILD_TIMEOUT_MS = 15 * 60_000;

/**
 * The real AWS Lambda runtime interface client (`aws-lambda-ric`, the Node.js runtime's own loop), built
 * once per version, Node ABI and architecture into a cache outside the workspace
 * (`$LAMBDA_RIC_CACHE`, default `~/.cache/nestjs-deferred-work/`): its native part builds curl and
 * aws-lambda-cpp from the sources the package ships, which takes minutes. pnpm never builds it
 * (`pnpm.neverBuiltDependencies`). Returns the directory whose `bin/index.mjs` runs a handler.
 */
export function lambdaRic(): string {
  const { version } = JSON.parse(readFileSync(join(RIC_PACKAGE, 'package.json'), 'utf8')) as { version: string };
  const base = process.env.LAMBDA_RIC_CACHE ?? join(homedir(), '.cache', 'nestjs-deferred-work');
  const dir = join(base, `aws-lambda-ric-${version}-node${process.versions.modules}-${process.arch}`);
  if (existsSync(join(dir, '.built'))) return dir;
  mkdirSync(base, { recursive: true });
  const lock = `${dir}.lock`;
  const waitUntil = Date.now() + RIC_BUILD_TIMEOUT_MS;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (existsSync(join(dir, '.built'))) return dir;
      if (Date.now() > waitUntil) throw new Error(`${lock} is held (another build of aws-lambda-ric?): remove it if no build runs.`);
      execFileSync('sleep', ['2']);
    }
  }
  try {
    if (!existsSync(join(dir, '.built'))) build(dir);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
  return dir;
}

function build(dir: string): void {
  const pkg = realpathSync(RIC_PACKAGE);
  // A build whose native libraries are there already (a later step failed) starts from them.
  const libsBuilt = existsSync(join(dir, 'deps/artifacts/lib/libaws-lambda-runtime.a'));
  if (!libsBuilt) {
    rmSync(dir, { recursive: true, force: true });
    cpSync(pkg, dir, { recursive: true, dereference: true, filter: (src) => !src.startsWith(join(pkg, 'node_modules')) });
  }
  // Its build dependencies, where pnpm put them: node-gyp run from there, node-addon-api copied beside the sources.
  const require = createRequire(join(pkg, 'package.json'));
  const nodeGyp = require.resolve('node-gyp/bin/node-gyp.js');
  cpSync(dirname(require.resolve('node-addon-api/package.json')), join(dir, 'node_modules/node-addon-api'), { recursive: true, dereference: true });
  const log = join(dir, 'build.log');
  const run = (file: string, args: string[]) => {
    try {
      const out = execFileSync(file, args, { cwd: dir, env: { ...process.env, BUILD: '1' }, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 256 * 1024 * 1024 });
      writeFileSync(log, out, { flag: 'a' });
    } catch (error) {
      const e = error as { stdout?: Buffer; stderr?: Buffer };
      writeFileSync(log, Buffer.concat([e.stdout ?? Buffer.alloc(0), e.stderr ?? Buffer.alloc(0)]), { flag: 'a' });
      throw new Error(
        `Building aws-lambda-ric failed (${file} ${args.join(' ')}); see ${log}. It builds curl and aws-lambda-cpp from source: ` +
          'it needs cmake, make, g++, python3, autoconf, automake and libtool (Debian: apt-get install cmake autoconf automake libtool g++ make).',
      );
    }
  };
  if (!libsBuilt) run('sh', ['scripts/preinstall.sh']);
  // Node's own headers (no download): npm's nodedir when set, else those installed beside this node.
  const nodedir = process.env.npm_config_nodedir || dirname(dirname(process.execPath));
  run(process.execPath, [nodeGyp, 'rebuild', `--nodedir=${nodedir}`]);
  cpSync(join(dir, 'build/Release/rapid-client.node'), join(dir, 'dist/rapid-client.node'));
  for (const leftover of ['build', 'deps/artifacts']) rmSync(join(dir, leftover), { recursive: true, force: true });
  writeFileSync(join(dir, '.built'), new Date().toISOString());
}

/** A function process: the runtime interface client running `handler` (`file.export`) from `dir`. */
export class LambdaFunction {
  output = '';
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(emulator: LambdaEmulator, handler: string, dir: string, env: Record<string, string>) {
    const ric = lambdaRic();
    this.child = spawn(process.execPath, [join(ric, 'bin/index.mjs'), handler], {
      cwd: dir,
      env: {
        ...process.env,
        AWS_LAMBDA_RUNTIME_API: emulator.endpoint,
        AWS_LAMBDA_FUNCTION_NAME: 'emulated',
        AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
        AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '512',
        LAMBDA_TASK_ROOT: dir,
        _HANDLER: handler,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    emulator.pid = this.child.pid;
    this.child.stdout!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.child.stderr!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  /** Output lines that contain `text`. */
  lines(text: string): string[] {
    return this.output.split('\n').filter((line) => line.includes(text));
  }
}

/** The directory of a compiled fixture (see `compileFixture`): the function's code root. */
export function codeRoot(compiled: string): string {
  return dirname(compiled);
}
