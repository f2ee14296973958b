/**
 * The one rule from an item's metric name to a Prometheus metric name: every character other than
 * `a-z`, `A-Z`, `0-9` and `_` becomes `_`; a name that would then start with a digit gets a leading
 * `_`; then `prefix` is prepended. `orders.created` → `orders_created`; `http.server.handler_ms` →
 * `http_server_handler_ms`; with prefix `shop_`: `shop_orders_created`. Valid names without the
 * prefix (`orders_created`) are unchanged, so a declaration may use either form.
 */
export function prometheusMetricName(name: string, prefix = ''): string {
  const replaced = name.replace(/[^a-zA-Z0-9_]/g, '_');
  return prefix + (/^[0-9]/.test(replaced) ? `_${replaced}` : replaced);
}

/** Prometheus' metric name syntax (as prom-client checks it). */
export const PROMETHEUS_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
/** Prometheus' label name syntax. */
export const PROMETHEUS_LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
