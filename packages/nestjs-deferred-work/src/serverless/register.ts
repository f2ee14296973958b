/**
 * Registers the Lambda internal extension as a preloaded module, during Init, for handler modules that
 * cannot await at their top level (CommonJS):
 *
 *     NODE_OPTIONS='--import=nestjs-deferred-work/serverless/register'
 *
 * `--import` waits for this module's top-level await, so the registration is done before the runtime
 * asks for its first invocation. Wrap the handler with `deferredLambda()` as usual. An ES module only;
 * it imports the package's own serverless entry by name, so that the app's imports share its state.
 */
import { registerLambdaExtension } from 'nestjs-deferred-work/serverless';

await registerLambdaExtension();
