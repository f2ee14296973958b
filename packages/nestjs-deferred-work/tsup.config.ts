import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'bull/index': 'src/sinks/bull/index.ts',
    'bullmq/index': 'src/sinks/bullmq/index.ts',
    'testing/index': 'src/testing/index.ts',
  },
  format: ['cjs', 'esm'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  splitting: true,
  treeshake: true,
  tsconfig: 'tsconfig.build.json',
});
