import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'bull/index': 'src/sinks/bull/index.ts',
    'bullmq/index': 'src/sinks/bullmq/index.ts',
    'prometheus/index': 'src/sinks/prometheus/index.ts',
    'opentelemetry/index': 'src/sinks/opentelemetry/index.ts',
    'microservices/index': 'src/sinks/microservices/index.ts',
    'sql/index': 'src/sinks/sql/index.ts',
    'testing/index': 'src/testing/index.ts',
    // the sink host: the entry of OffloadedSink's worker thread (loaded by path, not imported)
    'worker/sink-host.worker': 'src/worker/sink-host.worker.ts',
  },
  format: ['cjs', 'esm'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  splitting: true,
  treeshake: true,
  // import.meta.url in the CommonJS build (OffloadedSink finds its worker script from it)
  shims: true,
  tsconfig: 'tsconfig.build.json',
});
