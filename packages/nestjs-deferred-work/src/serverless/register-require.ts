/**
 * What `require('nestjs-deferred-work/serverless/register')` and `node -r …` load: a clear error. The
 * preload must await the extension's registration before the runtime asks for its first invocation,
 * which only an ES module's top-level await under `--import` can do.
 */
export {};

throw new Error(
  "nestjs-deferred-work/serverless/register is loaded with --import, not with -r or require(): set NODE_OPTIONS='--import=nestjs-deferred-work/serverless/register' " +
    '(Node 20.6 and later). It awaits the Lambda extension’s registration, which must finish before the runtime asks for its first invocation. See docs/serverless.md.',
);
