#!/usr/bin/env node
// Writes the benchmark tables of README.md (between its bench-table markers) and docs/benchmark.md
// (between its bench-results markers) from the committed run, examples/benchmark-app/results/latest.json
// (the machine from the same run's latest.md), with the benchmark's own report code: the ratios are
// report.ts's computeRatios (paired within each repeat, the median taken), the delivery its checkDelivery.
//
//   node scripts/docs-bench.mjs           write both blocks (after a full `pnpm bench`)
//   node scripts/docs-bench.mjs --check   exit 1 and name the file if a block is not what latest.json gives
//
// report.ts has no runtime imports, so it is transpiled here (TypeScript's transpileModule) and
// imported as a module: no build of the benchmark app is needed.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { between } from './docs-index.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const RESULTS = 'examples/benchmark-app/results';
const REPORT_TS = 'examples/benchmark-app/src/bench/report.ts';

/** The benchmark's report module (`report.ts`), transpiled and imported. */
export async function loadReport() {
  const source = readFileSync(join(ROOT, REPORT_TS), 'utf8');
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 },
    fileName: 'report.ts',
  });
  return import(`data:text/javascript;base64,${Buffer.from(outputText).toString('base64')}`);
}

/** The committed run: its rows (`latest.json`) and the machine line of its report (`latest.md`). */
export function readRun() {
  const rows = JSON.parse(readFileSync(join(ROOT, RESULTS, 'latest.json'), 'utf8'));
  const report = readFileSync(join(ROOT, RESULTS, 'latest.md'), 'utf8');
  // "Run <start> → <end> on 2 × AMD EPYC, Node v20.20.2 (linux …), load average …": the machine, not the date.
  const machine = /^Run .*? on (\d+) × (.+?), Node (v[\d.]+) \((\w+)/m.exec(report);
  if (!machine) throw new Error(`${RESULTS}/latest.md has no "Run … on N × CPU, Node vX (…)" line: is it the report of the run in latest.json?`);
  const os = { linux: 'Linux', darwin: 'macOS', win32: 'Windows' }[machine[4]] ?? machine[4];
  return { rows, machine: { cpus: Number(machine[1]), cpuModel: machine[2], node: machine[3], os } };
}

/** The scenarios in the order the tables show them, each with what a reader calls it. */
const SCENARIOS = [
  ['realistic', '**a realistic endpoint**: bearer guard, validated DTO, a PostgreSQL query, 2 KB of JSON; then a BullMQ job, a log record and a metric point'],
  ['sim5', 'a 5 ms call'],
  ['sim25', 'a 25 ms call'],
  ['sim5-tail', 'a 5 ms call, 1 in 1000 taking 1 s'],
  ['bull-local', 'a Bull job, local Redis'],
  ['bullmq-local', 'a BullMQ job, local Redis'],
  ['bull-proxy', 'a Bull job, Redis 30 ms away'],
  ['bullmq-proxy', 'a BullMQ job, Redis 30 ms away'],
  ['redis-stream', 'a Redis Stream entry, local Redis'],
  ['mix', '1 job + 2 logs + 2 metrics, in memory'],
  ['rabbitmq', 'a RabbitMQ event (publisher confirms)'],
  ['nats', 'a NATS event'],
  ['http-log', 'a log record over HTTP'],
  ['sqs-local', 'an SQS message, local SQS server'],
  ['pg-local', 'a row into PostgreSQL'],
  ['mysql-local', 'a row into MySQL / MariaDB'],
  ['graphql', 'a GraphQL query whose resolver makes a 5 ms call'],
];
/** A packed row's name, where the scenario's own is long. */
const PACKED_LABELS = { realistic: 'the realistic endpoint' };
const ADAPTERS = ['express', 'fastify'];
const ADAPTER_NAMES = { express: 'Express', fastify: 'Fastify' };
const PEERS = [
  ['plain', '÷ plain'],
  ['blocking', '÷ blocking'],
  ['article-tap', '÷ `tap` interceptor'],
  ['event-emitter', '÷ event-emitter'],
];
/** A ratio within this band either side of 1 is within the run-to-run noise of the shared host. */
export const NOISE = 0.1;

const fixed = (x, digits = 2) => (x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(digits));
const range = (values, digits = 0) => {
  const v = values.filter(Number.isFinite);
  if (v.length === 0) return '–';
  const [lo, hi] = [Math.min(...v), Math.max(...v)].map((x) => x.toFixed(digits));
  return lo === hi ? lo : `${lo}–${hi}`;
};

/**
 * The table's lines, one per scenario with a `deferred` route and one more per scenario with a
 * `deferred-packed` route: `{ id, label, packed, cells: { [adapter]: { [peer]: ratio } } }`.
 */
export function tableLines(rows, report) {
  const ratios = report.computeRatios(rows);
  const has = (scenario, variant) => rows.some((r) => r.scenario === scenario && r.variant === variant);
  const known = SCENARIOS.map(([id]) => id);
  const ids = [...known, ...[...new Set(rows.map((r) => r.scenario))].filter((id) => !known.includes(id))];
  const label = (id) => SCENARIOS.find(([s]) => s === id)?.[1] ?? rows.find((r) => r.scenario === id).scenarioLabel;
  const lines = [];
  for (const id of ids) {
    for (const packed of [false, true]) {
      if (!has(id, packed ? 'deferred-packed' : 'deferred')) continue;
      const cells = {};
      for (const adapter of ADAPTERS) {
        const r = ratios.find((x) => x.scenario === id && x.adapter === adapter);
        cells[adapter] = r
          ? packed
            ? { plain: r.deferredPackedVsPlain, blocking: r.deferredPackedVsBlocking, 'article-tap': r.deferredPackedVsArticleTap, 'event-emitter': r.deferredPackedVsEventEmitter }
            : { plain: r.deferredVsPlain, blocking: r.deferredVsBlocking, 'article-tap': r.deferredVsArticleTap, 'event-emitter': r.deferredVsEventEmitter }
          : {};
      }
      lines.push({ id, label: packed ? `${PACKED_LABELS[id] ?? label(id)}, with \`packJobs\`` : label(id), packed, cells });
    }
  }
  return lines;
}

/** The Markdown ratio table: the deferred route's req/s ÷ each other route's, Express / Fastify. */
export function renderTable(lines) {
  return [
    `| scenario | ${PEERS.map(([, head]) => head).join(' | ')} |`,
    `| --- | ${PEERS.map(() => '---:').join(' | ')} |`,
    ...lines.map((l) => `| ${l.label} | ${PEERS.map(([peer]) => ADAPTERS.map((a) => fixed(l.cells[a][peer])).join(' / ')).join(' | ')} |`),
  ].join('\n');
}

/** The run in one sentence: machine, settings, what `plain` cost (the host's speed). */
function runSentence(rows, machine, reportLink) {
  const first = rows.find((r) => r.variant === 'deferred') ?? rows[0];
  const seconds = first.repeats > 0 ? first.durationS / first.repeats : 0;
  const plainCpu = (adapter) => range(rows.filter((r) => r.variant === 'plain' && r.adapter === adapter && r.scenario !== 'realistic').map((r) => r.cpuUsPerRequest));
  const adapters = ADAPTERS.filter((a) => rows.some((r) => r.adapter === a));
  return (
    `The committed full run ([report](${reportLink})): ${machine.cpus} × ${machine.cpuModel} vCPUs shared by the server, the load ` +
    `generator and the services (Redis, the databases, the brokers), Node ${machine.node}, ${machine.os}, ${first.connections} connections, ` +
    `${first.repeats} repeats of ${fixed(seconds, 0)} s per route with the routes alternating. The \`plain\` routes cost ` +
    `${adapters.map((a, i) => `${plainCpu(a)}${i === 0 ? ' µs of CPU a request' : ''} on ${ADAPTER_NAMES[a]}`).join(' and ')} (the realistic endpoint aside).`
  );
}

/** Every item the library's routes and the awaited route took was delivered — or which route fell short. */
function deliverySentence(rows, report) {
  const checks = report.checkDelivery(rows);
  const failed = checks.filter((c) => !c.pass);
  const library = rows.filter((r) => r.variant.startsWith('deferred'));
  const items = library.reduce((t, r) => t + r.itemsDelivered, 0);
  const pairs = new Set(checks.map((c) => `${c.scenario}|${c.adapter}`)).size;
  if (failed.length === 0) {
    return (
      `Every item of the deferred and blocking routes was delivered, in all ${pairs} scenario × adapter pairs ` +
      `(${report.formatNumber(items, 0)} items on the deferred routes), counted by the library and, for the queues, the stream, the ` +
      `databases, the HTTP log and SQS, at the destination too.`
    );
  }
  return `Not every item was delivered: ${failed.map((c) => `${c.scenario}/${c.adapter}/${c.variant} ${c.measured}`).join('; ')}.`;
}

/** `ahead`, `level` or `behind` against a peer, per adapter: which scenarios fall where. */
function verdicts(lines, peer) {
  const short = (l) => `\`${l.id}\`${l.packed ? ' packed' : ''}`;
  const out = [];
  for (const adapter of ADAPTERS) {
    const buckets = { ahead: [], level: [], behind: [] };
    for (const l of lines) {
      if (l.cells[adapter][peer] === undefined) continue;
      const x = Number(fixed(l.cells[adapter][peer])); // judged as shown, to 2 decimals
      const bucket = x >= 1 + NOISE ? 'ahead' : x <= 1 - NOISE ? 'behind' : 'level';
      buckets[bucket].push(`${short(l)} ${fixed(x)}`);
    }
    out.push({ adapter, ...buckets });
  }
  return out;
}

function verdictList(lines, peer, title) {
  const v = verdicts(lines, peer);
  const part = (name, text) => v.filter((a) => a[name].length > 0).map((a) => `${ADAPTER_NAMES[a.adapter]}: ${a[name].join(', ')}`).join('; ') || 'none';
  return [
    `${title}`,
    '',
    `- ahead by ${Math.round(NOISE * 100)}% or more: ${part('ahead')}`,
    `- within ±${Math.round(NOISE * 100)}%, the run-to-run noise: ${part('level')}`,
    `- behind by ${Math.round(NOISE * 100)}% or more: ${part('behind')}`,
  ].join('\n');
}

/** p99 latency of the deferred, blocking and event-emitter routes, per scenario, Express | Fastify. */
function p99Sentence(rows, lines) {
  const p99 = (id, adapter, variant) => rows.find((r) => r.scenario === id && r.adapter === adapter && r.variant === variant)?.latencyP99Ms;
  const parts = lines
    .filter((l) => !l.packed)
    .map((l) => `\`${l.id}\` ${ADAPTERS.map((a) => ['deferred', 'blocking', 'event-emitter'].map((v) => fixed(p99(l.id, a, v), 1)).join(' / ')).join(' | ')}`);
  return `p99 latency in ms, deferred / blocking / event-emitter, Express | Fastify: ${parts.join('; ')}.`;
}

const NOTE = (results) =>
  `<!-- Written by scripts/docs-bench.mjs from ${results}latest.json: after a full \`pnpm bench\`, run \`pnpm docs:bench\`. -->`;

/** The README's block: the run, the chart, the table, the delivery, where to read more. */
export function readmeBlock(rows, machine, report) {
  const lines = tableLines(rows, report);
  return [
    '',
    NOTE(`${RESULTS}/`),
    runSentence(rows, machine, `${RESULTS}/latest.md`),
    '',
    `![req/s and CPU per request by scenario and variant](${RESULTS}/latest.svg)`,
    '',
    'The deferred route\'s req/s ÷ the other route\'s, Express / Fastify: above 1 the deferred route served more, the median of the ' +
      'ratios paired within each repeat. Rows "with `packJobs`" are the same route with the queue sink\'s opt-in ' +
      '[job packing](docs/sinks/bullmq.md#packing-jobs-packjobs).',
    '',
    renderTable(lines),
    '',
    deliverySentence(rows, report),
    '',
    'Deferring wins where the side effect waits (a slow call, a remote service) or where batching saves work (one HTTP request, ' +
      'SQS call, multi-row `INSERT` or packed queue job for many items); it is about even, or a little behind, where the client\'s own ' +
      'CPU is the cost (one job to a local Redis) or the side effect is nearly free. How to read a ratio, when deferring loses and what the ' +
      'library does about it: [docs/benchmark.md](docs/benchmark.md); what a request costs: [docs/request-path.md](docs/request-path.md).',
    '',
  ].join('\n');
}

/** docs/benchmark.md's block: the run, the chart, the table, where it wins and loses, p99, the delivery. */
export function benchmarkBlock(rows, machine, report) {
  const lines = tableLines(rows, report);
  const results = `../${RESULTS}/`;
  return [
    '',
    NOTE(results),
    runSentence(rows, machine, `${results}latest.md`),
    '',
    `![req/s and CPU per request by scenario and variant](${results}latest.svg)`,
    '',
    renderTable(lines),
    '',
    verdictList(lines, 'blocking', '**Against awaiting the side effect in the handler** (÷ blocking):'),
    '',
    verdictList(lines, 'event-emitter', '**Against `@nestjs/event-emitter`** (÷ event-emitter):'),
    '',
    p99Sentence(rows, lines),
    '',
    deliverySentence(rows, report),
    '',
  ].join('\n');
}

/** What README.md and docs/benchmark.md should hold, given latest.json and the current files. */
export async function expectedBenchDocs({ report, run } = {}) {
  report ??= await loadReport();
  const { rows, machine } = run ?? readRun();
  const fill = (file, marker, block) => {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const b = between(text, marker, file);
    return `${b.before}${block}${b.after}`;
  };
  return {
    'README.md': fill('README.md', 'bench-table', readmeBlock(rows, machine, report)),
    'docs/benchmark.md': fill('docs/benchmark.md', 'bench-results', benchmarkBlock(rows, machine, report)),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes('--check');
  const expected = await expectedBenchDocs();
  let stale = 0;
  for (const [file, text] of Object.entries(expected)) {
    if (readFileSync(join(ROOT, file), 'utf8') === text) continue;
    if (check) {
      console.error(`${file}: its benchmark tables are not what ${RESULTS}/latest.json gives: run "pnpm docs:bench" and commit the result.`);
      stale++;
    } else {
      writeFileSync(join(ROOT, file), text);
      console.log(`wrote ${file}`);
    }
  }
  process.exitCode = stale ? 1 : 0;
}
