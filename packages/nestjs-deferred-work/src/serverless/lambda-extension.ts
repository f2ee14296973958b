import { Logger } from '@nestjs/common';
import { errorMessage } from '../core/error-message';
import { settleWithin } from '../core/settle';
import { type ExtensionEvent, ExtensionsApi, ExtensionsApiError } from './extensions-api';
import { invocationTracker } from './invocation-tracker';
import { onManagedInstances } from './platform';
import { checkMs, type LambdaExtensionOptions, SERVERLESS_DEFAULTS } from './serverless-options';
import { type ExtensionState, serverlessState, warnedOnce } from './serverless-state';

/** What {@link registerLambdaExtension} did. */
export interface LambdaExtensionStatus {
  /** `registered`; `refused` by Lambda (too late: after Init); `not-registered` (not on Lambda, or not needed there). */
  state: ExtensionState;
  /** Why it is not registered. */
  reason?: string;
}

const logger = new Logger('DeferredWork');

/**
 * Registers the library's internal Lambda extension, once per process: call it during Init — at the
 * top level of the handler module (`await registerLambdaExtension()` in an ES module), or preload
 * `nestjs-deferred-work/serverless/register` with `NODE_OPTIONS=--import=…` — before the runtime asks
 * for its first invocation; Lambda refuses an extension after that. With it registered, each
 * invocation of a {@link deferredLambda} handler returns its response at once, and the extension
 * keeps the invocation open (Lambda does not freeze the environment) until that invocation's deferred
 * work has settled, or until its deadline less `deadlineMarginMs` (default 500 ms).
 *
 * Not on Lambda (`AWS_LAMBDA_RUNTIME_API` unset), or on Lambda Managed Instances (never frozen
 * between invocations), nothing is registered. Refused (called too late), it warns once, and the
 * wrappers settle each invocation's work before they return instead: nothing is lost, the response
 * waits. Never rejects for Lambda's answer; a bad option throws (after reporting the extension's
 * init failure to Lambda when it had registered).
 */
export function registerLambdaExtension(options: LambdaExtensionOptions = {}): Promise<LambdaExtensionStatus> {
  const state = serverlessState();
  state.registering ??= register(options);
  return state.registering as Promise<LambdaExtensionStatus>;
}

async function register(options: LambdaExtensionOptions): Promise<LambdaExtensionStatus> {
  const state = serverlessState();
  const endpoint = process.env.AWS_LAMBDA_RUNTIME_API;
  if (!endpoint) return notRegistered('AWS_LAMBDA_RUNTIME_API is not set (not running on Lambda)');
  if (onManagedInstances()) return notRegistered('Lambda Managed Instances never freeze an environment between invocations: no extension is needed');
  const api = new ExtensionsApi(endpoint);
  const name = typeof options.extensionName === 'string' && options.extensionName !== '' ? options.extensionName : SERVERLESS_DEFAULTS.extensionName;
  let id: string;
  try {
    id = await api.register(name);
  } catch (error) {
    state.extension = 'refused';
    state.extensionReason = `Lambda refused the extension: ${errorMessage(error)}`;
    if (!warnedOnce('extension-refused')) {
      logger.warn(
        `${state.extensionReason}. An extension registers only during Init, before the runtime asks for its first invocation: ` +
          'call await registerLambdaExtension() at the top level of the handler module (not inside the handler, nor after a lazy ' +
          "bootstrap), or set NODE_OPTIONS='--import=nestjs-deferred-work/serverless/register'. Until then deferredLambda() settles " +
          "each invocation's deferred work before it returns: nothing is lost, each response waits for its work.",
      );
    }
    return { state: 'refused', reason: state.extensionReason };
  }
  try {
    if (options.extensionName !== undefined && (typeof options.extensionName !== 'string' || options.extensionName === '')) {
      throw new TypeError('registerLambdaExtension(): option "extensionName" must be a non-empty string. Pass a name, or leave it out for "nestjs-deferred-work".');
    }
    state.marginMs = checkMs('registerLambdaExtension()', 'deadlineMarginMs', options.deadlineMarginMs, 50, 600_000, SERVERLESS_DEFAULTS.deadlineMarginMs);
    invocationTracker().install();
  } catch (error) {
    // Registered, then failed: Lambda is told, and fails the Init rather than wait on an extension that will not run.
    await api.initError(id, 'Extension.ConfigInvalid', error as Error).catch(() => undefined);
    throw error;
  }
  state.extension = 'registered';
  state.extensionReason = undefined;
  state.shutdownBudgetMs = SERVERLESS_DEFAULTS.shutdownMs;
  void run(api, id, state.marginMs);
  return { state: 'registered' };
}

