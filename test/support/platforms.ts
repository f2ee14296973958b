import type { INestApplication, ModuleMetadata } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import {
  DeferredWorkModule,
  type DeferredWorkModuleExtras,
  type DeferredWorkModuleOptions,
  MemorySink,
} from 'nestjs-deferred-work';

/** Every e2e spec runs once per HTTP adapter (the nestjs-pino convention). */
/** An HTTP adapter under test. */
export interface Platform {
  name: 'express' | 'fastify';
  adapter: () => ExpressAdapter | FastifyAdapter;
}

export const platforms: readonly Platform[] = [
  { name: 'express', adapter: () => new ExpressAdapter() },
  { name: 'fastify', adapter: () => new FastifyAdapter() },
];

/** A started app on 127.0.0.1 with a random port, and its base URL. */
export interface StartedApp {
  app: INestApplication;
  url: string;
  close(): Promise<void>;
}

/** Starts the app; `beforeListen` may add framework middleware or hooks first. */
export async function startApp(platform: Platform, metadata: ModuleMetadata, beforeListen?: (app: INestApplication) => void): Promise<StartedApp> {
  const moduleRef = await Test.createTestingModule(metadata).compile();
  const app = moduleRef.createNestApplication(platform.adapter() as never, { logger: false });
  beforeListen?.(app);
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  const url = `http://127.0.0.1:${address.port}`;
  return { app, url, close: () => closeApp(app) };
}

/** How long a test app's close may wait for its HTTP connections before they are cut. */
const CLOSE_CONNECTIONS_AFTER_MS = 10_000;

/**
 * Closes a test app. Node's `server.close()` waits for every connection still serving a request; a
 * connection a test's client left behind (an aborted fetch whose socket the client kept) would hold the
 * close until the test's hook times out. After {@link CLOSE_CONNECTIONS_AFTER_MS} the remaining
 * connections are cut, saying so, so that such a leftover shows as a warning instead of a timeout.
 */
async function closeApp(app: INestApplication): Promise<void> {
  const server = app.getHttpServer() as { closeAllConnections?: () => void; getConnections?: (cb: (error: Error | null, count: number) => void) => void };
  const timer = setTimeout(() => {
    server.getConnections?.((_, count) => console.warn(`startApp: app.close() still waiting after ${CLOSE_CONNECTIONS_AFTER_MS} ms with ${count} HTTP connection(s) open; closing them`));
    server.closeAllConnections?.();
  }, CLOSE_CONNECTIONS_AFTER_MS);
  try {
    await app.close();
  } finally {
    clearTimeout(timer);
  }
}

/** Fails the current test file if an unhandled rejection happens while it runs. */
export function failOnUnhandledRejection(): { seen: unknown[] } {
  const seen: unknown[] = [];
  const listener = (reason: unknown) => seen.push(reason);
  beforeAll(() => process.on('unhandledRejection', listener));
  afterAll(() => {
    process.off('unhandledRejection', listener);
  });
  afterEach(() => {
    expect(seen).toEqual([]);
  });
  return { seen };
}

/** What `useMemoryApp` gives each test: the started app and its memory sink, fresh per test. */
export interface MemoryAppContext {
  started: StartedApp;
  sink: MemorySink;
}

/**
 * Starts a fresh app with `DeferredWorkModule.forRoot({ sinks: [sink], ...options })` and a new
 * `MemorySink` before each test, and closes it after.
 */
export function useMemoryApp(
  platform: Platform,
  options: Omit<DeferredWorkModuleOptions, 'sinks'> & DeferredWorkModuleExtras,
  metadata: ModuleMetadata,
): MemoryAppContext {
  const context = {} as MemoryAppContext;
  beforeEach(async () => {
    context.sink = new MemorySink();
    context.started = await startApp(platform, {
      ...metadata,
      imports: [DeferredWorkModule.forRoot({ sinks: [context.sink], ...options }), ...(metadata.imports ?? [])],
    });
  });
  afterEach(() => context.started.close());
  return context;
}
