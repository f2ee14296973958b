/**
 * The benchmark server with `BENCH_INJECTED=1`: its scenarios with handles also get the
 * `deferred-injected` route (handles injected into a service), which turns the async context on for
 * this whole server. Give it to `profile.js --server injected=dist/server/main-injected.js`.
 */
process.env.BENCH_INJECTED = '1';
await import('./main.js');
export {};
