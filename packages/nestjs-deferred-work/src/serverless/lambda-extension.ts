import { Logger } from '@nestjs/common';
import { errorMessage } from '../core/error-message';
import { ExtensionsApi } from './extensions-api';
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

/**
 * The extension's loop: `event/next` (the first call ends its Init), then for each `INVOKE` the
 * invocation's release — its work settled, or its deadline budget spent — before the next call, which
 * lets Lambda freeze the environment.
 */
async function run(api: ExtensionsApi, id: string, marginMs: number): Promise<void> {
  const tracker = invocationTracker();
  const state = serverlessState();
  for (;;) {
    let event;
    try {
      event = await api.next(id);
    } catch (error) {
      logger.error(`The Lambda extension stopped: ${errorMessage(error)}. Deferred work is no longer kept from the freeze; see docs/serverless.md.`);
      state.extension = 'refused';
      state.extensionReason = `the extension stopped: ${errorMessage(error)}`;
      await api.exitError(id, 'Extension.NextFailed', error as Error).catch(() => undefined);
      return;
    }
    if (event.eventType !== 'INVOKE' || typeof event.requestId !== 'string') continue;
    if (!state.modes.has('lambda') && !state.modes.has('lambda-streaming')) {
      if (!warnedOnce('extension-unused')) {
        logger.warn('The Lambda extension is registered and no handler is wrapped with deferredLambda(): it releases each invocation at once. Wrap the handler (see docs/serverless.md).');
      }
      continue;
    }
    const invocation = tracker.begin(event.requestId, Number(event.deadlineMs), marginMs);
    await tracker.releaseByDeadline(invocation);
  }
}
