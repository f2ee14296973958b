// scratch: per-job CPU of ways to add jobs, same process, variants alternating
import { startRedis } from '/work/wt/perfq/examples/benchmark-app/dist/bench/infra.js';
import { createRequire } from 'node:module';
const require = createRequire('/work/wt/perfq/examples/benchmark-app/package.json');
const { Queue } = await import(require.resolve('bullmq'));
const { BullMqSink } = await import('nestjs-deferred-work/bullmq');
const cpu = () => { const u = process.cpuUsage(); return u.user + u.system; };
const redis = await startRedis();
const queue = new Queue('m', { connection: { host: '127.0.0.1', port: redis.port } });
await queue.waitUntilReady();
const sink = new BullMqSink({ name: 'loop', queues: { m: queue } });
const sink2 = new BullMqSink({ name: 'loop2', queues: { m: queue } }); sink2.connectionState = () => 'up';
const data = { orderId: 4711, customer: 'c-42', total: 99.5, currency: 'EUR', lines: 3 };
let seq = 0;
const items = (n) => Array.from({ length: n }, () => ({ kind: 'job', queue: 'm', name: 'confirm', data, when: 'always', createdAt: Date.now(), id: `i${++seq}` }));
const N = Number(process.env.N ?? 32);
const variants = {
  sink: async () => sink.write(items(N), { signal: new AbortController().signal, attempt: 1 }),
  sinkUp: async () => sink2.write(items(N), { signal: new AbortController().signal, attempt: 1 }),
  addBulk: async () => queue.addBulk(items(N).map((i) => ({ name: i.name, data: i.data, opts: { jobId: i.id } }))),
  addSerial: async () => { for (const i of items(N)) await queue.add(i.name, i.data, { jobId: i.id }); },
  addParallel: async () => Promise.all(items(N).map((i) => queue.add(i.name, i.data, { jobId: i.id }))),
};
const names = (process.env.V ?? Object.keys(variants).join(',')).split(',');
const res = Object.fromEntries(names.map((n) => [n, []]));
for (let w = 0; w < 20; w++) for (const n of names) await variants[n]();
const R = Number(process.env.R ?? 60);
for (let r = 0; r < R; r++) {
  for (let k = 0; k < names.length; k++) {
    const n = names[(k + r) % names.length];
    const t = cpu(); await variants[n](); res[n].push((cpu() - t) / N);
  }
  if (r % 10 === 9) await queue.obliterate({ force: true });
}
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
for (const n of names) console.log(n.padEnd(12), 'µs/job median', med(res[n]).toFixed(1), 'p25', [...res[n]].sort((a,b)=>a-b)[Math.floor(R/4)].toFixed(1));
await queue.close(); await redis.stop();
