import { type CanActivate, Controller, type ExecutionContext, Get, Injectable, type INestApplication, Query, UnauthorizedException } from '@nestjs/common';
import { AfterResponse, type DeadLetterStore, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule, HttpSink, MemorySink } from 'nestjs-deferred-work';
import { DeferredWorkConsoleModule, type DeferredWorkConsoleOptions } from 'nestjs-deferred-work/console';
import { RedisStreamSink } from 'nestjs-deferred-work/redis-streams';
import { type Platform, startApp, type StartedApp } from './platforms';

/** The console's test login (HTTP Basic: what a browser can send without a script). */
export const CONSOLE_USER = { username: 'oncall', password: 'correct horse battery staple' };

/**
 * HTTP Basic through a guard, as docs/console.md shows it: a 401 with `WWW-Authenticate` makes the browser
 * ask (or send what it was given); the user it sets on the request is what the console logs.
 */
@Injectable()
export class BasicAuthGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined>; user?: unknown }>();
    const [scheme, encoded] = (request.headers.authorization ?? '').split(' ');
    const [username, ...rest] = Buffer.from(encoded ?? '', 'base64').toString('utf8').split(':');
    if (scheme === 'Basic' && username === CONSOLE_USER.username && rest.join(':') === CONSOLE_USER.password) {
      request.user = { username };
      return true;
    }
    // The challenge makes a browser ask for (or send) the login; on Express res.setHeader, on Fastify reply.header.
    const response = context.switchToHttp().getResponse<{ setHeader?: (n: string, v: string) => void; header?: (n: string, v: string) => void }>();
    if (typeof response.header === 'function') response.header('WWW-Authenticate', 'Basic realm="deferred-work console"');
    else response.setHeader?.('WWW-Authenticate', 'Basic realm="deferred-work console"');
    throw new UnauthorizedException('Log in to the deferred-work console');
  }
}

/** Routes that defer work: to the Redis stream, to the HTTP receiver (jobs with a number), and a timed one. */
@Controller('work')
class WorkController {
  @AfterResponse({ timing: true })
  @Get('order')
  order(@Deferred() scope: DeferredScope, @Query('n') n?: string): { ok: true } {
    scope.log('info', 'order placed', { n: Number(n ?? 0) }, { sink: 'redis' });
    scope.metric('orders_total', 1);
    return { ok: true };
  }

  @AfterResponse()
  @Get('job')
  job(@Deferred() scope: DeferredScope, @Query('n') n: string, @Query('note') note?: string): { ok: true } {
    scope.job('emails', 'send', { n: Number(n), ...(note ? { note } : {}) }, { sink: 'http' });
    return { ok: true };
  }
}

/** Options of {@link startConsoleApp}. */
export interface ConsoleAppOptions {
  platform: Platform;
  /** The app's global prefix, if any. */
  prefix?: string;
  /** The Redis the `redis` sink writes to (an ioredis client). */
  redis: unknown;
  /** The URL the `http` sink posts to. */
  httpUrl: string;
  /** Where dead letters are kept. Default: the memory store. */
  store?: DeadLetterStore;
  console?: Partial<DeferredWorkConsoleOptions>;
  /** The Redis sink's stream. Default `console-test`. */
  stream?: string;
}

/** A started app with the console mounted at `ops/deferred-work`, and its console's absolute URL. */
export interface ConsoleApp extends StartedApp {
  consoleUrl: string;
  work: DeferredWork;
}

/**
 * An app with three sinks (`redis`: a Redis stream; `http`: a receiver that may refuse; `memory`: the
 * metrics), `timing` on, and the console behind HTTP Basic, refreshing every second.
 */
export async function startConsoleApp(options: ConsoleAppOptions): Promise<ConsoleApp> {
  const started = await startApp(
    options.platform,
    {
      imports: [
        DeferredWorkModule.forRoot({
          sinks: [new RedisStreamSink({ name: 'redis', client: options.redis, stream: options.stream ?? 'console-test' }), new HttpSink({ name: 'http', url: options.httpUrl }), new MemorySink()],
          routing: { metric: 'memory', log: 'redis', job: 'http' },
          sinkOptions: {
            redis: { flushIntervalMs: 5, initialBackoffMs: 50, maxBackoffMs: 300, writeTimeoutMs: 1000 },
            http: { flushIntervalMs: 5, initialBackoffMs: 10, maxBackoffMs: 20, maxAttempts: 2 },
          },
          correlation: { requestIdHeader: 'x-request-id' },
          deadLetter: { store: options.store ?? 'memory' },
          shutdownTimeoutMs: 2000,
        }),
        DeferredWorkConsoleModule.forRoot({ guards: [BasicAuthGuard], path: 'ops/deferred-work', refreshMs: 1000, sampleIntervalMs: 1000, ...options.console }),
      ],
      controllers: [WorkController],
      providers: [BasicAuthGuard],
    },
    (app: INestApplication) => {
      if (options.prefix) app.setGlobalPrefix(options.prefix);
    },
  );
  const base = options.prefix ? `${started.url}/${options.prefix}` : started.url;
  return { ...started, consoleUrl: `${base}/ops/deferred-work`, work: started.app.get(DeferredWork) };
}

/** The Basic `Authorization` header of the test login. */
export function basicAuth(): string {
  return `Basic ${Buffer.from(`${CONSOLE_USER.username}:${CONSOLE_USER.password}`).toString('base64')}`;
}
