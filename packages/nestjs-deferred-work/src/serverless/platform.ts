import { serverlessState, warnedOnce } from './serverless-state';

/** A platform that stops or throttles a process once its response is sent. */
export type ServerlessPlatform = 'lambda' | 'vercel' | 'cloud-run';

/** The environment variables the checks read (`process.env` by default). */
export type PlatformEnv = Record<string, string | undefined>;

/**
 * The platform this process runs on, read from the variables each one sets: `AWS_LAMBDA_FUNCTION_NAME`
 * (AWS Lambda), `VERCEL` (Vercel), `K_SERVICE` (Cloud Run, Cloud Functions). `undefined` elsewhere.
 */
export function detectPlatform(env: PlatformEnv = process.env): ServerlessPlatform | undefined {
  if (env.AWS_LAMBDA_FUNCTION_NAME) return 'lambda';
  if (env.VERCEL) return 'vercel';
  if (env.K_SERVICE) return 'cloud-run';
  return undefined;
}

/**
 * Whether this is a Lambda Managed Instances environment (several invocations at once, never frozen
 * between them): Lambda sets `AWS_LAMBDA_MAX_CONCURRENCY` there.
 */
export function onManagedInstances(env: PlatformEnv = process.env): boolean {
  return Number(env.AWS_LAMBDA_MAX_CONCURRENCY ?? 0) > 1;
}

/** Set to `off` to silence the bootstrap warning (where CPU is always allocated, say). */
export const SERVERLESS_ENV = 'DEFERRED_WORK_SERVERLESS';

/**
 * The warning for a platform that freezes or throttles the process after the response while no
 * serverless mode is in use, naming the risk and the fix; `undefined` when there is none to give.
 */
export function platformWarning(env: PlatformEnv = process.env): string | undefined {
  if (env[SERVERLESS_ENV] === 'off') return undefined;
  const platform = detectPlatform(env);
  const modes = serverlessState().modes;
  const inUse = modes.has('lambda') || modes.has('lambda-streaming') || serverlessState().extension === 'registered';
  if (platform === 'lambda' && !inUse && !onManagedInstances(env)) {
    return (
      'Running on AWS Lambda (AWS_LAMBDA_FUNCTION_NAME is set) without the serverless mode: Lambda freezes the environment as soon ' +
      'as an invocation ends, so deferred work still pending then waits, frozen, for a later invocation, or is lost when the ' +
      "environment is reclaimed. Wrap the handler with deferredLambda() from 'nestjs-deferred-work/serverless' and register its " +
      'extension during Init (await registerLambdaExtension() at the top of the handler module); see docs/serverless.md.'
    );
  }
  if (platform === 'vercel' && !modes.has('vercel')) {
    return (
      'Running on Vercel (VERCEL is set) without the serverless mode: a function may be stopped once its response is sent, and ' +
      "deferred work still pending then is lost. Install @vercel/functions and call enableVercelWaitUntil() from 'nestjs-deferred-work/serverless' " +
      'before the app starts; see docs/serverless.md.'
    );
  }
  if (platform === 'cloud-run') {
    return (
      'Running on Cloud Run or Cloud Functions (K_SERVICE is set): with request-based billing the CPU is throttled once a response ' +
      'is sent, so deferred work stalls between requests and may be lost when the instance is stopped. Deploy with CPU always ' +
      `allocated (gcloud run deploy --no-cpu-throttling), then set ${SERVERLESS_ENV}=off to silence this warning; see docs/serverless.md.`
    );
  }
  return undefined;
}

/** @internal At bootstrap: the platform warning, once per process. */
export function checkServerlessPlatform(logger: { warn(message: string): void }, env: PlatformEnv = process.env): void {
  // A turn later: a handler module wraps its handler once the app it serves has started.
  setImmediate(() => {
    const warning = platformWarning(env);
    if (warning !== undefined && !warnedOnce('platform')) logger.warn(warning);
  }).unref();
}

/**
 * @internal How long a stop signal's drain may take in this process when the serverless mode sets a
 * shorter budget than `shutdownTimeoutMs` (Lambda's SIGTERM with the internal extension: 500 ms to SIGKILL).
 */
export function serverlessShutdownBudgetMs(): number | undefined {
  return serverlessState().shutdownBudgetMs;
}
