import * as http from 'node:http';
import { checkWholeNumber, describeValue } from '../kit/option-checks';
import { SinkConfigError } from '../kit/sink-config.error';
import { displayUrl } from './http-wire';
import type { HttpSinkFormat } from './http-sink.options';

/** Headers the sink computes itself. */
const RESERVED_HEADERS = new Set(['content-length', 'content-encoding', 'transfer-encoding', 'connection']);

/** Defaults of `HttpSinkOptions` (documented there). */
export const HTTP_SINK_DEFAULTS = Object.freeze({
  name: 'http',
  format: 'json' as HttpSinkFormat,
  gzipLevel: 6,
  gzipMinBytes: 1024,
  agentOptions: Object.freeze({ keepAlive: true, keepAliveMsecs: 1000, timeout: 4000 }),
});

export function checkUrl(prefix: string, option: string, value: unknown): URL {
  let url: URL;
  try {
    if (value instanceof URL) url = new URL(value.href);
    else if (typeof value === 'string') url = new URL(value);
    else throw new Error('not a string');
  } catch {
    throw new SinkConfigError(
      `${prefix}: option "${option}" is not an absolute URL (got ${describeValue(value)}). ` +
        'Pass one such as "https://collector.example.com/v1/items".',
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new SinkConfigError(
      `${prefix}: option "${option}" must use http: or https:, got "${url.protocol}" (${displayUrl(url)}). ` +
        'Pass an http:// or https:// URL.',
    );
  }
  return url;
}

export function checkHeaders(prefix: string, headers: unknown): Record<string, string> {
  if (headers === undefined) return {};
  if (headers === null || typeof headers !== 'object' || Array.isArray(headers)) {
    throw new SinkConfigError(`${prefix}: option "headers" must be an object of header names to string values, got ${describeValue(headers)}.`);
  }
  const checked: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    try {
      http.validateHeaderName(name);
    } catch {
      throw new SinkConfigError(`${prefix}: header name ${JSON.stringify(name)} is not a valid HTTP header name. Use letters, digits and -.`);
    }
    if (RESERVED_HEADERS.has(lower)) {
      throw new SinkConfigError(`${prefix}: header "${lower}" is set by the sink itself. Remove it from "headers" (use the "gzip" option for compression).`);
    }
    // The value is never echoed: it is often a secret.
    if (typeof value !== 'string') {
      throw new SinkConfigError(`${prefix}: header "${lower}" must have a string value (got ${value === null ? 'null' : typeof value}). Convert it with String(...).`);
    }
    try {
      http.validateHeaderValue(name, value);
    } catch {
      throw new SinkConfigError(`${prefix}: header "${lower}" has an invalid value (it contains a line break or another control character). Remove those characters.`);
    }
    if (lower in checked) {
      throw new SinkConfigError(`${prefix}: header "${lower}" is given twice (header names are case-insensitive). Keep one.`);
    }
    checked[lower] = value;
  }
  return checked;
}

export function checkGzip(prefix: string, gzip: unknown): { level: number; minBytes: number } | undefined {
  if (gzip === undefined || gzip === false) return undefined;
  if (gzip === true) return { level: HTTP_SINK_DEFAULTS.gzipLevel, minBytes: HTTP_SINK_DEFAULTS.gzipMinBytes };
  if (gzip === null || typeof gzip !== 'object') {
    throw new SinkConfigError(`${prefix}: option "gzip" must be true, false or { level, minBytes }, got ${describeValue(gzip)}.`);
  }
  const { level, minBytes } = gzip as { level?: unknown; minBytes?: unknown };
  return {
    level: checkWholeNumber(prefix, 'gzip.level', level, { min: 1, max: 9, unit: '1 fastest, 9 smallest', fallback: HTTP_SINK_DEFAULTS.gzipLevel }),
    minBytes: checkWholeNumber(prefix, 'gzip.minBytes', minBytes, { min: 0, fallback: HTTP_SINK_DEFAULTS.gzipMinBytes }),
  };
}
