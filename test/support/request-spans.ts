import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { context, propagation, type Span, trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { INestApplication } from '@nestjs/common';
import type { Platform } from './platforms';

/**
 * The real OpenTelemetry SDK as an app's tracing setup registers it — a tracer provider with an
 * in-memory exporter and the AsyncLocalStorage context manager, global for the test file — and a
 * request span around each request, started by the HTTP framework's first middleware (what the HTTP
 * instrumentation does), named `GET <url>` and ended when the response finished.
 */
export function useRequestSpans(): { exporter: InMemorySpanExporter; tracer: ReturnType<BasicTracerProvider['getTracer']>; install(platform: Platform, app: INestApplication): void } {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer = provider.getTracer('nestjs-deferred-work-tests');
  beforeAll(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(provider);
  });
  afterEach(() => exporter.reset());
  afterAll(() => {
    trace.disable();
    context.disable();
    propagation.disable();
  });
  const spans = (req: { url?: string }, res: { once(event: 'finish', fn: () => void): void }, next: () => void): void => {
    tracer.startActiveSpan(`GET ${req.url}`, (span: Span) => {
      res.once('finish', () => span.end());
      next();
    });
  };
  return {
    exporter,
    tracer,
    install(platform, app) {
      if (platform.name === 'express') {
        app.use(spans);
        return;
      }
      type Raw = { raw: { url?: string; once(e: 'finish', f: () => void): void } };
      const fastify = app.getHttpAdapter().getInstance() as { addHook(name: 'onRequest', fn: (req: Raw, reply: Raw, done: () => void) => void): void };
      fastify.addHook('onRequest', (req, reply, done) => spans(req.raw, reply.raw, done));
    },
  };
}
