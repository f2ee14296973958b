/**
 * The import rules of ARCHITECTURE.md, checked by `pnpm lint:deps` (part of `pnpm test`).
 * Paths are those of the package's sources; specs are exempt (they may use test support code).
 */
const SRC = '^packages/nestjs-deferred-work/src';
const notSpec = '\\.spec\\.ts$';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'core-imports-nothing',
      comment: 'core holds what every layer shares; it imports nothing else of the package.',
      severity: 'error',
      from: { path: `${SRC}/core/`, pathNot: notSpec },
      to: { path: `${SRC}/`, pathNot: `${SRC}/core/` },
    },
    {
      name: 'pipeline-imports-only-core-and-spool',
      comment:
        'The dispatcher, processors and callback runner know items and the sink contract (and a sink\'s disk spool, storage only), nothing of requests, Nest or concrete sinks.',
      severity: 'error',
      from: { path: `${SRC}/pipeline/`, pathNot: notSpec },
      to: { path: `${SRC}/`, pathNot: [`${SRC}/core/`, `${SRC}/pipeline/`, `${SRC}/spool/`] },
    },
    {
      name: 'sinks-import-only-core',
      comment: 'A sink knows the sink contract (core) and the shared sink kit, never the pipeline, capture or Nest layers.',
      severity: 'error',
      from: { path: `${SRC}/sinks/`, pathNot: notSpec },
      to: { path: `${SRC}/`, pathNot: [`${SRC}/core/`, `${SRC}/sinks/`] },
    },
    {
      name: 'one-sink-does-not-import-another',
      comment:
        'Each sink folder uses only itself, kit/, queue/ and offload/ (the worker-thread host any sink can move into): what two sinks share goes to kit/ or queue/.',
      severity: 'error',
      from: { path: `${SRC}/sinks/([^/]+)/`, pathNot: notSpec },
      to: { path: `${SRC}/sinks/`, pathNot: [`${SRC}/sinks/$1/`, `${SRC}/sinks/kit/`, `${SRC}/sinks/queue/`, `${SRC}/sinks/offload/`] },
    },
    {
      name: 'worker-imports-core-and-sinks',
      comment: 'The sink host runs in a worker thread: it builds sinks and runs their writes, with nothing of the pipeline, capture or Nest layers.',
      severity: 'error',
      from: { path: `${SRC}/worker/`, pathNot: notSpec },
      to: { path: `${SRC}/`, pathNot: [`${SRC}/core/`, `${SRC}/sinks/`, `${SRC}/worker/`] },
    },
    {
      name: 'nothing-imports-the-worker',
      comment: 'The worker entry is loaded by path in a new thread (OffloadedSink), never imported.',
      severity: 'error',
      from: { path: `${SRC}/`, pathNot: [`${SRC}/worker/`, notSpec] },
      to: { path: `${SRC}/worker/` },
    },
    {
      name: 'spool-imports-only-core',
      comment: 'The disk spool is storage: segment files, checksums, acks, a lock. It knows core and Node built-ins, nothing of the pipeline, capture, sinks or Nest layers.',
      severity: 'error',
      from: { path: `${SRC}/spool/`, pathNot: notSpec },
      to: { path: `${SRC}/`, pathNot: [`${SRC}/core/`, `${SRC}/spool/`] },
    },
    {
      name: 'capture-imports-core-and-pipeline',
      comment: 'Request scopes hand items to the dispatcher; they know nothing of sinks or the Nest layer.',
      severity: 'error',
      from: { path: `${SRC}/capture/`, pathNot: notSpec },
      to: { path: `${SRC}/`, pathNot: [`${SRC}/core/`, `${SRC}/pipeline/`, `${SRC}/capture/`] },
    },
    {
      name: 'nothing-imports-the-nest-layer',
      comment: 'Only the barrels and the testing helpers may import the Nest layer.',
      severity: 'error',
      from: { path: `${SRC}/(core|pipeline|capture|sinks|spool)/`, pathNot: notSpec },
      to: { path: `${SRC}/nest/` },
    },
    {
      name: 'metrics-reads-the-library',
      comment:
        "The library's own metrics read its state (the service, the dispatcher's counts, the request tracker's timings); they know no sink, spool or worker.",
      severity: 'error',
      from: { path: `${SRC}/metrics/`, pathNot: notSpec },
      to: { path: `${SRC}/(sinks|spool|worker|testing)/` },
    },
    {
      name: 'nothing-imports-the-metrics',
      comment: 'The metrics are their own subpath (nestjs-deferred-work/metrics), loaded only by apps that import it.',
      severity: 'error',
      from: { path: `${SRC}/`, pathNot: [`${SRC}/metrics/`, notSpec] },
      to: { path: `${SRC}/metrics/` },
    },
    {
      name: 'console-reads-the-library',
      comment:
        'The console (nestjs-deferred-work/console) reads the library through the DeferredWork service and its resolved options; it knows no sink, spool, worker or metrics.',
      severity: 'error',
      from: { path: `${SRC}/console/`, pathNot: notSpec },
      to: { path: `${SRC}/(sinks|spool|worker|metrics|testing)/` },
    },
    {
      name: 'nothing-imports-the-console',
      comment: 'The console is its own subpath (nestjs-deferred-work/console): an app that does not import it loads none of it.',
      severity: 'error',
      from: { path: `${SRC}/`, pathNot: [`${SRC}/console/`, notSpec] },
      to: { path: `${SRC}/console/` },
    },
    {
      name: 'serverless-imports-core-and-pipeline',
      comment:
        'The serverless mode (nestjs-deferred-work/serverless) tracks what the dispatcher accepts and talks to the platform; it knows nothing of requests, sinks or the Nest layer.',
      severity: 'error',
      from: { path: `${SRC}/serverless/`, pathNot: notSpec },
      to: { path: `${SRC}/`, pathNot: [`${SRC}/core/`, `${SRC}/pipeline/`, `${SRC}/serverless/`] },
    },
    {
      name: 'only-nest-reads-the-serverless-platform',
      comment: 'Besides its barrel, only the Nest layer (the bootstrap warning, the stop-signal budget) imports the serverless folder, and only platform.ts.',
      severity: 'error',
      from: { path: `${SRC}/`, pathNot: [`${SRC}/serverless/`, notSpec] },
      to: { path: `${SRC}/serverless/`, pathNot: `${SRC}/serverless/platform\\.ts$` },
    },
    {
      name: 'no-circular',
      severity: 'error',
      from: { path: `${SRC}/` },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: 'node_modules' },
  },
};
