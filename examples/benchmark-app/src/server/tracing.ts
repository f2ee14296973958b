/**
 * `BENCH_TRACING=1`: the server runs with the OpenTelemetry SDK registered as an app's tracing setup
 * does (a tracer provider, no exporter work, the AsyncLocalStorage context manager) and a span
 * around each request, started by the HTTP framework's first middleware (what the HTTP
 * instrumentation does). With `BENCH_CORRELATION=off` next to it, the difference between two
 * servers is the library's trace correlation alone (measured with `dist/bench/profile.js --server`).
 */
import type { INestApplication } from '@nestjs/common';

export async function installTracing(app: INestApplication, adapter: 'express' | 'fastify'): Promise<void> {
  const [{ context, trace }, { AsyncLocalStorageContextManager }, { BasicTracerProvider }] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/sdk-trace-base'),
  ]);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const provider = new BasicTracerProvider();
  trace.setGlobalTracerProvider(provider);
  const tracer = provider.getTracer('benchmark');
  const spans = (req: { url?: string }, res: { once(event: 'finish', fn: () => void): void }, next: () => void): void => {
    tracer.startActiveSpan(`GET ${req.url}`, (span) => {
      res.once('finish', () => span.end());
      next();
    });
  };
  if (adapter === 'express') {
    app.use(spans);
    return;
  }
  type Raw = { raw: { url?: string; once(e: 'finish', f: () => void): void } };
  const fastify = app.getHttpAdapter().getInstance() as { addHook(name: 'onRequest', fn: (req: Raw, reply: Raw, done: () => void) => void): void };
  fastify.addHook('onRequest', (req, reply, done) => spans(req.raw, reply.raw, done));
}
