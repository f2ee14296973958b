import { Logger } from '@nestjs/common';
import type { Invocation } from './invocation';
import { invocationTracker } from './invocation-tracker';
import { checkMs, SERVERLESS_DEFAULTS, type VercelOptions } from './serverless-options';
import { serverlessState, warnedOnce } from './serverless-state';

/** What the serverless mode uses of `@vercel/functions`. */
interface VercelFunctions {
  waitUntil(promise: Promise<unknown>): void;
  getDeadline?(): Date | undefined;
}

/** Where Vercel keeps the current request's context (what `@vercel/functions` reads). */
const REQUEST_CONTEXT = Symbol.for('@vercel/request-context');

function requestContext(): object | undefined {
  const holder = (globalThis as Record<symbol, { get?: () => unknown } | undefined>)[REQUEST_CONTEXT];
  const context = holder?.get?.();
  return context !== null && typeof context === 'object' ? context : undefined;
}

/**
 * On Vercel (Node.js functions): hands each request's deferred work to the platform's `waitUntil`
 * (`@vercel/functions`), so that the function is kept running after the response until that work has
 * settled. The items a request defers are exported at once; what is not delivered within the
 * request's deadline (`getDeadline()` of `@vercel/functions` less `deadlineMarginMs`, or, without one,
 * `budgetMs` after the response) is dead-lettered `expired` (or kept by a spool that takes such items)
 * and counted in one log line. Call it once, before the app starts (e.g. in the module that creates it).
 *
 * Resolves `true` once enabled; `false`, with a warning saying how to fix it, when `@vercel/functions`
 * is not installed. Items deferred outside a request (no Vercel request context) are not tracked.
 */
export async function enableVercelWaitUntil(options: VercelOptions & { deadlineMarginMs?: number } = {}): Promise<boolean> {
  const budgetMs = checkMs('enableVercelWaitUntil()', 'budgetMs', options.budgetMs, 100, 900_000, SERVERLESS_DEFAULTS.budgetMs);
  const marginMs = checkMs('enableVercelWaitUntil()', 'deadlineMarginMs', options.deadlineMarginMs, 50, 600_000, SERVERLESS_DEFAULTS.deadlineMarginMs);
  let functions: VercelFunctions | undefined;
  let why = 'it has no waitUntil()';
  try {
    functions = (await import('@vercel/functions' as string)) as VercelFunctions;
  } catch (error) {
    why = (error as Error).message;
  }
  if (typeof functions?.waitUntil !== 'function') {
    if (!warnedOnce('vercel-missing')) {
      new Logger('DeferredWork').warn(
        `enableVercelWaitUntil(): @vercel/functions could not be loaded (${why}); deferred work is not kept alive after ` +
          'the response. Install it: npm install @vercel/functions',
      );
    }
    return false;
  }
  const vercel = functions as VercelFunctions;
  serverlessState().modes.add('vercel');
  const tracker = invocationTracker();
  tracker.install();
  const requests = new WeakMap<object, Invocation>();
  let seq = 0;
  tracker.attribution = () => {
    const context = requestContext();
    if (context === undefined) return undefined;
    let request = requests.get(context);
    if (request === undefined || request.handlerDoneAt !== undefined) {
      const deadline = vercel.getDeadline?.()?.getTime() ?? Date.now() + budgetMs + marginMs;
      const opened = tracker.beginAlone(`request-${++seq}`, deadline, marginMs, 'Vercel request');
      requests.set(context, opened);
      // The items of one response are deferred in the same turn: the request's work is complete after it.
      setImmediate(() => void tracker.end(opened));
      vercel.waitUntil(opened.report.then(() => undefined));
      request = opened;
    }
    return [request];
  };
  return true;
}
