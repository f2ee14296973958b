/** Jest runs in ESM mode: Nest 12 ships ES modules only, and Jest on Node 20 cannot require() them. */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  roots: ['<rootDir>/packages', '<rootDir>/test', '<rootDir>/examples'],
  testMatch: ['**/*.spec.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  moduleNameMapper: {
    // the benchmark app's sources import each other as `./x.js` (Node ESM); Jest reads the `.ts`
    '^(\\.{1,2}/.*)\\.js$': '$1',
    '^nestjs-deferred-work$': '<rootDir>/packages/nestjs-deferred-work/src/index.ts',
    '^nestjs-deferred-work/testing$': '<rootDir>/packages/nestjs-deferred-work/src/testing/index.ts',
    '^nestjs-deferred-work/metrics$': '<rootDir>/packages/nestjs-deferred-work/src/metrics/index.ts',
    '^nestjs-deferred-work/serverless$': '<rootDir>/packages/nestjs-deferred-work/src/serverless/index.ts',
    '^nestjs-deferred-work/console$': '<rootDir>/packages/nestjs-deferred-work/src/console/index.ts',
    '^nestjs-deferred-work/(.*)$': '<rootDir>/packages/nestjs-deferred-work/src/sinks/$1/index.ts',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: '<rootDir>/tsconfig.json' }],
  },
  testTimeout: 30000,
  // Two suites at a time, also on a 2-core machine (Jest's default there is one): most integration suites
  // spend their time waiting on outages, brokers and child processes, not on the CPU, and every suite
  // starts its own servers on free ports or uses its own keys, tables and queues.
  maxWorkers: 2,
};
