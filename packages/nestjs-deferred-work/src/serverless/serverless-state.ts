/** Which serverless mode this process uses, as the bootstrap check and the stop-signal drain read it. */
export type ServerlessMode = 'lambda' | 'lambda-streaming' | 'vercel';

/** The internal extension's registration: registered, refused by Lambda (or stopped: its `event/next` failed), or not attempted (off Lambda, or not called). */
export type ExtensionState = 'registered' | 'refused' | 'not-registered';

/** @internal What the serverless mode keeps for the whole process (on `globalThis`: both builds share it). */
export interface ServerlessState {
  /** Every mode in use (a wrapper made, Vercel's waitUntil enabled). */
  readonly modes: Set<ServerlessMode>;
  extension: ExtensionState;
  /** Why the extension is not registered (Lambda's answer, or the reason it was not tried). */
  extensionReason: string | undefined;
  /** The registration under way or done (one per process). */
  registering: Promise<unknown> | undefined;
  /** The extension's `deadlineMarginMs`, once registered: the wrappers' default. */
  marginMs: number | undefined;
  /** A stop signal's drain budget (ms) while the mode sets one (Lambda with the extension registered). */
  shutdownBudgetMs: number | undefined;
  /** Warnings already given once (keys). */
  readonly warned: Set<string>;
}

/** @internal The process's serverless state. */
export function serverlessState(): ServerlessState {
  const holder = globalThis as Record<symbol, ServerlessState | undefined>;
  return (holder[Symbol.for('nestjs-deferred-work.serverless')] ??= {
    modes: new Set(),
    extension: 'not-registered',
    extensionReason: undefined,
    registering: undefined,
    marginMs: undefined,
    shutdownBudgetMs: undefined,
    warned: new Set(),
  });
}

/** @internal Whether `key` was warned of already; marks it. */
export function warnedOnce(key: string): boolean {
  const warned = serverlessState().warned;
  if (warned.has(key)) return true;
  warned.add(key);
  return false;
}