function notRegistered(reason: string): LambdaExtensionStatus {
  serverlessState().extensionReason = reason;
  return { state: 'not-registered', reason };
}

/** The waits before each retry of an `event/next` that got no answer (a transport error: ECONNRESET, …). */
const NEXT_RETRY_BACKOFF_MS = [20, 100, 300];
/** How long the extension waits for Lambda's answer to its `exit/error` before it ends the process. */
const EXIT_ERROR_WAIT_MS = 250;

/**
 * The extension's loop: `event/next` (the first call ends its Init), then for each `INVOKE` the
 * invocation's release — its work settled, or its deadline budget spent — before the next call, which
 * lets Lambda freeze the environment. An INVOKE that reaches the extension after the handler wrapper
 * has released its invocation holds nothing.
 */
async function run(api: ExtensionsApi, id: string, marginMs: number): Promise<void> {
  const tracker = invocationTracker();
  const state = serverlessState();
  let deadline = Number.POSITIVE_INFINITY;
  for (;;) {
    let event;
    try {
      event = await nextEvent(api, id, deadline);
    } catch (error) {
      return stop(api, id, error);
    }
    if (event.eventType !== 'INVOKE' || typeof event.requestId !== 'string') continue;
    deadline = Number(event.deadlineMs);
    if (!state.modes.has('lambda') && !state.modes.has('lambda-streaming')) {
      if (!warnedOnce('extension-unused')) {
        logger.warn('The Lambda extension is registered and no handler is wrapped with deferredLambda(): it releases each invocation at once. Wrap the handler (see docs/serverless.md).');
      }
      continue;
    }
    const invocation = tracker.beginInvoke(event.requestId, deadline, marginMs);
    if (invocation) await tracker.releaseByDeadline(invocation);
  }
}

/**
 * `event/next`, retried a few times, before the invocation's deadline, when no answer came (a
 * transport error); an answer other than an event (`403`, `500`) is not retried: Lambda accepts no
 * further call of the extension then.
 */
async function nextEvent(api: ExtensionsApi, id: string, deadline: number): Promise<ExtensionEvent> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await api.next(id);
    } catch (error) {
      if (error instanceof ExtensionsApiError) throw error;
      const wait = NEXT_RETRY_BACKOFF_MS[attempt];
      if (wait === undefined) throw error;
      // Before the deadline of the invocation just released, the retries fit in what is left of it (after it, that one is over).
      const left = deadline - Date.now();
      await new Promise((resolve) => setTimeout(resolve, left > 0 ? Math.min(wait, Math.max(0, left - 20)) : wait));
    }
  }
}

/**
 * The extension cannot go on: Lambda answered its `event/next` with an error, or could not be reached.
 * Lambda would go on sending it INVOKE events and wait for a Next call that cannot come — each later
 * invocation held until its timeout, then the environment reset. So it says why, reports the error on
 * `exit/error`, and ends the process: with SIGTERM, so that the app's stop-signal drain stores what is
 * pending within its budget (300 ms), and exit status 1 after that at the latest. Lambda then starts a
 * fresh environment (a new Init) for the next invocation.
 */
async function stop(api: ExtensionsApi, id: string, error: unknown): Promise<void> {
  const state = serverlessState();
  const why = error instanceof ExtensionsApiError ? errorMessage(error) : `event/next got no answer in ${NEXT_RETRY_BACKOFF_MS.length + 1} attempts (${errorMessage(error)})`;
  state.extension = 'refused';
  state.extensionReason = `the extension stopped: ${why}`;
  logger.error(
    `The Lambda extension stopped: ${why}. Deferred work is no longer kept from the freeze, and Lambda would hold each later ` +
      'invocation open until its timeout: the extension reports the error to Lambda and ends this process (SIGTERM, its drain, then exit), ' +
      'so that Lambda starts a fresh execution environment for the next invocation. See docs/serverless.md.',
  );
  await settleWithin(api.exitError(id, 'Extension.NextFailed', error as Error), EXIT_ERROR_WAIT_MS, true);
  setTimeout(() => process.exit(1), SERVERLESS_DEFAULTS.shutdownMs + 200);
  process.kill(process.pid, 'SIGTERM');
}
