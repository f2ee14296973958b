/**
 * Deferred events through the app's `ClientProxy` (`@nestjs/microservices` as an optional peer).
 *
 * @module nestjs-deferred-work/microservices
 */
export { ClientProxySink } from './client-proxy.sink';
export { emitEvent, type DeferredEventOptions, type JobDeferrer } from './emit-event';
export {
  BROKER_PROCESSOR_DEFAULTS,
  MESSAGE_ID_HEADER,
  type BrokerTransport,
  type ClientProxyLike,
  type ClientProxySinkDescription,
  type ClientProxySinkOptions,
  type ModuleRefLike,
  type NoSubscribersPolicy,
} from './client-proxy-sink.options';
