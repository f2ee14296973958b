import { defineConfig } from 'tsup';

export default defineConfig([{
  entry: {
    index: 'src/index.ts',
    'bull/index': 'src/sinks/bull/index.ts',
    'bullmq/index': 'src/sinks/bullmq/index.ts',
    'prometheus/index': 'src/sinks/prometheus/index.ts',
    'opentelemetry/index': 'src/sinks/opentelemetry/index.ts',
    'microservices/index': 'src/sinks/microservices/index.ts',
    'sql/index': 'src/sinks/sql/index.ts',
    'redis-streams/index': 'src/sinks/redis-streams/index.ts',
    'sqs/index': 'src/sinks/sqs/index.ts',
    'sns/index': 'src/sinks/sns/index.ts',
    'metrics/index': 'src/metrics/index.ts',
    'serverless/index': 'src/serverless/index.ts',
    'console/index': 'src/console/index.ts',
    'testing/index': 'src/testing/index.ts',
    // the sink host: the entry of OffloadedSink's worker thread (loaded by path, not imported)
    'worker/sink-host.worker': 'src/worker/sink-host.worker.ts',
  },
  format: ['cjs', 'esm'],
  dts: true,
  // Maps point into src/ (shipped in the package, see "files"), without a copy of each source in every
  // map: stack traces (node --enable-source-maps) and debuggers resolve to the shipped .ts files.
  sourcemap: true,
  esbuildOptions(options) {
    options.sourcesContent = false;
  },
  clean: true,
  // Never bundle a package: the optional integrations (nestjs-cls, found with a dynamic import) must be
  // the app's own copy, or the app's providers are not found by their class.
  skipNodeModulesBundle: true,
  target: 'node20',
  splitting: true,
  treeshake: true,
  // import.meta.url in the CommonJS build (OffloadedSink finds its worker script from it)
  shims: true,
  tsconfig: 'tsconfig.build.json',
}]);
