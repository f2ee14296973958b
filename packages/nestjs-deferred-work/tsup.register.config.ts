import { defineConfig } from 'tsup';

/**
 * The Lambda extension's preload, `nestjs-deferred-work/serverless/register`, built after tsup.config.ts
 * (whose clean would remove these files): an ES module for `--import` (its top-level await), and for
 * `require()` / `node -r` a CommonJS file that throws an error saying to use `--import`.
 */
export default defineConfig([{
  entry: { 'serverless/register': 'src/serverless/register.ts' },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  esbuildOptions(options) {
    options.sourcesContent = false;
  },
  // it imports the package's own serverless entry by name, so that the app's imports share its state
  external: ['nestjs-deferred-work/serverless'],
  skipNodeModulesBundle: true,
  target: 'node20',
  tsconfig: 'tsconfig.build.json',
}, {
  entry: { 'serverless/register': 'src/serverless/register-require.ts' },
  format: ['cjs'],
  dts: true,
  target: 'node20',
  tsconfig: 'tsconfig.build.json',
}]);
