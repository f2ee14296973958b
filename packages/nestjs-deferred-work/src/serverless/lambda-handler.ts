import { Logger } from '@nestjs/common';
import { invocationTracker } from './invocation-tracker';
import { onManagedInstances } from './platform';
import { checkMs, type LambdaOptions, SERVERLESS_DEFAULTS } from './serverless-options';
import { type ServerlessMode, serverlessState, warnedOnce } from './serverless-state';

/** The part of Lambda's context object the wrappers read. */
export interface LambdaContextLike {
  readonly awsRequestId: string;
  getRemainingTimeInMillis(): number;
}

/** The part of a streaming handler's response stream the streaming wrapper reads. */
export interface ResponseStreamLike {
  readonly writableEnded: boolean;
  readonly writableFinished: boolean;
  once(event: 'finish' | 'close' | 'error', listener: () => void): unknown;
}

/** The marks `awslambda.streamifyResponse()` sets on a handler, copied onto the wrapper. */
const STREAMING_MARKS = [Symbol.for('aws.lambda.runtime.handler.streaming'), Symbol.for('aws.lambda.runtime.handler.streaming.highWaterMark')];

const logger = new Logger('DeferredWork');

/**
 * Wraps an async Lambda handler (`@codegenie/serverless-express`, `@h4ad/serverless-adapter`, your
 * own) so that the deferred work of each invocation survives the freeze that follows it.
 *
 * - With the internal extension registered during Init ({@link registerLambdaExtension}): the handler's
 *   result is returned at once (the client gets its response), and the extension keeps the invocation
 *   open until its work has settled, or until its deadline less `deadlineMarginMs`.
 * - Without it (not registered, or refused because it came too late — a bootstrap inside the first
 *   invocation): the wrapper settles the invocation's work before it returns — the response waits for
 *   the work, nothing is lost — and says so once.
 *
 * Either way, what is not delivered by the deadline less the margin is dead-lettered `expired` (or kept
 * by a spool that takes such items) and counted in one log line before the release. On Lambda Managed
 * Instances (never frozen between invocations) it calls the handler and adds nothing.
 */
export function deferredLambda<E, R, C extends LambdaContextLike>(handler: (event: E, context: C) => Promise<R>, options: LambdaOptions = {}): (event: E, context: C) => Promise<R> {
  const marginMs = setUp('deferredLambda', handler, options, 'lambda');
  const tracker = invocationTracker();
  return async (event: E, context: C): Promise<R> => {
    if (onManagedInstances()) return handler(event, context);
    const state = serverlessState();
    const waitsHere = state.extension !== 'registered';
    if (waitsHere) warnFallback();
    const invocation = tracker.begin(context.awsRequestId, Date.now() + context.getRemainingTimeInMillis(), marginMs ?? state.marginMs ?? SERVERLESS_DEFAULTS.deadlineMarginMs);
    try {
      return await handler(event, context);
    } finally {
      const released = tracker.end(invocation);
      if (waitsHere) await released;
    }
  };
}

/**
 * Wraps a response-streaming handler (`awslambda.streamifyResponse(...)`, for function URLs; the marks
 * of an already streamified handler are kept): the client's stream ends first, then the invocation's
 * deferred work is settled — within its deadline less `deadlineMarginMs` — before the handler resolves.
 * The client has its whole response meanwhile; the invocation's billed duration includes the work.
 * Needs no extension.
 */
export function deferredStreamingLambda<E, S extends ResponseStreamLike, C extends LambdaContextLike>(
  handler: (event: E, stream: S, context: C) => Promise<void>,
  options: LambdaOptions = {},
): (event: E, stream: S, context: C) => Promise<void> {
  const marginMs = setUp('deferredStreamingLambda', handler, options, 'lambda-streaming');
  const tracker = invocationTracker();
  const wrapped = async (event: E, stream: S, context: C): Promise<void> => {
    if (onManagedInstances()) return handler(event, stream, context);
    const margin = marginMs ?? serverlessState().marginMs ?? SERVERLESS_DEFAULTS.deadlineMarginMs;
    const invocation = tracker.begin(context.awsRequestId, Date.now() + context.getRemainingTimeInMillis(), margin);
    try {
      await handler(event, stream, context);
      await streamEnded(stream);
    } finally {
      await tracker.end(invocation);
    }
  };
  const marks = wrapped as unknown as Record<symbol, unknown>;
  for (const mark of STREAMING_MARKS) if ((handler as unknown as Record<symbol, unknown>)[mark] !== undefined) marks[mark] = (handler as unknown as Record<symbol, unknown>)[mark];
  return wrapped;
}

/** Checks the handler and options, marks the mode in use and starts tracking; returns the margin given, if any. */
function setUp(fn: string, handler: unknown, options: LambdaOptions, mode: ServerlessMode): number | undefined {
  if (typeof handler !== 'function') {
    throw new TypeError(`${fn}(handler): handler must be an async function, got ${handler === null ? 'null' : typeof handler}. Pass the handler your adapter builds (e.g. serverlessExpress({ app })).`);
  }
  const given = options?.deadlineMarginMs;
  const marginMs = given === undefined ? undefined : checkMs(`${fn}()`, 'deadlineMarginMs', given, 50, 600_000, SERVERLESS_DEFAULTS.deadlineMarginMs);
  serverlessState().modes.add(mode);
  invocationTracker().install();
  return marginMs;
}

/** Resolves once the stream has finished — at once when the handler never ended it (the runtime then fails the invocation). */
function streamEnded(stream: ResponseStreamLike): Promise<void> {
  if (stream.writableFinished || !stream.writableEnded) return Promise.resolve();
  return new Promise((resolve) => {
    stream.once('finish', resolve);
    stream.once('close', resolve);
    stream.once('error', resolve);
  });
}

function warnFallback(): void {
  if (process.env.AWS_LAMBDA_RUNTIME_API === undefined || warnedOnce('fallback')) return;
  const why = serverlessState().extensionReason ?? 'registerLambdaExtension() was not called during Init';
  logger.warn(
    `deferredLambda(): no Lambda extension (${why}), so each invocation's deferred work is settled before its response is returned: ` +
      'nothing is lost, and each response waits for its work. To return responses first, register the extension during Init: ' +
      "await registerLambdaExtension() at the top level of the handler module, or NODE_OPTIONS='--import=nestjs-deferred-work/serverless/register' " +
      '(see docs/serverless.md).',
  );
}
