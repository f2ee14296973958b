import type { HttpSinkOptions } from './http-sink.options';

/** The options of `HttpSink.offloaded()` as the worker thread receives them: `URL` instances as strings. */
export function workerHttpOptions(options: HttpSinkOptions): HttpSinkOptions {
  const href = (url: string | URL | undefined) => (url instanceof URL ? url.href : url);
  const urls = options.urls && Object.fromEntries(Object.entries(options.urls).map(([kind, url]) => [kind, href(url)]));
  return { ...options, url: href(options.url), urls };
}
