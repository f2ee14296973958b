/** Defaults of the module-wide options (documented on `DeferredWorkModuleOptions`). */
export const MODULE_DEFAULTS = Object.freeze({
  asyncContext: 'auto' as const,
  timing: false,
  shutdownTimeoutMs: 5000,
  drainOnSignal: true,
  maxItemBytes: 1_048_576,
  deadLetterCapacity: 100,
});
