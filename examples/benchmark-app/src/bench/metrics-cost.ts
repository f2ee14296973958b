/**
 * `node dist/bench/metrics-cost.js`: what the library's own metrics (`DeferredWorkMetricsModule`,
 * prom-client) cost on the main thread, measured in one process without HTTP. Two application
 * contexts, one without and one with the metrics; each defers one job to the memory sink and flushes
 * it (so that each item is its own write, as at a moderate request rate), alternating by round: the
 * CPU per item on − off is the write path's cost (two histogram observations per write, one per
 * delivered item with `--lag`). Then one scrape (`registry.metrics()`, which reads `stats()` once)
 * is timed, repeated: its CPU per call.
 *
 *   node dist/bench/metrics-cost.js --items 20000 --rounds 8 [--lag]
 */
import 'reflect-metadata';
import { parseArgs } from 'node:util';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DeferredWork, DeferredWorkModule } from 'nestjs-deferred-work';
import { DeferredWorkMetricsModule } from 'nestjs-deferred-work/metrics';
import { Registry } from 'prom-client';

const cpuUs = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function context(registry: Registry | undefined, deliveryLag: boolean) {
  @Module({
    imports: [DeferredWorkModule.forRoot({}), ...(registry ? [DeferredWorkMetricsModule.forRoot({ prometheus: { registry }, deliveryLag })] : [])],
  })
  class CostModule {}
  const app = await NestFactory.createApplicationContext(CostModule, { logger: ['error', 'warn'] });
  return { app, work: app.get(DeferredWork) };
}

async function perItem(work: DeferredWork, items: number): Promise<number> {
  const before = cpuUs();
  for (let i = 0; i < items; i++) {
    work.job('cost', 'item', { i });
    await work.flush();
  }
  return (cpuUs() - before) / items;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { items: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '8' }, scrapes: { type: 'string', default: '2000' }, lag: { type: 'boolean', default: false } },
  });
  const items = Number(values.items);
  const rounds = Number(values.rounds);
  const registry = new Registry();
  const off = await context(undefined, false);
  const on = await context(registry, values.lag);
  try {
    await perItem(off.work, items / 4);
    await perItem(on.work, items / 4);
    const diffs: number[] = [];
    const offs: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? [off, on] : [on, off];
      const [a, b] = [await perItem(order[0].work, items), await perItem(order[1].work, items)];
      const [o, n] = order[0] === off ? [a, b] : [b, a];
      offs.push(o);
      diffs.push(n - o);
    }
    const scrapes = Number(values.scrapes);
    for (let i = 0; i < scrapes / 10; i++) await registry.metrics();
    const before = cpuUs();
    let bytes = 0;
    for (let i = 0; i < scrapes; i++) bytes = (await registry.metrics()).length;
    const scrapeUs = (cpuUs() - before) / scrapes;
    console.log(`metrics${values.lag ? ' with the delivery lag' : ''}: ${rounds} rounds × ${items} items, each its own write`);
    console.log(`| CPU µs per item, metrics off (median) | on − off (median) | min | max | one scrape, µs CPU | scrape size, bytes |`);
    console.log(`| ---: | ---: | ---: | ---: | ---: | ---: |`);
    console.log(`| ${median(offs).toFixed(2)} | ${median(diffs).toFixed(2)} | ${Math.min(...diffs).toFixed(2)} | ${Math.max(...diffs).toFixed(2)} | ${scrapeUs.toFixed(0)} | ${bytes} |`);
  } finally {
    await on.app.close();
    await off.app.close();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
