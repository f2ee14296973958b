/**
 * CPU per `run(fn)` callback, without HTTP: `DeferredWork.run()` of an async no-op outside a request
 * (the callback is handed to the callback runner at once, as a route's are when its response ends)
 * against calling the same function directly. Ten calls a turn of the event loop, as ten connections
 * give, then the turn ends and the callbacks run. Each measurement is a child process of its own
 * (a Nest application context with `DeferredWorkModule.forRoot()`, warmed up), builds and modes
 * alternating within each repeat; medians.
 *
 *   node dist/bench/callback-cost.js [--calls 200000] [--repeats 7] [--baseline path/to/packages/nestjs-deferred-work]
 *
 * `--baseline` adds another build of the package (its folder, holding `dist/` and `node_modules/`),
 * measured the same way in alternation with this one.
 */
import { fork } from 'node:child_process';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { setImmediate as turn } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { flagValue } from './args.js';
import { median } from './report.js';

const PER_TURN = 10;
const here = path.dirname(fileURLToPath(import.meta.url));
/** This build's package folder, found through the benchmark app's own dependency. */
const thisBuild = path.dirname(path.dirname(createRequire(import.meta.url).resolve('nestjs-deferred-work')));

interface Sample {
  /** CPU µs per call, by mode. */
  direct: number;
  run: number;
  delivered: number;
}

/** In the child: one application context of the build in `pkgDir`, each mode warmed up, then measured once. */
async function child(pkgDir: string, calls: number): Promise<Sample> {
  const load = createRequire(path.join(pkgDir, 'package.json'));
  load('reflect-metadata');
  const { NestFactory } = load('@nestjs/core');
  const { Module } = load('@nestjs/common');
  const { DeferredWork, DeferredWorkModule } = load(path.join(pkgDir, 'dist/index.cjs'));
  class CallbackCostModule {}
  Module({ imports: [DeferredWorkModule.forRoot({})] })(CallbackCostModule);
  const app = await NestFactory.createApplicationContext(CallbackCostModule, { logger: ['error', 'warn'] });
  const work = app.get(DeferredWork) as { run(fn: () => unknown): void; flush(ms?: number): Promise<boolean>; stats(): { delivered: number } };
  let done = 0;
  const effect = async (): Promise<void> => {
    done++;
  };
  const modes = {
    direct: () => void effect(),
    run: () => work.run(effect),
  };
  const measure = async (call: () => void, n: number): Promise<number> => {
    const start = process.cpuUsage();
    for (let i = 0; i < n; i += PER_TURN) {
      for (let j = 0; j < PER_TURN; j++) call();
      await turn();
      await turn();
    }
    const used = process.cpuUsage(start);
    return (used.user + used.system) / n;
  };
  for (const call of Object.values(modes)) await measure(call, calls / 4);
  const sample = { direct: await measure(modes.direct, calls), run: await measure(modes.run, calls), delivered: 0 };
  await work.flush(5000);
  sample.delivered = work.stats().delivered;
  await app.close();
  return sample;
}

function measureIn(pkgDir: string, calls: number): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const proc = fork(path.join(here, 'callback-cost.js'), ['--child', pkgDir, '--calls', String(calls)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    proc.once('message', (message) => resolve(message as Sample));
    proc.once('exit', (code) => code !== 0 && reject(new Error(`measuring ${pkgDir} failed (exit code ${code})`)));
  });
}

async function main(): Promise<void> {
  const calls = Number(flagValue('calls', '200000'));
  const childOf = flagValue('child', '');
  if (childOf !== '') {
    process.send!(await child(childOf, calls));
    return;
  }
  const repeats = Number(flagValue('repeats', '7'));
  const baseline = flagValue('baseline', '');
  const builds: Array<[string, string]> = [...(baseline ? ([['baseline', path.resolve(baseline)]] as Array<[string, string]>) : []), ['this build', thisBuild]];
  const samples = new Map<string, Sample[]>(builds.map(([label]) => [label, []]));
  for (let r = 0; r < repeats; r++) {
    for (const [label, dir] of r % 2 === 0 ? builds : [...builds].reverse()) samples.get(label)!.push(await measureIn(dir, calls));
    console.error(`repeat ${r + 1}/${repeats} done`);
  }
  console.log(`\n${calls} calls per measurement, ${PER_TURN} a turn, ${repeats} repeats (medians; CPU µs per call)\n`);
  console.log('| build | direct call | run(fn) | run(fn) − direct | callbacks delivered/deferred (last repeat) |');
  console.log('| --- | ---: | ---: | ---: | ---: |');
  for (const [label] of builds) {
    const s = samples.get(label)!;
    const row = [median(s.map((x) => x.direct)), median(s.map((x) => x.run)), median(s.map((x) => x.run - x.direct))].map((v) => v.toFixed(2));
    console.log(`| ${label} | ${row.join(' | ')} | ${s[s.length - 1].delivered}/${calls / 4 + calls} |`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
