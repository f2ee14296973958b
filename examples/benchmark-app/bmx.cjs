const { Queue } = require('bullmq');
const { PerformanceObserver } = require('perf_hooks');
const mode = process.argv[2];
const port = Number(process.argv[3]);
let gcMs = 0;
new PerformanceObserver((l) => { for (const e of l.getEntries()) gcMs += e.duration; }).observe({ entryTypes: ['gc'] });
let junk = 0;
const churn = setInterval(() => { for (let i = 0; i < 2000; i++) junk += [i, { i }].length; }, 1);
(async () => {
  const queue = new Queue('bmx-' + mode, { connection: { host: '127.0.0.1', port }, defaultJobOptions: { removeOnComplete: true } });
  const client = await queue.client;
  let jobs = 0, seq = 0;
  const batch = async () => {
    const list = [];
    for (let i = 0; i < 30; i++) list.push({ name: 'confirm', data: { orderId: ++seq, customer: 'c-42', total: 99.5, currency: 'EUR', lines: 5 } });
    await new Promise((r) => setTimeout(r, 5));
    if (mode === 'addBulk') await queue.addBulk(list);
    else if (mode === 'adds') await Promise.all(list.map((j) => queue.add(j.name, j.data)));
    else {
      const s = client.stream; s.cork();
      let p;
      try { p = Promise.all(list.map((j) => queue.add(j.name, j.data))); } finally { setImmediate(() => s.uncork()); }
      await p;
    }
    jobs += list.length;
  };
  const cpu0 = process.cpuUsage(); const end = Date.now() + 6000;
  await Promise.all([0, 1].map(async () => { while (Date.now() < end) await batch(); }));
  const cpu = process.cpuUsage(cpu0);
  clearInterval(churn);
  console.log(`RESULT ${mode} jobs ${jobs} cpuUsPerJob ${((cpu.user + cpu.system) / jobs).toFixed(2)} gcMsPerSec ${(gcMs / 6).toFixed(1)}`);
  await queue.obliterate({ force: true }).catch(() => 0);
  await queue.close();
})();
